"""Records <-> Label Studio tasks and annotation results (pure functions, no server; at the end, the step
marks of a recorded task plan, with two helpers that read and write their files).

Times: ``TimelineLabels`` ranges are integer frames, 1-based and inclusive, at the task's
``fps`` (the same value the ``<Video frameRate="$fps">`` tag uses). A span [start_s, end_s] is
frames ``round(start_s * fps) + 1`` to ``round(end_s * fps)``; back, ``start_s = (start - 1) /
fps`` and ``end_s = end / fps``; a moment t is the one-frame range at ``round(t * fps) + 1``.
A region the annotator did not move keeps the record's own seconds exactly (no rounding
drift); only moved regions take their times from frames.

Every region of a prediction has a stable id (``a0``, ``c3``, ``e12``: kind letter + index in
the record); the result rows of one region (range, per-region text, per-region choice) share
it, which is how an annotation's rows are joined back.
"""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import InputError
from streamcue.io import read_json, write_json, write_jsonl
from streamcue.schemas import ID_FIELDS

__all__ = ["DEFAULT_FPS", "DISPUTED", "REVIEW_MARK", "GLOBAL_CONTROLS", "LABEL_KINDS", "span_to_frames",
           "frames_to_span", "moment_to_frame", "prediction", "task_data", "Applied", "Where", "apply", "STEPS_CONFIG",
           "MAX_PLAN_STEPS", "steps_task", "step_marks", "write_steps_tasks", "write_step_marks"]


DEFAULT_FPS = 30.0
#: The mark of a region the annotators disagree on, in the reviewer's starting point: a field of the prediction's
#: region (its ``meta``, :mod:`streamcue.annotation.review`), never its text; :func:`apply` refuses a text that
#: carries it (:data:`REVIEW_MARK`, anywhere in any line).
DISPUTED = "\u26a0 disputed: "
#: The review mark as it may be typed or pasted back into a text: the warning sign (with or without its emoji
#: variation selector), any spaces, ``disputed``, a colon; compared after NFKC, ignoring case.
REVIEW_MARK = re.compile(r"\u26a0\ufe0f?\s*disputed\s*:", re.IGNORECASE)
GLOBAL_CONTROLS = ("question", "flags")
#: Record kinds that have a labeling config (annotation/configs/<kind>.xml).
LABEL_KINDS = ("interval_qa", "dense_caption", "guidance")


def span_to_frames(start_s: float, end_s: float, fps: float) -> tuple[int, int]:
    start = round(start_s * fps) + 1
    return start, max(start, round(end_s * fps))


def frames_to_span(start: int, end: int, fps: float) -> tuple[float, float]:
    return (start - 1) / fps, end / fps


def moment_to_frame(t_s: float, fps: float) -> int:
    return round(t_s * fps) + 1


def _range(rid: str, control: str, label: str, start: int, end: int) -> dict[str, Any]:
    return {"id": rid, "from_name": control, "to_name": "video", "type": "timelinelabels",
            "value": {"ranges": [{"start": start, "end": end}], "timelinelabels": [label]}}


def _text(rid: str, control: str, text: str) -> dict[str, Any]:
    return {"id": rid, "from_name": control, "to_name": "video", "type": "textarea", "value": {"text": [text]}}


def prediction(record: dict[str, Any], kind: str, fps: float) -> list[dict[str, Any]]:
    """The record's current content as a Label Studio result (the annotator's starting point)."""
    rows: list[dict[str, Any]] = []
    if kind == "interval_qa":
        rows.append(_text("question", "question", record["question"]))
        for i, answer in enumerate(record["answers"]):
            rows.append(_range(f"a{i}", "answers", "answer", *span_to_frames(answer["start_s"], answer["end_s"], fps)))
            rows.append(_text(f"a{i}", "answer_text", answer["text"]))
    elif kind == "dense_caption":
        for i, caption in enumerate(record["captions"]):
            rows.append(_range(f"c{i}", "seconds", "caption",
                               *span_to_frames(caption["t_s"], caption["t_s"] + 1, fps)))
            rows.append(_text(f"c{i}", "caption", caption["text"]))
    else:
        for i, event in enumerate(record["events"]):
            frame = moment_to_frame(event["t_s"], fps)
            rows.append(_range(f"e{i}", "events", event["type"], frame, frame))
            rows.append(_text(f"e{i}", "event_text", event["text"]))
    return rows


