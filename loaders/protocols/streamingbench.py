"""StreamingBench: multiple choice, sequential QA and proactive output, as its code asks them (PAPERS.md section 7).

* ``mc_question``: the question with lettered options (``mc_question.v1``; options without
  "A. " prefixes get them here) is asked at ``query_time_s`` and answered with a letter. SQA
  questions (``context``) carry the earlier turns of their group as dialogue: each earlier
  question at its time, then its gold answer ("B. text", ``--history gold``, as the official
  code does) or the model's own answer (``--history own``).
* ``active_item`` (proactive): polled every second (``--poll-hz``, 1 by default) from the
  question time + 1 s to the ground-truth time + 4 s with "is it the right time to output ...?
  yes or no" (``streamingbench_poll.v1``); on the first yes the question itself is asked
  (an open answer) and the dialogue ends (``src/benchmark/StreamingBenchProactive.py``). The
  prediction keeps the whole dialogue; the scorer reads its last turn.

Default strategies: single-call for questions, polling for proactive items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn, prompt_text
from streamcue.loaders.protocols.choice import choice_prompt, gold_answer

__all__ = ["StreamingBench", "PROTOCOL"]


class StreamingBench(Protocol):
    name = "streamingbench"
    kinds = ("mc_question", "active_item")
    prompts = ("mc_question.v1", "streamingbench_poll.v1")
    mode = {"mc_question": "ask", "active_item": "ask"}
    default_strategy = {"mc_question": "single-call", "active_item": "polling"}
    history = "gold"
    defaults = {"polling": {"hz": 1.0}}

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        if "options" not in record:
            target = record["target"]
            poll = prompt_text("streamingbench_poll.v1", question=record["question"], target=target["text"])
            return [Turn(record["query_time_s"] + 1, record["question"], form="open", until_s=target["t_s"] + 4,
                         poll=poll)]
        dialogue: list[tuple[float, str, str]] = []
        for earlier in context.group(record):
            if earlier["question_id"] == record["question_id"]:
                continue
            said = gold_answer(earlier) if context.history == "gold" else context.own.get(earlier["question_id"], "")
            dialogue += [(earlier["query_time_s"], "user", choice_prompt(earlier)),
                         (earlier["query_time_s"], "assistant", said)]
        return [Turn(record["query_time_s"], choice_prompt(record), form="choice", dialogue=tuple(dialogue))]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if "options" in record:
            said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
            return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}
        return {"item_id": record["item_id"],
                "responses": [{"t_s": r["t_s"], "role": r.get("role", "assistant"), "text": r["text"]}
                              for r in responses]}


PROTOCOL = StreamingBench()
