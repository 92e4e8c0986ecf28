"""ESTP-F1: hand-computed golden cases (full precision) and properties."""

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcue.metrics.estp import EstpConfig
from streamcue.metrics.estp import Answer, Response, match_sets, optimal_time, score_question, time_score

CFG = EstpConfig()


def exact_scores(answers, responses):
    """Answer score 5 for exactly the reference text, else 1 (the exact judge's scale)."""
    return {(k, i): 5.0 if r.text == a.text else 1.0
            for k, a in enumerate(answers) for i, r in enumerate(responses)}


def score(task_type, answers, responses, config=CFG):
    return score_question(task_type, answers, responses, exact_scores(answers, responses), config)


def test_optimal_time_by_task_type_and_explicit_override():
    a = Answer(10, 20, "x")
    assert optimal_time("OR", a) == 10 and optimal_time("NAR", a) == 15
    assert optimal_time("NAR", Answer(10, 20, "x", optimal_s=12)) == 12


def test_golden_two_answers_repeats_and_misses():
    # NAR: midpoint optimal times 15 and 42; windows [9, 22] and [39, 46].
    answers = [Answer(10, 20, "open the fridge"), Answer(40, 44, "take milk")]
    responses = [Response(8, "open the fridge"),    # before the window: FP
                 Response(12, "open the fridge"),   # match: (5 + 5(1 - 3/13)) / 10 = 23/26
                 Response(30, "nothing"),           # FP
                 Response(47, "take milk"),         # after the window: FP
                 Response(21, "fridge")]            # match: (1 + 5(1 - 6/13)) / 10 = 24/65
    result = score("NAR", answers, responses)
    s1 = (F(23, 26) + F(24, 65)) / 2                  # 163/260
    assert result.answer_scores == [pytest.approx(float(s1), abs=1e-15), 0.0]
    assert (result.matched, result.fp, result.fn) == (1, 4, 1)
    assert result.f1 == pytest.approx(float(F(163, 813)), abs=1e-15)
    assert result.precision == pytest.approx(float(F(163, 1203)), abs=1e-15)
    assert result.recall == pytest.approx(float(F(163, 423)), abs=1e-15)


def test_golden_time_score_and_scale():
    # OR: optimal at start; scale = max(1, 14 - 10 + 1 + 2) = 7; |11 - 10| = 1.
    assert time_score(11, "OR", Answer(10, 14, "x"), CFG) == pytest.approx(30 / 7, abs=1e-15)
    # Far away: clipped at 0.
    assert time_score(100, "OR", Answer(10, 14, "x"), CFG) == 0.0


def test_no_responses_scores_zero():
    result = score("OR", [Answer(1, 2, "a")], [])
    assert (result.f1, result.precision, result.recall, result.fn, result.fp) == (0.0, 0.0, 0.0, 1, 0)


def test_responses_outside_every_window_are_false_positives():
    result = score("OR", [Answer(10, 12, "a")], [Response(0, "a"), Response(8.9, "a"), Response(14.1, "a")])
    assert (result.f1, result.fp, result.fn) == (0.0, 3, 1)


def test_window_edges_are_inclusive():
    assert match_sets([Answer(10, 12, "a")], [Response(9, "a"), Response(14, "a")], CFG) == [[0, 1]]


def test_one_response_matching_two_overlapping_intervals():
    answers = [Answer(10, 20, "a"), Answer(15, 25, "a")]
    result = score("OR", answers, [Response(16, "a")])
    assert (result.matched, result.fp, result.fn) == (2, 0, 0)   # FP = max(0, 1 - 2)
    # S(g1) = (5 + 5(1 - 6/13)) / 10 = 10/13 ; S(g2) = (5 + 5(1 - 1/13)) / 10 = 125/130
    assert result.answer_scores == pytest.approx([10 / 13, 125 / 130], abs=1e-15)
    assert result.f1 == 1.0