def task_data(record: dict[str, Any], kind: str, video_url: str, fps: float) -> dict[str, Any]:
    """The task's data: what the labeling config shows, plus the whole record (nothing is lost)."""
    data: dict[str, Any] = {"video": video_url, "fps": fps, "kind": kind, "record_id": record[ID_FIELDS[kind]],
                            "record_json": json.dumps(record, ensure_ascii=False)}
    if kind == "interval_qa":
        data.update(question=record["question"], query_time_s=record["query_time_s"], task_type=record["task_type"])
    elif kind == "dense_caption":
        data.update(prompt=record["prompt"], task_type=record["task_type"], category=record["category"],
                    caption_list="\n".join(f"{c['t_s']:g} s: {c['text']}" for c in record["captions"]))
    else:
        data.update(activity=record["activity"],
                    plan="\n".join(f"{s['index'] + 1}. {s['text']}" for s in record["plan"]))
    check = record.get("provenance", {}).get("evidence_check")
    if check:  # the evidence pre-check's verdict: a Data Manager column annotators can sort and filter by
        data.update(evidence_verdict=check["verdict"], evidence_confidence=check["confidence"],
                    evidence_note=check.get("justification", ""))
    return data


@dataclass
class Applied:
    """One annotation turned into a record, and what it changed."""

    record: dict[str, Any]
    rejected: bool = False
    changes: list[str] = field(default_factory=list)
    #: The record's items by region: ``a0``/``e3``/``c5`` for the pushed ones still there, ``+<id>`` for
    #: added ones (Label Studio's own region id): how two annotations of one record are compared item by item.
    items: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Where:
    project: str
    task: int
    annotation: int | None
    record: str

    def error(self, message: str, region: str | None = None) -> InputError:
        spot = f"task {self.task}" + (f", annotation {self.annotation}" if self.annotation is not None else "")
        spot += f", region {region}" if region else ""
        return InputError(f"{spot}: {message}", file=f"Label Studio project {self.project!r}", record=self.record)


def _regions(result: list[dict[str, Any]], where: Where) -> dict[str, dict[str, Any]]:
    """Rows joined by region id: ``{id: {"range": (label, start, end), "text": str, "choices": [...]}}``."""
    regions: dict[str, dict[str, Any]] = {}
    for row in result:
        rid, value, kind = row.get("id"), row.get("value") or {}, row.get("type")
        if row.get("from_name") in GLOBAL_CONTROLS:  # whole-task controls: joined by name, not id
            rid = "@" + row["from_name"]
        if not rid:
            raise where.error("a result row without a region id")
        region = regions.setdefault(rid, {})
        if kind == "timelinelabels":
            ranges, labels = value.get("ranges") or [], value.get("timelinelabels") or []
            if len(ranges) != 1 or len(labels) != 1:
                raise where.error(f"expected one range and one label, got {len(ranges)} and {len(labels)}", rid)
            start, end = ranges[0].get("start"), ranges[0].get("end")
            if not isinstance(start, int) or not isinstance(end, int) or start < 1 or end < start:
                raise where.error(f"range {start}-{end} is not two frame numbers with 1 <= start <= end", rid)
            region["range"] = (labels[0], start, end)
        elif kind == "textarea":
            texts = [t for t in value.get("text") or [] if isinstance(t, str)]
            if any(REVIEW_MARK.search(unicodedata.normalize("NFKC", t)) for t in texts):
                raise where.error(f"its text carries the review mark {DISPUTED.strip()!r} (the reviewer's note, "
                                  "not the record's text): delete it from the text and submit again", rid)
            region["text"] = " ".join(t.strip() for t in texts).strip()
        elif kind == "choices":
            region["choices"] = list(value.get("choices") or [])
    return regions


