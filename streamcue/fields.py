"""Reading fields of source records with errors that name the file, record and field."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.finite import MAX_SECONDS

__all__ = ["field", "seconds", "text", "items", "mapping", "unknown_name"]


def field(obj: Any, key: str, file: str | Path, record: str, where: str = "") -> Any:
    """``obj[key]``, or an :class:`InputError` "missing field" naming ``where + key``."""
    if not isinstance(obj, Mapping) or key not in obj:
        raise InputError("missing field", file=file, record=record, field=f"{where}{key}")
    return obj[key]


def seconds(obj: Any, key: str, file: str | Path, record: str, where: str = "") -> float:
    """A field that must be a finite number of seconds (booleans, strings, NaN and Infinity are refused)."""
    value = field(obj, key, file, record, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a finite number of seconds, got {value!r}", file=file, record=record,
                         field=where + key)
    if abs(value) > MAX_SECONDS:
        raise InputError(f"{value!r} s is past any video (more than {MAX_SECONDS:.0f} s, one week)", file=file,
                         record=record, field=where + key)
    return float(value)


def text(obj: Any, key: str, file: str | Path, record: str, where: str = "") -> str:
    """A field that must be a string (null, numbers and lists are refused)."""
    value = field(obj, key, file, record, where)
    if not isinstance(value, str):
        raise InputError(f"expected text, got {_type(value)}", file=file, record=record, field=where + key)
    return value


def items(obj: Any, key: str, file: str | Path, record: str, where: str = "", *, optional: bool = False) -> list[Any]:
    """A field that must be a list; with ``optional``, a missing or null field is an empty list."""
    if optional and (not isinstance(obj, Mapping) or obj.get(key) is None):
        if not isinstance(obj, Mapping):
            raise InputError(f"expected an object, got {_type(obj)}", file=file, record=record, field=where.rstrip("."))
        return []
    value = field(obj, key, file, record, where)
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {_type(value)}", file=file, record=record, field=where + key)
    return value


def mapping(obj: Any, file: str | Path, record: str, where: str) -> Mapping[str, Any]:
    """``obj`` itself, which must be a JSON object."""
    if not isinstance(obj, Mapping):
        raise InputError(f"expected an object, got {_type(obj)}", file=file, record=record,
                         field=where.rstrip(".") or None)
    return obj


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def unknown_name(what: str, name: str, known: Iterable[str]) -> ConfigError:
    """``unknown judge 'tokenf1'. Did you mean 'token-f1'? Known judges: ...`` as an error to raise."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {what} {name!r}.{hint} Known {what}s: {', '.join(known)}")
