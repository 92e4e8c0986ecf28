"""Records <-> Parquet rows, with the column types derived from the JSON Schema files (and, where the
schemas leave the type open, from the records of the release).

The schemas stay the single source of truth: each record kind's ``datasets.Features`` is computed
from its schema, so a release keeps the nested structure (answers as a list of structs, captions,
plan steps and events) and ``datasets.load_dataset`` reads every field back with the type the record
held.

Mapping rules (JSON Schema -> Arrow):

* ``string`` / string enums -> ``string``; ``integer`` -> ``int64``; ``number`` -> ``float64``;
  ``boolean`` -> ``bool``; ``[T, "null"]`` -> nullable ``T``; ``const`` -> the constant's type.
* an object with ``additionalProperties: false`` -> a struct of its declared properties.
* an array -> a list of its item type.
* what the schema leaves open is typed from the release's records (:func:`layout`, :func:`features`):
  a union such as ``integer | string`` (``activity_id``, ``step_ids``) becomes the one type its values
  have (``int64`` when every value is an integer); an open object (``provenance``, ``verification``,
  ``evidence_check.prompts``) becomes a struct of its declared keys and every key found in the records,
  each typed the same way. Only a position whose values have no common Arrow type (integers in some
  records, strings in others) is stored as JSON text; the release's :class:`Layout` names those paths,
  and :func:`decode` turns them back.

Canonical form (what :func:`decode` returns): required keys are always present; an optional key
whose schema allows null is present (null when unknown); any other optional key is absent when it has
no value. Inside open objects, where the schema cannot say, the layout records which keys every
record had (kept when null); the others are absent when null. Builder output already has this form,
so it round-trips exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from streamcue.extras import require
from streamcue.schemas._validate import load_schema, schema_registry
from streamcue.schemas.kinds import names, ordered

__all__ = ["RELEASE_KINDS", "Codec", "Layout", "codec", "typed", "layout", "features", "json_columns", "encode",
           "decode"]


#: Record kinds that a release publishes, one dataset config each (the kinds ranked in the ``release`` order of
#: :data:`streamcue.schemas.kinds.TABLE`).
RELEASE_KINDS: Sequence[str] = names("RELEASE_KINDS", lambda: ordered("release"))

_SCALARS = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}


@dataclass
class Codec:
    """How one schema node is stored.

    ``scalar`` (an Arrow type), ``struct`` (declared properties only), ``list``, or, where the schema
    leaves the type open, ``open`` (an object that allows more keys than ``props``; ``extra`` types
    them when the schema does) and ``json`` (a union of types, or anything): these two are typed per
    release from the records (:func:`layout`).
    """

    form: str
    dtype: str | None = None
    nullable: bool = False
    required: bool = True
    props: dict[str, Codec] = field(default_factory=dict)
    item: Codec | None = None
    extra: Codec | None = None

    def type_name(self) -> str:
        """A short name of the stored type, for people: ``int64``, ``list<struct>``, ``string (JSON)``."""
        if self.form == "list":
            return f"list<{self.item.type_name()}>"
        if self.form in ("struct", "open"):
            return "struct"
        return "string (JSON text)" if self.form == "json" else str(self.dtype)

    def feature(self) -> Any:
        datasets = require("datasets", "release")
        if self.form == "struct":
            return {name: sub.feature() for name, sub in self.props.items()}
        if self.form == "list":
            return datasets.List(self.item.feature())
        return datasets.Value(self.dtype or "string")


_ANY = Codec("json", "string", True, False)


@dataclass(frozen=True)
class Layout:
    """How a release stored what its schema leaves open: ``json``, the paths held as JSON text; ``keep_null``,
    the keys of open objects that every record had (kept when null on decoding). Paths read
    ``provenance.model``, ``plan[].step_ids[]``."""

    json: tuple[str, ...] = ()
    keep_null: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {"json": list(self.json), "keep_null": list(self.keep_null)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Layout:
        data = data or {}
        return cls(tuple(data.get("json", ())), tuple(data.get("keep_null", ())))


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
    if kind == "array":
        item = _codec(node["items"], resolver) if isinstance(node.get("items"), dict) else _ANY
        return Codec("list", nullable=nullable, required=required, item=item)
    needed = set(node.get("required", ()))
    props = {name: _codec(sub, resolver, required=name in needed) for name, sub in node.get("properties", {}).items()}
    extra = node.get("additionalProperties", True)
    if extra is False and props:
        return Codec("struct", nullable=nullable, required=required, props=props)
    return Codec("open", nullable=nullable, required=required, props=props,
                 extra=_codec(extra, resolver, required=False) if isinstance(extra, dict) else None)


@cache
def codec(kind: str) -> Codec:
    """The codec of a record kind's top-level object (its schema, before a release types the open parts)."""
    schema = load_schema(kind)
    return _codec(schema, schema_registry().resolver(base_uri=schema["$id"]))


# --- typing the open parts from the records ------------------------------------------------------

