"""What a judge returns: one :class:`Verdict` per ``(question, reference, response)`` triple.

The three views of one judgement are described in :mod:`streamcue.metrics.judges`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Triple", "Verdict", "LLMTask"]


@dataclass(frozen=True)
class Verdict:
    binary: bool
    rubric: int
    answer_score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Triple = tuple[str, str, str]  # (question, reference, response)


@dataclass(frozen=True)
class LLMTask:
    """How the ``llm`` judge grades one task's triples: its versioned prompt (under ``metrics/prompts/``), the JSON
    shape of the model's answer, and the verdict read from that answer. A metric declares its own task in its module
    (``Metric(..., llm_task=...)``); the judge asks the metrics for them, so it names none."""

    #: The task name a metric passes to ``JudgeRunner.verdicts``.
    name: str
    prompt: str
    schema: Mapping[str, Any]
    verdict: Callable[[Mapping[str, Any]], Verdict]
    #: Grade a task that no metric declares as this one (one task at most sets it).
    fallback: bool = False
