"""The finite-number rule: every number read from a source, record or prediction is finite.

JSON has no NaN or Infinity, yet Python's ``json`` module reads the tokens ``NaN``,
``Infinity`` and ``-Infinity`` and turns ``1e999`` into ``inf``; CSV cells read with
``float`` do the same. Readers (:mod:`streamcue.io`, :func:`streamcue.fields.seconds`) refuse
them with the file, line and field; :func:`streamcue.schemas.check` reports any that reach a
record built in memory; writers refuse to write them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["non_finite_path", "parse_json_float", "parse_json_int", "reject_json_constant", "NonFiniteNumber",
           "MAX_SECONDS", "seconds_problem", "parse_csv_number"]

#: The longest time a source may give, in seconds (one week): no benchmark video is longer, and a time
#: past it (``1e308``) in a benchmark without durations would be a question no one can ever reach.
MAX_SECONDS = 7 * 24 * 3600.0


class NonFiniteNumber(ValueError):
    """A JSON text holds NaN, Infinity or a number too large for a float."""


def reject_json_constant(token: str) -> float:
    """``json.loads(parse_constant=...)``: refuse ``NaN``, ``Infinity`` and ``-Infinity``."""
    raise NonFiniteNumber(f"{token} is not a number (JSON has no NaN or Infinity)")


def parse_json_float(text: str) -> float:
    """``json.loads(parse_float=...)``: refuse literals that overflow to infinity (``1e999``)."""
    value = float(text)
    if not math.isfinite(value):
        raise NonFiniteNumber(f"{text} is too large for a number")
    return value


def parse_json_int(text: str) -> int:
    """``json.loads(parse_int=...)``: refuse integers too large for a float (more than 308 digits: compared with a
    float they overflow, and past 4,300 digits Python will not read them at all)."""
    if len(text.lstrip("-")) > 308:
        raise NonFiniteNumber(f"an integer of {len(text.lstrip('-'))} digits is too large for a number")
    return int(text)


def non_finite_path(value: Any, path: str = "$") -> str | None:
    """JSON path of the first NaN or infinite float inside ``value`` (dicts, lists, numbers), else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = non_finite_path(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = non_finite_path(item, f"{path}[{i}]")
            if found:
                return found
    return None


def seconds_problem(value: float) -> str | None:
    """Why ``value`` is not a usable time on a video's timeline (negative, not finite, past a week), or None."""
    if not math.isfinite(value):
        return f"{value!r} is not a finite number of seconds"
    if value < 0:
        return f"expected a time >= 0 s, got {value!r}"
    if value > MAX_SECONDS:
        return f"{value!r} s is past any video (more than {MAX_SECONDS:.0f} s, one week)"
    return None


def parse_csv_number(text: str) -> float:
    """A number from a CSV cell (or an option's text, ``--clock fixed:S``), as a person wrote it: ``float`` would
    read ``557.0_61`` as 557.061 (digit underscores), ``nan`` and ``1e999``; all three are refused with
    :class:`ValueError`. (The CLI's ``int`` and ``float`` options refuse digit underscores too.)"""
    stripped = text.strip() if isinstance(text, str) else text
    if not isinstance(stripped, str) or "_" in stripped:
        raise ValueError(f"{text!r} is not a number")
    value = float(stripped)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value
