"""A field-by-field table of a record kind, generated from its JSON Schema file."""

from __future__ import annotations

from typing import Any

from streamcue.schemas._validate import load_schema, schema_registry

__all__ = ["field_rows"]


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    base_uri = "urn:streamcue:common"  # the only file with local refs
    while "$ref" in node:
        ref = node["$ref"]
        base, _, pointer = ref.partition("#")
        base_uri = base or base_uri
        target = schema_registry().contents(base_uri)
        for part in pointer.strip("/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _type(node: dict[str, Any]) -> str:
    if "enum" in node:
        return " | ".join(map(str, node["enum"]))
    if "const" in node:
        return f"= {node['const']}"
    t = node.get("type", "any")
    return " or ".join(t) if isinstance(t, list) else t


def field_rows(kind: str) -> list[list[str]]:
    """``[path, type, required, description]`` for every field, nested ones as ``a[].b``."""
    rows: list[list[str]] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        node = _resolve(node)
        required = set(node.get("required", ()))
        for name, child in node.get("properties", {}).items():
            child = _resolve(child)
            path = f"{prefix}{name}"
            rows.append([path, _type(child), "yes" if name in required else "", child.get("description", "")])
            if child.get("type") == "object" or "properties" in child:
                walk(child, path + ".")
            elif child.get("type") == "array" and isinstance(child.get("items"), dict):
                item = _resolve(child["items"])
                if "properties" in item:
                    walk(item, path + "[].")

    walk(load_schema(kind), "")
    return rows
