"""The LLM layer and the llm judge against a real OpenAI-compatible HTTP server on 127.0.0.1."""

import json
import subprocess
import sys
import threading
import time

import pytest

from streamcue.errors import ConfigError, ServiceError
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.testing.stub_llm import StubLLMServer, default_responder

pytestmark = pytest.mark.llm_server

SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


def request(text="hello"):
    return Request(({"role": "user", "content": text},), SCHEMA, "test.v1")


@pytest.fixture
def server():
    with StubLLMServer() as s:
        yield s


def client(server, **kw):
    return LLMClient(LLMSettings(base_url=server.base_url, model="stub-model", **kw))


def test_structured_answer_is_validated_and_cached(server):
    llm = client(server)
    first = llm.complete(request())
    assert set(first) == {"answer"}
    assert llm.complete(request()) == first
    assert (server.completions, llm.usage.calls, llm.usage.cache_hits) == (1, 1, 1)
    assert llm.usage.prompt_tokens == 1
    body = server.requests[0]
    assert body["response_format"]["type"] == "json_schema" and body["temperature"] == 0.0


def test_json_object_mode_sends_the_schema_beside_it(server):
    client(server, structured="json_object").complete(request())
    assert server.requests[0]["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_malformed_answer_is_retried_then_reported(server):
    server.inject("content", "not json at all")
    assert "answer" in client(server).complete(request("a"))
    assert server.completions == 2
    server.inject("content", '{"wrong": 1}', times=3)
    with pytest.raises(ServiceError, match=r"answer violates the schema at the top level: 'answer' is a required "
                                           r"property after 3 attempts"):
        client(server).complete(request("b"))


def test_the_retry_says_what_was_wrong(server):
    server.inject("content", "not json at all")
    server.inject("content", '{"answer": 7}')
    assert "answer" in client(server, invalid_retries=2).complete(request("a"))
    first, second, third = (r["messages"] for r in server.requests)
    assert first == [{"role": "user", "content": "a"}]
    assert second[:2] == [{"role": "user", "content": "a"}, {"role": "assistant", "content": "not json at all"}]
    assert second[2]["role"] == "user"
    assert "answer is not JSON (Expecting value at line 1 column 1)" in second[2]["content"]
    assert '"required": ["answer"]' in second[2]["content"]  # the schema it must follow
    assert third[1] == {"role": "assistant", "content": '{"answer": 7}'}
    assert "violates the schema at answer: 7 is not of type 'string'" in third[2]["content"]


def test_the_cache_key_covers_endpoint_model_and_sampling(server, tmp_path):
    from streamcue.cache import Cache

    cache = Cache(tmp_path / "c.sqlite3", table="llm_responses")

    def ask(srv, **kw):
        llm = LLMClient(LLMSettings(base_url=srv.base_url, model=kw.pop("model", "stub-model"), api_key="sk-secret-1",
                                    **kw), cache=cache)
        llm.complete(request())
        return llm.usage.calls

    assert ask(server) == 1
    assert ask(server) == 0  # the same request, answered from the cache
    assert LLMClient(LLMSettings(base_url=server.base_url + "/", model="stub-model"), cache=cache).key(request()) == \
        LLMClient(LLMSettings(base_url=server.base_url, model="stub-model"), cache=cache).key(request())
    assert ask(server, temperature=0.7) == 1
    assert ask(server, max_tokens=16) == 1
    assert ask(server, model="other-model") == 1
    assert ask(server, structured="json_object") == 1
    with StubLLMServer() as other:  # another endpoint answers for itself
        assert ask(other) == 1 and other.completions == 1
    assert server.completions == 5
    cache.close()
    assert b"sk-secret-1" not in (tmp_path / "c.sqlite3").read_bytes()


def test_server_errors_are_retried_with_backoff(server):
    server.inject("status", 500)
    assert "answer" in client(server, max_retries=2).complete(request())
    assert len(server.requests) == 2


def test_wrong_key_gives_a_clear_error_without_the_key():
    with StubLLMServer(api_key="right-key") as s:
        with pytest.raises(ServiceError) as info:
            LLMClient(LLMSettings(base_url=s.base_url, model="m", api_key="sk-wrong-secret")).complete(request())
    assert "refused the API key (HTTP 401)" in str(info.value) and "sk-wrong-secret" not in str(info.value)


def test_unreachable_server():
    with pytest.raises(ServiceError, match="cannot reach the LLM server http://127.0.0.1:9/v1"):
        LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)).complete(request())


