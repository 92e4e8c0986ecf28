"""Periodic: a model that sees nothing and says a fixed thing every N seconds (a floor for the metrics).

For guidance it says "success" every ``every_s`` and a generic mistake every ``mistake_every_s``
seconds; for the other stream kinds its text counts as an answer. It needs no endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamcue.loaders.replay import Frame, positive
from streamcue.loaders.strategies.base import LONGEST_STEP_S, STEP_WHY, Option

__all__ = ["PeriodicBaseline"]


class PeriodicBaseline:
    """A fixed answer every ``every_s`` seconds; for guidance a generic mistake every ``mistake_every_s``."""

    name = "periodic"
    help = "blind floor: a fixed answer every --every-s seconds (sees nothing, no endpoint)"
    applies = {"interval_qa": None, "dense_caption": None, "guidance": None}
    options = (Option("every_s", float, 30.0, "seconds between steps", maximum=LONGEST_STEP_S, why=STEP_WHY),
               Option("mistake_every_s", float, 120.0, "seconds between generic mistakes (guidance)",
                      maximum=LONGEST_STEP_S, why=STEP_WHY))
    needs_endpoint = False
    latency_s = 0.0

    def __init__(self, every_s: float = 30.0, mistake_every_s: float | None = 120.0,
                 text: str = "Well done, that step is complete.", **_: Any) -> None:
        self.every_s = positive(every_s, "the periodic baseline's period")
        self.mistake_every_s = None if mistake_every_s is None else positive(mistake_every_s, "the mistake period")
        self.text = text

    @classmethod
    def plays(cls) -> dict[str, str | None]:
        return dict(cls.applies)

    @classmethod
    def applies_to(cls, kind: str, protocol: str | None = None) -> bool:
        return kind in cls.applies

    @staticmethod
    def _due(now: float, step: float | None) -> bool:
        return step is not None and now > 0 and round(now / step, 6).is_integer()

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float) -> dict[str, str] | None:
        if self._due(now, self.mistake_every_s):
            return {"type": "mistake", "text": "Check that step again."}
        if self._due(now, self.every_s):
            return {"type": "success", "text": self.text}
        return None

    def report(self) -> dict[str, Any]:
        return {}
