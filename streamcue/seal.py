"""Seals on the JSON files streamcue writes and later believes (a run's results, an anonymization report): the
SHA-256 of each top-level field, kept beside them, so that a field edited, added or removed after the writer wrote
it is found and named instead of trusted.

A seal holds no secret: whoever recomputes it can forge it. It catches a file edited by hand or by a script that
knows nothing of it, which is what a reader must not believe; the reader's other checks (and, for a published
video, a person's anonymization check) stand behind it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["SEAL", "digest", "seal", "unsealed_field"]

#: The field that holds the SHA-256 of each other top-level field.
SEAL = "fields_sha256"


def digest(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON (keys sorted, no spaces, no NaN); a lone surrogate (``"\\ud800"``, which
    JSON can spell and UTF-8 cannot) is hashed as it stands, so a field edited to hold one differs, never raises."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def seal(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` (JSON-ready: what is written is what is read back) with :data:`SEAL`: ``{field: digest}`` for
    every other top-level field."""
    fields = {name: value for name, value in document.items() if name != SEAL}
    return {**fields, SEAL: {name: digest(value) for name, value in fields.items()}}


def unsealed_field(document: Any) -> str | None:
    """The first top-level field of ``document`` that is not as it was sealed (changed, added or removed);
    :data:`SEAL` when it holds no seal; None when every field is as sealed."""
    stamp = document.get(SEAL) if isinstance(document, Mapping) else None
    if not isinstance(stamp, Mapping):
        return SEAL
    fields = [name for name in document if name != SEAL]
    for name in dict.fromkeys([*fields, *stamp]):
        if name not in stamp or name not in document or stamp[name] != digest(document[name]):
            return str(name)
    return None