def apply(record: dict[str, Any], kind: str, fps: float, result: list[dict[str, Any]], where: Where) -> Applied:
    """The record as this annotation leaves it (``record`` itself is not modified)."""
    regions = _regions(result, where)
    predicted = _regions(prediction(record, kind, fps), where)
    out = copy.deepcopy(record)
    applied = Applied(out)
    if kind == "interval_qa":
        _apply_qa(out, regions, predicted, fps, where, applied)
    elif kind == "dense_caption":
        _apply_captions(out, regions, fps, where, applied)
    else:
        _apply_guidance(out, regions, predicted, fps, where, applied)
    return applied


def _apply_qa(out: dict[str, Any], regions: dict[str, Any], predicted: dict[str, Any], fps: float, where: Where,
              applied: Applied) -> None:
    flags = regions.pop("@flags", {}).get("choices", [])
    predicted.pop("@question", None)
    question = regions.pop("@question", {}).get("text")
    if question and question != out["question"]:
        applied.changes.append("question edited")
        out["question"] = question
    applied.rejected = "reject" in flags
    if applied.rejected:
        applied.changes.append("question rejected")
    if "ambiguous question" in flags:
        applied.changes.append("question flagged ambiguous")
    originals = {f"a{i}": a for i, a in enumerate(out["answers"])}
    answers = []
    for rid, region in regions.items():
        if "range" not in region:
            raise where.error("an answer text without its interval", rid)
        label, start, end = region["range"]
        original = originals.get(rid)
        text = region.get("text") or (original["text"] if original else "")
        if not text:
            raise where.error("a new answer interval without an answer text", rid)
        if original and predicted[rid]["range"] == region["range"]:
            answer = dict(original, text=text)
        else:
            start_s, end_s = frames_to_span(start, end, fps)
            answer = {"start_s": start_s, "end_s": end_s, "text": text}
            if original and "optimal_s" in original and start_s <= original["optimal_s"] <= end_s:
                answer = {"start_s": start_s, "end_s": end_s, "optimal_s": original["optimal_s"], "text": text}
            applied.changes.append(f"interval {rid} moved" if original else f"interval {rid} added")
        if original and text != original["text"]:
            applied.changes.append(f"answer {rid} edited")
        answers.append((_position(rid, len(originals)), answer))
        applied.items[rid if original else f"+{rid}"] = answer
    for rid in originals.keys() - regions.keys():
        applied.changes.append(f"interval {rid} deleted")
    if not answers and not applied.rejected:
        raise where.error("every answer interval was deleted; reject the question instead")
    out["answers"] = [a for _, a in sorted(answers, key=lambda p: (p[1]["start_s"], p[1]["end_s"], p[0]))] \
        or out["answers"]


def _apply_captions(out: dict[str, Any], regions: dict[str, Any], fps: float, where: Where,
                    applied: Applied) -> None:
    for i, caption in enumerate(out["captions"]):
        applied.items[f"c{i}"] = caption
        region = regions.get(f"c{i}")
        if region is None:
            continue  # a deleted caption region changes nothing: every second keeps a caption
        text = region.get("text") or caption["text"]
        flagged = "corrected" in region.get("choices", [])
        if text != caption["text"] or flagged:
            caption["text"] = text
            caption["corrected"] = True
            applied.changes.append(f"caption {caption['t_s']:g}s corrected")
    extra = [rid for rid in regions
             if not (rid.startswith("c") and rid[1:].isdigit() and int(rid[1:]) < len(out["captions"]))]
    if extra:
        raise where.error("caption regions can only be edited, not added", extra[0])


