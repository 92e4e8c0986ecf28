"""Typed records: dataclasses generated from the JSON Schema files, so they never drift from them.

>>> from streamcue.loaders.records import record_class
>>> IntervalQA = record_class("interval_qa")
>>> qa = IntervalQA.from_dict(record)            # doctest: +SKIP
>>> qa.answers[0].start_s, qa.to_dict() == record  # doctest: +SKIP

Nested objects become their own classes (``IntervalQaAnswer``, ``GuidanceEvent``, ...);
open-ended objects (``provenance``, ``verification``) stay plain dicts. ``to_dict`` gives the
record back in the canonical form described in :mod:`streamcue.schemas.features`.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, Optional

from streamcue.schemas.features import Codec, Layout, codec, decode

__all__ = ["record_class"]


_PY_TYPES = {"string": str, "int64": int, "float64": float, "bool": bool}


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


class _Record:
    """Base of the generated classes: conversion to and from the record dicts."""

    _codec: Codec
    _nested: dict[str, type]
    _kind: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        values = {}
        for name, sub in cls._codec.props.items():
            values[name] = _to_obj(sub, cls._nested.get(name), data.get(name))
        return cls(**values)

    @classmethod
    def from_row(cls, row: dict[str, Any], shape: Layout | None = None) -> Any:
        """From a row of a release (``shape``: the release's layout of its kind, from its manifest)."""
        return cls.from_dict(decode(row, cls._kind, shape))

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for name, sub in self._codec.props.items():
            value = _to_data(sub, getattr(self, name))
            if value is not None or sub.required or sub.nullable:
                out[name] = value
        return out


def _to_obj(sub: Codec, cls: type | None, value: Any) -> Any:
    """A field's value as its dataclass."""
    if value is None:
        return None
    if sub.form == "struct":
        return cls.from_dict(value)
    if sub.form == "list":
        return [_to_obj(sub.item, cls, v) for v in value]
    return value


def _to_data(sub: Codec, value: Any) -> Any:
    if value is None:
        return None
    if sub.form == "struct":
        return value.to_dict()
    if sub.form == "list":
        return [_to_data(sub.item, v) for v in value]
    return value


def _make(name: str, node: Codec) -> type:
    fields, nested = [], {}
    for prop, sub in node.props.items():
        inner, leaf = sub, sub
        while leaf.form == "list":
            leaf = leaf.item
        if leaf.form == "struct":
            nested[prop] = _make(name + _camel(_singular(prop)), leaf)
            annotation: Any = nested[prop]
        else:
            annotation = _PY_TYPES.get(leaf.dtype, Any) if leaf.form == "scalar" else Any
        while inner.form == "list":
            annotation, inner = list[annotation], inner.item
        if not sub.required or sub.nullable:
            fields.append((prop, Optional[annotation], dataclasses.field(default=None)))
        else:
            fields.append((prop, annotation))
    cls = dataclasses.make_dataclass(name, fields, bases=(_Record,), kw_only=True)
    cls._codec, cls._nested = node, nested
    cls.__module__ = __name__
    return cls


@cache
def record_class(kind: str) -> type:
    """The dataclass of a record kind (``video``, ``interval_qa``, ``dense_caption``, ``guidance``)."""
    cls = _make({"interval_qa": "IntervalQA", "mc_question": "MCQuestion"}.get(kind, _camel(kind)), codec(kind))
    cls._kind = kind
    return cls
