"""LiveCook metrics: golden cases and properties."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcue.metrics.livecook import Event, ic_hits, match_mistakes, prf, rouge_l

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


def test_prf_edge_cases():
    assert prf(0, 0, 0) == (0.0, 0.0, 0.0)
    assert prf(0, 3, 0) == (0.0, 0.0, 0.0)


def test_rouge_l_golden():
    # LCS("add more salt", "more salt needed") = 2 tokens: P = 2/3, R = 2/3.
    assert rouge_l(["add more salt"], ["more salt needed"]) == [pytest.approx(2 / 3, abs=1e-12)]


events = st.lists(st.tuples(st.floats(0, 200), st.sampled_from(["success", "mistake"])).map(lambda t: Event(t[0], t[1], "x")), max_size=10)


@settings(max_examples=200, deadline=None)
@given(events, events)
def test_property_matching_is_one_to_one_and_in_window(truth, pred):
    pairs = match_mistakes(truth, pred, 15.0)
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    assert all(abs(truth[i].t_s - pred[j].t_s) <= 15.0 for i, j in pairs)
    n_pred = sum(e.type == "mistake" for e in pred)
    n_true = sum(e.type == "mistake" for e in truth)
    assert all(0.0 <= x <= 1.0 for x in prf(len(pairs), n_pred, n_true))


@settings(max_examples=100, deadline=None)
@given(events)
def test_property_perfect_predictions(truth):
    assert all(ic_hits(truth, truth, 15.0))
    n_true = sum(e.type == "mistake" for e in truth)
    assert len(match_mistakes(truth, truth, 15.0)) == n_true
