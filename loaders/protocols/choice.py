"""Shared parts of the OVO-Bench and StreamingBench protocols: prompt sets, question texts, answer extraction.

Two prompt sets (``prompt_set``):

* ``official``: the benchmark's own prompt templates, kept as versioned files
  (``loaders/prompts/<benchmark>_official_*.v1.txt``; each file's header names the upstream
  repository, commit and licence, and only the text below its ``---`` line is sent). Each turn's
  text is the whole instruction, as the official code sends it (``complete_prompts`` is true): a
  transport that asks for plain text sends it alone and keeps the raw answer, which the official
  extraction rule reads (OVO-Bench: the gold letter anywhere in the response; StreamingBench: the
  first character).
* ``streamcue``: streamcue's own short question texts (``mc_question.v1``, ``ovo_*_probe.v1``),
  answered through the answer prompts of the strategies (``bench_choice.v1``...; structured JSON).

:data:`DEFAULT_PROMPT_SET` is the default of both protocols (see ``docs/benchmarks/ovo_bench.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamcue.loaders.protocols.base import prompt_text
from streamcue.prompts import load_prompt

__all__ = ["PromptSets", "choice_prompt", "gold_answer", "official_prompt", "PROMPT_SETS", "DEFAULT_PROMPT_SET",
           "check_prompt_set", "lettered", "first_letter", "letters_in"]

PROMPT_SETS = ("official", "streamcue")
#: The default prompt set: ``official``. The strategies send an official turn's text alone (frames, then the
#: text; no system prompt, no JSON) as a plain request and keep the raw answer (docs/benchmarks/ovo_bench.md).
DEFAULT_PROMPT_SET = "official"


def check_prompt_set(name: str) -> str:
    from streamcue.errors import ConfigError

    if name not in PROMPT_SETS:
        raise ConfigError(f"unknown prompt set {name!r}; use official (the benchmark's own prompts) or streamcue")
    return name



class PromptSets:
    """The prompt-set half of a multiple-choice protocol: its official templates or streamcue's own prompts.

    A protocol mixes it in and sets ``official_prompts``, ``streamcue_prompts`` and ``self.prompt_set``.
    """

    official_prompts: tuple[str, ...] = ()
    streamcue_prompts: tuple[str, ...] = ()
    prompt_set: str = DEFAULT_PROMPT_SET

    @property
    def prompts(self) -> tuple[str, ...]:
        return self.official_prompts if self.prompt_set == "official" else self.streamcue_prompts

    @property
    def complete_prompts(self) -> bool:
        """True when each turn's text is the whole instruction (the official set): send it alone for plain answers."""
        return self.prompt_set == "official"


def official_prompt(name: str, **values: Any) -> str:
    """The text below the ``---`` line of the official prompt file ``loaders/prompts/<name>.txt``, filled in."""
    text = load_prompt("streamcue.loaders", name).text
    head, sep, body = text.partition("\n---\n")
    if not sep or not head.startswith("# official prompt of "):
        raise ValueError(f"prompt {name} has no header naming its source (lines starting with #, then ---)")
    return body.format(**values) if values else body


def lettered(options: list[str]) -> list[str]:
    """``["A. text", ...]``: the options as the official code shows them."""
    return [f"{chr(65 + i)}. {text}" for i, text in enumerate(options)]


def choice_prompt(record: Mapping[str, Any]) -> str:
    """The question and its options with letters (StreamingBench adds them where the file has none)."""
    return prompt_text("mc_question.v1", question=record["question"], options="\n".join(lettered(record["options"])))


def gold_answer(record: Mapping[str, Any]) -> str:
    """``"B. the option's text"``: a gold answer as an earlier turn shows it."""
    return f"{chr(65 + record['answer'])}. {record['options'][record['answer']]}"


def first_letter(text: str | None) -> str | None:
    """StreamingBench's extraction (count.py): the answer's first character."""
    return text[0] if text else None


def letters_in(text: str | None, n_options: int) -> list[str]:
    """OVO-Bench's extraction (OVOBenchScore.py): every option letter that occurs in the response (the gold one
    must be among them)."""
    return [chr(65 + i) for i in range(n_options) if text and chr(65 + i) in text]
