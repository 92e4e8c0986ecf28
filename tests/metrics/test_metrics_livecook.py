"""LiveCook metrics: golden cases and properties."""

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcue.metrics import evaluate
from streamcue.metrics.livecook import (Event, ic_hits, ic_matches, match_mistakes, match_mistakes_maximum, plan_steps,
                                        prf, rouge_l)
from streamcue.metrics.timing import window_matching

TRUTH = [Event(10, "success", "ok"), Event(30, "mistake", "add more salt"), Event(50, "success", "ok"),
         Event(70, "mistake", "stir slower"), Event(100, "success", "ok")]
PRED = [Event(24, "success", "done"), Event(35, "mistake", "oops"), Event(40, "mistake", "more salt needed"),
        Event(66, "success", "done"), Event(90, "mistake", "stir slower please")]


def test_golden_ic_acc():
    # 24 is within 15 s of 10; 66 is 16 s from 50 and 34 s from 100.
    assert ic_hits(TRUTH, PRED, 15.0) == [True, False, False]
    assert ic_hits(TRUTH, PRED, 16.0) == [True, True, False]


def test_golden_mistake_matching_closest_first():
    # Candidates within 15 s: (30, 35) at 5 s, (30, 40) at 10 s; 90 is 20 s from 70.
    assert match_mistakes(TRUTH, PRED, 15.0) == [(1, 1)]
    assert prf(1, 3, 2) == pytest.approx((1 / 3, 1 / 2, 0.4), abs=1e-15)


def test_closest_first_is_not_chronological_greedy():
    truth = [Event(10, "mistake", "a"), Event(20, "mistake", "b")]
    pred = [Event(16, "mistake", "x"), Event(26, "mistake", "y")]
    # (20, 16) is closest (4 s) and wins; 10 then has nothing within 15 s of it except 16, already used.
    assert match_mistakes(truth, pred, 15.0) == [(1, 0)]


def test_prf_edge_cases_are_undefined_not_zero():
    assert prf(0, 0, 0) == (None, None, None)
    assert prf(0, 3, 0) == (0.0, None, 0.0)
    assert prf(0, 0, 2) == (None, 0.0, 0.0)
    assert prf(2, 4, 2) == (0.5, 1.0, pytest.approx(2 / 3, abs=1e-15))


def test_rouge_l_golden():
    # LCS("add more salt", "more salt needed") = 2 tokens: P = 2/3, R = 2/3.
    assert rouge_l(["add more salt"], ["more salt needed"]) == [pytest.approx(2 / 3, abs=1e-12)]


events = st.lists(st.tuples(st.floats(0, 200), st.sampled_from(["success", "mistake"]))
                  .map(lambda t: Event(t[0], t[1], "x")), max_size=10)


@settings(max_examples=200, deadline=None)
@given(events, events)
def test_property_matching_is_one_to_one_and_in_window(truth, pred):
    pairs = match_mistakes(truth, pred, 15.0)
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    assert all(abs(truth[i].t_s - pred[j].t_s) <= 15.0 for i, j in pairs)
    n_pred = sum(e.type == "mistake" for e in pred)
    n_true = sum(e.type == "mistake" for e in truth)
    assert all(x is None or 0.0 <= x <= 1.0 for x in prf(len(pairs), n_pred, n_true))


@settings(max_examples=100, deadline=None)
@given(events)
def test_property_perfect_predictions(truth):
    assert all(ic_hits(truth, truth, 15.0))
    n_true = sum(e.type == "mistake" for e in truth)
    assert len(match_mistakes(truth, truth, 15.0)) == n_true


# ---- v2: successes for their own plan step, maximum matching of mistakes -------------------------------------------

