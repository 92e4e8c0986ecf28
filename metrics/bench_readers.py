"""Ground truth and predictions of the multiple-choice benchmarks (OVO-Bench, StreamingBench), read and checked.

A builder's folder holds ``mc_question.jsonl`` and ``active_item.jsonl``; predictions are
``mc_question_prediction`` and ``active_item_prediction`` records (both kinds may share one file).
Each benchmark's scoring (:mod:`~streamcue.metrics.ovo_bench`, :mod:`~streamcue.metrics.streamingbench`)
reads them here and its own output formats itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.output import FILE_NAMES
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.io import iter_jsonl
from streamcue.metrics.registry import METRICS
from streamcue.schemas import check_records

__all__ = ["record_files", "read_ground_truth", "read_predictions", "check_pred_format", "letter"]

_KINDS = ("mc_question", "active_item")


def letter(index: int) -> str:
    """The option letter of a 0-based index: 0 -> ``A``."""
    return chr(65 + index)


def check_pred_format(metric: str, pred_format: str) -> None:
    """Refuse a prediction format that ``metric`` does not read (streamcue's, or those its registry line names)."""
    known = ("streamcue", *METRICS[metric].other_pred_formats)
    if pred_format not in known:
        raise ConfigError(f"unknown --pred-format {pred_format!r} for {metric}; use one of {', '.join(known)}")


def record_files(path: str | Path) -> list[tuple[str, Path]]:
    """``(kind, file)`` of a builder's folder (mc_question.jsonl, active_item.jsonl) or of one record file."""
    path = Path(path)
    if path.is_dir():
        files = [(k, path / FILE_NAMES[k]) for k in _KINDS if (path / FILE_NAMES[k]).is_file()]
        if not files:
            raise InputError(f"no {' or '.join(FILE_NAMES[k] for k in _KINDS)} in the folder", file=path)
        return files
    first = next(iter_jsonl(path), (None, {}))[1]
    return [("active_item" if "item_id" in first else "mc_question", path)]


def read_ground_truth(path: str | Path, benchmark: str) -> dict[str, dict[str, Any]]:
    """``{id: record}`` of a builder's folder or one record file (see :func:`record_files`).

    Records are validated; records of another benchmark are an error.
    """
    files = record_files(path)
    records: dict[str, dict[str, Any]] = {}
    for kind, file in files:
        lines = list(iter_jsonl(file))
        report = check_records(lines, kind, file=str(file))
        if not report.ok:
            raise RecordValidationError(report.violations)
        for line, rec in lines:
            if rec["benchmark"] != benchmark:
                raise InputError(f"this is an {rec['benchmark']!r} record; this scorer is for {benchmark}",
                                 file=file, line=line,
                                 field="benchmark")
            records[rec["question_id" if kind == "mc_question" else "item_id"]] = rec
    if not records:
        raise InputError("no records: nothing to score", file=path)
    return records


def read_predictions(path: Path, gt: Mapping[str, dict[str, Any]]) -> tuple[dict[str, dict], list[str]]:
    """streamcue prediction JSONL (both kinds may share one file): ``{id: prediction}``, duplicate ids."""
    preds: dict[str, dict] = {}
    duplicates: list[str] = []
    for line, rec in iter_jsonl(path):
        kind = "active_item_prediction" if "item_id" in rec else "mc_question_prediction"
        report = check_records([(line, rec)], kind, file=str(path))
        if not report.ok:
            raise RecordValidationError(report.violations)
        rid = rec.get("item_id", rec.get("question_id"))
        if rid not in gt:
            raise InputError("unknown id (not in the ground truth)", file=path, line=line, record=rid)
        if rid in preds:
            duplicates.append(rid)
            continue
        preds[rid] = rec
    return preds, duplicates
