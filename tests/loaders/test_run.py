"""``streamcue run`` and ``streamcue compare``: run folders against a real local OpenAI-compatible server, the
cluster bootstrap (golden and property tests), partial-run scoring, and the page in a real Chromium.

The server (:mod:`streamcue.testing.stub_llm` on 127.0.0.1) never reads ground truth: it answers plain text
("Answer: B", "Yes") chosen from a hash of the prompt, sometimes garbage, and once an HTTP 500. Where the
endpoint asks for a JSON Schema (today's prompts) the same text is wrapped in it; without one it is sent as is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED_DATA
from streamcue.metrics.bootstrap import BootstrapSettings, cluster_bootstrap, paired_bootstrap, ratio

FIXTURES = SHARED_DATA / "fixtures"
CHROMIUM = Path(os.environ.get("STREAMCUE_CHROMIUM", "/usr/bin/chromium"))


def cli(*args, cache=None):
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "200", "STREAMCUE_NO_PROGRESS": "1",
           "STREAMCUE_CACHE_DIR": str(cache) if cache else os.environ["STREAMCUE_CACHE_DIR"]}
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          env=env)


class PlainTextModel:
    """Plain-text answers from a hash of the prompt; every third answer is garbage. Never reads ground truth."""

    def __init__(self) -> None:
        import threading

        self.asked = 0
        self.lock = threading.Lock()

    def __call__(self, body):
        from streamcue.testing.stub_llm import message_text, request_schema

        text = "\n".join(message_text(m) for m in body.get("messages", []))
        h = sum(map(ord, text)) % 4
        schema = request_schema(body)
        if schema and "answer" in schema.get("properties", {}):  # a yes/no decision asked as JSON
            return json.dumps({"answer": "yes" if h % 2 else "no"})
        with self.lock:
            self.asked += 1
            garbage = self.asked % 3 == 0
        answer = "I cannot tell from these frames." if garbage else f"Answer: {'ABCD'[h]}"
        return json.dumps({"text": answer}) if schema else answer


@pytest.fixture(scope="module")
def server():
    from streamcue.testing.stub_llm import StubLLMServer

    with StubLLMServer(PlainTextModel(), model="plain-vl") as running:
        yield running


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("builds")
    sb_src = root / "sb_src"
    sb_src.mkdir()
    for name in ("questions_real.first3.json", "questions_proactive.first3.json"):
        (sb_src / name.replace(".first3", "")).write_text((FIXTURES / "streamingbench" / name).read_text())
    done = cli("build", "ovo-bench", "--annotations", FIXTURES / "ovo_bench" / "ovo_bench_new.one_per_task.json",
               "--out", root / "ovo")
    assert done.returncode == 0, done.stderr
    done = cli("build", "streamingbench", "--questions", sb_src, "--out", root / "sb")
    assert done.returncode == 0, done.stderr
    return root


def _schema(name):
    from importlib import resources

    return json.loads(resources.files("streamcue.schemas").joinpath(f"{name}.schema.json").read_text())


# ---------------------------------------------------------------- bootstrap

def test_bootstrap_golden_two_videos():
    """Video a: two right answers, video b: one wrong. Draws aa, ab, ba, bb: 1, 2/3, 2/3, 0 (exact enumeration)."""
    units = [("a", "T", 1, 1), ("a", "T", 1, 1), ("b", "T", 0, 1)]
    out, exact = cluster_bootstrap(units, {"T": lambda t: ratio(t, "T")})
    assert exact
    row = out["T"]
    assert row["estimate"] == pytest.approx(2 / 3)
    assert (row["low"], row["high"]) == (0.0, 1.0)
    assert row["se"] == pytest.approx(19 ** 0.5 / 12)
    assert (row["n"], row["videos"], row["resamples"]) == (3, 2, 4)


def test_bootstrap_golden_paired():
    """B is right on both videos, A only on x. Draws xx, xy, yx, yy give B - A = 0, 1/2, 1/2, 1."""
    a = [("x", "T", 1, 1), ("y", "T", 0, 1)]
    b = [("x", "T", 1, 1), ("y", "T", 1, 1)]
    out, exact = paired_bootstrap(a, b, {"T": lambda t: ratio(t, "T")})
    row = out["T"]
    # draws xx, xy, yx, yy: A = 1, 1/2, 1/2, 0; B = 1 always; B - A = 0, 1/2, 1/2, 1
    assert exact and row["estimate"] == pytest.approx(0.5) and (row["a"], row["b"]) == (0.5, 1.0)
    assert (row["low"], row["high"]) == (0.0, 1.0) and row["se"] == pytest.approx((1 / 8) ** 0.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1)), min_size=1, max_size=40),
       st.integers(0, 3))
def test_bootstrap_interval_contains_the_estimate(items, seed):
    units = [(f"v{v}", "T", float(c), 1.0) for v, c in items]
    out, _ = cluster_bootstrap(units, {"T": lambda t: ratio(t, "T")}, BootstrapSettings(resamples=300, seed=seed))
    row = out["T"]
    assert row["low"] <= row["estimate"] + 1e-12 and row["estimate"] <= row["high"] + 1e-12


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), st.integers(1, 4), st.integers(0, 4))
def test_bootstrap_zero_width_when_every_video_is_the_same(videos, per_video, correct):
    correct = min(correct, per_video)
    units = [(f"v{v}", "T", float(i < correct), 1.0) for v in range(videos) for i in range(per_video)]
    out, _ = cluster_bootstrap(units, {"T": lambda t: ratio(t, "T")}, BootstrapSettings(resamples=200))
    row = out["T"]
    assert row["low"] == pytest.approx(row["high"]) == pytest.approx(correct / per_video) and row["se"] < 1e-12


def test_bootstrap_is_seeded():
    units = [(f"v{i}", "T", float(i % 3 == 0), 1.0) for i in range(30)]
    stat = {"T": lambda t: ratio(t, "T")}
    one = cluster_bootstrap(units, stat, BootstrapSettings(resamples=500, seed=7))
    assert one == cluster_bootstrap(units, stat, BootstrapSettings(resamples=500, seed=7))
    assert one != cluster_bootstrap(units, stat, BootstrapSettings(resamples=500, seed=8))


# ---------------------------------------------------------------- partial runs in evaluate

def test_evaluate_says_when_predictions_cover_part_of_the_ground_truth(builds, tmp_path):
    from streamcue.io import read_jsonl, write_jsonl
    from streamcue.metrics import evaluate

    mc = read_jsonl(builds / "ovo" / "mc_question.jsonl")
    preds = [{"question_id": q["question_id"], "response": "A"} for q in mc]
    write_jsonl(tmp_path / "all.jsonl", preds)
    write_jsonl(tmp_path / "part.jsonl", preds[:3])
    full = evaluate("ovo-bench", builds / "ovo" / "mc_question.jsonl", tmp_path / "all.jsonl")
    assert "coverage" not in full  # a full run's report is as before
    part = evaluate("ovo-bench", builds / "ovo" / "mc_question.jsonl", tmp_path / "part.jsonl")
    assert part["coverage"]["n_ground_truth"] == len(mc) and part["coverage"]["n_predicted"] == 3
    assert "3 of 9" in part["coverage"]["note"]
    done = cli("evaluate", "ovo-bench", "--gt", builds / "ovo" / "mc_question.jsonl", "--pred", tmp_path / "part.jsonl")
    assert done.returncode == 0 and "predictions cover 3 of 9" in done.stderr


# ---------------------------------------------------------------- run and compare

@pytest.mark.slow
@pytest.mark.llm_server
def test_run_ovo_and_streamingbench_write_a_run_folder_rerun_from_cache_and_compare(builds, server, tmp_path):
    import jsonschema

    from streamcue.io import read_jsonl

    cache = tmp_path / "cache"
    llm = ["--llm-base-url", server.base_url, "--llm-model", "plain-vl", "--no-video"]
    server.inject("status", 500)  # one server error: retried by the client, the run goes on
    done = cli("run", "ovo-bench", builds / "ovo", "--out", tmp_path / "ovo_a", *llm, "--temperature", "0.2",
               "--max-tokens", "64", "--concurrency", "2", cache=cache)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "ovo_a"
    for name in ("results.json", "samples.jsonl", "report.html", "predictions.jsonl", "replay_report.json"):
        assert (run / name).is_file(), name
    results = json.loads((run / "results.json").read_text())
    jsonschema.validate(results, _schema("results"))
    for sample in read_jsonl(run / "samples.jsonl"):
        jsonschema.validate(sample, _schema("sample"))
    assert {k: results["model"][k] for k in ("name", "endpoint", "revision")} == {
        "name": "plain-vl", "endpoint": server.base_url, "revision": None}
    assert len(results["model"]["entry_sha256"]) == 64  # the server's entry for the model (issue 49)
    assert results["generation"]["temperature"] == 0.2 and results["generation"]["max_tokens"] == 64
    assert results["n_played"] == results["n_benchmark"] == 12
    assert results["counts"]["asked"] == 12 and results["counts"]["answered"] == 12
    assert results["bootstrap"]["seed"] == 0 and results["bootstrap"]["unit"] == "video"
    # the tables are the metric's own figures, with intervals around them
    official = results["report"]["overall"]
    assert results["tables"]["group"]["total"]["estimate"] == pytest.approx(official["total"])
    for task, row in results["tables"]["task"].items():
        assert row["estimate"] == pytest.approx(results["report"]["groups"]["task"][task]["accuracy"])
        assert row["low"] <= row["estimate"] <= row["high"]
    samples = {s["id"]: s for s in read_jsonl(run / "samples.jsonl")}
    garbage = [i for i, s in samples.items() if s["kind"] == "mc_question" and not s["parseable"]]
    assert garbage and set(garbage) <= set(results["unparseable"])  # garbage is listed and scored wrong
    assert all(samples[i]["score"]["correct"] == 0 for i in garbage)
    parsed = [s for s in samples.values() if s["kind"] == "mc_question" and s["parseable"]]
    assert all(s["raw_answer"] == f"Answer: {s['parsed_answer']}" for s in parsed)
    assert "<svg" in (run / "report.html").read_text() and "http" not in (run / "report.html").read_text().replace(
        server.base_url, "").replace("http://www.w3.org/2000/svg", "")

    # a re-run makes no call
    calls = server.completions
    again = cli("run", "ovo-bench", builds / "ovo", "--out", tmp_path / "ovo_b", *llm, "--temperature", "0.2",
                "--max-tokens", "64", cache=cache)
    assert again.returncode == 0, again.stderr
    assert server.completions == calls
    counts = json.loads((tmp_path / "ovo_b" / "results.json").read_text())["counts"]
    assert counts["endpoint_calls"] == 0 and counts["earlier_run_hits"] == counts["cache_hits"] > 0
    assert f"{counts['cache_hits']} cache hits ({counts['cache_hits']} from an earlier run)" in again.stdout
    assert "of them from an earlier run" in (tmp_path / "ovo_b" / "report.html").read_text()

    # a partial run: scored over what was played, n of the benchmark beside it
    part = cli("run", "ovo-bench", builds / "ovo", "--out", tmp_path / "ovo_part", *llm, "--limit", "4",
               "--temperature", "0.2", "--max-tokens", "64", cache=cache)
    assert part.returncode == 0, part.stderr
    partial = json.loads((tmp_path / "ovo_part" / "results.json").read_text())
    assert (partial["n_played"], partial["n_benchmark"]) == (4, 12) and "partial run" in part.stdout
    assert len(partial["report"]["per_item"]) == 4 and not partial["report"]["missing_predictions"]

    # compare: paired differences over the records both played
    inside = cli("compare", tmp_path / "ovo_a", tmp_path / "ovo_part", "--output", tmp_path / "ovo_a" / "cmp.json")
    assert inside.returncode == 2 and "inside" in inside.stderr and not (tmp_path / "ovo_a" / "cmp.json").exists()
    cmp = cli("compare", tmp_path / "ovo_a", tmp_path / "ovo_part", "--output", tmp_path / "cmp.json")
    assert cmp.returncode == 0, cmp.stderr
    assert "B - A" in cmp.stdout and "paired over 4 records" in cmp.stdout
    diff = json.loads((tmp_path / "cmp.json").read_text())
    assert all(row["estimate"] == pytest.approx(0.0) for row in diff["tables"]["task"].values())  # same answers

    # StreamingBench: multiple choice and proactive items through the same command
    done = cli("run", "streamingbench", builds / "sb", "--out", tmp_path / "sb", *llm, cache=cache)
    assert done.returncode == 0, done.stderr
    sb = json.loads((tmp_path / "sb" / "results.json").read_text())
    jsonschema.validate(sb, _schema("results"))
    assert sb["protocol"]["kinds"]["active_item"]["strategy"] == "polling"
    overall = sb["report"]["paper_groups"]["overall"]["accuracy"]
    assert sb["tables"]["group"]["overall"]["estimate"] == pytest.approx(overall)
    assert "proactive answer" in sb["tables"]["group"] and "Timelines" in (tmp_path / "sb" / "report.html").read_text()
    # issue 49: a polled "No" is not drawn as speech (this model never says yes to a poll: it never spoke)
    proactive = [s for s in read_jsonl(tmp_path / "sb" / "samples.jsonl") if s["kind"] == "active_item"]
    assert proactive and all(s["raw_answer"] for s in proactive) and all(s["spoke"] == [] for s in proactive)

    # different benchmarks: refused with one line, even when differences are allowed (no record is in both)
    for allow in ([], ["--allow-different"]):
        refused = cli("compare", tmp_path / "ovo_a", tmp_path / "sb", *allow)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
        assert "different benchmarks (ovo-bench vs streamingbench)" in refused.stderr


class OfficialPlainModel:
    """A model asked with the official prompts: plain text ("The answer is B.", "B. that one", "No."), the letter
    from a hash of the prompt (never the ground truth), about a third of the answers garbage; it keeps what it was
    sent."""

    def __init__(self) -> None:
        import threading

        self.bodies = []
        self.lock = threading.Lock()

    def __call__(self, body):
        import hashlib

        from streamcue.testing.stub_llm import message_text

        text = "\n".join(message_text(m) for m in body.get("messages", []))
        h = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        with self.lock:
            self.bodies.append(body)
        if "right time to output" in text:  # a StreamingBench proactive poll
            return "Yes, now." if h % 3 == 0 else "No."
        if h % 3 == 0:
            return "hmm... hard to say from these frames"
        if "How many times" in text:  # OVO-Bench REC
            return f"They did it {h % 4} times."
        if "Options:" not in text:  # SSR / CRR / the proactive question
            return "Yes" if h % 2 else "No"
        letter = "AB"[h % 2]
        return f"{letter}. that one" if "The best option is" in text else f"The answer is {letter}."


@pytest.mark.slow
@pytest.mark.llm_server
def test_official_prompts_are_the_default_plain_answers_scored_by_the_official_rule(builds, tmp_path):
    """OVO-Bench and StreamingBench default to their official prompts: each turn's text goes alone (no system
    prompt, no response format) and the raw answer is scored by the official rule; garbage is listed and counted
    as wrong; an HTTP 500 is retried; a re-run makes no call."""
    from streamcue.io import read_jsonl
    from streamcue.testing.stub_llm import StubLLMServer

    model = OfficialPlainModel()
    cache = tmp_path / "cache"
    with StubLLMServer(model, model="plain-vl") as stub:
        llm = ["--llm-base-url", stub.base_url, "--llm-model", "plain-vl", "--no-video"]
        garbled = 0
        for bench, build in (("ovo-bench", "ovo"), ("streamingbench", "sb")):
            stub.inject("status", 500)
            done = cli("run", bench, builds / build, "--out", tmp_path / bench, *llm, cache=cache)
            assert done.returncode == 0, done.stderr
            results = json.loads((tmp_path / bench / "results.json").read_text())
            assert results["protocol"]["prompt_set"] == "official"
            assert any(v.startswith(f"{bench.replace('-bench', '')}_official_choice.v1@")
                       for v in results["protocol"]["prompt_versions"])
            assert all(v == results["protocol"]["prompt_versions"] for v in results["prompts"].values())
            report = json.loads((tmp_path / bench / "replay_report.json").read_text())
            assert all(k["prompt_set"] == "official" for k in report["kinds"].values())
            assert report["retries"] >= 1  # the HTTP 500, retried and counted
            calls = [c for s in read_jsonl(tmp_path / bench / "samples.jsonl") for c in s["calls"] or []]
            assert calls and all(c["prompt_version"].endswith("+plain") and "_official_" in c["prompt_version"]
                                 for c in calls)
            played = {r["question_id"]: r for r in read_jsonl(tmp_path / bench / "played" / "mc_question.jsonl")}
            predictions = {p["question_id"]: p for p in read_jsonl(tmp_path / bench / "predictions.jsonl")
                           if "question_id" in p}
            per_item = results["report"]["per_item"]
            for qid, record in played.items():
                raw, gold = predictions[qid]["response"], "ABCDEFGH"[record["answer"]]
                right = gold in raw if bench == "ovo-bench" else raw[:1] == gold  # the official rules
                assert per_item[qid]["correct"] == int(right), (qid, raw, gold)
            garbage = [qid for qid, p in predictions.items() if p["response"].startswith("hmm")]
            assert set(garbage) <= set(results["unparseable"]) and all(per_item[q]["correct"] == 0 for q in garbage)
            assert results["counts"]["unparseable"] == len(results["unparseable"]) >= len(garbage)
            garbled += len(garbage)
        assert garbled  # some garbage was listed and scored wrong
        for body in model.bodies:  # the official text alone: no system prompt, no JSON asked for
            assert "response_format" not in body and [m["role"] for m in body["messages"]] == ["user"]
            assert "JSON" not in body["messages"][0]["content"][-1]["text"]
        asked = stub.completions
        for bench, build in (("ovo-bench", "ovo"), ("streamingbench", "sb")):
            again = cli("run", bench, builds / build, "--out", tmp_path / f"{bench}-again", *llm, cache=cache)
            assert again.returncode == 0, again.stderr
        assert stub.completions == asked  # a re-run makes no call


@pytest.mark.slow
@pytest.mark.llm_server
def test_run_refuses_with_one_line(builds, server, tmp_path):
    llm = ["--llm-base-url", server.base_url, "--llm-model", "plain-vl", "--no-video"]
    cases = [
        (["run", "ovo-bench", builds / "ovo", "--out", builds / "ovo" / "run"], "lies inside the input folder"),
        (["run", "ovo-bench", builds / "sb", "--out", tmp_path / "x"],
         "streamingbench records; ovo-bench plays its own"),
        (["run", "ovo-bnech", builds / "ovo", "--out", tmp_path / "x"], "ovo-bench"),
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--ids", "ovo-0,nope"], "unknown id"),
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--temperature", "9"], "--temperature"),
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--prompt-set", "mine"], "unknown prompt set"),
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--context", "last-60s"],
         "--context is for streamingbench records, not ovo-bench"),
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--split", "test", "--videos",
          tmp_path / "none.jsonl"], "no such videos file"),
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--k", "0"], "error: --k must be at least 1, "
                                                                                      "got 0"),  # only the option given
        (["run", "ovo-bench", builds / "ovo", "--out", tmp_path / "x", "--strategy", "polling"],
         "strategy polling plays interval_qa records, dense_caption records and active_item records of streamingbench "
         "only, not mc_question records of ovo-bench; for those use single-call"),
        (["compare", tmp_path / "nothing", tmp_path / "nothing2"], "not a run folder"),
    ]
    for args, words in cases:
        done = cli(*args, *(llm if args[0] == "run" else []))
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (builds / "ovo" / "run").exists() and not (tmp_path / "x" / "results.json").exists()


def test_help_teaches_with_examples():
    for command in ("run", "compare"):
        done = cli(command, "--help")
        assert done.returncode == 0 and "Example" in done.stdout and f"streamcue {command}" in done.stdout


# ---------------------------------------------------------------- the page in a real browser

def _no_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium; or STREAMCUE_CHROMIUM)"
    return None


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.llm_server
@pytest.mark.skipif(_no_browser() is not None, reason=_no_browser() or "")
def test_report_page_renders_in_chromium(builds, server, tmp_path):
    from playwright.sync_api import sync_playwright

    done = cli("run", "streamingbench", builds / "sb", "--out", tmp_path / "sb", "--llm-base-url", server.base_url,
               "--llm-model", "plain-vl", "--no-video")
    assert done.returncode == 0, done.stderr
    page_file = tmp_path / "sb" / "report.html"
    shots = Path(os.environ.get("STREAMCUE_SCREENSHOTS", tmp_path))
    requests = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri())
        assert page.title().startswith("StreamingBench")
        bars = page.locator("svg[aria-label='Per task'] rect")
        assert bars.count() >= 1
        assert page.locator("svg[aria-label^='timeline of video']").count() >= 1
        box = page.locator("svg[aria-label='Groups']").bounding_box()
        assert box and box["width"] > 500 and box["height"] > 40
        page.screenshot(path=str(shots / "run-report.png"), full_page=True)
        browser.close()
    assert requests == [page_file.as_uri()]  # self-contained: nothing else is fetched
    assert (shots / "run-report.png").stat().st_size > 10_000