def test_concurrency_is_bounded():
    active, peak, lock = [0], [0], threading.Lock()

    def slow(body):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return default_responder(body)

    with StubLLMServer(slow) as s:
        answers = client(s, max_concurrency=3).complete_many([request(f"q{i}") for i in range(12)])
    assert len(answers) == 12 and peak[0] == 3


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("STREAMCUE_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("STREAMCUE_LLM_MODEL", "env-model")
    monkeypatch.setenv("STREAMCUE_LLM_API_KEY", "sk-secret")
    settings = LLMSettings.resolve(model="option-model")
    assert (settings.model, settings.base_url) == ("option-model", "http://127.0.0.1:1/v1")
    assert "sk-secret" not in repr(settings)
    monkeypatch.delenv("STREAMCUE_LLM_MODEL")
    with pytest.raises(ConfigError, match="no LLM model"):
        LLMSettings.resolve()


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_llm_judge_through_the_cli_judges_distinct_pairs_once(tmp_path, server):
    gt = write(tmp_path / "gt.jsonl", [{"task_id": "t1", "task_type": "present", "prompt": "What is happening?",
                                        "captions": [{"t_s": i,
                                                      "text": "cutting an onion" if i < 5 else "stirring a pot"}
                                                     for i in range(10)]}])
    pred = write(tmp_path / "pred.jsonl", [{"task_id": "t1", "responses": [{"t_s": 0, "text": "cutting an onion"},
                                                                         {"t_s": 7, "text": "stirring the pot"}]}])
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "160", "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"),
           "STREAMCUE_LLM_API_KEY": "sk-test-secret"}
    cmd = [sys.executable, "-m", "streamcue", "evaluate", "vsas", "--gt", gt, "--pred", pred, "--judge", "llm",
           "--judge-model", "stub-model", "--llm-base-url", server.base_url, "--output", tmp_path / "r.json"]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    # pairs: (cutting, cutting) x5, (stirring, cutting) x2, (stirring, stirring) x3 -> 3 distinct
    assert server.completions == 3 and report["judge"]["calls"] == 3
    # the stub grades by token F1: 1.0 -> score 3, a match; 0.0 -> score 0
    assert report["per_item"]["t1"]["accuracy"] == pytest.approx(8 / 10)
    assert report["judge"]["model"] == "stub-model"
    # A second run is answered by the cache: no new request reaches the server.
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert result.returncode == 0 and server.completions == 3
    assert json.loads((tmp_path / "r.json").read_text())["judge"]["cache_hits"] == 3
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert b"sk-test-secret" not in path.read_bytes()
    assert "sk-test-secret" not in (tmp_path / "r.json").read_text()


def test_llm_judge_estp_scale(tmp_path, server):
    from streamcue.metrics import evaluate

    gt = write(tmp_path / "gt.jsonl", [{"qa_id": "q1", "task_type": "OR", "question": "What is this?",
                                        "answers": [{"start_s": 10, "end_s": 14, "text": "a red cup"}]}])
    pred = write(tmp_path / "pred.jsonl", [{"qa_id": "q1", "responses": [{"t_s": 10, "text": "a red cup"}]}])
    report = evaluate("estp-f1", gt, pred, judge="llm", judge_options={"base_url": server.base_url,
                                                                       "model": "stub-model"})
    assert report["per_item"]["q1"]["answer_scores"] == [1.0]  # (5 + 5) / 10
    assert "estp_answer.v1@" in report["judge"]["prompts"]["estp"]


def test_cli_unreachable_llm_is_a_one_line_error(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [{"qa_id": "q1", "task_type": "OR", "answers": [{"start_s": 1, "end_s": 2,
                                                                                       "text": "x"}]}])
    pred = write(tmp_path / "pred.jsonl", [{"qa_id": "q1", "responses": [{"t_s": 1, "text": "x"}]}])
    result = subprocess.run([sys.executable, "-m", "streamcue", "evaluate", "estp-f1", "--gt", gt, "--pred", pred,
                             "--judge", "llm", "--judge-model", "m", "--llm-base-url", "http://127.0.0.1:9/v1"],
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                                 "STREAMCUE_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 4
    assert result.stderr.startswith("error: cannot reach the LLM server http://127.0.0.1:9/v1")
    assert len(result.stderr.strip().splitlines()) == 1
