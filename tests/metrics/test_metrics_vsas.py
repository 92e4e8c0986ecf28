"""VSAS accuracy/consistency: golden cases and properties."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcue.metrics.vsas import VsasConfig
from streamcue.metrics.estp import Response
from streamcue.metrics.vsas import (
    consistency,
    distance,
    extrapolate,
    group_mean,
    longest_common_subsequence,
    longest_common_substring,
)


def test_extrapolation_floor_last_in_second_and_empty_start():
    responses = [Response(1.9, "dog"), Response(1.2, "cat sits"), Response(3.0, "bird"), Response(9.0, "late")]
    assert extrapolate(responses, 5) == ["", "dog", "dog", "bird", "bird"]


def test_extrapolation_equal_times_take_the_later_in_the_list():
    assert extrapolate([Response(0.5, "a"), Response(0.5, "b")], 1) == ["b"]


def test_golden_consistency_variants():
    truth = ["a cat", "a cat", "a dog"]
    responses = ["a cat", "a dog", "a dog"]
    # D("a cat", "a dog") = 1 - 2/5 = 0.6 ; terms: 1 - 0.6 + 0 = 0.4 and 1 - 0 + 0.6 = 1.6
    assert distance("a cat", "a dog") == pytest.approx(0.6, abs=1e-15)
    assert consistency(truth, responses, VsasConfig()) == pytest.approx(1.4 / 3, abs=1e-15)
    assert consistency(truth, responses, VsasConfig(clip="total")) == pytest.approx(2 / 3, abs=1e-15)
    assert consistency(truth, responses, VsasConfig(denominator="pairs")) == pytest.approx(0.7, abs=1e-15)


def test_substring_versus_subsequence():
    assert longest_common_substring("abcxd", "abcyd") == 3
    assert longest_common_subsequence("abcxd", "abcyd") == 4
    assert distance("abcxd", "abcyd", "subsequence") == pytest.approx(0.2, abs=1e-15)


def test_empty_captions():
    assert distance("", "") == 0.0 and distance("", "x") == 1.0
    # ["", "x"] vs ["", ""]: term = 1 - 0 + 1 -> clipped to 1, divided by N = 2
    assert consistency(["", "x"], ["", ""], VsasConfig()) == 0.5
    assert consistency(["only"], ["x"], VsasConfig()) == 1.0


def test_group_mean_is_the_mean_of_group_means():
    assert group_mean([1.0, 1.0, 0.0], ["a", "a", "b"]) == 0.5


def naive_substring(a, b):
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            best = max(best, k)
    return best


@settings(max_examples=300, deadline=None)
@given(st.text("abc é", max_size=25), st.text("abc é", max_size=25))
def test_property_vectorised_substring_matches_the_definition(a, b):
    longest_common_substring.cache_clear()
    assert longest_common_substring(a, b) == naive_substring(a, b) == longest_common_substring(b, a)


texts = st.lists(st.sampled_from(["a cat", "a dog", "", "two cats on a mat"]), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(texts, texts, st.sampled_from([VsasConfig(), VsasConfig(clip="total"), VsasConfig(common="subsequence")]))
def test_property_consistency_in_range(truth, responses, config):
    responses = (responses * len(truth))[: len(truth)] if responses else [""] * len(truth)
    assert 0.0 <= consistency(truth, responses, config) <= 1.0


@settings(max_examples=100, deadline=None)
@given(texts)
def test_property_perfect_predictions(truth):
    assert consistency(truth, list(truth), VsasConfig(denominator="pairs")) == 1.0
    assert consistency(truth, list(truth),
                       VsasConfig()) == pytest.approx(1.0 if len(truth) == 1 else (len(truth) - 1) / len(truth))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.sampled_from(["x", "y", "z"])), max_size=10,
                unique_by=lambda t: t[0]), st.randoms())
def test_property_extrapolation_ignores_response_order(pairs, rnd):
    responses = [Response(t, s) for t, s in pairs]
    shuffled = list(responses)
    rnd.shuffle(shuffled)
    assert extrapolate(responses, 20) == extrapolate(shuffled, 20)


def test_v2_is_the_default_and_clips_the_total():
    from streamcue.metrics.configs import load_config

    assert load_config("vsas").version == 2 and load_config("vsas").clip == "total"
    assert load_config("vsas", 1).clip == "term"
    truth, responses = ["a cat", "a cat", "a dog"], ["a cat", "a dog", "a dog"]
    # Terms 0.4 and 1.6: v1 clips 1.6 to 1 (1.4 / 3); v2 keeps it (2.0 / 3).
    assert consistency(truth, responses, load_config("vsas", 1)) == pytest.approx(1.4 / 3, abs=1e-15)
    assert consistency(truth, responses, load_config("vsas")) == pytest.approx(2 / 3, abs=1e-15)


@pytest.mark.llm_server
def test_a_vsas_run_answers_every_second_and_shows_its_consistency(tmp_path):
    """Issue 49: ``run vsas`` polled at ESTP-Bench's 0.175 Hz with its prompt (on a 12 s clip 2 of 3 tasks got no
    answer); by default it now asks each second, as VSAS-Bench does, and consistency is a row of the run's tables."""
    import json

    from conftest import VALID, cli

    from streamcue.testing.stub_llm import StubLLMServer

    gt = tmp_path / "built"
    gt.mkdir()
    captions = [{"t_s": t, "text": "a test pattern"} for t in range(6)]
    tasks = [{k: v for k, v in dict(VALID["dense_caption"], task_id=f"t{n}", captions=captions,
                                                    prompt=f"Task {n}: what is happening now?").items()
              if k != "verification"} | {"verification": {"status": "unverified"}} for n in range(3)]
    (gt / "dense_caption.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (gt / "videos.jsonl").write_text(json.dumps(dict(VALID["video"], duration_s=6.0)) + "\n")
    with StubLLMServer(lambda body: json.dumps({"speak": True, "text": "a test pattern"})) as server:
        code, _, err = cli("run", "vsas", gt, "--out", tmp_path / "run", "--no-video", "--judge", "exact",
                           "--llm-base-url", server.base_url, "--llm-model", "stub-model")
        asked = len(server.requests)
    assert code == 0, err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["protocol"]["kinds"]["dense_caption"]["strategy"] == "single-call"
    assert asked == 3 * 6  # one call a second, per task
    assert results["counts"]["answered"] == 3
    row = results["tables"]["group"]["consistency"]
    assert row["estimate"] == pytest.approx(results["report"]["overall"]["consistency"]) == pytest.approx(5 / 6)
    assert "consistency" in (tmp_path / "run" / "report.html").read_text()