def _refine(node: Codec, values: list[Any], path: str, json_paths: list[str], keep: list[str]) -> Codec:
    """The concrete codec (scalar, struct, list or json) of ``node`` for the non-null ``values`` found at ``path``."""
    if node.form == "scalar":
        return node
    if node.form == "list" or (node.form == "json" and values and all(isinstance(v, list) for v in values)):
        item = node.item if node.form == "list" else _ANY
        flat = [v for seq in values for v in seq if v is not None]
        return Codec("list", nullable=node.nullable, required=node.required,
                     item=_refine(item, flat, f"{path}[]", json_paths, keep))
    if node.form == "struct":
        props = {name: _refine(sub, [v[name] for v in values if v.get(name) is not None], f"{path}.{name}",
                               json_paths, keep) for name, sub in node.props.items()}
        return Codec("struct", nullable=node.nullable, required=node.required, props=props)
    if node.form == "open" or (node.form == "json" and values and all(isinstance(v, dict) for v in values)):
        if not all(isinstance(v, dict) for v in values):
            return _json(node, path, json_paths)
        # a declared optional key that no record has is left out, so load_dataset's rows have no key the records lack
        present = {k for v in values for k in v}
        names = [n for n in node.props if n in present or node.props[n].required] + sorted(present - set(node.props))
        props = {}
        for name in names:
            sub = node.props.get(name) or node.extra or _ANY
            sub = Codec(**{**sub.__dict__, "required": name in node.props and sub.required})
            found = [v[name] for v in values if name in v]
            if not sub.required and found:
                if len(found) == len(values):
                    keep.append(f"{path}.{name}")  # every record has it: kept when null
                elif any(v is None for v in found):  # absent in some, null in others: only JSON keeps both
                    return _json(node, path, json_paths)
            props[name] = _refine(sub, [v for v in found if v is not None], f"{path}.{name}", json_paths, keep)
        if not props:
            return _json(node, path, json_paths, values)
        return Codec("struct", nullable=node.nullable, required=node.required, props=props)
    # a union or anything: the one Arrow type its values share, else JSON text
    types = {_type_of_value(v) for v in values}
    if len(types) == 1 and (dtype := _SCALARS.get(types.pop())):
        return Codec("scalar", dtype, node.nullable, node.required)
    return _json(node, path, json_paths, values)


def _json(node: Codec, path: str, json_paths: list[str], values: list[Any] | None = None) -> Codec:
    if values is not None and not values:  # no record has a value here: a column of nulls, nothing to encode
        return Codec("scalar", "string", node.nullable, node.required)
    json_paths.append(path)
    return Codec("json", "string", node.nullable, node.required)


def typed(kind: str, records: list[dict[str, Any]]) -> tuple[Codec, Layout]:
    """The codec of ``kind`` with its open parts typed from ``records``, and the layout that records it."""
    json_paths: list[str] = []
    keep: list[str] = []
    typed = _refine(codec(kind), list(records), "", json_paths, keep)
    strip = lambda p: p.removeprefix(".")  # noqa: E731
    return typed, Layout(tuple(sorted(map(strip, json_paths))), tuple(sorted(map(strip, keep))))


def layout(kind: str, records: list[dict[str, Any]]) -> Layout:
    """How a release of ``records`` stores the parts that the schema of ``kind`` leaves open."""
    return typed(kind, records)[1]


def features(kind: str, records: list[dict[str, Any]] | None = None) -> Any:
    """The ``datasets.Features`` of a record kind's Parquet files, for these records (the open parts typed
    from them; without records, open parts are JSON text)."""
    datasets = require("datasets", "release")
    return datasets.Features(typed(kind, records or [])[0].feature())


def json_columns(kind: str) -> list[str]:
    """Top-level columns whose type the schema leaves open (typed per release; see :func:`layout`)."""
    return [name for name, sub in codec(kind).props.items() if sub.form in ("json", "open")]


def encode(record: dict[str, Any], kind: str, shape: Layout | None = None) -> dict[str, Any]:
    """A record as a Parquet row: the paths that ``shape`` lists as JSON become JSON text."""
    paths = frozenset((shape or Layout()).json)
    row = {name: record.get(name) for name in codec(kind).props}  # every column, even where no record has it
    return _encode(row, "", paths) if paths else row


def _encode(value: Any, path: str, paths: frozenset[str]) -> Any:
    if value is None:
        return None
    if path in paths:
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return {k: _encode(v, f"{path}.{k}".removeprefix("."), paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v, f"{path}[]", paths) for v in value]
    return value


def decode(row: dict[str, Any], kind: str, shape: Layout | None = None) -> dict[str, Any]:
    """A Parquet row back to the record, in canonical form (see the module docstring)."""
    shape = shape or Layout()
    return _decode(codec(kind), row, "", frozenset(shape.json), frozenset(shape.keep_null))


def _decode(node: Codec, value: Any, path: str, paths: frozenset[str], keep: frozenset[str]) -> Any:
    if value is None:
        return None
    if path in paths:
        return json.loads(value)
    if isinstance(value, list):
        item = node.item or _ANY
        return [_decode(item, v, f"{path}[]", paths, keep) for v in value]
    if isinstance(value, dict):
        out = {}
        for name, v in value.items():
            sub = node.props.get(name) or node.extra or _ANY
            declared = name in node.props
            where = f"{path}.{name}".removeprefix(".")
            decoded = _decode(sub, v, where, paths, keep)
            if decoded is not None or where in keep or (
                    node.form == "struct" and (sub.required or sub.nullable)) or (declared and sub.required):
                out[name] = decoded
        return out
    return value