def _apply_guidance(out: dict[str, Any], regions: dict[str, Any], predicted: dict[str, Any], fps: float,
                    where: Where, applied: Applied) -> None:
    originals = {f"e{i}": e for i, e in enumerate(out["events"])}
    events = []
    for rid, region in regions.items():
        if "range" not in region:
            raise where.error("an event text without its moment on the timeline", rid)
        label, start, _ = region["range"]
        original = originals.get(rid)
        if original is None and label != "mistake":
            raise where.error(f"only mistakes can be added, not a {label!r} event", rid)
        text = region.get("text") or (original["text"] if original else "")
        if not text:
            raise where.error("a new mistake without its feedback text", rid)
        if original is not None and predicted[rid]["range"][1:] == region["range"][1:]:
            event = dict(original, text=text)
        else:
            base = original or {"plan_index": None, "step_ids": [], "mistake_category": "other"}
            event = dict(base, t_s=(start - 1) / fps, type=label, text=text, time_source="annotator")
            applied.changes.append(f"{label} {rid} moved to "
                                   f"{(start - 1) / fps:g}s" if original else f"mistake {rid} added")
        if original is not None and label != original["type"]:
            # a relabelled event: only a mistake carries a category; one relabelled *to* a mistake has
            # none (the page has no category control), which the record check reports for this record
            event.update(type=label, mistake_category=original["mistake_category"] if label == "mistake" else None)
            applied.changes.append(f"{original['type']} {rid} relabelled {label}")
        if original is not None and text != original["text"]:
            applied.changes.append(f"{label} {rid} text edited")
        events.append((_position(rid, len(originals)), event))
        applied.items[rid if original is not None else f"+{rid}"] = event
    for rid in originals.keys() - regions.keys():
        applied.changes.append(f"{originals[rid]['type']} {rid} deleted")
    out["events"] = [e for _, e in sorted(events, key=lambda p: (p[1]["t_s"], p[0]))]


def _position(rid: str, known: int) -> int:
    """A region's place in the record (its index for predicted regions; after them for new ones)."""
    return int(rid[1:]) if rid[1:].isdigit() and int(rid[1:]) < known else known


# --- step marks of a recorded task plan (labeling config task_steps.v1) -------------------------------------

#: The labeling config of step marks (annotation/configs/task_steps.v1.xml): its labels are ``step 1`` ..
#: ``step MAX_PLAN_STEPS``.
STEPS_CONFIG = "task_steps"
MAX_PLAN_STEPS = 20


