"""A replay model backed by any OpenAI-compatible vision endpoint, asked at every step: the ``single-call`` strategy.

Kept under its old name; :class:`streamcue.loaders.strategies.single_call.SingleCall` is the
strategy itself (same prompt, same requests, same cache entries).

>>> settings = LLMSettings.resolve(base_url=..., model="Qwen2.5-VL-7B")                       # doctest: +SKIP
>>> model = OpenAIVisionModel(settings, kind="interval_qa")                                  # doctest: +SKIP
"""

from __future__ import annotations

from streamcue.loaders.strategies.single_call import PROMPT, SingleCall

__all__ = ["PROMPT", "OpenAIVisionModel"]


class OpenAIVisionModel(SingleCall):
    """``respond(frames, prompt, history, now)`` through an OpenAI-compatible endpoint (see :class:`SingleCall`)."""
