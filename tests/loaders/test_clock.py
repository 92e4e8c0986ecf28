"""``--clock free | live | fixed:S`` (docs/clock.md): a virtual clock per stream, so that a model's own latency decides
when its answers arrive. Played against the real stub server on 127.0.0.1 whose latency is set per call; the
figures under ``fixed:S`` and ``live`` are the ones computed here by hand from the crafted records and the stated
(or measured) latencies, ``fixed:0`` gives the ``free`` figures exactly."""

from __future__ import annotations

import json
import re

import pytest
from conftest import VALID

from streamcue.errors import ConfigError
from streamcue.io import write_jsonl
from streamcue.llm import LLMSettings
from streamcue.loaders.clock import Clock, clock_report
from streamcue.loaders.engine import play
from streamcue.loaders.protocols import PROTOCOLS
from streamcue.loaders.replay_config import ReplayConfig
from streamcue.loaders.strategies import make_strategy
from streamcue.metrics import evaluate
from streamcue.testing.stub_llm import StubLLMServer, message_text, request_schema

pytestmark = pytest.mark.llm_server

GOLD_1, GOLD_2 = "A red cup on the table.", "The red cup is in the sink."
#: An ESTP question on a 14 s clip: answers at [2, 4] (OR: optimal 2 s) and [10, 12.5] (optimal 10.5 s).
QA = dict(VALID["interval_qa"], clip={"start_s": 0.0, "end_s": 14.0})
#: A StreamingBench proactive item: asked at 2 s, polled from 3 s to 7 s, the gold output at 3 s.
PROACTIVE = {"schema_version": "1.0", "item_id": "p1", "video_id": "v1", "benchmark": "streamingbench",
             "task": "Proactive Output", "group": "proactive", "question": "Say when the ball lands.",
             "query_time_s": 2.0, "probes": [], "target": {"t_s": 3.0, "text": "now"},
             "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"}}
#: A LiveCook recording: one step, done at 10 s.
COOK = dict(VALID["guidance"], events=[
    {"t_s": 1.0, "type": "instruction", "text": "Boil water.", "plan_index": 0, "step_ids": [1],
     "mistake_category": None, "time_source": "annotation"},
    {"t_s": 10.0, "type": "success", "text": "Well done.", "plan_index": 0, "step_ids": [1],
     "mistake_category": None, "time_source": "annotation"},
    {"t_s": 10.0, "type": "finish", "text": "You have finished all the steps.", "plan_index": None, "step_ids": [],
     "mistake_category": None, "time_source": "annotation"}])


def now_of(body: dict) -> float:
    """The time of a call: its last frame's label."""
    return float(re.findall(r"Frame at ([\d.]+) s", json.dumps(body["messages"]))[-1])


def model(body: dict) -> str:
    """Yes to every "right time?" poll from 5 s on (StreamingBench) or always (ESTP); a LiveCook step is done from
    10 s on, with no mistake; an answer names the cup where it is at the call's last frame."""
    now, schema = now_of(body), request_schema(body)
    text = json.dumps(body["messages"])
    if schema is None:  # StreamingBench's official prompts: plain text
        return "now" if "Say when the ball lands." in text and "right time" not in text.lower() else \
            ("yes" if now >= 5 else "no")
    if "mistake" in schema.get("properties", {}):
        return json.dumps({"mistake": False, "feedback": ""})
    if schema.get("properties", {}).get("answer"):
        return json.dumps({"answer": "yes" if ("Boil water" not in text or now >= 10) else "no"})
    return json.dumps({"text": GOLD_1 if now < 7 else GOLD_2})


@pytest.fixture(scope="module")
def server():
    with StubLLMServer(model) as running:
        yield running


def played(server, kind, protocol, records, clock, duration=40.0, **options):
    settings = LLMSettings(base_url=server.base_url, model="stub-vl")
    name = PROTOCOLS[protocol].default_strategy[kind] if "strategy" not in options else options.pop("strategy")
    options = {**PROTOCOLS[protocol].defaults.get(name, {}), **options}
    strategy = make_strategy(name, settings, kind, protocol=protocol, use_cache=False, **options)
    return play(records, kind, strategy=strategy, protocol=PROTOCOLS[protocol], k=4, span="clip",
                durations={"v1": duration}, run_clock=clock)


def scored(tmp_path, metric, kind, records, predictions, **options):
    write_jsonl(tmp_path / f"{kind}.jsonl", records)
    write_jsonl(tmp_path / "pred.jsonl", predictions)
    return evaluate(metric, tmp_path / f"{kind}.jsonl", tmp_path / "pred.jsonl", **options)


