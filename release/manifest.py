"""A release folder's manifest.json: read it, and check every file against its SHA-256."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamcue.anonymize.report import sha256_file
from streamcue.errors import InputError
from streamcue.io import read_json
from streamcue.release.gates import scan_published

__all__ = ["MANIFEST", "read_manifest", "verify_files"]

MANIFEST = "manifest.json"


def read_manifest(dist: str | Path) -> dict[str, Any]:
    path = Path(dist) / MANIFEST
    if not path.is_file():
        raise InputError("not a streamcue release folder (no manifest.json)", file=dist)
    return read_json(path)


def verify_files(dist: str | Path) -> dict[str, Any]:
    """Check every file against the manifest's SHA-256; return the manifest."""
    dist = Path(dist)
    manifest = read_manifest(dist)
    for rel, digest in manifest["files"].items():
        path = dist / rel
        if not path.is_file():
            raise InputError("listed in manifest.json but missing", file=path)
        if sha256_file(path) != digest:
            raise InputError("changed since the release was built (SHA-256 differs from manifest.json)", file=path)
    scan_published(dist)
    return manifest
