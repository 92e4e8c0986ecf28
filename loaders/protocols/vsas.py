"""VSAS-Bench (dense_caption): one task prompt at the start, an answer wanted every second (VSAS-Bench Sec. 3).

The task prompt is given at 0 s and the whole video plays; the model's responses are the
prediction (``dense_caption_prediction``); the metric carries the latest response forward to
the seconds without one. The synchronous and asynchronous timings of the paper are the
engine's ``timing`` option. Default strategy: single-call, one call every frame step (each second at the
default 1 fps) asking for the answer of that second, as VSAS-Bench asks; self-check is the paper's
re-caption-on-change baseline, polling (ESTP-Bench's "right time?" at 0.175 Hz) also applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn

__all__ = ["VSAS", "PROTOCOL"]


class VSAS(Protocol):
    name = "vsas"
    kinds = ("dense_caption",)
    prompts = ()
    mode = {"dense_caption": "stream"}
    default_strategy = {"dense_caption": "single-call"}
    history = "own"

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        return [Turn(0.0, record["prompt"])]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"task_id": record["task_id"], "responses": [{"t_s": r["t_s"], "text": r["text"]} for r in responses]}


PROTOCOL = VSAS()
