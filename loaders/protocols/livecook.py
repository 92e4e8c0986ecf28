"""LiveCook (guidance): the plan at the start, instructions, successes and mistakes as they happen (LiveCook Sec. 2).

The activity and its numbered plan (prompt ``livecook_plan.v1``) are given at 0 s and the whole
recording plays. A response may name its event type (``{"type": "mistake", "text": ...}``) and
its plan step (``plan_index``); plain text counts as an instruction (``guidance_prediction``).
Default strategy: the paper's turn loop (completed? / mistake? every 5 s).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.errors import InputError
from streamcue.loaders.protocols.base import Context, Protocol, Turn, prompt_text

__all__ = ["GUIDANCE_TYPES", "LiveCook", "PROTOCOL", "plan_prompt"]

GUIDANCE_TYPES = ("instruction", "success", "mistake", "finish")


def plan_prompt(record: Mapping[str, Any]) -> str:
    """The guidance prompt: the activity and its numbered plan."""
    steps = "\n".join(f"{step['index'] + 1}. {step['text']}" for step in record["plan"])
    return prompt_text("livecook_plan.v1", activity=record["activity"], steps=steps)


class LiveCook(Protocol):
    name = "livecook"
    kinds = ("guidance",)
    prompts = ("livecook_plan.v1",)
    mode = {"guidance": "stream"}
    default_strategy = {"guidance": "turn-loop"}
    history = "own"

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        return [Turn(0.0, plan_prompt(record))]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        events = []
        for r in responses:
            kind = r.get("type", "instruction")
            if kind not in GUIDANCE_TYPES:
                raise InputError(f"the model answered an unknown guidance event type {kind!r}; "
                                 f"use one of {GUIDANCE_TYPES}", record=f"video_id={record['video_id']}")
            event = {"t_s": r["t_s"], "type": kind, "text": r["text"]}
            if r.get("plan_index") is not None:
                event["plan_index"] = r["plan_index"]
            events.append(event)
        return {"video_id": record["video_id"], "events": events}


PROTOCOL = LiveCook()
