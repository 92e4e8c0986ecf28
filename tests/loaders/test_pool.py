"""An endpoint pool (``--llm-base-url`` repeated or ``@FILE``): calls on every endpoint and the figures of a
one-endpoint run, another model entry refused before any call, a failing endpoint drained while the others carry
the run, and a run resumed on other endpoints through the cache. Real local servers
(:class:`streamcue.testing.stub_llm.StubLLMServer`) play ToyBench (tests/toybench.py) with --no-video."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import cli
from toybench import SOURCE_FILE

from streamcue.testing.stub_llm import StubLLMServer, request_schema, schema_instance

pytestmark = pytest.mark.llm_server

#: Six videos of two questions each: enough calls to spread over a pool.
QUESTIONS = [{"video": f"toy/{n}.mp4",
              "questions": [{"q": f"Video {n}, question {k}: {q['q']}", "a": q["a"], "t": q["t"], "task": q["task"]}
                            for k, q in enumerate(SOURCE_FILE[0]["questions"])]} for n in range(6)]


def answer(body):
    """Right for about half the questions, from a hash of the question (never from the order of the calls), in the
    JSON shape asked for."""
    text, said = json.dumps(body), "?"
    for entry in QUESTIONS:
        for q in entry["questions"]:
            if q["q"] in text:
                said = q["a"] if hashlib.sha256(q["q"].encode()).digest()[0] % 2 else "blue"
    schema = request_schema(body)
    return json.dumps({k: said if isinstance(v, str) else v for k, v in schema_instance(schema).items()}) \
        if schema else said


@pytest.fixture
def built(toybench, tmp_path):
    source = tmp_path / "questions.json"
    source.write_text(json.dumps(QUESTIONS))
    assert cli("build", "toybench", "--questions", source, "--out", tmp_path / "built")[0] == 0
    return tmp_path / "built"


def run(built, out, urls, monkeypatch, cache, *extra):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(cache))
    flags = [x for url in urls for x in ("--llm-base-url", url)]
    return cli("run", "toybench", built, "--out", out, "--no-video", "--llm-model", "stub-model", "--concurrency", "4",
               *flags, *extra)


def figures(out):
    results = json.loads((out / "results.json").read_text())
    return results["tables"], results["counts"]["answered"], results["counts"]["unparseable"]


def test_two_endpoints_share_the_calls_and_give_the_figures_of_one(built, tmp_path, monkeypatch):
    with StubLLMServer(answer) as one:
        code, _, err = run(built, tmp_path / "one", [one.base_url], monkeypatch, tmp_path / "c1")
        assert code == 0, err
        alone = one.completions
    with StubLLMServer(answer) as a, StubLLMServer(answer) as b:
        secret = b.base_url.replace("http://", "http://lab:hunter2@")  # credentials in a URL are never shown
        urls = tmp_path / "urls.txt"
        urls.write_text(f"# the pool\n{a.base_url}\n\n{secret}\n")
        code, out, err = run(built, tmp_path / "pool", [f"@{urls}"], monkeypatch, tmp_path / "c2")
        assert code == 0, err
        assert a.completions > 0 and b.completions > 0 and a.completions + b.completions == alone == 12
        assert figures(tmp_path / "pool") == figures(tmp_path / "one")
        results = json.loads((tmp_path / "pool" / "results.json").read_text())
        shares = results["throughput"]["endpoints"]
        assert {k: v["calls"] for k, v in shares.items()} == {a.base_url: a.completions, b.base_url: b.completions}
        assert results["throughput"]["calls"] == 12 and results["throughput"]["videos"] == 6
        assert results["model"]["endpoint"] is None and results["replay"]["llm"]["model_card"]["id"] == "stub-model"
        calls = [c for line in (tmp_path / "pool" / "samples.jsonl").read_text().splitlines()
                 for c in json.loads(line)["calls"]]
        assert {c["endpoint"] for c in calls} == {a.base_url, b.base_url}
        for path in (tmp_path / "pool").rglob("*"):
            assert not path.is_file() or b"hunter2" not in path.read_bytes(), path
        assert "hunter2" not in out + err
    # the cache names the model entry, not the URLs: the run again on another endpoint makes no call
    with StubLLMServer(answer) as c:
        code, _, err = run(built, tmp_path / "again", [c.base_url], monkeypatch, tmp_path / "c2")
        assert code == 0 and c.completions == 0, err
        assert figures(tmp_path / "again") == figures(tmp_path / "one")


def test_an_endpoint_serving_another_model_entry_is_refused_before_any_call(built, tmp_path, monkeypatch):
    with StubLLMServer(answer) as a, StubLLMServer(answer, card={"root": "/models/stub-72b"}) as b:
        code, _, err = run(built, tmp_path / "run", [a.base_url, b.base_url], monkeypatch, tmp_path / "c")
        assert code != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        flat = " ".join(err.split())
        assert "the endpoints of the pool serve different model entries" in flat
        assert f"{a.base_url} serves" in flat and f"{b.base_url} serves" in flat and "/models/stub-72b" in flat
        assert a.completions == b.completions == 0


def test_an_endpoint_failing_half_way_is_drained_and_the_run_finishes_with_the_same_figures(built, tmp_path,
                                                                                           monkeypatch):
    with StubLLMServer(answer) as one:
        assert run(built, tmp_path / "one", [one.base_url], monkeypatch, tmp_path / "c1")[0] == 0
    import threading

    answered, lock = [], threading.Lock()

    def breaks(body):  # answers twice, then every next request is an HTTP 500
        with lock:
            answered.append(1)
            if len(answered) == 2:
                b.inject("status", 500, times=100)
        return answer(body)

    with StubLLMServer(answer) as a, StubLLMServer(breaks) as b:
        code, _, err = run(built, tmp_path / "pool", [a.base_url, b.base_url], monkeypatch, tmp_path / "c2",
                           "--llm-retries", "0")
        assert code == 0, err
        assert 2 <= b.completions < 12 and a.completions + b.completions == 12
    assert figures(tmp_path / "pool") == figures(tmp_path / "one")
    shares = json.loads((tmp_path / "pool" / "results.json").read_text())["throughput"]["endpoints"]
    assert shares[b.base_url]["calls"] == b.completions and shares[b.base_url]["failures"] >= 1
    assert shares[b.base_url]["drains"] >= 1 and shares[a.base_url] == {"calls": a.completions, "failures": 0,
                                                                        "drains": 0,
                                                                        "calls_per_hour": shares[a.base_url][
                                                                            "calls_per_hour"]}


def test_an_llm_judge_takes_a_pool_too():
    """``--judge-llm-base-url`` repeated: the judge's verdicts spread over both endpoints, the same as from one."""
    from streamcue.metrics.llm_judge import LLMJudge
    from streamcue.metrics.run_config import RunConfig

    triples = [(f"question {n}?", f"the answer is {n}", f"it is {n if n % 2 else n + 1}") for n in range(8)]
    with StubLLMServer() as a, StubLLMServer() as b:
        config = RunConfig(benchmark="estp", records="out/ego4d", judge="llm", llm_model="stub-model",
                           llm_base_url=a.base_url, judge_llm_base_url=[a.base_url, b.base_url])
        judge = LLMJudge.from_options(**{**config.evaluate_options()["judge_options"], "max_concurrency": 4})
        pooled = judge.judge(triples, "answer")
        alone = LLMJudge.from_options(base_url=a.base_url, model="stub-model").judge(triples, "answer")
        assert a.completions > 8 and b.completions > 0 and pooled == alone
