"""``streamcue compare RUN_FREE RUN_LIVE --clock`` and PhoStream under ``--clock fixed:S`` (docs/clock.md): the short
PhoStream build (tests/phostream_runs.py) played by ``streamcue run`` against a real local server whose model
answers as soon as a forward question's gold time has come (else "Silent")."""

from __future__ import annotations

import json

import pytest
from conftest import cli
from phostream_runs import needs_data, now_of, run_short

from streamcue.io import read_jsonl
from streamcue.loaders.protocols.phostream import question_text
from streamcue.testing.stub_llm import StubLLMServer, message_text

pytestmark = [pytest.mark.llm_server, needs_data]


@pytest.fixture(scope="module")
def clocked(short, tmp_path_factory):
    """The forward questions of ``short`` under the free clock, fixed:0, fixed:1 and fixed:3: each clock's
    results.json."""
    out = tmp_path_factory.mktemp("clocked")
    items = [r for r in read_jsonl(short / "built" / "active_item.jsonl") if r["group"] == "forward"]
    gold = {question_text(r): r["target"]["t_s"] for r in items}

    def on_time(body: dict) -> str:
        text = message_text(body["messages"][-1])
        question = next(q for q in gold if q in text)
        return "The answer is here." if now_of(body) >= gold[question] else "Silent"

    forward = ",".join(r["item_id"] for r in items)
    with StubLLMServer(on_time) as server:
        runs = {clock: run_short(short, out / clock.replace(":", "-"), server.base_url, "--ids", forward,
                                 "--no-cache", "--clock", clock) for clock in ("free", "fixed:0", "fixed:1", "fixed:3")}
    return out, items, runs


def folder(out, clock):
    return out / clock.replace(":", "-")


