"""From a task's annotations to a verified record: the double-check rule (ESTP-Bench: every
item verified by two annotators).

* Skipped or cancelled annotations are ignored.
* A check is one *annotator* (a Label Studio user id), not one annotation: when the same user
  submits a task twice, only their latest annotation counts, as one check.
* No annotation: the record comes back exactly as it was pushed.
* Fewer than ``required`` annotations: the record is unchanged; its verification counts the
  checks so far and stays ``unverified``.
* ``required`` or more: each annotation is applied to the record; when all of them agree
  (same reject decision; same number of intervals/events, each boundary within
  ``tolerance_s``, same texts after normalising case, spaces and end punctuation) the first
  annotation's record is kept with status ``verified`` (or ``rejected``), the annotators and
  the number of checks. When they disagree the record is unchanged, stays ``unverified`` and
  the disagreement is written in ``verification.notes`` and reported: never resolved silently.
* Once anyone has annotated, ``verification.guideline`` names the guideline version the
  project showed its annotators (``interval_qa.v1``); an untouched record is left as pushed.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from streamcue.annotation.convert import Applied, Where, apply


__all__ = ["Outcome", "disagreement", "verify"]


@dataclass
class Outcome:
    record: dict[str, Any]
    state: str                      # untouched | pending | verified | rejected | disagreement
    annotations: int = 0
    changes: list[str] = field(default_factory=list)
    disagreement: str | None = None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip(".!?")


def _span_pairs(a: list[dict[str, Any]], b: list[dict[str, Any]], keys: tuple[str, ...], tol: float) -> str | None:
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} items"
    for i, (x, y) in enumerate(zip(a, b)):
        if x.get("type") != y.get("type"):
            return f"item {i}: {x.get('type')} vs {y.get('type')}"
        for key in keys:
            if abs(x[key] - y[key]) > tol:
                return f"item {i}: {key} {x[key]:g}s vs {y[key]:g}s"
        if _norm(x["text"]) != _norm(y["text"]):
            return f"item {i}: text {x['text']!r} vs {y['text']!r}"
    return None


def disagreement(kind: str, a: Applied, b: Applied, tolerance_s: float) -> str | None:
    """Why two annotations of one record disagree; None when they agree."""
    if a.rejected != b.rejected:
        return "one rejects the record, the other does not"
    if a.rejected:
        return None
    ra, rb = a.record, b.record
    if kind == "interval_qa":
        if _norm(ra["question"]) != _norm(rb["question"]):
            return f"question {ra['question']!r} vs {rb['question']!r}"
        return _span_pairs(ra["answers"], rb["answers"], ("start_s", "end_s"), tolerance_s)
    if kind == "dense_caption":
        for x, y in zip(ra["captions"], rb["captions"]):
            if _norm(x["text"]) != _norm(y["text"]):
                return f"caption {x['t_s']:g}s: {x['text']!r} vs {y['text']!r}"
        return None
    return _span_pairs(ra["events"], rb["events"], ("t_s",), tolerance_s)


def latest_per_annotator(annotations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The submitted (not skipped) annotations, one per annotator (their latest), oldest first."""
    latest: dict[Any, dict[str, Any]] = {}
    for annotation in sorted((a for a in annotations if not a.get("was_cancelled")), key=lambda a: a["id"]):
        latest[annotation.get("completed_by")] = annotation
    return sorted(latest.values(), key=lambda a: a["id"])


def verify(record: dict[str, Any], kind: str, fps: float, annotations: list[dict[str, Any]],
           annotator_names: dict[Any, str], where: Where, *, required: int = 2, tolerance_s: float = 1.0,
           guideline: str | None = None) -> Outcome:
    """The record after its annotations, following the rule above."""
    done = latest_per_annotator(annotations)
    if not done:
        return Outcome(record, "untouched")
    names = [annotator_names.get(a.get("completed_by"), f"user:{a.get('completed_by')}") for a in done]
    if guideline:
        record = {**record, "verification": {**record["verification"], "guideline": guideline}}
    applied = []
    for annotation in done:
        spot = Where(where.project, where.task, annotation["id"], where.record)
        applied.append(apply(record, kind, fps, annotation.get("result") or [], spot))
    unchanged = copy.deepcopy(record)
    if len(done) < required:
        unchanged["verification"] = {**record["verification"], "status": "unverified", "annotators": names,
                                     "checks": len(done)}
        return Outcome(unchanged, "pending", len(done), [f"waiting for {required - len(done)} more check(s)"])
    for other in applied[1:]:
        reason = disagreement(kind, applied[0], other, tolerance_s)
        if reason:
            notes = [n for n in record["verification"].get("notes", []) if not n.startswith("disagreement:")]
            unchanged["verification"] = {**record["verification"], "status": "unverified", "annotators": names,
                                         "checks": len(done), "notes": [*notes, f"disagreement: {reason}"]}
            return Outcome(unchanged, "disagreement", len(done), [], reason)
    first = applied[0]
    status = "rejected" if first.rejected else "verified"
    first.record["verification"] = {**record["verification"], "status": status, "annotators": names,
                                    "checks": len(done)}
    return Outcome(first.record, status, len(done), first.changes)
