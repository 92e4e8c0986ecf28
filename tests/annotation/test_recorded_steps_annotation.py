"""Step marks of a recorded task plan in Label Studio (labeling config task_steps.v1): the task pushed, the
annotation read back, both ways without a server, and the marks turned into a valid guidance record."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from streamcue.annotation.client import guideline, label_config
from streamcue.annotation.convert import MAX_PLAN_STEPS, STEPS_CONFIG, Where, step_marks, steps_task
from streamcue.dataset_builders.recorded_guidance import MISTAKE_CATEGORIES, guidance_record
from streamcue.errors import InputError
from streamcue.schemas import check

TASK = {"task_id": "tea-now", "video": "tea.mp4", "task_type": "present", "category": "cooking",
        "activity": "Make a cup of tea", "prompt": "Describe what the person does.",
        "steps": [{"step_id": "pick", "description": "Pick up the red kettle"},
                  {"step_id": "pour", "description": "Pour the water into the white cup"},
                  {"step_id": 3, "description": "Put the kettle back on its base"}]}
MARKS = {"video_id": "tea", "steps": [
    {"step_id": "pick", "start_s": 2.0, "end_s": 4.0, "mistakes": []},
    {"step_id": "pour", "start_s": 4.0, "end_s": 6.5,
     "mistakes": [{"category": "technique", "text": "Pour more slowly so the water does not splash."}]}]}
WHERE = Where("tea steps", 7, 11, "tea")


def test_the_labeling_config_offers_every_plan_step_and_mistake_category():
    root = ET.fromstring(label_config(STEPS_CONFIG))
    labels = [label.get("value") for label in root.find("TimelineLabels").iter("Label")]
    assert labels == [f"step {i}" for i in range(1, MAX_PLAN_STEPS + 1)]
    assert [c.get("value") for c in root.find("Choices").iter("Choice")] == list(MISTAKE_CATEGORIES)
    version, html = guideline(STEPS_CONFIG)
    assert version == "task_steps.v1" and "step 2" in html


def test_a_drafted_task_reads_back_as_the_same_marks():
    task = steps_task(TASK, "tea", "/data/local-files/?d=tea.mp4", 30.0, MARKS)
    assert task["data"]["plan"].splitlines() == ["1. Pick up the red kettle", "2. Pour the water into the white cup",
                                                 "3. Put the kettle back on its base"]
    result = task["predictions"][0]["result"]
    assert step_marks(task["data"], result, WHERE) == MARKS


def test_an_annotators_marks_become_a_valid_guidance_record():
    data = steps_task(TASK, "tea", "tea.mp4", 30.0)["data"]
    result = [  # as Label Studio returns them: its own region ids, the annotator's order
        {"id": "Xk2", "from_name": "steps", "to_name": "video", "type": "timelinelabels",
         "value": {"ranges": [{"start": 181, "end": 225}], "timelinelabels": ["step 3"]}},
        {"id": "Xk2", "from_name": "mistake", "to_name": "video", "type": "choices", "value": {"choices": ["order"]}},
        {"id": "Xk2", "from_name": "feedback", "to_name": "video", "type": "textarea",
         "value": {"text": ["Fill the cup before you put the kettle back."]}},
        {"id": "a9", "from_name": "steps", "to_name": "video", "type": "timelinelabels",
         "value": {"ranges": [{"start": 31, "end": 120}], "timelinelabels": ["step 1"]}},
    ]
    marks = step_marks(data, result, WHERE)
    assert marks == {"video_id": "tea", "steps": [
        {"step_id": "pick", "start_s": 1.0, "end_s": 4.0, "mistakes": []},
        {"step_id": 3, "start_s": 6.0, "end_s": 7.5,
         "mistakes": [{"category": "order", "text": "Fill the cup before you put the kettle back."}]}]}
    steps = [(m["step_id"], m["start_s"], m["end_s"], ()) for m in marks["steps"]]
    record = guidance_record(TASK, "tea", steps, source="marks.jsonl", stage="annotation")
    assert check(record, "guidance") == []
    assert [e["type"] for e in record["events"]] == ["instruction", "success", "instruction", "success", "finish"]
    assert record["provenance"]["excluded"][0]["step_id"] == "pour"


@pytest.mark.parametrize(("rows", "message"), [
    ([("r1", "step 4", 1, 30, None, "")], "region r1: label 'step 4' names no step of the plan (1 to 3)"),
    ([("r1", "step 1", 1, 30, None, ""), ("r2", "step 1", 40, 60, None, "")],
     "region r2: step 1 is marked twice (also region r1)"),
    ([("r1", "step 2", 1, 30, "timing", "")], "region r1: a mistake needs both its category and its feedback"),
    ([("r1", "step 2", 1, 30, None, "Too fast.")], "region r1: a mistake needs both its category and its feedback"),
])
def test_a_wrong_mark_is_one_error_naming_the_task_annotation_and_region(rows, message):
    data = steps_task(TASK, "tea", "tea.mp4", 30.0)["data"]
    result = []
    for rid, label, start, end, category, text in rows:
        result.append({"id": rid, "from_name": "steps", "to_name": "video", "type": "timelinelabels",
                       "value": {"ranges": [{"start": start, "end": end}], "timelinelabels": [label]}})
        if category:
            result.append({"id": rid, "from_name": "mistake", "to_name": "video", "type": "choices",
                           "value": {"choices": [category]}})
        if text:
            result.append({"id": rid, "from_name": "feedback", "to_name": "video", "type": "textarea",
                           "value": {"text": [text]}})
    with pytest.raises(InputError, match="task 7, annotation 11, " + re.escape(message)):
        step_marks(data, result, WHERE)


def test_a_plan_longer_than_the_labels_is_refused_when_the_task_is_made():
    long = dict(TASK, steps=[{"step_id": i, "description": f"Step {i}"} for i in range(MAX_PLAN_STEPS + 1)])
    with pytest.raises(InputError, match="a plan of 21 steps: the labeling config has labels for 20"):
        steps_task(long, "tea", "tea.mp4", 30.0)
