"""StreamBench: open-ended questions asked during a stream, several per video (StreamChat; PAPERS.md section 8).

* ``open_question``: each question is asked at its ``query_time_s``; the model sees the frames up
  to then and answers in free text (``form="open"``). The questions of one video form a dialogue
  (``context.group_id``, turns in the order the stream asks them): earlier questions are shown with
  the model's own answer (``--history own``, the default: StreamChat and OASIS keep the past
  conversation in their memory) or the reference answer (``--history gold``).
* The prediction (``open_question_prediction``) is the last answer and its time; no answer is
  ``response: null``, which the metric scores as "no", 0.

Prompt sets (``prompt_set``, as OVO-Bench and StreamingBench, :mod:`~streamcue.loaders.protocols.choice`):

* ``official`` (the default): what StreamChat's inference (``inference_streaming_longva_v2.py``,
  hmxiong/StreamChat at f8bcd22) sends: the question followed by its one instruction line
  (``streambench_official_question.v1``), and, once the video has earlier turns, before it StreamChat's
  sentence of the memories most related to the question (``streambench_official_history.v1``; streamcue
  shows every earlier turn, each ``[|User|]: question; [|AI|]: answer``, where StreamChat retrieves the one
  most similar). The text goes alone (frames, then the text; no system prompt, no response format) and the
  raw answer is the prediction.
* ``streamcue``: the question alone, earlier turns as dialogue, answered through the ``bench_open.v1`` answer
  prompt (structured JSON).

Default strategy: single-call (one call per question). Scoring: :mod:`streamcue.metrics.streambench`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn
from streamcue.loaders.protocols.choice import DEFAULT_PROMPT_SET, PromptSets, check_prompt_set, official_prompt

__all__ = ["StreamBench", "PROTOCOL", "OFFICIAL_PROMPTS", "official_text"]

OFFICIAL_PROMPTS = ("streambench_official_question.v1", "streambench_official_history.v1")


def official_text(question: str, earlier: Sequence[tuple[str, str]]) -> str:
    """The official text of a question after the earlier ``(question, answer)`` turns of its video."""
    text = official_prompt(OFFICIAL_PROMPTS[0], question=question)
    if not earlier:
        return text
    memories = "\n".join(f"[|User|]: {q.strip()}; [|AI|]: {a.strip()}" for q, a in earlier)
    return official_prompt(OFFICIAL_PROMPTS[1], related_memory_content=f"\n{memories}\n") + "\n" + text


def _kept(text: str | None) -> str | None:
    """The raw answer, judged as it is."""
    return text


class StreamBench(PromptSets, Protocol):
    official_prompts = OFFICIAL_PROMPTS
    streamcue_prompts = ()
    name = "streambench"
    kinds = ("open_question",)
    mode = {"open_question": "ask"}
    default_strategy = {"open_question": "single-call"}
    history = "own"
    options = ("prompt_set",)

    def __init__(self, prompt_set: str = DEFAULT_PROMPT_SET) -> None:
        self.prompt_set = check_prompt_set(prompt_set)

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        earlier: list[tuple[float, str, str]] = []
        for turn in context.group(record):
            if turn["question_id"] == record["question_id"]:
                continue
            said = turn["answer"] if context.history == "gold" else context.own.get(turn["question_id"], "")
            earlier.append((turn["query_time_s"], turn["question"], said or ""))
        if self.prompt_set == "official":
            text = official_text(record["question"], [(q, a) for _, q, a in earlier])
            return [Turn(record["query_time_s"], text, form="open", prompt=OFFICIAL_PROMPTS[0], plain=_kept)]
        dialogue = tuple(line for t, q, a in earlier for line in ((t, "user", q), (t, "assistant", a)))
        return [Turn(record["query_time_s"], record["question"], form="open", dialogue=dialogue)]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
        return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}


PROTOCOL = StreamBench()
