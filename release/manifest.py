"""A release folder's manifest.json: read it, and check every file against its SHA-256."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from streamcue.anonymize.report import sha256_file
from streamcue.errors import ConfigError, InputError
from streamcue.io import read_json
from streamcue.release.gates import scan_published

__all__ = ["MANIFEST", "check_record_files", "check_repo_id", "read_manifest", "verify_files"]

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


def check_record_files(dist: str | Path) -> dict[str, Any]:
    """Check a release folder's record files before reading them: each one's SHA-256 against manifest.json, and its
    Parquet row count against the manifest's; return the manifest. A mismatch, a missing, truncated or unreadable
    file is one InputError naming the file. Each file is checked once per process (cached by path, size, mtime)."""
    dist = Path(dist)
    manifest = read_manifest(dist)
    files, configs = manifest.get("files"), manifest.get("configs")
    if not isinstance(files, dict) or not isinstance(configs, dict):
        raise InputError("not a streamcue release manifest (no files or configs)", file=dist / MANIFEST)
    for config, splits in configs.items():
        for split, info in (splits or {}).items():
            rel = info.get("path") if isinstance(info, dict) else None
            if rel not in files:
                raise InputError(f"config {config} split {split}: its file is not listed with a SHA-256",
                                 file=dist / MANIFEST, field=f"configs.{config}.{split}.path")
            _check_file(dist / rel, files[rel], info.get("rows"))
    return manifest


def _check_file(path: Path, digest: str, rows: Any) -> None:
    try:
        stat = path.stat()
    except OSError:
        raise InputError("listed in manifest.json but missing or unreadable", file=path) from None
    problem = _file_problem(str(path.resolve()), stat.st_size, stat.st_mtime_ns, digest, rows)
    if problem:
        raise InputError(problem, file=path)


@lru_cache(maxsize=4096)
def _file_problem(path: str, size: int, mtime_ns: int, digest: str, rows: Any) -> str | None:
    """Why the file at ``path`` (of this size and mtime) is not the one the manifest lists; None when it is."""
    try:
        if sha256_file(path) != digest:
            return "changed since the release was built (SHA-256 differs from manifest.json)"
    except OSError as exc:
        return f"unreadable: {exc.strerror or type(exc).__name__}"
    if rows is None or not path.endswith(".parquet"):
        return None
    from streamcue.extras import require

    pq = require("pyarrow.parquet", "release", "pyarrow")
    try:
        found = pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for a broken file
        return f"not a readable Parquet file ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if found != rows:
        return f"holds {found} rows, manifest.json says {rows} (truncated or replaced)"
    return None
