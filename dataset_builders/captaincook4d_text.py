"""Text for CaptainCook4D guidance: cleaned step descriptions, instructions, feedback."""

from __future__ import annotations

import re
from collections.abc import Sequence

from streamcue.text import lower_first

__all__ = ["clean_description", "instruction_text", "success_text", "mistake_text"]

# "Coat -Coat a 6-oz. ramekin cup", "Measure and add-1.5 tbsp sugar": a short keyword, a dash, the text.
_KEYWORD = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,30}?)\s*-\s*(\S.*)$", re.S)
_QUANTITY_START = re.compile(r"^(\d|a |an |½|¼)", re.I)

_MISTAKE_LEAD = {
    "preparation": "Check your preparation",
    "measurement": "Check the amount",
    "technique": "Check your technique",
    "timing": "Check the timing",
    "temperature": "Check the heat",
    "order": "Check the order of the steps",
    "missing_step": "A step was skipped",
    "other": "Something went wrong",
}


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?)" else text + "."


def clean_description(description: str) -> str:
    """``"Coat -Coat a 6-oz. ramekin cup"`` -> ``"Coat a 6-oz. ramekin cup."``.

    CaptainCook4D descriptions start with a keyword and a dash. When the text after the dash
    repeats the keyword it is the whole instruction; when it starts with a quantity
    (``"Add-1 egg to a blender"``) the keyword is the verb and is kept; otherwise the text
    after the dash is a full sentence on its own (``"add-Once the pan is hot, add the mushrooms"``).
    """
    match = _KEYWORD.match(description)
    if not match:
        return _sentence(description)
    keyword, body = match.group(1).strip(), match.group(2).strip()
    if body.lower().startswith(keyword.lower()):
        return _sentence(body)
    if _QUANTITY_START.match(body):
        return _sentence(f"{keyword} {body}")
    return _sentence(body)


def instruction_text(descriptions: Sequence[str]) -> str:
    """One instruction carrying every description of a plan step (parallel actions joined)."""
    cleaned = [clean_description(d) for d in descriptions]
    if len(cleaned) == 1:
        return cleaned[0]
    return cleaned[0] + " " + " ".join(f"While doing that, {lower_first(c)}" for c in cleaned[1:])


def success_text(description: str) -> str:
    """Acknowledgement after an action done without a counted mistake."""
    return f"Well done, that step is complete: {lower_first(clean_description(description))}"


def mistake_text(category: str, error_description: str, step_description: str) -> str:
    """Feedback addressed to the person, from CaptainCook4D's error description."""
    lead = _MISTAKE_LEAD.get(category, "Check this step")
    what = clean_description(error_description).rstrip(".")
    step = lower_first(clean_description(step_description))
    return f"{lead}: {lower_first(what)}. The step asks you to {step}"
