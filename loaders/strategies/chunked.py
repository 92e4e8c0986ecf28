"""Chunked: at every chunk end the protocol schedules, one plain call; the model answers or says its placeholder.

The way third-generation streaming runners play a video (PhoStream's ``run_stream_eval.py``): the stream goes to
the model chunk by chunk; at each chunk end the protocol asks in (its schedule, :meth:`Protocol.moments
<streamcue.loaders.protocols.base.Protocol.moments>`; at every frame where it names none) one call sends a system
prompt (the prompt file ``prompt``, e.g. the benchmark's official one, given by its protocol's ``defaults``; the
text below a header's ``---`` line), then
one user message: the frames the memory keeps of the rolling context (the protocol's ``window_s``), the dialogue
so far (questions and the model's earlier answers) and the active question. The answer is plain text, kept as
written; an answer equal to ``placeholder`` (case and surrounding space aside) is silence: no response, and
not added to the dialogue.

Calls per record: one per scheduled moment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from streamcue.errors import ConfigError
from streamcue.llm import Request
from streamcue.loaders.replay import Frame
from streamcue.loaders.strategies.base import (BY_DEFAULT, TEXT, Option, VisionStrategy, clip_extra, dialogue_text,
                                               turn_content)

__all__ = ["Chunked"]

_PROMPT_NAME = re.compile(r"^[a-z0-9_]+\.v\d+$")


def _as_text(text: str) -> dict[str, str]:
    return {"text": text or ""}


class Chunked(VisionStrategy):
    """One plain call per scheduled chunk end: the system prompt, the rolling context, the dialogue; a placeholder
    answer is silence."""

    name = "chunked"
    help = ("at every chunk end the protocol asks in: the system prompt, the rolling context's frames and the "
            "dialogue in one plain call; the placeholder answer is silence")
    applies = {"active_item": BY_DEFAULT}
    options = (Option("prompt", str, None, "the system prompt's file under loaders/prompts (default: the protocol's)",
                      flag="chunk-prompt"),
               Option("placeholder", str, None, "the answer that means silence (default: the protocol's)"))

    def __init__(self, settings: Any = None, *, kind: str = "active_item", prompt: str | None = None,
                 placeholder: str | None = None, **options: Any) -> None:
        if not prompt or not placeholder:
            raise ConfigError("strategy chunked needs its system prompt and placeholder (--chunk-prompt, "
                              "--placeholder): this protocol declares none")
        if not _PROMPT_NAME.match(prompt):
            raise ConfigError(f"--chunk-prompt {prompt!r} is not a prompt file's name (NAME.vN, a file of "
                              "loaders/prompts)")
        try:
            self.system = self.prompt(prompt)
        except OSError:
            raise ConfigError(f"--chunk-prompt {prompt!r}: no such prompt file in loaders/prompts") from None
        super().__init__(settings, kind=kind, **options)
        head, sep, body = self.system.text.partition("\n---\n")
        self.system_text = body if sep and head.startswith("#") else self.system.text  # a file's header is not sent
        self.placeholder = placeholder.strip().lower()

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> str | None:
        dialogue = dialogue_text(history, prompt)
        text = (f"Dialogue so far:\n{dialogue}\n" if dialogue else "") + prompt
        content = turn_content(frames, text, now, context)
        request = Request(messages=({"role": "system", "content": self.system_text},
                                    {"role": "user", "content": content}),
                          schema=TEXT, prompt_version=self.system.version + "+plain", name="ask_chunk",
                          plain=_as_text, extra=clip_extra(content), raw=True)
        reply = self._send(request, "ask_chunk")
        said = reply.text.strip() if reply.ok and reply.text else ""
        if not said or said.lower() == self.placeholder:
            return None
        return said
