"""What changed between two release versions, per config: records added, removed and modified (with the
fields that changed), the records newly verified, and those no longer verified (a verification that held in
the older release and does not in the newer: edited since, or its status changed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.annotation.verify import SEAL, verification_problem
from streamcue.extras import require
from streamcue.release.card import CONFIG_NAMES, KIND_OF
from streamcue.release.manifest import check_record_files
from streamcue.schemas import ID_FIELDS
from streamcue.schemas.features import Layout, decode

__all__ = ["Keyed", "ConfigDiff", "keyed", "read_release", "default_config", "diff", "changed_fields",
           "changelog_lines"]


Keyed = dict[str, dict[str, dict[str, Any]]]  # config name -> "split/record id" -> record


@dataclass
class ConfigDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    #: record key -> ``path old -> new`` lines, one per changed field
    fields: dict[str, list[str]] = field(default_factory=dict)
    #: records verified here that were not verified (or not there) in the older release
    newly_verified: list[str] = field(default_factory=list)
    #: record key -> why a record verified in the older release is not verified here
    no_longer_verified: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.modified)


def keyed(records: dict[str, dict[str, list[dict[str, Any]]]]) -> Keyed:
    """``{kind: {split: [records]}}`` keyed by config name, then ``split/id`` (the split is part of the identity)."""
    return {CONFIG_NAMES[kind]: {f"{split}/{rec[ID_FIELDS[kind]]}": rec
                                 for split, recs in splits.items() for rec in recs}
            for kind, splits in records.items() if any(splits.values())}


def read_release(dist: str | Path) -> tuple[dict[str, Any], Keyed]:
    """The manifest and the records of a release folder (read with pyarrow, decoded to records)."""
    pq = require("pyarrow.parquet", "release", "pyarrow")
    dist = Path(dist)
    manifest = check_record_files(dist)
    records: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for config, splits in manifest["configs"].items():
        kind = KIND_OF.get(config, config)  # releases before 0.x keyed configs by kind
        shape = Layout.from_dict(manifest.get("layout", {}).get(config))
        records[kind] = {split: [decode(row, kind, shape) for row in pq.read_table(dist / info["path"]).to_pylist()]
                         for split, info in splits.items()}
    return manifest, keyed(records)


def default_config(dist: str | Path) -> str | None:
    """The default config of a release folder: the one its card's YAML header marks ``default: true`` (what
    ``load_dataset(repo)`` reads), or None."""
    import yaml

    card = Path(dist) / "README.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    header = yaml.safe_load(text[4:].split("\n---\n", 1)[0]) if text.startswith("---\n") else None
    configs = header.get("configs") if isinstance(header, dict) else None
    return next((c.get("config_name") for c in configs or () if isinstance(c, dict) and c.get("default")), None)


def _short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def changed_fields(old: Any, new: Any, path: str = "") -> list[str]:
    """``events[3].t_s 12.0 -> 13.5`` for every leaf that differs (a list of another length: its item count)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for name in [*old, *(k for k in new if k not in old)]:
            where = f"{path}.{name}" if path else name
            if name not in new:
                out.append(f"{where} removed")
            elif name not in old:
                out.append(f"{where} added: {_short(new[name])}")
            else:
                out += changed_fields(old[name], new[name], where)
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: {len(old)} -> {len(new)} items"]
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in changed_fields(a, b, f"{path}[{i}]")]
    if old != new or type(old) is not type(new):
        return [f"{path} {_short(old)} -> {_short(new)}"]
    return []


def _content_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """:func:`changed_fields`, less the new content hash of a record whose content changed (it follows)."""
    lines = changed_fields(old, new)
    content = [line for line in lines if not line.startswith(f"verification.{SEAL} ")]
    return content or lines


def _verified(record: dict[str, Any] | None) -> bool:
    return bool(record) and verification_problem(record) is None


def _why_not(record: dict[str, Any]) -> str:
    """Why ``record`` is not verified: the release gate's note when it left one (``not verified: ...``)."""
    notes = (record.get("verification") or {}).get("notes") or []
    held = [n.removeprefix("not verified: ") for n in notes if n.startswith("not verified: ")]
    return held[-1] if held else verification_problem(record) or ""


def diff(old: Keyed, new: Keyed) -> dict[str, ConfigDiff]:
    """Per config: ids only in ``new`` (added), only in ``old`` (removed), in both but unequal (modified, with
    the fields that changed), those verified in ``new`` but not in ``old``, and those verified in ``old`` but
    not in ``new`` (with the reason). Verified means what the release gate means
    (:func:`~streamcue.annotation.verify.verification_problem` finds nothing)."""
    out = {}
    for config in sorted(set(old) | set(new)):
        a, b = old.get(config, {}), new.get(config, {})
        modified = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
        out[config] = ConfigDiff(
            added=sorted(b.keys() - a.keys()), removed=sorted(a.keys() - b.keys()), modified=modified,
            fields={k: _content_changes(a[k], b[k]) for k in modified},
            newly_verified=sorted(k for k, rec in b.items() if _verified(rec) and not _verified(a.get(k))),
            no_longer_verified={k: _why_not(b[k]) for k in sorted(a.keys() & b.keys())
                                if _verified(a[k]) and not _verified(b[k])},
        )
    return out


def changelog_lines(changes: dict[str, ConfigDiff], sample: int = 5,
                    defaults: tuple[str | None, str | None] = (None, None)) -> list[str]:
    """Markdown bullet lines describing ``changes``: a changed default config (``defaults``: the older and the
    newer release's), then per config counts, ids, the changed fields of modified records, the newly verified
    records and those no longer verified."""
    lines = []
    if defaults[0] != defaults[1]:
        lines.append(f"- default config: `{defaults[0]}` -> `{defaults[1]}` (`load_dataset(repo)` without a config "
                     f"name now gives `{defaults[1]}`; `load_dataset(repo, \"{defaults[0]}\")` still names the old one"
                     + ("" if defaults[0] in changes else ", which this version no longer holds") + ")")
    for config, d in changes.items():
        if not d.changed:
            lines.append(f"- {config}: unchanged")
            continue
        parts = [f"{len(d.added)} added", f"{len(d.removed)} removed", f"{len(d.modified)} modified"]
        if d.newly_verified:
            parts.append(f"{len(d.newly_verified)} newly verified")
        if d.no_longer_verified:
            parts.append(f"{len(d.no_longer_verified)} no longer verified")
        lines.append(f"- {config}: " + ", ".join(parts))
        for label, ids in (("added", d.added), ("removed", d.removed), ("newly verified", d.newly_verified)):
            if ids:
                more = f" (+{len(ids) - sample} more)" if len(ids) > sample else ""
                lines.append(f"  - {label}: " + ", ".join(f"`{i}`" for i in ids[:sample]) + more)
        if d.no_longer_verified:
            gone = list(d.no_longer_verified.items())
            more = f" (+{len(gone) - sample} more)" if len(gone) > sample else ""
            lines.append("  - no longer verified: " + ", ".join(f"`{k}` ({why})" for k, why in gone[:sample]) + more)
        for key in d.modified[:sample]:
            changed = d.fields.get(key, [])
            more = f" (+{len(changed) - sample} more)" if len(changed) > sample else ""
            lines.append(f"  - modified: `{key}`: " + "; ".join(changed[:sample]) + more)
        if len(d.modified) > sample:
            lines.append(f"  - modified: +{len(d.modified) - sample} more")
    return lines
