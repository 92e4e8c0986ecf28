"""Trivial baselines that produce predictions in the schemas' formats (floors for the metrics)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["periodic_guidance"]


def periodic_guidance(records: Iterable[Mapping[str, Any]], every_s: float = 30.0, mistake_every_s: float = 120.0,
                      duration: Mapping[str, float] | None = None) -> Iterator[dict[str, Any]]:
    """A model that sees nothing: a success every ``every_s`` seconds, a generic mistake every ``mistake_every_s``.

    Runs to the last ground-truth event (or the video's duration when given).
    """
    for record in records:
        end = (duration or {}).get(record["video_id"]) or max(e["t_s"] for e in record["events"])
        events = [{"t_s": float(t), "type": "success", "text": "Well done, that step is complete."}
                  for t in _ticks(every_s, end)]
        events += [{"t_s": float(t), "type": "mistake", "text": "Check that step again."} for t in _ticks(mistake_every_s, end)]
        yield {"video_id": record["video_id"], "events": sorted(events, key=lambda e: (e["t_s"], e["type"]))}


def _ticks(step: float, end: float) -> Iterator[float]:
    t = step
    while t <= end:
        yield t
        t += step
