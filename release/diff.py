"""What changed between two release versions: records added, removed and modified, per config."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.extras import require
from streamcue.schemas.features import decode
from streamcue.release.manifest import read_manifest
from streamcue.schemas import ID_FIELDS

__all__ = ["Keyed", "ConfigDiff", "keyed", "read_release", "diff", "changelog_lines"]


Keyed = dict[str, dict[str, dict[str, Any]]]  # kind -> record id -> record


@dataclass
class ConfigDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.modified)


def keyed(records: dict[str, dict[str, list[dict[str, Any]]]]) -> Keyed:
    """``{kind: {split: [records]}}`` keyed by record id (the split is part of the record's identity)."""
    return {kind: {f"{split}/{rec[ID_FIELDS[kind]]}": rec for split, recs in splits.items() for rec in recs}
            for kind, splits in records.items()}


def read_release(dist: str | Path) -> tuple[dict[str, Any], Keyed]:
    """The manifest and the records of a release folder (read with pyarrow, decoded to records)."""
    pq = require("pyarrow.parquet", "release", "pyarrow")
    dist = Path(dist)
    manifest = read_manifest(dist)
    records: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind, splits in manifest["configs"].items():
        records[kind] = {split: [decode(row, kind) for row in pq.read_table(dist / info["path"]).to_pylist()]
                         for split, info in splits.items()}
    return manifest, keyed(records)


def diff(old: Keyed, new: Keyed) -> dict[str, ConfigDiff]:
    """Per kind: ids only in ``new`` (added), only in ``old`` (removed), in both but unequal (modified)."""
    out = {}
    for kind in sorted(set(old) | set(new)):
        a, b = old.get(kind, {}), new.get(kind, {})
        out[kind] = ConfigDiff(
            added=sorted(b.keys() - a.keys()),
            removed=sorted(a.keys() - b.keys()),
            modified=sorted(k for k in a.keys() & b.keys() if a[k] != b[k]),
        )
    return out


def changelog_lines(changes: dict[str, ConfigDiff], sample: int = 5) -> list[str]:
    """Markdown bullet lines describing ``changes``."""
    lines = []
    for kind, d in changes.items():
        if not d.changed:
            lines.append(f"- {kind}: unchanged")
            continue
        parts = [f"{len(d.added)} added", f"{len(d.removed)} removed", f"{len(d.modified)} modified"]
        lines.append(f"- {kind}: " + ", ".join(parts))
        for label, ids in (("added", d.added), ("removed", d.removed), ("modified", d.modified)):
            if ids:
                more = f" (+{len(ids) - sample} more)" if len(ids) > sample else ""
                lines.append(f"  - {label}: " + ", ".join(f"`{i}`" for i in ids[:sample]) + more)
    return lines
