"""A replay model backed by any OpenAI-compatible vision endpoint (polling: asked at every step).

Each call sends the frames the memory policy kept (as JPEG data URLs, labelled with their
times), the current prompt and the dialogue so far, and asks for a structured decision
``{"speak": bool, "text": str[, "type": ...]}``. Answers are validated, retried when invalid,
and cached like every other LLM call in streamcue (the cache key covers the images).

>>> settings = LLMSettings.resolve(base_url=..., model="Qwen2.5-VL-7B")                       # doctest: +SKIP
>>> model = OpenAIVisionModel(settings, kind="interval_qa")                                  # doctest: +SKIP
>>> replay_records(model, records, "interval_qa", durations, protocol="asynchronous", clock="wall")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.loaders.replay import Frame
from streamcue.loaders.replay_records import GUIDANCE_TYPES
from streamcue.loaders.strategies.base import user_content
from streamcue.prompts import load_prompt

__all__ = ["PROMPT", "OpenAIVisionModel"]


PROMPT = "replay_vision.v1"
_RULES = {
    "interval_qa": "The user asked a question: answer it at the moment the video shows the answer, and again "
                   "each time the answer changes; keep answers short.",
    "dense_caption": "Describe what is happening right now in one short sentence, every time you are asked.",
    "guidance": "Guide the user through the plan: give the next instruction when a step starts, acknowledge "
                "a finished step (type success), point out a mistake at once (type mistake), and say when "
                "everything is done (type finish).",
}


class OpenAIVisionModel:
    """``respond(frames, prompt, history, now)`` through an OpenAI-compatible chat endpoint.

    ``latency_s`` is the simulated inference time for the asynchronous protocol; use
    ``clock="wall"`` in the replay to use the endpoint's real speed instead. Frames without
    pixels are described by their times only. A memory's text context (OASIS) goes with the frames.
    """

    takes_context = True

    def __init__(self, settings: LLMSettings, *, kind: str = "interval_qa", latency_s: float = 1.0,
                 use_cache: bool = True) -> None:
        self.client = LLMClient(settings, use_cache=use_cache)
        self.kind = kind
        self.latency_s = latency_s
        guidance = kind == "guidance"
        self._prompt = load_prompt("streamcue.loaders", PROMPT)
        self._system = self._prompt.render(
            task_rules=_RULES[kind],
            type_field=', "type": "instruction" | "success" | "mistake" | "finish"' if guidance else "")
        props: dict[str, Any] = {"speak": {"type": "boolean"}, "text": {"type": "string"}}
        if guidance:
            props["type"] = {"type": "string", "enum": list(GUIDANCE_TYPES)}
        self._schema = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> str | dict[str, str] | None:
        content = user_content(frames, prompt, history, now, context)
        answer = self.client.complete(Request(
            messages=({"role": "system", "content": self._system}, {"role": "user", "content": content}),
            schema=self._schema, prompt_version=self._prompt.version, name="replay_decision"))
        if not answer["speak"] or not answer["text"].strip():
            return None
        if self.kind == "guidance":
            return {"type": answer["type"], "text": answer["text"]}
        return answer["text"]
