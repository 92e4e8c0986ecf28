"""StreamBench: open-ended questions asked during a stream, several per video (StreamChat; PAPERS.md section 8).

* ``open_question``: each question is asked at its ``query_time_s``; the model sees the frames up
  to then and answers in free text (``form="open"``). The questions of one video form a dialogue
  (``context.group_id``, turns in the order the stream asks them): earlier questions come first as
  dialogue, each followed by the model's own answer (``--history own``, the default: StreamChat
  and OASIS keep the past conversation in their memory) or by the reference answer (``--history
  gold``). The question text is sent as the source gives it (no prompt file: the official code
  adds none).
* The prediction (``open_question_prediction``) is the last answer and its time; no answer is
  ``response: null``, which the metric scores as "no", 0.

Default strategy: single-call (one call per question). Scoring: :mod:`streamcue.metrics.streambench`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn

__all__ = ["StreamBench", "PROTOCOL"]


class StreamBench(Protocol):
    name = "streambench"
    kinds = ("open_question",)
    prompts = ()
    mode = {"open_question": "ask"}
    default_strategy = {"open_question": "single-call"}
    history = "own"

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        dialogue: list[tuple[float, str, str]] = []
        for earlier in context.group(record):
            if earlier["question_id"] == record["question_id"]:
                continue
            said = earlier["answer"] if context.history == "gold" else context.own.get(earlier["question_id"], "")
            dialogue += [(earlier["query_time_s"], "user", earlier["question"]),
                         (earlier["query_time_s"], "assistant", said)]
        return [Turn(record["query_time_s"], record["question"], form="open", dialogue=tuple(dialogue))]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
        return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}


PROTOCOL = StreamBench()
