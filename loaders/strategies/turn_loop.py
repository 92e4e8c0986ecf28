"""LiveCook's turn-based baseline (LiveCook Sec. 2 and App. C) for guidance records.

The first instruction of the plan is given when the recording starts (no call). Then every
``every_s`` seconds (5 s in the paper) two calls: "is the current instruction completed?"
(yes/no) and "has a mistake been made?" (with feedback text). A mistake becomes a ``mistake``
event; a completion becomes a ``success`` event followed by the next instruction, or by
"You have finished all the steps." after the last one. Every event carries ``plan_index``, the
plan step it refers to. After the finish the loop makes no more calls.

The paper also gives the mistake question a summary of typical mistakes for the instruction,
written by an LLM from similar training instructions; pass them as ``hints``: keys
``(video_id, plan_index)`` (the ``mistake_summary`` records of ``streamcue build
livecook-summaries``) or the instruction text.

Calls per recording: 2 per tick until the plan is finished, at most 2 x 720 = 1,440 per video hour.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from streamcue.loaders.replay import Episode, Frame, positive
from streamcue.loaders.strategies.base import LONGEST_STEP_S, STEP_WHY, Option, VisionStrategy

__all__ = ["TurnLoop", "FINISHED", "load_hints"]

FINISHED = "You have finished all the steps."


def load_hints(path: Path) -> dict[Any, str]:
    """Mistake hints from a ``mistake_summary`` JSONL file (keys ``(video_id, plan_index)``) or a JSON object
    ``{instruction text: hint}``."""
    from streamcue.errors import InputError
    from streamcue.io import read_json, read_jsonl
    from streamcue.schemas import validate_file

    path = Path(path)
    if not path.is_file():
        raise InputError("no such mistake-hints file", file=path)
    if path.suffix == ".jsonl":
        validate_file(path, "mistake_summary")
        return {(r["video_id"], r["plan_index"]): r["summary"] for r in read_jsonl(path)}
    hints = read_json(path)
    if not isinstance(hints, dict) or not all(isinstance(v, str) for v in hints.values()):
        raise InputError("mistake hints must be a JSON object of instruction text -> hint text", file=path)
    return hints
MISTAKE = {"type": "object", "properties": {"mistake": {"type": "boolean"}, "feedback": {"type": "string"}},
           "required": ["mistake", "feedback"], "additionalProperties": False}


class TurnLoop(VisionStrategy):
    """Completed? then mistake? every ``every_s`` seconds; events name their plan step."""

    name = "turn-loop"
    help = "LiveCook: 'instruction completed?' then 'mistake?' every --every-s seconds"
    applies = {"guidance": None}
    options = (Option("every_s", float, 5.0, "seconds between steps", maximum=LONGEST_STEP_S, why=STEP_WHY),
               Option("hints", Path, None, "LiveCook's typical mistakes per instruction, shown with the mistake "
                      "question: the mistake_summaries.jsonl of `build livecook-summaries`, or a JSON object "
                      "{instruction text: hint}.", flag="mistake-hints", load=lambda path: load_hints(path),
                      report=False))
    COMPLETED, MISTAKE = "turn_loop_completed.v1", "turn_loop_mistake.v1"

    def __init__(self, settings: Any = None, *, kind: str = "guidance", every_s: float = 5.0,
                 hints: Mapping[Any, str] | None = None, **options: Any) -> None:
        every_s = positive(every_s, "the turn-loop period")
        super().__init__(settings, kind=kind, **options)
        self.every_s = float(every_s)
        self.hints = dict(hints or {})
        self.plan: list[dict[str, Any]] = []
        self.step = 0
        self._next = 0.0
        self._started = False

    def begin(self, episode: Episode) -> None:
        super().begin(episode)
        self.plan = list(episode.record["plan"]) if episode.record else []
        self.step, self._started = 0, False
        self._next = episode.start_s + self.every_s

    def _instruction(self, now: float) -> dict[str, Any]:
        if self.step < len(self.plan):
            return {"t_s": now, "type": "instruction", "text": self.plan[self.step]["text"], "plan_index": self.step}
        return {"t_s": now, "type": "finish", "text": FINISHED}

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> list[dict[str, Any]] | None:
        events: list[dict[str, Any]] = []
        if not self._started:
            self._started = True
            events.append(self._instruction(now))
        if self.step >= len(self.plan) or now + 1e-9 < self._next:
            return events or None
        self._next += self.every_s * (math.floor((now - self._next) / self.every_s + 1e-9) + 1)
        current = self.plan[self.step]["text"]
        task = f"{prompt}\nCurrent instruction (step {self.step + 1} of {len(self.plan)}): {current}"
        video_id = self.episode.record.get("video_id") if self.episode and self.episode.record else None
        hint = self.hints.get((video_id, self.step)) or self.hints.get(current)
        if hint:
            task += f"\nTypical mistakes for this instruction: {hint}"
        content = self.content(frames, task, history, now, context)
        completed = self.yes(self.COMPLETED, content, "ask_completed")
        reply = self.try_ask(self.MISTAKE, content, MISTAKE, "ask_mistake")
        mistake = reply.parsed if reply.ok else {"mistake": False, "feedback": ""}
        if mistake["mistake"] and mistake["feedback"].strip():
            events.append({"t_s": now, "type": "mistake", "text": mistake["feedback"].strip(), "plan_index": self.step})
        if completed:
            events.append({"t_s": now, "type": "success", "text": f"Well done, step {self.step + 1} is complete.",
                           "plan_index": self.step})
            self.step += 1
            events.append(self._instruction(now))
        return events or None