def steps_task(task: dict[str, Any], video_id: str, video_url: str, fps: float,
               marks: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Label Studio task that asks for the step marks of one video, from its task plan (a ``recorded_task``
    with ``steps``); ``marks`` (a drafted marks line, same form as :func:`step_marks` gives) pre-fill it."""
    steps = task["steps"]
    if len(steps) > MAX_PLAN_STEPS:
        raise InputError(f"a plan of {len(steps)} steps: the labeling config has labels for {MAX_PLAN_STEPS}",
                         record=f"task_id={task['task_id']}", field="steps")
    data = {"video": video_url, "fps": fps, "kind": STEPS_CONFIG, "record_id": video_id,
            "activity": task.get("activity") or task["category"],
            "plan": "\n".join(f"{i + 1}. {s['description']}" for i, s in enumerate(steps)),
            "task_json": json.dumps(task, ensure_ascii=False)}
    out: dict[str, Any] = {"data": data}
    if marks is not None:
        number = {s["step_id"]: i + 1 for i, s in enumerate(steps)}
        rows: list[dict[str, Any]] = []
        for i, mark in enumerate(marks["steps"]):
            rid = f"s{i}"
            rows.append(_range(rid, "steps", f"step {number[mark['step_id']]}",
                               *span_to_frames(mark["start_s"], mark["end_s"], fps)))
            for mistake in mark.get("mistakes", [])[:1]:
                rows.append({"id": rid, "from_name": "mistake", "to_name": "video", "type": "choices",
                             "value": {"choices": [mistake["category"]]}})
                rows.append(_text(rid, "feedback", mistake["text"]))
        out["predictions"] = [{"model_version": "draft", "result": rows}]
    return out


def step_marks(data: dict[str, Any], result: list[dict[str, Any]], where: Where) -> dict[str, Any]:
    """One annotation of a :func:`steps_task` -> its marks line ``{"video_id", "steps": [{"step_id",
    "start_s", "end_s", "mistakes": [{"category", "text"}]}]}``, steps in time order (the input of
    ``streamcue build recorded --guidance --step-marks``)."""
    steps = json.loads(data["task_json"])["steps"]
    fps = float(data["fps"])
    marks, seen = [], {}
    for rid, region in _regions(result, where).items():
        if "range" not in region:
            raise where.error("a mistake or feedback without its step on the timeline", rid)
        label, start, end = region["range"]
        number = label.removeprefix("step ")
        if not number.isdigit() or not 1 <= int(number) <= len(steps):
            raise where.error(f"label {label!r} names no step of the plan (1 to {len(steps)})", rid)
        step = steps[int(number) - 1]
        if number in seen:
            raise where.error(f"{label} is marked twice (also region {seen[number]}): mark each step once", rid)
        seen[number] = rid
        category, text = (region.get("choices") or [None])[0], region.get("text") or ""
        if bool(category) != bool(text):
            raise where.error("a mistake needs both its category and its feedback", rid)
        start_s, end_s = frames_to_span(start, end, fps)
        marks.append({"step_id": step["step_id"], "start_s": start_s, "end_s": end_s,
                      "mistakes": [{"category": category, "text": text}] if category else []})
    return {"video_id": data["record_id"], "steps": sorted(marks, key=lambda m: (m["start_s"], m["end_s"]))}


def write_steps_tasks(tasks_file: str | Path, out: str | Path, video_url: str = "/data/local-files/?d={video}",
                      fps: float = DEFAULT_FPS) -> int:
    """The Label Studio tasks (a JSON list to import) asking for the step marks of every video whose task in
    the tasks file of ``build recorded`` has a plan; ``video_url`` formats each task's ``video``. Returns how
    many."""
    from streamcue.dataset_builders.recorded import read_tasks

    tasks = [t for _, t in read_tasks(Path(tasks_file)) if "steps" in t]
    write_json(out, [steps_task(t, t.get("video_id") or Path(t["video"]).stem, video_url.format(video=t["video"]),
                                fps) for t in tasks])
    return len(tasks)


def write_step_marks(export_file: str | Path, out: str | Path) -> int:
    """Label Studio's JSON export of a ``task_steps`` project -> the marks file of ``build recorded --guidance
    --step-marks``: one line per task, from its one submitted (not skipped) annotation; a task with none, or
    with several that disagree, is refused (decide in Label Studio first). Returns how many lines."""
    export = read_json(export_file)
    if not isinstance(export, list):
        raise InputError("expected Label Studio's JSON export (a list of tasks)", file=export_file)
    lines = []
    for i, task in enumerate(export):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise InputError("a task without its data", file=export_file, record=f"[{i}]")
        done = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
        marks = [step_marks(task["data"], a.get("result") or [],
                            Where(str(export_file), task.get("id", i), a.get("id"), str(task["data"]["record_id"])))
                 for a in done]
        if not marks or any(m != marks[0] for m in marks):
            raise InputError("no submitted annotation" if not marks else f"{len(marks)} annotations that disagree: "
                             "keep the one that is right (or let a reviewer submit it) and export again",
                             file=export_file, record=str(task["data"].get("record_id", f"[{i}]")))
        lines.append(marks[0])
    return write_jsonl(out, lines)
