"""Play records to a model and collect its predictions in the schemas' prediction formats.

* ``interval_qa``: the question is delivered at its query time; in a contextual group the
  earlier turns' questions arrive at their own query times and form the dialogue history.
  Responses from the query time on are the prediction (``interval_qa_prediction``).
* ``dense_caption``: the task prompt is given at the start (``dense_caption_prediction``).
* ``guidance``: the plan is given at the start; a response may name its event type
  (``{"type": "mistake", "text": ...}``), plain text counts as an instruction
  (``guidance_prediction``).

Records may be dicts or the typed records of :func:`streamcue.loaders.load`.

>>> preds, report = replay_records(model, records, "guidance", durations)   # doctest: +SKIP
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamcue.errors import InputError
from streamcue.loaders.replay import Frame, replay
from streamcue.progress import track

GUIDANCE_TYPES = ("instruction", "success", "mistake", "finish")


def _as_dict(record: Any) -> dict[str, Any]:
    return record.to_dict() if hasattr(record, "to_dict") else dict(record)


def plan_prompt(record: Mapping[str, Any]) -> str:
    """The guidance prompt: the activity and its numbered plan."""
    steps = "\n".join(f"{step['index'] + 1}. {step['text']}" for step in record["plan"])
    return f"Guide me through: {record['activity']}.\nPlan:\n{steps}"


def _prompts(record: dict[str, Any], kind: str, groups: dict[str, list[dict[str, Any]]]) -> list[tuple[float, str]]:
    if kind == "dense_caption":
        return [(0.0, record["prompt"])]
    if kind == "guidance":
        return [(0.0, plan_prompt(record))]
    context = record.get("context")
    if not context:
        return [(record["query_time_s"], record["question"])]
    turns = [r for r in groups[context["group_id"]] if r["context"]["turn"] <= context["turn"]]
    return [(r["query_time_s"], r["question"]) for r in sorted(turns, key=lambda r: r["context"]["turn"])]


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
            raise InputError(f"the model answered an unknown guidance event type {kind_!r}; use one of {GUIDANCE_TYPES}",
                             record=f"video_id={record['video_id']}")
        events.append({"t_s": r["t_s"], "type": kind_, "text": r["text"]})
    return {"video_id": record["video_id"], "events": events}


def replay_records(model: Any, records: Iterable[Any], kind: str, durations: Mapping[str, float], *,
                   fps: float = 1.0, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Predictions for every record, and one report over all runs.

    ``durations`` maps video ids to seconds (the ``videos`` config); ``options`` go to
    :func:`streamcue.loaders.replay.replay` (protocol, k, policy, camera_buffer, clock, ...).
    """
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
        duration = durations[record["video_id"]]
        result = replay(model, duration, fps, _prompts(record, kind, groups), **options)
        predictions.append(_prediction(record, kind, result.responses))
        reports.append(result.report(duration))
    return predictions, _summary(reports)


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
        self.every_s, self.mistake_every_s, self.text = every_s, mistake_every_s, text

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
