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

__all__ = ["non_finite_path", "parse_json_float", "reject_json_constant", "NonFiniteNumber"]


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
