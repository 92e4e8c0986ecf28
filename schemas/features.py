"""Records <-> Parquet rows, with the column types derived from the JSON Schema files.

The schemas stay the single source of truth: each record kind's ``datasets.Features`` is
computed from its schema, so a release keeps the nested structure (answers as a list of
structs, captions, plan steps and events) and ``datasets.load_dataset`` reads it back typed.

Mapping rules (JSON Schema -> Arrow):

* ``string`` / string enums -> ``string``; ``integer`` -> ``int64``; ``number`` -> ``float64``;
  ``boolean`` -> ``bool``; ``[T, "null"]`` -> nullable ``T``; ``const`` -> the constant's type.
* an object with ``additionalProperties: false`` -> a struct of its declared properties.
* an array -> a list of its item type.
* anything open-ended (objects that allow extra keys, such as ``provenance`` and
  ``verification``, or unions like ``integer | string``) -> a JSON-encoded ``string``
  column; :data:`JSON_COLUMNS` names them, and :func:`decode` turns them back.

Canonical form (what :func:`decode` returns): required keys are always present; an optional
key whose schema allows null is present (null when unknown); any other optional key is
absent when it has no value. Builder output already has this form, so it round-trips exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from streamcue.extras import require
from streamcue.schemas._validate import load_schema, schema_registry

__all__ = ["RELEASE_KINDS", "Codec", "codec", "features", "json_columns", "encode", "decode"]


#: Record kinds that a release publishes, one dataset config each.
RELEASE_KINDS: tuple[str, ...] = ("video", "interval_qa", "dense_caption", "guidance", "mc_question", "active_item",
                                  "open_question")

_SCALARS = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}


@dataclass
class Codec:
    """How one schema node is stored: ``scalar`` (an Arrow type), ``json``, ``struct`` or ``list``."""

    form: str
    dtype: str | None = None
    nullable: bool = False
    required: bool = True
    props: dict[str, Codec] = field(default_factory=dict)
    item: Codec | None = None

    def encode(self, value: Any) -> Any:
        if value is None:
            return None
        if self.form == "json":
            return json.dumps(value, ensure_ascii=False)
        if self.form == "struct":
            return {name: sub.encode(value.get(name)) for name, sub in self.props.items()}
        if self.form == "list":
            return [self.item.encode(v) for v in value]
        return value

    def decode(self, value: Any) -> Any:
        if value is None:
            return None
        if self.form == "json":
            return json.loads(value)
        if self.form == "struct":
            out = {}
            for name, sub in self.props.items():
                decoded = sub.decode(value.get(name))
                if decoded is not None or sub.required or sub.nullable:
                    out[name] = decoded
            return out
        if self.form == "list":
            return [self.item.decode(v) for v in value]
        return value

    def feature(self) -> Any:
        datasets = require("datasets", "release")
        if self.form == "struct":
            return {name: sub.feature() for name, sub in self.props.items()}
        if self.form == "list":
            return datasets.List(self.item.feature())
        return datasets.Value(self.dtype)


def _resolve(node: dict[str, Any], resolver: Any) -> tuple[dict[str, Any], Any]:
    """Follow ``$ref`` (relative ones against the file they appear in)."""
    while "$ref" in node:
        resolved = resolver.lookup(node["$ref"])
        resolver = resolved.resolver
        node = {**resolved.contents, **{k: v for k, v in node.items() if k != "$ref"}}
    return node, resolver


def _type_of_value(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(value), "json")


def _codec(node: dict[str, Any], resolver: Any, *, required: bool = True) -> Codec:
    node, resolver = _resolve(node, resolver)
    types = node.get("type")
    if types is None and "const" in node:
        types = _type_of_value(node["const"])
    elif types is None and "enum" in node:
        types = sorted({_type_of_value(v) if v is not None else "null" for v in node["enum"]})
    types = [types] if isinstance(types, str) else list(types or [])
    nullable = "null" in types or None in node.get("enum", ())
    concrete = [t for t in types if t != "null"]
    if len(concrete) != 1 or concrete[0] not in (*_SCALARS, "object", "array"):
        return Codec("json", "string", nullable, required)
    kind = concrete[0]
    if kind in _SCALARS:
        return Codec("scalar", _SCALARS[kind], nullable, required)
    if kind == "array" and isinstance(node.get("items"), dict):
        return Codec("list", nullable=nullable, required=required, item=_codec(node["items"], resolver))
    if kind == "object" and node.get("additionalProperties") is False and node.get("properties"):
        needed = set(node.get("required", ()))
        props = {name: _codec(sub, resolver, required=name in needed) for name, sub in node["properties"].items()}
        return Codec("struct", nullable=nullable, required=required, props=props)
    return Codec("json", "string", nullable, required)


@cache
def codec(kind: str) -> Codec:
    """The codec of a record kind's top-level object."""
    schema = load_schema(kind)
    return _codec(schema, schema_registry().resolver(base_uri=schema["$id"]))


def features(kind: str) -> Any:
    """The ``datasets.Features`` of a record kind's Parquet files."""
    datasets = require("datasets", "release")
    return datasets.Features(codec(kind).feature())


def json_columns(kind: str) -> list[str]:
    """Top-level columns stored as JSON text (open-ended objects and unions)."""
    return [name for name, sub in codec(kind).props.items() if sub.form == "json"]


def encode(record: dict[str, Any], kind: str) -> dict[str, Any]:
    """A record as a Parquet row of ``features(kind)``."""
    return codec(kind).encode(record)


def decode(row: dict[str, Any], kind: str) -> dict[str, Any]:
    """A Parquet row back to the record, in canonical form (see the module docstring)."""
    return codec(kind).decode(row)
