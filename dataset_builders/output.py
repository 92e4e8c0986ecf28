"""Write a builder's records: validated, one JSONL file per kind, each written atomically."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import RecordValidationError
from streamcue.io import write_jsonl
from streamcue.schemas import check_records

#: Output file name of each record kind.
FILE_NAMES = {
    "video": "videos.jsonl",
    "guidance": "guidance.jsonl",
    "interval_qa": "interval_qa.jsonl",
    "dense_caption": "dense_caption.jsonl",
    "mistake_summary": "mistake_summaries.jsonl",
    "counterfactual_mistake": "counterfactual_mistakes.jsonl",
    "mc_question": "mc_question.jsonl",
    "active_item": "active_item.jsonl",
}

__all__ = ["FILE_NAMES", "BuildOutput", "write_outputs"]


@dataclass
class BuildOutput:
    out: Path
    files: dict[str, Path] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def write_outputs(items: Iterable[tuple[str, dict[str, Any]]], out: str | Path) -> BuildOutput:
    """Collect ``(kind, record)`` pairs, validate them all, then write ``OUT/<kind file>``.

    Nothing is written unless every record is valid (videos first, so that record times are
    checked against their video's duration).
    """
    out = Path(out)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, record in items:
        by_kind.setdefault(kind, []).append(record)
    durations = None
    for kind in sorted(by_kind, key=lambda k: k != "video"):
        records = by_kind[kind]
        report = check_records(((None, r) for r in records), kind, file=f"<{FILE_NAMES[kind]} being built>", durations=durations)
        if not report.ok:
            raise RecordValidationError(report.violations)
        if kind == "video":
            durations = {r["video_id"]: r["duration_s"] for r in records}
    result = BuildOutput(out=out)
    for kind, records in by_kind.items():
        path = out / FILE_NAMES[kind]
        result.counts[kind] = write_jsonl(path, records)
        result.files[kind] = path
    return result
