"""Self-check for dense captions (VSAS-Bench App. D.1).

Every ``every_s`` seconds: the first time, ask for the answer; afterwards first ask the model
whether its latest answer still holds for what it sees now (yes/no) and ask for a new answer
only when it does not. Staying silent is right for VSAS scoring, which carries the latest
answer forward to the seconds without a response.

Calls per record: 1 check per step plus 1 answer per change; per video hour at 1 Hz that is
3,600 checks plus the answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from streamcue.loaders.replay import Episode, Frame, positive
from streamcue.loaders.strategies.base import LONGEST_STEP_S, STEP_WHY, TEXT, Option, VisionStrategy

__all__ = ["SelfCheck"]


class SelfCheck(VisionStrategy):
    """Answer, then re-answer only when the model says its latest answer no longer holds."""

    name = "self-check"
    help = "VSAS-Bench self-check: re-caption only when the last caption no longer holds"
    applies = {"dense_caption": None}
    options = (Option("every_s", float, 1.0, "seconds between steps", maximum=LONGEST_STEP_S, why=STEP_WHY),)
    CHECK, ANSWER = "self_check.v1", "polling_answer.v1"

    def __init__(self, settings: Any = None, *, kind: str = "dense_caption", every_s: float = 1.0,
                 **options: Any) -> None:
        every_s = positive(every_s, "the self-check period")
        super().__init__(settings, kind=kind, **options)
        self.every_s = float(every_s)
        self.last: str | None = None
        self._next = 0.0

    def begin(self, episode: Episode) -> None:
        super().begin(episode)
        self.last, self._next = None, episode.start_s

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> str | None:
        if now + 1e-9 < self._next or not prompt:
            return None
        self._next += self.every_s * (math.floor((now - self._next) / self.every_s + 1e-9) + 1)
        content = self.content(frames, prompt, history, now, context)
        if self.last is not None:
            check = content + [{"type": "text", "text": f"Your latest answer: {self.last}"}]
            if self.yes(self.CHECK, check, "ask_check"):
                self.count("still_holds")
                return None
        reply = self.try_ask(self.ANSWER, content, TEXT, "ask_answer")
        text = reply.parsed["text"].strip() if reply.ok else ""
        if not text:
            return None
        self.last = text
        return text
