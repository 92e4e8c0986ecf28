"""StreamingBench: multiple choice, sequential QA and proactive output, as its code asks them (PAPERS.md section 7).

* ``mc_question``: the question with lettered options (options without "A. " prefixes get them
  here) is asked at ``query_time_s``. SQA questions (``context``) carry the earlier turns of their
  group with the gold answers (``--history gold``, as the official code) or the model's own
  (``--history own``).
* ``active_item`` (proactive): polled every second (``--poll-hz``, 1 by default) from the question
  time + 1 s to the ground-truth time + 4 s with "is it the right time to output ...? yes or no";
  on the first yes the question itself is asked and the dialogue ends
  (``src/benchmark/StreamingBenchProactive.py``). The prediction keeps the whole dialogue; the
  scorer reads its last turn.

Prompt sets (``prompt_set``, :mod:`~streamcue.loaders.protocols.choice`):

* ``official`` (``src/benchmark/`` at commit 8929923): ``streamingbench_official_choice.v1`` (real,
  omni), ``streamingbench_official_sqa.v1`` whose context is built from
  ``streamingbench_official_sqa_context.v1`` (each earlier question, its options and answer letter
  in one sentence, inside the prompt), ``streamingbench_official_proactive.v1`` around both the poll
  (``streamingbench_poll.v1``'s text) and the question. A poll says yes when "yes" occurs in the
  lower-cased answer (:meth:`StreamingBench.poll_says_yes`); the raw answer is the prediction,
  read by count.py's first-character rule.
* ``streamcue``: ``mc_question.v1`` with the earlier SQA turns as dialogue ("B. text"),
  ``streamingbench_poll.v1`` for the polls.

Context (``context``): ``all`` (the released code: every frame up to the question) or
``last-60s`` (the public leaderboard: the last 60 s); :attr:`StreamingBench.window_s` gives the
frame window a replay uses when ``--window-s`` is not given.

Default strategies: single-call for questions, polling for proactive items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.loaders.protocols.base import Context, Protocol, Turn, prompt_text
from streamcue.loaders.protocols.choice import (DEFAULT_PROMPT_SET, PromptSets, check_prompt_set, choice_prompt,
                                                first_letter, gold_answer, lettered, official_prompt)

__all__ = ["StreamingBench", "PROTOCOL", "CONTEXTS", "OFFICIAL_PROMPTS", "STREAMCUE_PROMPTS", "clock"]

#: ``context`` option -> seconds of video before the question (None: all of it).
CONTEXTS = {"all": None, "last-60s": 60.0}
OFFICIAL_PROMPTS = ("streamingbench_official_choice.v1", "streamingbench_official_sqa.v1",
                    "streamingbench_official_sqa_context.v1", "streamingbench_official_proactive.v1",
                    "streamingbench_poll.v1")
STREAMCUE_PROMPTS = ("mc_question.v1", "streamingbench_poll.v1")


def clock(t_s: float) -> str:
    """``HH:MM:SS`` as the question files write times (the official SQA context quotes them)."""
    s = int(t_s)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _kept(text: str | None) -> str | None:
    """A proactive answer, kept as written (count.py reads the dialogue's last turn)."""
    return text


class StreamingBench(PromptSets, Protocol):
    official_prompts = OFFICIAL_PROMPTS
    streamcue_prompts = STREAMCUE_PROMPTS
    name = "streamingbench"
    kinds = ("mc_question", "active_item")
    mode = {"mc_question": "ask", "active_item": "ask"}
    default_strategy = {"mc_question": "single-call", "active_item": "polling"}
    history = "gold"
    defaults = {"polling": {"hz": 1.0}}
    options = ("prompt_set", "context")
    sound_field = ("group", ("omni",))  # the omni-source file's questions

    def __init__(self, prompt_set: str = DEFAULT_PROMPT_SET, context: str = "all") -> None:
        from streamcue.errors import ConfigError

        self.prompt_set = check_prompt_set(prompt_set)
        if context not in CONTEXTS:
            raise ConfigError(f"unknown StreamingBench context {context!r}; use all (the released code) or "
                              "last-60s (the public leaderboard)")
        self.context = context

    @property
    def window_s(self) -> float | None:
        """Seconds of video before each question the model sees (None: all), from ``context``."""
        return CONTEXTS[self.context]

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        official = self.prompt_set == "official"
        if "options" not in record:
            target = record["target"]
            poll = prompt_text("streamingbench_poll.v1", question=record["question"], target=target["text"])
            question = record["question"]
            if official:
                poll = official_prompt("streamingbench_official_proactive.v1", question=poll)
                question = official_prompt("streamingbench_official_proactive.v1", question=question)
                return [Turn(record["query_time_s"] + 1, question, form="open", until_s=target["t_s"] + 4, poll=poll,
                             prompt="streamingbench_official_proactive.v1", plain=_kept,
                             poll_prompt="streamingbench_official_proactive.v1", poll_yes=self.poll_says_yes)]
            return [Turn(record["query_time_s"] + 1, question, form="open", until_s=target["t_s"] + 4, poll=poll)]
        earlier = [r for r in context.group(record) if r["question_id"] != record["question_id"]]
        if official:
            name = "streamingbench_official_sqa.v1" if record.get("context") else "streamingbench_official_choice.v1"
            return [Turn(record["query_time_s"], self._official_question(record, earlier, context), form="choice",
                         prompt=name, plain=first_letter)]
        dialogue: list[tuple[float, str, str]] = []
        for turn in earlier:
            said = gold_answer(turn) if context.history == "gold" else context.own.get(turn["question_id"], "")
            dialogue += [(turn["query_time_s"], "user", choice_prompt(turn)),
                         (turn["query_time_s"], "assistant", said)]
        return [Turn(record["query_time_s"], choice_prompt(record), form="choice", dialogue=tuple(dialogue))]

    @staticmethod
    def _official_question(record: Mapping[str, Any], earlier: list[dict[str, Any]], context: Context) -> str:
        options = "\n".join(lettered(record["options"]))
        if not record.get("context"):
            return official_prompt("streamingbench_official_choice.v1", question=record["question"], options=options)
        opening, turn = official_prompt("streamingbench_official_sqa_context.v1").split("\n", 1)
        said = ""
        for r in earlier:
            answer = chr(65 + r["answer"]) if context.history == "gold" else context.own.get(r["question_id"], "")
            said += turn.format(time=clock(r["query_time_s"]), question=r["question"],
                                options=", ".join(lettered(r["options"])), answer=answer)
        text = opening + said if said else ""
        return official_prompt("streamingbench_official_sqa.v1", context=text, question=record["question"],
                               options=options)

    @staticmethod
    def poll_says_yes(text: str | None) -> bool:
        """The official poll rule (StreamingBenchProactive.py): "yes" anywhere in the lower-cased answer."""
        return bool(text) and "yes" in text.strip().lower()

    @staticmethod
    def parsed(record: Mapping[str, Any], text: str | None) -> Any:
        """What count.py reads in a raw multiple-choice answer (its first character), for per-sample logs."""
        return first_letter(text) if "options" in record else text

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if "options" in record:
            said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
            return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}
        return {"item_id": record["item_id"],
                "responses": [{"t_s": r["t_s"], "role": r.get("role", "assistant"), "text": r["text"]}
                              for r in responses]}

    def __repr__(self) -> str:
        return f"<protocol {self.name} ({self.prompt_set} prompts, {self.context} video): {', '.join(self.kinds)}>"


PROTOCOL = StreamingBench()