def _score(tmp_path, truth_events, pred_events, version):
    (tmp_path / "gt.jsonl").write_text(json.dumps({"video_id": "v", "events": truth_events}) + "\n")
    (tmp_path / "pred.jsonl").write_text(json.dumps({"video_id": "v", "events": pred_events}) + "\n")
    return evaluate("livecook", tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", config_version=version, bertscore=False)


def test_issue_case_mistakes_10_30_vs_22_40(tmp_path):
    # Window 15 s. Greedy closest-first takes (30, 22) (8 s) first; 10 is then 30 s from 40: one pair.
    # The maximum matching pairs (10, 22) and (30, 40): precision = recall = 1.
    truth = [{"t_s": 10.0, "type": "mistake", "text": "a"}, {"t_s": 30.0, "type": "mistake", "text": "b"}]
    pred = [{"t_s": 22.0, "type": "mistake", "text": "x"}, {"t_s": 40.0, "type": "mistake", "text": "y"}]
    v1 = _score(tmp_path, truth, pred, 1)
    v2 = _score(tmp_path, truth, pred, 2)
    assert (v1["overall"]["precision"], v1["overall"]["recall"]) == (0.5, 0.5)
    assert (v2["overall"]["precision"], v2["overall"]["recall"], v2["overall"]["f1"]) == (1.0, 1.0, 1.0)
    assert v1["config_version"] == "livecook.v1" and v2["config_version"] == "livecook.v2"


def test_default_config_is_v2_and_the_report_says_so(tmp_path):
    report = _score(tmp_path, [{"t_s": 10.0, "type": "success", "text": "ok"}], [], None)
    assert report["config_version"] == "livecook.v2" and report["config"]["version"] == 2
    assert report["config"]["success_matching"] == "plan_step" and report["config"]["mistake_matching"] == "maximum"


def test_maximum_matching_ties_by_smallest_total_offset():
    # Both matchings have two pairs; (0-5, 10-14) offsets 5 + 4 = 9 beats (0-14, 10-5) 14 + 5 = 19.
    assert window_matching([0.0, 10.0], [5.0, 14.0], 15.0) == [(0, 0), (1, 1)]
    assert window_matching([0.0, 10.0], [14.0, 5.0], 15.0) == [(0, 1), (1, 0)]
    assert window_matching([0.0], [15.0], 15.0) == [(0, 0)] and window_matching([0.0], [15.5], 15.0) == []
    assert window_matching([], [1.0], 15.0) == [] and window_matching([1.0], [], 15.0) == []


def test_a_success_counts_only_for_its_own_plan_step(tmp_path):
    truth = [{"t_s": 0.0, "type": "instruction", "text": "Boil.", "plan_index": 0},
             {"t_s": 10.0, "type": "success", "text": "ok", "plan_index": 0},
             {"t_s": 10.0, "type": "instruction", "text": "Pour.", "plan_index": 1},
             {"t_s": 40.0, "type": "success", "text": "ok", "plan_index": 1}]
    wrong_step = [{"t_s": 12.0, "type": "success", "text": "done", "plan_index": 1}]
    assert _score(tmp_path, truth, wrong_step, 1)["overall"]["ic_acc"] == 0.5
    assert _score(tmp_path, truth, wrong_step, 2)["overall"]["ic_acc"] == 0.0
    right = [{"t_s": 12.0, "type": "success", "text": "done", "plan_index": 0},
             {"t_s": 38.0, "type": "success", "text": "done", "plan_index": 1}]
    assert _score(tmp_path, truth, right, 2)["overall"]["ic_acc"] == 1.0


def test_one_prediction_completes_at_most_one_ground_truth_success():
    # Two parallel actions of step 0 end at 10 s and 12 s; one predicted success at 11 s.
    truth = [Event(10, "success", "ok", 0), Event(12, "success", "ok", 0)]
    pred = [Event(11, "success", "done", 0)]
    assert ic_hits(truth, pred, 15.0) == [True, True]  # v1
    assert len(ic_matches(truth, pred, 15.0)) == 1      # v2


def test_without_plan_index_the_models_instructions_decide_the_step():
    pred = [Event(1, "instruction", "Boil."), Event(9, "success", "done"), Event(10, "instruction", "Pour."),
            Event(20, "mistake", "spill"), Event(41, "success", "done")]
    assert plan_steps(pred) == [0, 0, 1, 1, 1]
    assert plan_steps([Event(1, "success", "early"), Event(2, "instruction", "Boil.")]) == [None, 0]
    # No instruction at all: the k-th success closes step k.
    assert plan_steps([Event(30, "success", "x"), Event(40, "mistake", "y"), Event(60, "success", "x")]) == [0, None, 1]
    truth = [Event(0, "instruction", "Boil.", 0), Event(10, "success", "ok", 0), Event(10, "instruction", "Pour.", 1),
             Event(40, "success", "ok", 1)]
    assert ic_matches(truth, pred, 15.0) == [(1, 1), (3, 4)]
    # The same two successes, but the second is said before the model moved on to step 1.
    late = [Event(1, "instruction", "Boil."), Event(9, "success", "done"), Event(41, "success", "done")]
    assert ic_matches(truth, late, 15.0) == [(1, 1)]


def _brute_force(truth_s, pred_s, window_s):
    """Largest matching, then smallest total offset, by trying every injection."""
    best = (0, 0.0)
    small, large, flip = (truth_s, pred_s, False) if len(truth_s) <= len(pred_s) else (pred_s, truth_s, True)
    for perm in itertools.permutations(range(len(large)), len(small)):
        pairs = [(a, b) for a, b in zip(range(len(small)), perm) if abs(small[a] - large[b]) <= window_s]
        key = (len(pairs), -sum(abs(small[a] - large[b]) for a, b in pairs))
        if key > (best[0], -best[1]):
            best = (len(pairs), -key[1])
    return best


times = st.lists(st.integers(0, 120).map(float), max_size=5)


@settings(max_examples=300, deadline=None)
@given(times, times)
def test_property_window_matching_is_maximum_and_minimal_offset(truth_s, pred_s):
    pairs = window_matching(truth_s, pred_s, 15.0)
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    assert all(abs(truth_s[i] - pred_s[j]) <= 15.0 for i, j in pairs)
    size, offset = _brute_force(truth_s, pred_s, 15.0)
    assert len(pairs) == size
    assert sum(abs(truth_s[i] - pred_s[j]) for i, j in pairs) == pytest.approx(offset)


@settings(max_examples=200, deadline=None)
@given(events, events)
def test_property_v2_never_finds_fewer_mistake_pairs_and_perfect_scores_one(truth, pred):
    assert len(match_mistakes_maximum(truth, pred, 15.0)) >= len(match_mistakes(truth, pred, 15.0))
    assert len(ic_matches(truth, truth, 15.0)) == sum(e.type == "success" for e in truth)
    assert len(match_mistakes_maximum(truth, truth, 15.0)) == sum(e.type == "mistake" for e in truth)


@pytest.mark.parametrize("pred_event, args, message", [
    ({"plan_index": -1}, [], "pred.jsonl:1, record video_id=v: $.events[0].plan_index: -1 is less than the minimum "
                             "of 0"),
    ({"plan_index": "2"}, [], "pred.jsonl:1, record video_id=v: $.events[0].plan_index: '2' is not of type"),
    ({}, ["--param", "success_matching=bogus"], "error: livecook success_matching must be one of ('any', 'plan_step')"),
    ({}, ["--config-version", "3"], "error: no configuration livecook.v3; known: livecook.v1..v2"),
])
def test_cli_refuses_bad_plan_steps_and_configs_in_one_line(tmp_path, monkeypatch, pred_event, args, message):
    from conftest import cli_run

    (tmp_path / "gt.jsonl").write_text(json.dumps({"video_id": "v", "events": [
        {"t_s": 10.0, "type": "success", "text": "ok", "plan_index": 0}]}) + "\n")
    (tmp_path / "pred.jsonl").write_text(json.dumps({"video_id": "v", "events": [
        {"t_s": 10.0, "type": "success", "text": "ok", **pred_event}]}) + "\n")
    monkeypatch.chdir(tmp_path)  # the files by the names the message gives
    result = cli_run("evaluate", "livecook", "--gt", "gt.jsonl", "--pred", "pred.jsonl", "--no-bertscore", *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
