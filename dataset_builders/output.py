"""Write a builder's records: validated, one JSONL file per kind, each written atomically."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import InputError, RecordValidationError
from streamcue.io import write_jsonl
from streamcue.paths import check_out_folder, check_outputs
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


def write_outputs(items: Iterable[tuple[str, dict[str, Any]]], out: str | Path, inputs: Sequence[Path] = (),
                  extra: Sequence[str] = ()) -> BuildOutput:
    """Collect ``(kind, record)`` pairs, validate them all, then write ``OUT/<kind file>``.

    Refused before any work: an ``out`` that is a file, an output file that is (or resolves to)
    one of ``inputs`` or lies inside an input folder (``extra`` names further files the caller
    will write in ``out``). Nothing is written unless records were built and every one is valid
    (videos first, so that record times are checked against their video's duration).
    """
    out = check_out_folder(out)
    check_outputs({out / name: name for name in (*FILE_NAMES.values(), *extra)}, list(inputs), inside_inputs=True)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, record in items:
        by_kind.setdefault(kind, []).append(record)
    if not by_kind:
        raise InputError("no records were built from these sources: nothing written", file=out)
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
