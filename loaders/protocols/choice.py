"""The multiple-choice question text of the OVO-Bench and StreamingBench protocols (prompt ``mc_question.v1``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamcue.loaders.protocols.base import prompt_text

__all__ = ["choice_prompt", "gold_answer"]


def choice_prompt(record: Mapping[str, Any]) -> str:
    """The question and its options with letters (StreamingBench adds them where the file has none)."""
    options = "\n".join(f"{chr(65 + i)}. {text}" for i, text in enumerate(record["options"]))
    return prompt_text("mc_question.v1", question=record["question"], options=options)


def gold_answer(record: Mapping[str, Any]) -> str:
    """``"B. the option's text"``: a gold answer as an earlier turn shows it."""
    return f"{chr(65 + record['answer'])}. {record['options'][record['answer']]}"
