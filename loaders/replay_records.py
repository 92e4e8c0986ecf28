"""Play records to a model and collect its predictions in the schemas' prediction formats.

* ``interval_qa``: the question is delivered at its query time; in a contextual group the
  earlier turns' questions arrive at their own query times and form the dialogue history.
  Responses from the query time on are the prediction (``interval_qa_prediction``).
* ``dense_caption``: the task prompt is given at the start (``dense_caption_prediction``).
* ``guidance``: the plan is given at the start; a response may name its event type
  (``{"type": "mistake", "text": ...}``) and its plan step (``plan_index``), plain text counts
  as an instruction (``guidance_prediction``).

Options the benchmarks need: ``span="clip"`` plays only the record's clip (or, without one,
from the first turn's query time to ``tail_s`` after its last answer) instead of the whole
video; ``turns="gold"`` gives a multi-turn question's earlier turns with their gold answers
(StreamingBench's SQA protocol) instead of the model's own; ``window_s`` (passed on to
:func:`~streamcue.loaders.replay.replay`) shows only the frames of the last N seconds.

Records may be dicts or the typed records of :func:`streamcue.loaders.load`.

>>> preds, report = replay_records(model, records, "guidance", durations)   # doctest: +SKIP
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.loaders.replay import Episode, Frame, positive, replay
from streamcue.progress import track

__all__ = ["GUIDANCE_TYPES", "plan_prompt", "replay_records", "PeriodicBaseline"]


GUIDANCE_TYPES = ("instruction", "success", "mistake", "finish")


def _as_dict(record: Any) -> dict[str, Any]:
    return record.to_dict() if hasattr(record, "to_dict") else dict(record)


def plan_prompt(record: Mapping[str, Any]) -> str:
    """The guidance prompt: the activity and its numbered plan."""
    steps = "\n".join(f"{step['index'] + 1}. {step['text']}" for step in record["plan"])
    return f"Guide me through: {record['activity']}.\nPlan:\n{steps}"


def _turns(record: dict[str, Any], groups: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The record and the earlier turns of its contextual group, in turn order."""
    context = record.get("context")
    if not context:
        return [record]
    turns = [r for r in groups[context["group_id"]] if r["context"]["turn"] <= context["turn"]]
    return sorted(turns, key=lambda r: r["context"]["turn"])


def _prompts(record: dict[str, Any], kind: str, groups: dict[str, list[dict[str, Any]]],
             turns: str = "own") -> list[tuple[Any, ...]]:
    if kind == "dense_caption":
        return [(0.0, record["prompt"])]
    if kind == "guidance":
        return [(0.0, plan_prompt(record))]
    events: list[tuple[Any, ...]] = []
    for r in _turns(record, groups):
        events.append((r["query_time_s"], r["question"]))
        if turns == "gold" and r is not record:
            events += [(a["start_s"], a["text"], "assistant") for a in r["answers"]]
    return events


def _span(record: dict[str, Any], kind: str, groups: dict[str, list[dict[str, Any]]], duration: float,
          span: str, tail_s: float) -> tuple[float, float]:
    """``(start_s, end_s)`` of the video to play."""
    if span == "video" or kind != "interval_qa":
        return 0.0, duration
    if record.get("clip"):
        start, end = record["clip"]["start_s"], record["clip"]["end_s"]
    else:
        turns = _turns(record, groups)
        start = min(r["query_time_s"] for r in turns)
        end = max(a["end_s"] for a in record["answers"]) + tail_s
    return max(0.0, start), min(duration, end)


def _on_grid(start: float, end: float, fps: float) -> tuple[float, float]:
    """The span moved to start on a sampled frame (``i / fps``), so frame times match the video's samples."""
    snapped = math.ceil(start * fps - 1e-9) / fps
    return snapped, max(snapped, end)


