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

from streamcue.loaders.clock import arrival, issue, next_poll
from streamcue.loaders.replay import Episode, Frame, positive
from streamcue.loaders.protocols.base import Turn
from streamcue.loaders.strategies.base import BY_DEFAULT, TEXT, Option, VisionStrategy

__all__ = ["Polling"]


class Polling(VisionStrategy):
    """Ask "right time?" every ``1 / hz`` seconds, then the answer on yes."""

    name = "polling"
    help = "ESTP-Bench polling: 'right time to answer?' at --poll-hz, then the answer"
    applies = {"interval_qa": None, "dense_caption": None, "active_item": BY_DEFAULT}
    options = (Option("hz", float, 0.175, "polls per second (ESTP-Bench: 0.175; StreamingBench: 1)",
                      flag="poll-hz", minimum=0.01,
                      why="the polling frequency must give a poll at least every 100 s: a question asked less than "
                          "one period before its record ends is never polled, and the run asks nothing"),)
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
        self.count("said_yes")
        reply = self.try_ask(self.ANSWER, content, TEXT, "ask_answer")
        text = reply.parsed["text"].strip() if reply.ok else ""
        return text or None

    def answer_turn(self, turn: Turn, view: Any) -> list[dict[str, Any]]:
        """A polled question (StreamingBench proactive): ``turn.poll`` yes/no at ``hz`` from ``turn.t_s`` to
        ``turn.until_s``; on the first yes, the question itself. Every turn of that dialogue is a response.
        Official prompts (``turn.plain``): each poll and the question go alone as plain text, the raw answers are
        kept and ``turn.poll_yes`` (the official rule) reads a poll's answer as yes or no."""
        said: list[dict[str, Any]] = []
        n = 0
        now = turn.t_s
        plain = turn.plain is not None
        while now <= turn.until_s + 1e-9:
            issue(now)
            if plain:
                rule = turn.poll_yes or (lambda raw: bool(raw) and raw.strip().lower().startswith("yes"))
                raw = self.answer_plain("yes_no", self.asked(view, now, turn.poll, turn.dialogue, alone=True),
                                        turn.poll_prompt, lambda text: "yes" if rule(text) else "no")
                yes, says_yes = raw, rule(raw)
            else:
                yes = self.answer("yes_no", self.asked(view, now, turn.poll, turn.dialogue))
                says_yes = yes == "Yes"
            heard = arrival(now)  # now under the free clock; the poll's arrival under live or fixed (docs/clock.md)
            said += [{"t_s": now, "role": "user", "text": turn.poll}, {"t_s": heard, "role": "assistant", "text": yes}]
            if says_yes:
                self.count("said_yes")
                if plain:
                    text = self.answer_plain(turn.form, self.asked(view, heard, turn.text, turn.dialogue, alone=True),
                                             turn.prompt, turn.plain)
                else:
                    text = self.answer(turn.form, self.asked(view, heard, turn.text, turn.dialogue))
                said += [{"t_s": heard, "role": "user", "text": turn.text},
                         {"t_s": arrival(heard), "role": "assistant", "text": text}]
                break
            n, now = next_poll(turn.t_s, n, self.hz, heard)
        return said
