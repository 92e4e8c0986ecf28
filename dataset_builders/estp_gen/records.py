"""Construction of interval_qa records shared by every ESTP-Gen stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamcue.schemas import SCHEMA_VERSION
from streamcue.schemas.taxonomy import PROACTIVE_TYPE

BUILDER = "ego4d"
BUILDER_VERSION = "1.0"

__all__ = ["make_qa", "merge_answers", "evenly_spaced", "BUILDER", "BUILDER_VERSION"]


def evenly_spaced(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` items spread evenly over ``items`` (deterministic; all when they fit)."""
    if len(items) <= limit:
        return list(items)
    stride = len(items) / limit
    return [items[int(i * stride)] for i in range(limit)]


def make_qa(qa_id: str, video_id: str, task_type: str, question: str, query_time_s: float,
            answers: Sequence[dict[str, Any]], *, stage: str, source: str, clip: tuple[float, float] | None = None,
            context: tuple[str, int] | None = None, model: str | None = None, prompt_hash: str | None = None,
            notes: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "qa_id": qa_id,
        "video_id": video_id,
        "task_type": task_type,
        "proactive_type": PROACTIVE_TYPE[task_type],
        "question": question,
        "query_time_s": query_time_s,
        "answers": merge_answers(answers),
        "provenance": {"builder": BUILDER, "version": BUILDER_VERSION, "source": source, "stage": stage,
                       "model": model, "prompt_hash": prompt_hash, "notes": list(notes), **extra},
        "verification": {"status": "unverified", "annotators": [], "checks": 0},
    }
    if clip is not None:
        record["clip"] = {"start_s": clip[0], "end_s": clip[1]}
    if context is not None:
        record["context"] = {"group_id": context[0], "turn": context[1]}
    return record


def merge_answers(answers: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sort answers by start and merge overlapping intervals.

    A merged interval spans both and keeps the earlier answer's text (and its optimal time);
    answers that only touch (end == next start) stay separate.
    """
    merged: list[dict[str, Any]] = []
    for answer in sorted(answers, key=lambda a: (a["start_s"], a["end_s"])):
        if merged and answer["start_s"] < merged[-1]["end_s"]:
            merged[-1]["end_s"] = max(merged[-1]["end_s"], answer["end_s"])
        else:
            merged.append(dict(answer))
    return merged