def test_the_clock_setting_is_parsed_and_refused_in_one_line():
    assert [str(Clock.parse(v)) for v in ("free", "live", "fixed:2", "fixed:0.5", None)] == \
        ["free", "live", "fixed:2", "fixed:0.5", "free"]
    for bad in ("fast", "fixed", "fixed:-1", "fixed:nan", "fixed:inf"):
        with pytest.raises(ConfigError, match="--clock must be free, live or fixed:S"):
            Clock.parse(bad)
    assert ReplayConfig(records="x", clock="fixed:2.0").clock == "fixed:2"
    with pytest.raises(ConfigError, match="--timing asynchronous has its own"):
        ReplayConfig(records="x", clock="live", timing="asynchronous")


def test_estp_under_a_fixed_clock_scores_the_arrival_times(server, tmp_path):
    """Polling at 1 Hz, a poll and its answer 1 s each: the poll issued at 1 s answers at 3 s, the frame at 2 s is
    skipped; then 3 -> 5, 5 -> 7, ... 13 -> 15 (6 moments skipped). Answers name the cup seen at the poll's frame.
    ESTP-F1 (exact judge: answer score 5 or 1) by hand: g1 [2, 4] (window [1, 6], o = 2, scale 5) is matched by the
    answers at 3 and 5 (GOLD_1: time scores 4 and 2); g2 [10, 12.5] (window [9, 14.5], o = 10.5, scale 5.5) by 9, 11
    and 13 (GOLD_2: 5 (1 - 1.5/5.5), 5 (1 - 0.5/5.5), 5 (1 - 2.5/5.5)); 7 answers, FP = 7 - 2, FN = 0."""
    predictions, report = played(server, "interval_qa", "estp", [QA], "fixed:1", strategy="polling", hz=1.0)
    times = [r["t_s"] for r in predictions[0]["responses"]]
    assert times == [3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
    assert report["clock"]["skipped_moments"] == 6
    calls = report["samples"]
    assert [(c["issued_s"], c["arrived_s"]) for c in calls[:2]] == [(1.0, 2.0), (2.0, 3.0)]
    assert calls[1]["skipped"] == [2.0] and calls[0]["skipped"] == []
    s1 = ((5 + 4) + (5 + 2)) / 20
    s2 = sum(5 + 5 * (1 - d / 5.5) for d in (1.5, 0.5, 2.5)) / 30
    f1 = 2 * (s1 + s2) / (2 * (s1 + s2) + 5 + 0)
    result = scored(tmp_path, "estp-f1", "interval_qa", [QA], predictions, judge="exact")
    assert result["overall"]["f1"] == pytest.approx(f1, abs=1e-6)


@pytest.mark.parametrize("clock, yes_at, answer_at, skipped", [
    ("free", 5.0, 5.0, 0),        # polls at 3, 4 (no) and 5 (yes): "now" at 5, 2 s from the gold 3 s: right
    ("fixed:0.5", 5.5, 6.0, 0),   # 3 -> 3.5, 4 -> 4.5, 5 -> 5.5 (yes), the answer 5.5 -> 6.0: 3 s late
    ("fixed:1.5", 6.5, 8.0, 1),   # 3 -> 4.5 (the poll at 4 skipped), 5 -> 6.5 (yes), the answer 6.5 -> 8.0
])
def test_streamingbench_proactive_under_each_clock(server, tmp_path, clock, yes_at, answer_at, skipped):
    """StreamingBench's rule: the last turn of the dialogue within 2 s of the gold time (3 s) and holding "now"."""
    predictions, report = played(server, "active_item", "streamingbench", [PROACTIVE], clock, duration=10.0)
    said = [r for r in predictions[0]["responses"] if r.get("role") == "assistant"]
    assert said[-2]["t_s"] == yes_at and said[-1] == {"t_s": answer_at, "role": "assistant", "text": "now"}
    assert report["clock"]["skipped_moments"] == skipped
    result = scored(tmp_path, "streamingbench", "active_item", [PROACTIVE], predictions)
    assert result["per_item"]["p1"]["time_correct"] == (clock == "free")


@pytest.mark.parametrize("clock, success_at, skipped, ic_acc", [
    ("free", 10.0, 0, 1.0),
    ("fixed:2", 14.0, 6, 1.0),     # 5 -> 9 (no; 6, 7, 8 skipped), 10 -> 14 (yes; 11, 12, 13 skipped)
    ("fixed:10", 45.0, 33, 0.0),   # 5 -> 25 (no; 6..24 skipped), 25 -> 45 (yes; 26..39 skipped): 35 s late
])
def test_livecook_under_each_clock(server, tmp_path, clock, success_at, skipped, ic_acc):
    """The turn loop every 5 s asks "completed?" then "mistake?" (two calls of S s each); IC-Acc matches a success
    within 15 s of the true completion (10 s)."""
    predictions, report = played(server, "guidance", "livecook", [COOK], clock)
    success = [e["t_s"] for e in predictions[0]["events"] if e["type"] == "success"]
    assert success == [success_at]
    assert report["clock"]["skipped_moments"] == skipped
    result = scored(tmp_path, "livecook", "guidance", [COOK], predictions, bertscore=False)
    assert result["overall"]["ic_acc"] == ic_acc


def test_fixed_zero_gives_the_free_predictions_on_every_protocol(server):
    """The same records under free and fixed:0: the same predictions (so the same figures), every protocol but
    PhoStream's (tests/metrics/test_latency_cost.py plays it on its short build)."""
    from conftest import VALID as V

    cases = {("estp", "interval_qa"): [QA], ("livecook", "guidance"): [COOK],
             ("streamingbench", "active_item"): [PROACTIVE], ("vsas", "dense_caption"): [V["dense_caption"]],
             ("ovo-bench", "mc_question"): [dict(V["mc_question"], query_time_s=5.0)],
             ("ovo-bench", "active_item"): [V["active_item"]],
             ("streambench", "open_question"): [dict(V["open_question"], query_time_s=5.0)]}
    for (protocol, kind), records in cases.items():
        free, _ = played(server, kind, protocol, records, "free", duration=14.0)
        zero, report = played(server, kind, protocol, records, "fixed:0", duration=14.0)
        assert zero == free, protocol
        assert report["clock"]["setting"] == "fixed:0" and report["clock"]["skipped_moments"] == 0


def test_live_reads_measured_latencies_one_call_in_flight_per_stream_and_replays_them_from_the_cache():
    """Two ESTP questions played at once (concurrency 2) on a 4 s clip at 4 fps, a poll taking 0.2 s and an answer
    0.15 s at the server: each
    answer is stamped at its poll's frame + the two calls' measured latencies; the server never has two calls of
    one stream in flight while the two streams overlap; a second run answered from the cache gives the same
    times."""
    delays = {True: 0.2, False: 0.15}
    short = dict(QA, clip={"start_s": 0.0, "end_s": 4.0})
    other = dict(short, qa_id="q2", question="Tell me when you see a blue cup.")

    def delay_of(body):
        return delays["answer" in (request_schema(body) or {}).get("properties", {})]

    with StubLLMServer(model, delay_of=delay_of) as slow:
        settings = LLMSettings(base_url=slow.base_url, model="stub-vl")
        runs = []
        for _ in range(2):
            strategy = make_strategy("polling", settings, "interval_qa", hz=4.0)
            runs.append(play([short, other], "interval_qa", strategy=strategy, protocol=PROTOCOLS["estp"], k=4,
                             fps=4.0, span="clip", durations={"v1": 14.0}, concurrency=2, run_clock="live"))
        spans = list(slow.spans)
    (first, report), (again, cached) = runs
    assert all(s["cached"] for s in cached["samples"]) and again == first
    for prediction in first:
        mine = [s for s in report["samples"] if s["record_id"] == prediction["qa_id"]]
        pairs = list(zip(mine[::2], mine[1::2]))
        assert [r["t_s"] for r in prediction["responses"]] == [pytest.approx(w["t_s"] + w["latency_s"]
                                                                             + a["latency_s"], abs=1e-5)
                                                               for w, a in pairs]
        assert all(w["latency_s"] >= 0.2 and a["latency_s"] >= 0.15 for w, a in pairs)
        skipped = [m for c in mine for m in c["skipped"]]
        assert skipped and all(any(c["issued_s"] <= m < c["arrived_s"] for c in mine) for m in skipped)
    by_stream = {}
    for start, end, body in spans:
        by_stream.setdefault("blue" in json.dumps(body), []).append((start, end))
    for mine in by_stream.values():
        mine.sort()
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:]))  # one call in flight per stream
    blue, red = by_stream[True], by_stream[False]
    assert any(s < e2 and s2 < e for s, e in blue for s2, e2 in red)  # the streams still overlap
    assert report["clock"]["answers"] == len(report["samples"]) // 2


def test_a_live_cache_hit_without_a_kept_latency_is_refused():
    with pytest.raises(ConfigError, match="a cached answer kept no latency"):
        Clock.parse("live").latency(None, cached=True)
    assert clock_report("free", [], 0) == {"setting": "free", "skipped_moments": 0, "answers": 0}
    assert message_text({"content": "x"}) == "x"
