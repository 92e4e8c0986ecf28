"""Is a free-text answer right? What the official rules of OVO-Bench and StreamingBench read, and a strict rule's
readings. Each benchmark's rule itself is in its own metric module (``ovo_*_correct`` in
:mod:`streamcue.metrics.ovo_bench`, ``streamingbench_choice_correct`` in :mod:`streamcue.metrics.streamingbench`).

Official rules, as their scoring code does it (OVO-Bench ``utils/OVOBenchScore.py``,
StreamingBench ``src/data/count.py``):

* OVO-Bench multiple choice: right when the correct letter occurs anywhere in the response (a
  substring test, so ``"Answer: B"`` is right for gold ``A`` because "Answer" holds an ``A``).
* OVO-Bench REC: every digit of the response joined into one string must equal the count
  (``"1 or 2"`` reads as 12).
* OVO-Bench SSR and CRR: right when the response is exactly ``Y`` (expected Yes) or ``N``
  (expected No), otherwise when ``Yes`` / ``No`` occurs in it (``"Yesterday"`` counts as yes).
* StreamingBench multiple choice: right when the answer's first element equals the correct
  letter: for a string its first character (``"Answer: B"`` reads as ``A``).

Strict rule (``rules=strict``): the chosen letter, number or yes/no is extracted from the answer
first (:func:`choice_letter`, :func:`stated_number`, :func:`stated_yes_no`) and compared with the
gold one; an answer that names no option, or two, is wrong.

``rules=lmms-eval`` (OVO-Bench only) answers as ``official``; its scorer differs in which probes it
counts (:mod:`streamcue.metrics.ovo_bench`).

Responses may be lists (some model wrappers return them; the official OVO-Bench scorer crashes on
them): the elements are joined with spaces. None and empty answers are wrong.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["is_object_answer", "as_text", "choice_letter", "stated_number", "stated_yes_no", "first_element", "RULES"]

RULES = ("official", "strict", "lmms-eval")
_LEADING = re.compile(r"^\W*\(?([A-Z])\)?(?=$|[\s.,:;)\]])")
_NAMED = re.compile(r"(?:answer|option|choice)\s*(?:is|would be|:)?\s*[:\-]?\s*\(?([A-Z])\)?(?=$|[\s.,:;)\]])",
                    re.IGNORECASE)
_LONE = re.compile(r"(?<![A-Za-z'])([A-Z])(?![A-Za-z'])")
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER = re.compile(r"\d+|\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_YES_NO = re.compile(r"^\W*(yes|no|y|n)\b", re.IGNORECASE)


def is_object_answer(response: Any) -> bool:
    """An answer no rule can read: not None, a string, a number or a list of those (e.g. ``{"text": "B"}``)."""
    if response is None or isinstance(response, (str, int, float)):
        return False
    if isinstance(response, (list, tuple)):
        return any(is_object_answer(r) for r in response)
    return True


def as_text(response: Any) -> str | None:
    """A response as one string: lists joined with spaces, None (and empty lists) as None."""
    if response is None:
        return None
    if isinstance(response, (list, tuple)):
        parts = [as_text(r) for r in response]
        joined = " ".join(p for p in parts if p)
        return joined or None
    return str(response)


def choice_letter(response: Any, n_options: int) -> str | None:
    """The option letter an answer chooses, or None when it names none or several.

    A leading letter (``"B"``, ``"(B) ..."``, ``"B. text"``) wins; then ``answer/option is X``
    (the last such phrase); then a single distinct capital letter standing alone.
    """
    text = as_text(response)
    if not text:
        return None
    valid = {chr(65 + i) for i in range(n_options)}
    lead = _LEADING.match(text)
    if lead and lead.group(1) in valid:
        return lead.group(1)
    named = [m.group(1).upper() for m in _NAMED.finditer(text) if m.group(1).upper() in valid]
    if named:
        return named[-1]
    lone = {m.group(1) for m in _LONE.finditer(text)} & valid
    return lone.pop() if len(lone) == 1 else None


def stated_number(response: Any) -> int | None:
    """The first number stated (digits or a number word up to twenty)."""
    text = as_text(response)
    match = _NUMBER.search(text) if text else None
    if not match:
        return None
    word = match.group(1)
    return _NUMBER_WORDS[word.lower()] if word else int(match.group(0))


def stated_yes_no(response: Any) -> str | None:
    """``"Yes"`` or ``"No"`` when the answer starts with yes/y or no/n, else None."""
    text = as_text(response)
    match = _YES_NO.match(text) if text else None
    if not match:
        return None
    return "Yes" if match.group(1).lower().startswith("y") else "No"


def first_element(answer: Any) -> Any:
    """What count.py compares: ``answer[0]`` (a string's first character), None when there is none."""
    if isinstance(answer, (str, list, tuple)) and len(answer) > 0:
        return answer[0]
    return None
