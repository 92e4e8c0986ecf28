"""Review order: the records most likely wrong first (``streamcue annotate push --order``).

Label Studio hands tasks to annotators in import order (its default "sequential" sampling), so
ordering the import orders the review. The key, smallest first:

1. The evidence pre-check's verdict (``provenance.evidence_check``, see
   :mod:`streamcue.annotation.evidence`): ``unsupported`` first, then ``unsure``, then records
   never checked, then ``supported`` last.
2. Within a verdict, how sure that verdict is: an ``unsupported`` record the checker was very
   sure about comes before a doubtful one; a ``supported`` record it was unsure about comes
   before a sure one. Records never checked go by the generator's own confidence
   (``provenance.confidence`` in [0, 1], lowest first; a record without one, e.g. from a rule,
   counts as confidence 1).
3. Ties keep the input order.

The rank (1 = reviewed first) is written in each task's data as ``review_rank``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["review_key", "review_order"]

_TIER = {"unsupported": 0, "unsure": 1, None: 2, "supported": 3}


def _unit(value: Any, default: float) -> float:
    """A confidence in [0, 1]; anything else (missing, NaN, out of range) is the default."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    return default


def review_key(record: dict[str, Any]) -> tuple[int, float]:
    """The sort key above (without the input-order tie-break, which a stable sort gives)."""
    provenance = record.get("provenance") or {}
    check = provenance.get("evidence_check") if isinstance(provenance.get("evidence_check"), dict) else None
    if check is None:
        return _TIER[None], _unit(provenance.get("confidence"), 1.0)
    verdict = check.get("verdict") if check.get("verdict") in _TIER else "unsure"
    sure = _unit(check.get("confidence"), 0.0)
    return _TIER[verdict], -sure if verdict == "unsupported" else sure if verdict == "supported" else 0.0


def review_order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records sorted most-likely-wrong first (stable)."""
    return sorted(records, key=review_key)
