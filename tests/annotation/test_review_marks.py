"""Issue 46 items 1 and 2, without a server: the review mark is a field of the prediction's region (its meta),
never text; an answer whose text carries it anywhere is refused in one line naming the task and region; what pull
decides is signed with what decided it (annotation/convert.py, review.py, roundtrip.py)."""

from __future__ import annotations

import copy

import pytest

from conftest import SIGNING_KEY, VALID

pytest.importorskip("cryptography")

from streamcue.annotation.convert import DISPUTED, Where, apply, prediction  # noqa: E402
from streamcue.annotation.review import starting_point  # noqa: E402
from streamcue.annotation.roundtrip import _signed  # noqa: E402
from streamcue.annotation.verify import Outcome, differences, verification_problem, verify  # noqa: E402
from streamcue.errors import InputError  # noqa: E402

FPS = 30.0
WHERE = Where("review marks", 12, None, "video_id=v1")
NAMES = {1: "ann1@lab.example.org", 2: "ann2@lab.example.org"}


def answer(text: str | list[str], rid: str = "e1") -> list[dict]:
    result = prediction(VALID["guidance"], "guidance", FPS)
    row = next(r for r in result if r["id"] == rid and r["from_name"] == "event_text")
    row["value"]["text"] = text if isinstance(text, list) else [text]
    return result


def annotations(*results: list[dict]) -> list[dict]:
    return [{"id": 30 + user, "completed_by": user, "result": result, "updated_at": f"2026-11-29T03:0{user}:00Z"}
            for user, result in enumerate(results, start=1)]


@pytest.mark.parametrize("text", [
    f"{DISPUTED}event e1 (mistake at 10s): t_s 7s vs 10s",                  # the review's text kept as it is
    [f"{DISPUTED}event e1: t_s 7s vs 10s", "Too little water."],            # the mark as a first entry
    f"Too little water.\n{DISPUTED}event e1: t_s 7s vs 10s",                # on a second line
    "Too little water. \u26a0\ufe0f Disputed : e1",                         # the emoji form, another case
], ids=["whole text", "first entry", "second line", "emoji form"])
def test_an_answer_that_carries_the_review_mark_is_refused_naming_task_and_region(text):
    both = annotations(answer(text), answer(text))   # both annotators kept it: once verified with the original
    with pytest.raises(InputError) as err:
        verify(copy.deepcopy(VALID["guidance"]), "guidance", FPS, both, NAMES, WHERE)
    message = str(err.value)
    assert message.startswith("Label Studio project 'review marks', record video_id=v1: task 12, annotation 31, "
                              "region e1: its text carries the review mark '\u26a0 disputed:'"), message
    assert "\n" not in message


def test_the_review_mark_is_the_regions_meta_and_pull_ignores_it():
    first, second = answer("Too little water."), answer("Far too little water.")
    record = copy.deepcopy(VALID["guidance"])
    found = differences("guidance", apply(record, "guidance", FPS, first, WHERE),
                        apply(record, "guidance", FPS, second, WHERE), 1.0, ("ann1", "ann2"), record)
    rows = starting_point("guidance", first, second, found)
    marked = [r for r in rows if r.get("meta")]
    assert {r["id"] for r in marked} == {"e1"} and all(r["meta"]["text"][0].startswith(DISPUTED) for r in marked)
    assert not [t for r in rows for t in r["value"].get("text", []) if DISPUTED.strip() in t]
    # the reviewer submits the starting point as it is: the record is the first annotator's, no mark in it
    applied = apply(record, "guidance", FPS, rows, WHERE)
    assert applied.record["events"][1]["text"] == "Too little water." and DISPUTED not in str(applied.record)


def test_pull_signs_what_decided_a_record_and_nothing_else():
    both = annotations(answer("Too little water."), answer("too little water"))
    outcome = verify(copy.deepcopy(VALID["guidance"]), "guidance", FPS, both, NAMES, WHERE)
    task = {"id": 12, "annotations": both}
    record = _signed(task, outcome, SIGNING_KEY).record
    assert record["verification"]["label_studio"] == {"task": 12, "annotations": [31, 32],
                                                      "at": "2026-11-29T03:02:00Z"}
    assert verification_problem(record, SIGNING_KEY) is None
    assert _signed(task, outcome, SIGNING_KEY).record == record   # Ed25519 is deterministic: a pull again, the same
    pending = Outcome(copy.deepcopy(VALID["guidance"]), "pending")
    assert "signature" not in _signed(task, pending, SIGNING_KEY).record["verification"]