def test_zero_length_interval():
    # [10, 10], scale = max(1, 0 + 3) = 3, response at 12: time score 5/3, S = (5 + 5/3)/10 = 2/3.
    result = score("OR", [Answer(10, 10, "a")], [Response(12, "a")])
    assert result.answer_scores == [pytest.approx(2 / 3, abs=1e-15)]


def test_anticipation_and_latency_are_parameters():
    config = EstpConfig(anticipation_s=0.0, latency_s=0.0)
    assert match_sets([Answer(10, 12, "a")], [Response(9.5, "a"), Response(12, "a")], config) == [[1]]


def test_judge_scores_outside_the_scale_are_refused():
    with pytest.raises(ValueError, match="outside"):
        score_question("OR", [Answer(1, 2, "a")], [Response(1, "a")], {(0, 0): 7.0}, CFG)


answers_st = st.lists(
    st.tuples(st.floats(0, 100), st.floats(0, 30), st.sampled_from(["a", "b"])).map(
        lambda t: Answer(t[0], t[0] + t[1], t[2])),
    min_size=1, max_size=5)
responses_st = st.lists(st.tuples(st.floats(0, 140), st.sampled_from(["a", "b", "c"])).map(lambda t: Response(*t)),
                        max_size=8)
task_st = st.sampled_from(["OR", "NAR", "TRC", "AR"])


@settings(max_examples=200, deadline=None)
@given(answers_st, responses_st, task_st, st.randoms())
def test_property_range_and_order_invariance(answers, responses, task_type, rnd):
    result = score(task_type, answers, responses)
    assert 0.0 <= result.f1 <= 1.0 and 0.0 <= result.precision <= 1.0 and 0.0 <= result.recall <= 1.0
    shuffled = list(responses)
    rnd.shuffle(shuffled)
    assert score(task_type, answers, shuffled).f1 == pytest.approx(result.f1, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(answers_st, task_st)
def test_property_perfect_predictions_score_one(answers, task_type):
    # One exact answer at the optimal time of each answer; spread the answers so windows don't overlap.
    spread = [Answer(a.start_s + 200 * k, a.end_s + 200 * k, a.text) for k, a in enumerate(answers)]
    responses = [Response(optimal_time(task_type, a), a.text) for a in spread]
    result = score(task_type, spread, responses)
    assert result.f1 == 1.0
    assert result.answer_scores == pytest.approx([1.0] * len(spread))


def test_saturation_one_in_window_response_per_interval_scores_one_whatever_its_quality():
    # Eq. 11 as printed: FP = FN = 0 gives F1 = 2ΣS / 2ΣS = 1. Wrong answers (score 1), late, still F1 = 1.
    answers = [Answer(10, 12, "a red cup"), Answer(40, 42, "a knife")]
    result = score("OR", answers, [Response(14, "nonsense"), Response(44, "nonsense")])
    assert (result.fp, result.fn, result.f1) == (0, 0, 1.0)
    # S = (1 + 5(1 - 4/5)) / 10 = 0.2 per answer: the quality shows only in the answer scores.
    assert result.answer_scores == pytest.approx([0.2, 0.2], abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.floats(0, 1), st.booleans()), min_size=1, max_size=6))
def test_property_saturation_holds_for_any_quality(specs):
    # Intervals 100 s apart (windows never overlap), one response anywhere in each window, right or wrong text.
    answers, responses = [], []
    for k, (length, where, right) in enumerate(specs):
        start = 100.0 * k
        answers.append(Answer(start, start + length, "the answer"))
        # Clamped to the window [s - 1, e + 2]: where = 1 must not land a rounding error past e + 2.
        t = min(start + length + 2, max(start - 1, start - 1 + where * (length + 3)))
        responses.append(Response(t, "the answer" if right else "nonsense"))
    result = score("OR", answers, responses)
    assert (result.fp, result.fn, result.f1) == (0, 0, 1.0)
