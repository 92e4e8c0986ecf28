"""The reasoning metric (MiRA rubric) with a scripted judge over real HTTP: metamorphic tests and the CLI."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from streamcue.io import write_jsonl
from streamcue.metrics import evaluate
from streamcue.metrics.mira import AXES, same_answer
from streamcue.metrics.text import token_f1
from streamcue.testing.stub_llm import StubLLMServer, message_text

from conftest import cli_run

pytestmark = pytest.mark.llm_server

DATA = Path(__file__).parents[1] / "data"
TIME = re.compile(r"\b\d+:\d\d\b")

GT = [
    {"id": "m1", "question": "What does the cook add after the onions turn brown?", "task_type": "temporal",
     "options": ["Salt", "Garlic", "Water", "Tomatoes", "Oil"], "answer": "Garlic",
     "reference_trace": "At 1:10 the cook puts onions in the pan. At 3:40 the onions turn brown. "
                        "At 3:55 the cook adds chopped garlic. So the answer is garlic."},
    {"id": "m2", "question": "How many eggs are cracked in total?", "task_type": "counting",
     "answer": "3",
     "reference_trace": "At 0:20 the first egg is cracked into the bowl. At 0:45 the second egg is cracked. "
                        "At 1:30 a third egg is cracked. No other egg appears later, so three eggs."},
    {"id": "m3", "question": "Why does the player stop running?", "task_type": "causal", "answer": "a foul",
     "reference_trace": "At 12:05 the player sprints down the wing. At 12:09 a defender trips him. "
                        "At 12:10 the referee blows the whistle for a foul, and play stops."},
]


def _sentences(text):
    return [s.strip() for s in re.split(r"(?<=\.)\s+", text) if s.strip()]


def _rating(share):
    return 1 + round(2 * max(0.0, min(1.0, share)))


def scripted_judge(body):
    """Rates a trace against the reference the way the rubric reads, from the texts alone."""
    text = message_text(body["messages"][-1])
    ref = re.search(r"Reference:\nAnswer: .*\nReasoning: (.*)\n\nModel:", text, re.S).group(1)
    res = re.search(r"Model:\nAnswer: .*\nReasoning: (.*)\n\nReply with", text, re.S).group(1)
    if res == "(none)":
        return json.dumps({name: 1 for name in AXES})
    ref_steps, res_steps = _sentences(ref), _sentences(res)
    strip = lambda s: TIME.sub("", s)  # noqa: E731
    matches = [max(range(len(res_steps)), key=lambda j: token_f1(strip(r), strip(res_steps[j]))) for r in ref_steps]
    covered = [token_f1(strip(r), strip(res_steps[j])) >= 0.5 for r, j in zip(ref_steps, matches)]
    order = [j for j, ok in zip(matches, covered) if ok]
    in_order = sum(a < b for a, b in zip(order, order[1:])) / max(1, len(order) - 1)
    ref_times = set(TIME.findall(ref))
    return json.dumps({
        "perceptual_correctness": _rating(token_f1(strip(ref), strip(res))),
        "temporal_localization": _rating(len(ref_times & set(TIME.findall(res))) / max(1, len(ref_times))),
        "logical_reasoning": _rating(in_order if len(order) > 1 else float(bool(order))),
        "completeness": _rating(sum(covered) / len(ref_steps)),
    })


@pytest.fixture
def server():
    with StubLLMServer(scripted_judge) as stub:
        yield stub


def _score(tmp_path, server, preds, gt=GT, name="pred"):
    write_jsonl(tmp_path / "gt.jsonl", gt)
    write_jsonl(tmp_path / f"{name}.jsonl", preds)
    return evaluate("reasoning", tmp_path / "gt.jsonl", tmp_path / f"{name}.jsonl",
                    judge_options={"base_url": server.base_url, "model": "scripted-judge"})


def _preds(transform=lambda trace: trace, answer=lambda g: g["answer"]):
    return [{"id": g["id"], "answer": answer(g), "trace": transform(g["reference_trace"])} for g in GT]


def test_the_reference_itself_scores_one_on_every_axis(tmp_path, server):
    report = _score(tmp_path, server, _preds())
    assert report["overall"]["mira_total"] == 1.0 and report["overall"]["answer_accuracy"] == 1.0
    assert all(report["overall"][name] == 1.0 for name in AXES)
    assert set(report) == {"metric", "config_version", "config", "judge", "overall", "groups", "per_item",
                           "missing_predictions",
                           "streamcue_version"}
    assert report["config"] == {"version": 1, "scale_max": 3} and report["config_version"] == "reasoning.v1"
    assert report["judge"]["judge"] == "mira" and report["judge"]["calls"] == 3
    assert set(report["groups"]["task_type"]) == {"temporal", "counting", "causal"}


def test_removing_timestamps_lowers_temporal_localisation_only(tmp_path, server):
    full = _score(tmp_path, server, _preds(), name="full")["overall"]
    timeless = _score(tmp_path, server, _preds(lambda t: TIME.sub("", t)), name="timeless")["overall"]
    assert timeless["temporal_localization"] == 0.0 < full["temporal_localization"]
    for name in ("perceptual_correctness", "logical_reasoning", "completeness"):
        assert timeless[name] == full[name]


def test_shuffled_steps_lower_logical_reasoning(tmp_path, server):
    reverse = _score(tmp_path, server, _preds(lambda t: " ".join(reversed(_sentences(t)))))["overall"]
    assert reverse["logical_reasoning"] < 1.0
    assert reverse["completeness"] == 1.0 and reverse["temporal_localization"] == 1.0


def test_a_truncated_trace_lowers_completeness(tmp_path, server):
    first = _score(tmp_path, server, _preds(lambda t: _sentences(t)[0]))["overall"]
    assert first["completeness"] <= 0.5 and first["mira_total"] < 1.0


def test_item_order_does_not_change_scores(tmp_path, server):
    base = _score(tmp_path, server, _preds(lambda t: _sentences(t)[0]), name="a")
    shuffled_gt, shuffled_pred = GT[::-1], _preds(lambda t: _sentences(t)[0])
    random.Random(1).shuffle(shuffled_pred)
    other = _score(tmp_path, server, shuffled_pred, gt=shuffled_gt, name="b")
    assert other["per_item"] == base["per_item"] and other["overall"] == base["overall"]


def test_empty_and_missing_traces_score_the_floor_without_a_call(tmp_path, server):
    preds = [{"id": "m1", "answer": "Garlic", "trace": "  "}]
    report = _score(tmp_path, server, preds)
    assert server.completions == 0 and report["judge"]["calls"] == 0
    assert report["missing_predictions"] == ["m2", "m3"]
    assert report["per_item"]["m1"] == {"answer_correct": True, **{name: 0.0 for name in AXES}, "mira_total": 0.0}
    assert report["overall"]["mira_total"] == 0.0 and report["overall"]["answer_accuracy"] == pytest.approx(1 / 3)


def test_a_rerun_makes_no_judge_call(tmp_path, server):
    first = _score(tmp_path, server, _preds(lambda t: _sentences(t)[0]))
    calls = server.completions
    second = _score(tmp_path, server, _preds(lambda t: _sentences(t)[0]))
    assert server.completions == calls and second["judge"]["cache_hits"] == 3
    assert second["overall"] == first["overall"]


def test_answers_letters_and_option_texts():
    options = ["Salt", "Garlic", "Water"]
    assert same_answer("Garlic", "B", options) and same_answer("B", "garlic.", options)
    assert same_answer("B", "(b)", None) and not same_answer("A", "B", options)
    assert not same_answer("Garlic", "A", options) and same_answer("a foul", "A foul!")


def test_config_snapshot():
    """An edit must be deliberate: a new version file, and refresh tests/data/config_hashes.json (prompts are
    pinned for every prompts/ folder in tests/streamcue/test_contracts.py)."""
    configs = json.loads((DATA / "config_hashes.json").read_text())
    from importlib import resources

    text = resources.files("streamcue.metrics").joinpath("configs/reasoning.v1.json").read_bytes()
    assert hashlib.sha256(text).hexdigest() == configs["reasoning.v1"]


def test_cli_scores_and_refuses_other_judges(tmp_path, server):
    write_jsonl(tmp_path / "gt.jsonl", GT)
    write_jsonl(tmp_path / "pred.jsonl", _preds(answer=lambda g: "A"))
    base = ["evaluate", "reasoning", "--gt", tmp_path / "gt.jsonl", "--pred", tmp_path / "pred.jsonl"]
    done = cli_run(*base, "--llm-base-url", server.base_url, "--llm-model", "scripted-judge",
                   "--output", tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["overall"]["answer_accuracy"] == 0.0 and report["overall"]["mira_total"] == 1.0
    wrong = cli_run(*base, "--judge", "token-f1")
    assert wrong.returncode == 2 and "scored by the mira judge" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
