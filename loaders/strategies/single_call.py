"""Single call: one call to the model per step (stream protocols) or per question (ask protocols).

* Stream protocols (interval_qa, dense_caption, guidance): at every replay step the frames the
  memory kept, the current prompt and the dialogue so far go to the endpoint, which answers a
  structured decision ``{"speak": bool, "text": str[, "type": ...]}`` (prompt ``replay_vision.v1``).
* Ask protocols (OVO-Bench, StreamingBench multiple choice, OVO-Bench forward probes, open
  questions): each question is asked once, at its time, with the frames up to then; the answer
  prompt follows the question's form (``bench_choice.v1``, ``bench_open.v1``, ``bench_yes_no.v1``); a
  benchmark's official prompt (``turn.plain``) is sent alone, as plain text, and the raw answer kept.

Calls per record: one per frame step (stream), one per question or probe (ask).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamcue.loaders.protocols.base import Turn
from streamcue.loaders.protocols.livecook import GUIDANCE_TYPES
from streamcue.loaders.replay import Frame
from streamcue.loaders.strategies.base import BY_DEFAULT, VisionStrategy

__all__ = ["PROMPT", "SingleCall"]

PROMPT = "replay_vision.v1"
_RULES = {
    "interval_qa": "The user asked a question: answer it at the moment the video shows the answer, and again "
                   "each time the answer changes; keep answers short.",
    "dense_caption": "Describe what is happening right now in one short sentence, every time you are asked.",
    "guidance": "Guide the user through the plan: give the next instruction when a step starts, acknowledge "
                "a finished step (type success), point out a mistake at once (type mistake), and say when "
                "everything is done (type finish).",
}


class SingleCall(VisionStrategy):
    """One speak-or-stay-silent call per step; one answer per asked question."""

    name = "single-call"
    help = "one speak-or-stay-silent call at every replay step; one call per question where questions are asked"
    #: (the kinds asked once, mc_question and open_question, name it in their rows: streamcue/schemas/kinds.py)
    applies = {"interval_qa": None, "dense_caption": None, "guidance": None, "active_item": BY_DEFAULT}

    def __init__(self, settings: Any = None, *, kind: str = "interval_qa", **options: Any) -> None:
        super().__init__(settings, kind=kind, **options)
        guidance = kind == "guidance"
        self._values = {"task_rules": _RULES.get(kind, ""),
                        "type_field": ', "type": "instruction" | "success" | "mistake" | "finish"' if guidance else ""}
        props: dict[str, Any] = {"speak": {"type": "boolean"}, "text": {"type": "string"}}
        if guidance:
            props["type"] = {"type": "string", "enum": list(GUIDANCE_TYPES)}
        self._schema = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> str | dict[str, str] | None:
        content = self.content(frames, prompt, history, now, context)
        reply = self.try_ask(PROMPT, content, self._schema, "replay_decision", **self._values)
        if not reply.ok:  # unparseable: silent at this step (counted, kept in the sample)
            return None
        answer = reply.parsed
        if not answer["speak"] or not answer["text"].strip():
            return None
        if self.kind == "guidance":
            return {"type": answer["type"], "text": answer["text"]}
        return answer["text"]

    def answer_turn(self, turn: Turn, view: Any) -> list[dict[str, Any]]:
        """The question asked once at its time: ``[{"t_s", "text"[, "probe"]}]``. A complete turn (official
        prompt, ``turn.plain``) goes alone as plain text and its raw answer is kept."""
        if turn.plain is not None:
            text = self.answer_plain(turn.form, self.asked(view, turn.t_s, turn.text, turn.dialogue, alone=True),
                                     turn.prompt, turn.plain)
        else:
            text = self.answer(turn.form, self.asked(view, turn.t_s, turn.text, turn.dialogue))
        said: dict[str, Any] = {"t_s": turn.t_s, "text": text}
        if turn.probe is not None:
            said["probe"] = turn.probe
        return [said]
