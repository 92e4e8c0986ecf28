"""A release folder's manifest.json: read it, and check every file against its SHA-256."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from streamcue.anonymize.report import sha256_file
from streamcue.errors import ConfigError, InputError
from streamcue.io import read_json
from streamcue.release.gates import scan_published

__all__ = ["MANIFEST", "check_repo_id", "read_manifest", "verify_files"]

MANIFEST = "manifest.json"
#: A Hub repository id ORG/NAME: letters, digits, ``_ . -``; no ``--`` or ``..``; not ending in ``.`` or ``-``.
_REPO_PART = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9_])?$")


def check_repo_id(repo: str) -> tuple[str, str]:
    """``"ORG/NAME"`` -> ``("ORG", "NAME")``; anything the Hub would refuse (``../x``, ``a/b..c``) is a ConfigError."""
    parts = repo.split("/")
    if len(parts) != 2 or not all(_REPO_PART.match(p) for p in parts):
        raise ConfigError(f"--repo {repo!r} is not ORG/NAME (letters, digits, '_', '.', '-'; no '..' or '--'; "
                          "starting and ending with a letter or digit)")
    return parts[0], parts[1]


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
