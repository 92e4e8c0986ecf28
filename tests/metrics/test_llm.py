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

from conftest import cli_run

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


def test_the_cache_key_covers_model_entry_and_sampling_not_the_endpoint(server, tmp_path):
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
    with StubLLMServer() as other:  # another endpoint serving the same model entry: its answers are the model's
        assert ask(other) == 0 and other.completions == 0
        other.card = {"root": "/models/other"}  # another entry behind the same name answers for itself
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
    # both read when the command runs: the cache when it opens, the key when the settings are resolved
    env = {"STREAMCUE_CACHE_DIR": tmp_path / "cache", "STREAMCUE_LLM_API_KEY": "sk-test-secret"}
    cmd = ["evaluate", "vsas", "--gt", gt, "--pred", pred, "--judge", "llm", "--llm-model", "stub-model",
           "--llm-base-url", server.base_url, "--output", tmp_path / "r.json"]
    result = cli_run(*cmd, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    # pairs: (cutting, cutting) x5, (stirring, cutting) x2, (stirring, stirring) x3 -> 3 distinct
    assert server.completions == 3 and report["judge"]["calls"] == 3
    # the stub grades by token F1: 1.0 -> score 3, a match; 0.0 -> score 0
    assert report["per_item"]["t1"]["accuracy"] == pytest.approx(8 / 10)
    assert report["judge"]["model"] == "stub-model"
    # A second run is answered by the cache: no new request reaches the server.
    result = cli_run(*cmd, env=env)
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


@pytest.mark.slow
def test_cli_unreachable_llm_is_a_one_line_error(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [{"qa_id": "q1", "task_type": "OR", "answers": [{"start_s": 1, "end_s": 2,
                                                                                       "text": "x"}]}])
    pred = write(tmp_path / "pred.jsonl", [{"qa_id": "q1", "responses": [{"t_s": 1, "text": "x"}]}])
    result = cli_run("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "llm", "--llm-model", "m",
                     "--llm-base-url", "http://127.0.0.1:9/v1", env={"STREAMCUE_CACHE_DIR": tmp_path})
    assert result.returncode == 4
    # the default retries, each after the openai package's backoff, then one line
    assert result.stderr.startswith("error: cannot reach the LLM server http://127.0.0.1:9/v1 (after 4 retries)")
    assert len(result.stderr.strip().splitlines()) == 1
    # the judge's calls take the bounds of every command that calls a model; a judge that calls none refuses them
    bounded = cli_run("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "llm", "--llm-model", "m",
                      "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-retries", "0", "--llm-timeout", "30",
                      env={"STREAMCUE_CACHE_DIR": tmp_path})
    assert bounded.returncode == 4 and bounded.stderr.strip() == \
        "error: cannot reach the LLM server http://127.0.0.1:9/v1 (after 0 retries)", bounded.stderr
    refused = cli_run("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "token-f1", "--llm-retries", "0")
    assert refused.returncode == 2 and refused.stderr.strip() == \
        "error: --llm-retries bounds an LLM judge's calls; --judge token-f1 makes none", refused.stderr


# ---------------------------------------------------------------------------------------------
# Runs that cannot mislead: the model's identity is in the cache key, earlier runs' answers are counted


@pytest.mark.parametrize("entry_route", [True, False], ids=["models.retrieve", "models.list (vLLM)"])
def test_a_new_model_entry_under_the_same_name_makes_new_calls(tmp_path, entry_route):
    from streamcue.cache import Cache

    cache = Cache(tmp_path / "c.sqlite3", table="llm_responses")
    old = {"created": 1_700_000_000, "owned_by": "lab", "root": "/ckpt/step-1000"}
    with StubLLMServer(card=old, entry_route=entry_route) as server:
        def run(session, **kw):  # one run: a client of its own, as a new process would have
            llm = LLMClient(LLMSettings(base_url=server.base_url, model="stub-model", session=session, **kw),
                            cache=cache)
            llm.complete_many([request("a"), request("b")])
            return llm.usage.calls, llm.usage.cache_hits, llm.usage.earlier_run_hits

        assert run("run-1") == (2, 0, 0)
        assert run("run-1") == (0, 2, 0)  # the same run asking again (a resume under its own session)
        assert run("run-2") == (0, 2, 2)  # a later run: both answers came from an earlier run, and say so
        assert run("run-3", model_revision="v2") == (2, 0, 0)  # the user names another checkpoint
        server.card = dict(old, created=1_700_086_400)  # a new checkpoint served under the same name
        assert run("run-4") == (2, 0, 0)
        server.card = dict(old, root="/ckpt/step-2000")
        assert run("run-5") == (2, 0, 0)
        card = LLMClient(LLMSettings(base_url=server.base_url, model="stub-model"), use_cache=False).model_card()
    assert card == {"id": "stub-model", "created": 1_700_000_000, "owned_by": "lab", "root": "/ckpt/step-2000"}
    assert server.completions == 8
    cache.close()


def test_a_stamp_of_the_request_is_not_the_model():
    with StubLLMServer() as server:  # "created" is the time of the request, as vLLM sends it
        card = LLMClient(LLMSettings(base_url=server.base_url, model="stub-model"), use_cache=False).model_card()
        unknown = LLMClient(LLMSettings(base_url=server.base_url, model="other"), use_cache=False).model_card()
    assert card == {"id": "stub-model"} and unknown == {"id": "other", "listed": False}


def test_the_model_revision_is_checked_and_part_of_the_identity(server):
    assert "model_revision" not in LLMSettings(base_url=server.base_url, model="m").answer_identity()
    assert LLMSettings(base_url=server.base_url, model="m", model_revision="abc").answer_identity()[
        "model_revision"] == "abc"
    with pytest.raises(ConfigError, match="model revision must be a non-empty text"):
        LLMSettings(base_url=server.base_url, model="m", model_revision=" ")


# ---------------------------------------------------------------------------------------------
# The openai package's own retries, counted through the httpx request hook


def test_retries_are_the_sdks_and_are_counted(server):
    llm = client(server, max_retries=3)
    server.inject("status", 503)
    server.inject("status", 429)
    reply = llm.reply(request("a"))
    assert reply.ok and reply.retries == 2 and llm.usage.retries == 2 and len(server.requests) == 3
    server.inject("status", 500, times=2)
    with pytest.raises(ServiceError, match=r"answered HTTP 500 for model stub-model \(after 1 retry\)"):
        client(server, max_retries=1).reply(request("b"))
    server.inject("status", 400)  # a bad request is not retried
    with pytest.raises(ServiceError, match=r"HTTP 400 .* \(after 0 retries\)"):
        llm.reply(request("c"))


# ---------------------------------------------------------------------------------------------
# A hostile endpoint is one line: every field read is validated, a total deadline, a size cap


@pytest.mark.parametrize("fault, words", [
    (("body", ("text/html", b"<html><body>502 Bad Gateway</body></html>")),
     "sent a chat completion that is not JSON (text/html, 41 bytes)"),
    (("usage", {"prompt_tokens": "12", "completion_tokens": 3}),
     "malformed at usage/prompt_tokens: '12' is not of type 'integer', 'null'"),
    (("usage", {"prompt_tokens": -1}), "malformed at usage/prompt_tokens: -1 is less than the minimum of 0"),
    (("content", 7), "sent a chat completion event that is malformed at choices/0/delta/content: 7 is not of type"),
    (("body", ("application/json", b'{"choices": "none"}')), "malformed at choices: 'none' is not of type 'array'"),
    (("body", ("application/json", b'{"choices": [{"message": {"content": NaN}}]}')),
     "not JSON (application/json"),
    (("content", "x" * 3_000_000), "over the 1,048,576-byte cap for model stub-model (max_response_bytes)"),
], ids=["html", "usage-string", "usage-negative", "content-number", "choices-string", "nan", "huge"])
def test_a_hostile_answer_is_one_error_line_and_never_cached(tmp_path, server, fault, words):
    from streamcue.cache import Cache

    cache = Cache(tmp_path / "c.sqlite3", table="llm_responses")
    server.inject(*fault)
    with pytest.raises(ServiceError) as info:
        LLMClient(LLMSettings(base_url=server.base_url, model="stub-model"), cache=cache).reply(request())
    message = str(info.value)
    assert message.startswith(f"LLM server {server.base_url} ") and words in message, message
    assert "\n" not in message and len(message) < 300
    assert len(server.requests) == 1 and len(cache) == 0  # not retried (a 200 is an answer), never cached
    cache.close()


def test_a_server_that_never_answers_times_out_within_the_deadline(server):
    server.inject("hang", 30, times=10)
    started = time.monotonic()
    with pytest.raises(ServiceError, match=r"timed out: no answer for model stub-model within 1.5 s "
                                           r"\(--llm-timeout; after (1 retry|2 retries)\)") as info:
        client(server, timeout_s=1.5, max_retries=4).reply(request())
    elapsed = time.monotonic() - started
    assert 1.5 <= elapsed < 1.5 + 8, elapsed  # the deadline, plus at most one of the SDK's backoff waits
    assert "cannot reach" not in str(info.value)


def test_a_slow_answer_past_the_deadline_times_out():
    def slow(body):
        time.sleep(0.3)
        return default_responder(body)

    with StubLLMServer(slow) as server:
        with pytest.raises(ServiceError, match="timed out"):
            client(server, timeout_s=0.1, max_retries=0).reply(request())
        assert client(server, timeout_s=5, max_retries=0).complete(request())


def test_the_limits_are_checked():
    for bad, words in [({"timeout_s": 0}, r"LLM timeout \(--llm-timeout\) must be a finite number of seconds > 0"),
                       ({"timeout_s": float("inf")}, "LLM timeout"),
                       ({"max_response_bytes": 10}, "max_response_bytes must be a whole number >= 1024"),
                       ({"max_retries": -1}, r"retries \(--llm-retries\) must be a whole number >= 0")]:
        with pytest.raises(ConfigError, match=words):
            LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", **bad)


def test_a_file_size_limit_on_the_cache_is_named_as_such_and_keeps_the_answers(tmp_path):
    import resource

    script = """
import sys
from streamcue.cache import Cache
from streamcue.errors import InputError
cache = Cache(sys.argv[1], table="llm_responses")
try:
    for i in range(10_000):
        cache.put(str(i), {"answer": "x" * 1000})
except InputError as exc:
    print(i)
    print(exc)
"""
    limit = 256 * 1024

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    path = tmp_path / "cache.sqlite3"
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                            preexec_fn=limited, timeout=120)
    written, message = result.stdout.strip().split("\n")
    assert message.startswith(f"{path}: cache database cannot be written (a file reached this process's "
                              f"file-size limit of {limit:,} bytes (ulimit -f)); the answers cached so far are kept")
    assert "delete it" not in message and "unusable" not in message
    from streamcue.cache import Cache

    assert len(Cache(path, table="llm_responses")) == int(written) > 0  # every answer written before is kept


def test_a_judges_verdicts_are_keyed_by_the_model_entry_too(tmp_path):
    from streamcue.cache import Cache
    from streamcue.metrics.judges import JudgeRunner
    from streamcue.metrics.llm_judge import LLMJudge

    cache = Cache(tmp_path / "c.sqlite3", table="judge_verdicts")
    triples = [("What?", "cutting an onion", "cutting an onion")]
    with StubLLMServer(card={"root": "/ckpt/a"}) as server:
        def calls():
            runner = JudgeRunner(LLMJudge.from_options(base_url=server.base_url, model="stub-model"), cache)
            runner.verdicts(triples, "vsas")
            return runner.report()

        first = calls()
        assert first["calls"] == 1 and first["model_card"] == {"id": "stub-model", "root": "/ckpt/a"}
        assert calls()["calls"] == 0
        server.card = {"root": "/ckpt/b"}  # another judge model under the same name
        assert calls()["calls"] == 1


def test_a_non_streaming_server_is_validated_as_one_body():
    with StubLLMServer(streams=False) as plain:
        plain.inject("content", 7)
        with pytest.raises(ServiceError, match="chat completion that is malformed at choices/0/message/content: 7"):
            client(plain).reply(request())


def test_answers_are_streamed_and_the_first_token_timed():
    words = " ".join(f"w{i}" for i in range(12))
    answer = json.dumps({"answer": words})
    with StubLLMServer(lambda body: answer, piece_delay_s=0.05) as streamed:
        reply = client(streamed).reply(request())
        body = streamed.requests[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert reply.text == answer and reply.parsed == {"answer": words}
    assert 0 < reply.ttft_s < reply.latency_s - 0.1  # the pieces after the first arrive 50 ms apart
    assert (reply.prompt_tokens, reply.completion_tokens) == (1, 13)


def test_a_server_that_does_not_stream_still_answers_without_a_first_token_time():
    with StubLLMServer(streams=False) as plain:
        reply = client(plain).reply(request())
        assert plain.requests[-1]["stream"] is True  # asked, but answered with one JSON body
    assert reply.ok and reply.ttft_s is None and reply.latency_s > 0 and reply.prompt_tokens == 1


def test_a_slow_stream_is_cut_at_the_deadline():
    answer = json.dumps({"answer": " ".join(["word"] * 300)})
    with StubLLMServer(lambda body: answer, piece_delay_s=0.3) as slow:
        llm = client(slow, timeout_s=1, max_retries=0)
        llm.model_card()
        started = time.monotonic()
        with pytest.raises(ServiceError, match="timed out: no answer for model stub-model within 1 s"):
            llm.reply(request())
        assert time.monotonic() - started < 10  # 300 words at 0.3 s a piece would take 30 s or more


def test_an_answer_trickling_in_is_cut_at_the_deadline(server):
    server.inject("trickle", 0.5, times=10)  # every read gets a byte within its timeout: only a total deadline ends it
    started = time.monotonic()
    with pytest.raises(ServiceError, match="timed out: no answer for model stub-model within 1 s"):
        client(server, timeout_s=1, max_retries=0).reply(request())
    assert time.monotonic() - started < 10  # the body, a byte every 0.5 s, would take 30 s or more


def test_a_retry_after_past_the_deadline_ends_the_call_at_once(server):
    server.inject("status", (429, "100"))
    started = time.monotonic()
    with pytest.raises(ServiceError, match="timed out"):
        client(server, timeout_s=5, max_retries=3).reply(request())
    assert time.monotonic() - started < 10 and len(server.requests) == 1  # not the 100 s Retry-After


def test_the_first_failure_of_many_calls_ends_the_calls_not_yet_started(tmp_path, monkeypatch):
    """A builder's twelve calls against an endpoint that fails: the first failure ends the command once the calls
    in flight end, not after every queued call has waited out its own deadline (a newcomer's build with
    ``--llm-timeout 20`` waited 54 s)."""
    import time

    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path))

    def fails(body):
        time.sleep(0.3)  # each call takes a while: a worker ending one would take the next at once
        raise RuntimeError("the model is down")

    with StubLLMServer(fails) as down:
        llm = LLMClient(LLMSettings(base_url=down.base_url, model="m", max_retries=0, max_concurrency=2))
        with pytest.raises(ServiceError, match="answered HTTP 500"):
            llm.complete_many([request(f"question {i}") for i in range(12)])
        asked = [r for r in down.requests if r.get("messages")]
    assert 1 <= len(asked) <= 2, len(asked)  # those in flight when the first failed; none started after it
