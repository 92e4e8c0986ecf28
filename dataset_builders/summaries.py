"""Summary tables of built records (what the build and demo commands print)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from streamcue.schemas.taxonomy import EVENT_TYPES

__all__ = ["guidance_summary"]


def guidance_summary(guidance: Iterable[Mapping[str, Any]], videos: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Recordings and events by type per split, and mistakes by category."""
    split_of = {v["video_id"]: v["split"] for v in videos}
    per_split: dict[str, Counter] = {}
    mistakes: Counter = Counter()
    for record in guidance:
        row = per_split.setdefault(split_of.get(record["video_id"], "?"), Counter())
        row["recordings"] += 1
        row["plan steps"] += len(record["plan"])
        for event in record["events"]:
            row[event["type"]] += 1
            if event["type"] == "mistake":
                mistakes[event["mistake_category"]] += 1
    columns = ["recordings", "plan steps", *(t for t in ("instruction", "success", "mistake", "finish") if t in EVENT_TYPES)]
    order = [s for s in ("train", "validation", "test") if s in per_split] + sorted(set(per_split) - {"train", "validation", "test"})
    rows = {split: {c: per_split[split][c] for c in columns} for split in order}
    rows["all"] = {c: sum(r[c] for r in rows.values()) for c in columns}
    return {"columns": columns, "rows": rows, "mistakes_by_category": dict(mistakes.most_common())}
