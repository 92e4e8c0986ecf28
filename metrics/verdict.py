"""What a judge returns: one :class:`Verdict` per ``(question, reference, response)`` triple.

The three views of one judgement are described in :mod:`streamcue.metrics.judges`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Triple", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    binary: bool
    rubric: int
    answer_score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Triple = tuple[str, str, str]  # (question, reference, response)
