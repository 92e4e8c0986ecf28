"""Polling (ESTP-Bench Sec. 4.1 and App. E; the StreamingBench proactive protocol).

At a fixed frequency (ESTP-Bench's 0.175 Hz by default, one poll every ~5.7 s; StreamingBench
polls at 1 Hz) the model is asked a yes/no question, "is now the right time to answer?", and on
"yes" a second call asks for the answer. Each call carries the dialogue so far, so a model can
tell that it has already answered. A poll falls on the first frame at or after its scheduled
time ``start + n / hz`` (polls faster than the frame rate collapse onto frames), and only once
the question has been asked.

Calls per record: one per poll plus one per "yes"; per video hour at 0.175 Hz that is 630
yes/no calls plus the answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from streamcue.loaders.replay import Episode, Frame, positive
from streamcue.loaders.strategies.base import TEXT, VisionStrategy

__all__ = ["Polling"]


class Polling(VisionStrategy):
    """Ask "right time?" every ``1 / hz`` seconds, then the answer on yes."""

    name = "polling"
    kinds = ("interval_qa", "dense_caption")
    WHEN, ANSWER = "polling_when.v1", "polling_answer.v1"

    def __init__(self, settings: Any = None, *, kind: str, hz: float = 0.175, **options: Any) -> None:
        hz = positive(hz, "the polling frequency", "Hz")
        super().__init__(settings, kind=kind, **options)
        self.hz = float(hz)
        self._next = 0.0
        self._start = 0.0

    def begin(self, episode: Episode) -> None:
        super().begin(episode)
        self._start = self._next = episode.start_s

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> str | None:
        if now + 1e-9 < self._next:
            return None
        self._next = self._start + (math.floor((now - self._start) * self.hz + 1e-9) + 1) / self.hz
        if not prompt:
            return None  # the question has not been asked yet
        content = self.content(frames, prompt, history, now, context)
        if not self.yes(self.WHEN, content, "ask_when"):
            return None
        self.stats["said_yes"] += 1
        text = self.ask(self.ANSWER, content, TEXT, "ask_answer")["text"].strip()
        return text or None
