"""ESTP-Bench (interval_qa): a question at its query time, answers judged by when they come (ESTP-Bench App. B.3).

The question is delivered into the running stream at ``query_time_s``; in a contextual group
(ORC, TRC) the earlier turns' questions arrive at their own query times and, with
``--history gold``, their gold answers at each answer's start (with ``own``, the model's own
answers stay in the dialogue). ``--span clip`` plays the record's clip, or without one from the
first turn's query time to ``tail_s`` after its last answer; ``video`` plays the whole video.
The prediction keeps the responses from the query time on (``interval_qa_prediction``).
Default strategy: polling at 0.175 Hz (the paper's baseline setting).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn

__all__ = ["ESTP", "PROTOCOL"]


class ESTP(Protocol):
    name = "estp"
    kinds = ("interval_qa",)
    prompts = ()
    mode = {"interval_qa": "stream"}
    default_strategy = {"interval_qa": "polling"}
    history = "own"

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        events: list[Turn] = []
        for r in context.group(record):
            events.append(Turn(r["query_time_s"], r["question"]))
            if context.history == "gold" and r["qa_id"] != record["qa_id"]:
                events += [Turn(a["start_s"], a["text"], "assistant") for a in r["answers"]]
        return events

    def span(self, record: Mapping[str, Any], duration_s: float | None, context: Context, *, span: str = "video",
             tail_s: float = 5.0) -> tuple[float, float]:
        start, end = super().span(record, duration_s, context)
        if span == "video":
            return start, end
        if record.get("clip"):
            first, last = record["clip"]["start_s"], record["clip"]["end_s"]
        else:
            first = min(r["query_time_s"] for r in context.group(record))
            last = max(a["end_s"] for a in record["answers"]) + tail_s
        return max(0.0, first), min(end, last)

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        kept = [{"t_s": r["t_s"], "text": r["text"]} for r in responses if r["t_s"] >= record["query_time_s"]]
        return {"qa_id": record["qa_id"], "responses": kept}


PROTOCOL = ESTP()
