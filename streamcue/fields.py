"""Reading fields of source records with errors that name the file, record and field."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError

__all__ = ["field", "seconds", "unknown_name"]


def field(obj: Any, key: str, file: str | Path, record: str, where: str = "") -> Any:
    """``obj[key]``, or an :class:`InputError` "missing field" naming ``where + key``."""
    if not isinstance(obj, Mapping) or key not in obj:
        raise InputError("missing field", file=file, record=record, field=f"{where}{key}")
    return obj[key]


def seconds(obj: Any, key: str, file: str | Path, record: str, where: str = "") -> float:
    """A field that must be a number of seconds (booleans and strings are refused)."""
    value = field(obj, key, file, record, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number of seconds, got {value!r}", file=file, record=record, field=where + key)
    return float(value)


def unknown_name(what: str, name: str, known: Iterable[str]) -> ConfigError:
    """``unknown judge 'tokenf1'. Did you mean 'token-f1'? Known judges: ...`` as an error to raise."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {what} {name!r}.{hint} Known {what}s: {', '.join(known)}")