def test_phostream_under_a_fixed_clock_scores_arrival_times(clocked):
    """By hand, for the forward questions 1-0 (asked 25 s, gold 28 s, window to 30 s) and 2-0 (24 s, 29 s, to 31 s)
    with a call issued every free second from the question on: under fixed:1 the call issued at the gold second
    answers one second later, inside the window (judged: "Error (no LLM)" without a judge, at 29 and 30 s); under
    fixed:3 the first call that sees the gold second is issued at 28 (1-0) or 30 s (2-0) and answers at 31 or 33 s,
    after the window closed: no response in it (NoResponse). Each stream of a question asked at q on the 50 s
    video has 50 - q moments and ceil((50 - q) / 3) calls under fixed:3; the others are skipped: 16 + 7 + 17 + 12.
    (1-1 and 2-1 are scored on their video's pooled responses, as the official scorer does.)"""
    out, items, runs = clocked
    per_item = {clock: results["report"]["per_item"] for clock, results in runs.items()}
    assert [(per_item["fixed:1"][i]["category"], per_item["fixed:1"][i]["response_time_s"])
            for i in ("phostream-1-0", "phostream-2-0")] == [("Error (no LLM)", 29), ("Error (no LLM)", 30)]
    assert [per_item["fixed:3"][i]["category"] for i in ("phostream-1-0", "phostream-2-0")] == ["NoResponse"] * 2
    assert [(per_item["free"][i]["category"], per_item["free"][i]["response_time_s"])
            for i in ("phostream-1-0", "phostream-2-0")] == [("Error (no LLM)", 28), ("Error (no LLM)", 29)]
    skipped = sum((50 - q) - -(-(50 - q) // 3) for q in (r["query_time_s"] for r in items))
    assert skipped == 52 and runs["fixed:3"]["replay"]["clock"]["skipped_moments"] == skipped
    assert runs["fixed:3"]["protocol"]["clock"] == "fixed:3" and runs["free"]["protocol"]["clock"] == "free"
    assert runs["fixed:3"]["replay"]["clock"]["within_s"] == {"1": 0.0, "2": 0.0, "5": 1.0}
    calls = [c for s in read_jsonl(folder(out, "fixed:3") / "samples.jsonl") for c in s["calls"]]
    assert all(c["arrived_s"] == c["issued_s"] + 3 for c in calls) and sum(len(c["skipped"]) for c in calls) == 52
    page = (folder(out, "fixed:3") / "report.html").read_text()
    assert "clock=fixed:3" in page and "call asked at 25 s, arrived at 28 s" in page
    assert "0% within 2 s, 100% within 5 s; 52 moments skipped" in page
    assert "arrived at" not in (folder(out, "free") / "report.html").read_text()


def test_fixed_zero_gives_the_free_figures(clocked):
    _, _, runs = clocked
    assert runs["fixed:0"]["report"]["per_item"] == runs["free"]["report"]["per_item"]
    assert runs["fixed:0"]["tables"] == runs["free"]["tables"]


def test_plain_compare_refuses_runs_of_different_clocks_naming_it(clocked):
    out, _, _ = clocked
    code, _, err = cli("compare", folder(out, "free"), folder(out, "fixed:3"))
    assert code != 0 and "protocol.clock: free vs fixed:3" in err and len(err.strip().splitlines()) == 1


def test_compare_clock_gives_the_latency_cost_with_intervals_in_either_order(clocked, tmp_path):
    out, _, _ = clocked
    code, said, err = cli("compare", folder(out, "fixed:3"), folder(out, "free"), "--clock", "--output",
                          tmp_path / "cost.json")
    assert code == 0, err
    assert "A is free, B is fixed:3; latency cost = live - free = B - A" in " ".join(said.split())
    result = json.loads((tmp_path / "cost.json").read_text())
    assert result["a"]["folder"] == str(folder(out, "free")) and result["clock"]["clocked"] == "fixed:3"
    row = result["tables"]["group"]["score / 100"]
    assert {"estimate", "low", "high"} <= set(row) and row["low"] <= row["estimate"] <= row["high"]
    # 1-0 and 2-0 (judged in time, then no response), 2-1 (the early response it is scored on moved from 32 to 33 s)
    assert result["clock"]["records_scored_differently"] == 3
    assert result["clock"]["latency"]["clocked"]["skipped_moments"] == 52


@pytest.mark.parametrize("a, b, says", [("fixed:1", "fixed:3", "neither run is free"),
                                        ("free", "free", "both runs are free")])
def test_compare_clock_refuses_pairs_that_do_not_measure_a_latency_cost(clocked, a, b, says):
    out, _, _ = clocked
    code, _, err = cli("compare", folder(out, a), folder(out, b), "--clock")
    assert code != 0 and says in err
    code, _, err = cli("compare", folder(out, a), folder(out, b), "--clock", "--leak")
    assert code != 0 and "--clock excludes --leak" in err


@pytest.mark.slow
def test_the_clock_example_in_the_docs_runs_as_written(short, tmp_path, monkeypatch):
    """docs/clock.md's block, line by line, on the short PhoStream build against the local server: the free, fixed:3
    and live runs name their clock, and compare --clock gives the latency cost."""
    import re
    import shlex
    import shutil
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "clock.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- clock-example: run by tests/metrics/test_latency_cost.py -->\n```bash\n(.*?)```", text,
                      re.S)
    shutil.copytree(short / "built", tmp_path / "out" / "pho")
    (tmp_path / "pho-videos").symlink_to(short / "videos")
    monkeypatch.chdir(tmp_path)
    with StubLLMServer() as server:
        monkeypatch.setenv("STREAMCUE_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("STREAMCUE_LLM_MODEL", "stub")
        for line in block.group(1).strip().splitlines():
            code, said, err = cli(*shlex.split(line)[1:])
            assert code == 0, (line, err)
    assert [json.loads((tmp_path / "runs" / name / "results.json").read_text())["protocol"]["clock"]
            for name in ("free", "fixed3", "live")] == ["free", "fixed:3", "live"]
    assert "latency cost" in said


def test_the_python_run_object_takes_the_clock(clocked, short, tmp_path):
    """``RunConfig(clock=...)`` and ``run`` give what ``streamcue run --clock`` gave; ``ReplayConfig`` and
    ``write_replay`` record it in replay_report.json."""
    from streamcue.loaders.replay_config import ReplayConfig
    from streamcue.loaders.replay_run import write_replay
    from streamcue.metrics.run_config import RunConfig, run

    _, items, runs = clocked
    with StubLLMServer(lambda body: "Silent") as server:
        common = dict(records=short / "built", video_root=short / "videos", ids=tuple(r["item_id"] for r in items),
                      llm_base_url=server.base_url, llm_model="stub", no_cache=True, clock="fixed:3")
        results = run(RunConfig(benchmark="phostream", **common), tmp_path / "run")
        report = write_replay(ReplayConfig(**common), tmp_path / "replay")
    assert results["protocol"]["clock"] == "fixed:3" and report["config"]["clock"] == "fixed:3"
    assert results["replay"]["clock"]["skipped_moments"] == runs["fixed:3"]["replay"]["clock"]["skipped_moments"]
    assert report["clock"]["skipped_moments"] == 52