def _prediction(record: dict[str, Any], kind: str, responses: list[dict[str, Any]]) -> dict[str, Any]:
    if kind == "interval_qa":
        kept = [{"t_s": r["t_s"], "text": r["text"]} for r in responses if r["t_s"] >= record["query_time_s"]]
        return {"qa_id": record["qa_id"], "responses": kept}
    if kind == "dense_caption":
        return {"task_id": record["task_id"], "responses": [{"t_s": r["t_s"], "text": r["text"]} for r in responses]}
    events = []
    for r in responses:
        kind_ = r.get("type", "instruction")
        if kind_ not in GUIDANCE_TYPES:
            raise InputError(f"the model answered an unknown guidance event type {kind_!r}; "
                             f"use one of {GUIDANCE_TYPES}",
                             record=f"video_id={record['video_id']}")
        event = {"t_s": r["t_s"], "type": kind_, "text": r["text"]}
        if r.get("plan_index") is not None:
            event["plan_index"] = r["plan_index"]
        events.append(event)
    return {"video_id": record["video_id"], "events": events}


def replay_records(model: Any, records: Iterable[Any], kind: str, durations: Mapping[str, float], *,
                   fps: float = 1.0, span: str = "video", turns: str = "own", tail_s: float = 5.0,
                   frames_for: Any = None, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Predictions for every record, and one report over all runs.

    ``durations`` maps video ids to seconds (the ``videos`` config); ``options`` go to
    :func:`streamcue.loaders.replay.replay` (protocol, k, policy, camera_buffer, clock,
    window_s, ...). ``frames_for(video_id)`` may give each video's ``frame_image``. A model
    with a ``stats`` counter (the strategies) adds it to the report.
    """
    if span not in ("video", "clip"):
        raise ConfigError(f"unknown span {span!r}; use video or clip")
    if turns not in ("own", "gold"):
        raise ConfigError(f"unknown turns {turns!r}; use own (the model's answers) or gold")
    records = [_as_dict(r) for r in records]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("context"):
            groups.setdefault(r["context"]["group_id"], []).append(r)
    predictions, reports = [], []
    for record in track(records, f"replaying {kind}"):
        if record["video_id"] not in durations:
            raise InputError("unknown video (not in the videos config)", record=f"video_id={record['video_id']}",
                             field="$.video_id")
        start, end = _on_grid(*_span(record, kind, groups, durations[record["video_id"]], span, tail_s), fps)
        if frames_for is not None:
            options["frame_image"] = frames_for(record["video_id"])
        result = replay(model, end - start, fps, _prompts(record, kind, groups, turns), start_s=start,
                        own_history=turns == "own", episode=Episode(kind, record, start, end, fps), **options)
        predictions.append(_prediction(record, kind, result.responses))
        reports.append(result.report(end - start))
    summary = _summary(reports)
    if getattr(model, "stats", None) is not None:
        summary["strategy"] = dict(model.stats)
    return predictions, summary


def _summary(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if not reports:
        return {"runs": 0}
    total = {key: sum(r[key] for r in reports) for key in
             ("responses", "calls", "frames_total", "frames_seen", "frames_dropped", "frames_unprocessed")}
    return {"runs": len(reports), **total,
            "latency_mean_s": statistics.fmean(r["latency_mean_s"] for r in reports),
            "latency_max_s": max(r["latency_max_s"] for r in reports),
            "actions_per_second": statistics.fmean(r["actions_per_second"] for r in reports)}


class PeriodicBaseline:
    """A model that sees nothing: a fixed answer every ``every_s`` seconds (a floor for the metrics).

    For guidance it says "success" every ``every_s`` and a generic mistake every
    ``mistake_every_s`` seconds.
    """

    latency_s = 0.0

    def __init__(self, every_s: float = 30.0, mistake_every_s: float | None = 120.0,
                 text: str = "Well done, that step is complete.") -> None:
        self.every_s = positive(every_s, "the periodic baseline's period")
        self.mistake_every_s = None if mistake_every_s is None else positive(mistake_every_s, "the mistake period")
        self.text = text

    @staticmethod
    def _due(now: float, step: float | None) -> bool:
        return step is not None and now > 0 and round(now / step, 6).is_integer()

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float) -> dict[str, str] | None:
        if self._due(now, self.mistake_every_s):
            return {"type": "mistake", "text": "Check that step again."}
        if self._due(now, self.every_s):
            return {"type": "success", "text": self.text}
        return None
