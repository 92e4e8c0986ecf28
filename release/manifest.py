"""A release's manifest.json: read it, check every file against its SHA-256 and row count (a folder, or a Hub
dataset's files as downloaded), and every verified record's signature against the key it names."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from streamcue.annotation.signing import SigningKey, public_key
from streamcue.anonymize.report import sha256_file
from streamcue.errors import ConfigError, InputError, ServiceError
from streamcue.extras import require
from streamcue.io import read_json
from streamcue.release.gates import scan_published

__all__ = ["MANIFEST", "check_hub_files", "check_record_files", "check_repo_id", "check_signatures", "hub_file",
           "read_manifest", "release_key", "verify_files", "verify_listed"]

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
    """Check every file against the manifest's SHA-256 (:func:`verify_listed`) and scan what is published; return
    the manifest."""
    manifest = verify_listed(dist)
    scan_published(Path(dist))
    return manifest


def verify_listed(dist: str | Path) -> dict[str, Any]:
    """Check every file the manifest lists against its SHA-256, and each config's Parquet file against its row
    count; return the manifest. A missing, changed or truncated file is one InputError naming it."""
    dist = Path(dist)
    manifest = read_manifest(dist)
    files, configs = manifest.get("files"), manifest.get("configs")
    if not isinstance(files, dict) or not isinstance(configs, dict):
        raise InputError("not a streamcue release manifest (no files or configs)", file=dist / MANIFEST)
    rows = {info.get("path"): info.get("rows") for splits in configs.values() for info in (splits or {}).values()
            if isinstance(info, dict)}
    for rel, digest in files.items():
        _check_file(dist / rel, rel, digest, rows.get(rel))
    return manifest


def check_record_files(dist: str | Path) -> dict[str, Any]:
    """Check a release folder's record files before reading them: each one's SHA-256 against manifest.json, and its
    Parquet row count against the manifest's; return the manifest. A mismatch, a missing, truncated or unreadable
    file is one InputError naming the file. Each file is checked once per process (cached by path, size, mtime)."""
    dist = Path(dist)
    manifest = read_manifest(dist)
    for rel, digest, rows in _record_files(manifest, dist / MANIFEST):
        _check_file(dist / rel, rel, digest, rows)
    return manifest


def _record_files(manifest: dict[str, Any], where: str | Path, configs: list[str] | None = None
                  ) -> list[tuple[str, str, Any]]:
    """(path, SHA-256, row count) of each record file of ``configs`` (None: every config) the manifest lists."""
    files, listed = manifest.get("files"), manifest.get("configs")
    if not isinstance(files, dict) or not isinstance(listed, dict):
        raise InputError("not a streamcue release manifest (no files or configs)", file=where)
    out = []
    for config, splits in listed.items():
        for split, info in (splits or {}).items() if configs is None or config in configs else ():
            rel = info.get("path") if isinstance(info, dict) else None
            if rel not in files:
                raise InputError(f"config {config} split {split}: its file is not listed with a SHA-256",
                                 file=where, field=f"configs.{config}.{split}.path")
            out.append((rel, files[rel], info.get("rows")))
    return out


def hub_file(repo: str, name: str, revision: str | None) -> Path:
    """``name`` of the Hub dataset ``repo`` at ``revision``, downloaded (into the Hub cache); one line on failure."""
    hub = require("huggingface_hub", "release")
    try:
        return Path(hub.hf_hub_download(repo, name, repo_type="dataset", revision=revision))
    except Exception as exc:  # noqa: BLE001 - HTTP, offline, not found: whatever the Hub client raises
        raise ServiceError(f"could not read {name} of {repo} (revision {revision or 'main'}): "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


def check_hub_files(repo: str, revision: str | None, configs: list[str] | None = None) -> dict[str, Any]:
    """:func:`check_record_files` for a Hub dataset: its manifest.json and the record files of ``configs`` (None:
    every config) at ``revision``, downloaded and checked (each file once per process: cached by file identity);
    returns the manifest. A mismatch names the file as ``REPO@REVISION/PATH``."""
    manifest = read_json(hub_file(repo, MANIFEST, revision))
    where = f"{repo}@{revision or 'main'}"
    for rel, digest, rows in _record_files(manifest, f"{where}/{MANIFEST}", configs):
        try:
            _check_file(hub_file(repo, rel, revision), rel, digest, rows)
        except InputError as exc:
            raise InputError(exc.message, file=f"{where}/{rel}") from None
    return manifest


def release_key(manifest: dict[str, Any], where: str | Path) -> SigningKey | None:
    """The key a release's verified records are signed with (its manifest's ``signing``), None when it names
    none (a release with no verified record)."""
    signing = manifest.get("signing")
    if signing is None:
        return None
    key = public_key(signing.get("public_key") if isinstance(signing, dict) else None,
                     f"{where}: manifest.json's signing.public_key")
    if signing.get("key") != key.fingerprint:
        raise InputError(f"signing.key {signing.get('key')!r} is not the fingerprint of signing.public_key "
                         f"({key.fingerprint})", file=where, field="signing.key")
    return key


def check_signatures(records: list[dict[str, Any]], kind: str, key: SigningKey | None, file: str | Path) -> int:
    """Refuse (one line naming the file, the record and the field) a record of ``file`` marked verified whose
    signature does not hold under the release's ``key``; returns how many verified records were checked."""
    from streamcue.schemas import ID_FIELDS

    checked = 0
    for rec in records:
        if (rec.get("verification") or {}).get("status") != "verified":
            continue
        problem = key.problem(rec) if key is not None else (
            "verification.signature: the release names no signing key (manifest.json has no signing)")
        if problem:
            field, _, why = problem.partition(": ")
            raise InputError(f"marked verified, but its signature does not hold: {why}", file=file,
                             record=f"{ID_FIELDS[kind]}={rec.get(ID_FIELDS[kind])}", field=field)
        checked += 1
    return checked


def _check_file(path: Path, rel: str, digest: str, rows: Any) -> None:
    """One line naming ``path`` unless it is the file manifest.json lists as ``rel`` (its SHA-256 ``digest``)."""
    try:
        stat = path.stat()
    except OSError:
        raise InputError("listed in manifest.json but missing or unreadable", file=path) from None
    problem = _file_problem(str(path.resolve()), stat.st_size, stat.st_mtime_ns, rel, digest, rows)
    if problem:
        raise InputError(problem, file=path)


@lru_cache(maxsize=4096)
def _file_problem(path: str, size: int, mtime_ns: int, rel: str, digest: str, rows: Any) -> str | None:
    """Why the file at ``path`` (of this size and mtime) is not the one the manifest lists as ``rel``; None when
    it is. A changed file names both SHA-256s (first 12 hex digits), so which side changed can be told."""
    try:
        found = sha256_file(path)
        if found != digest:
            return (f"changed since the release was built: its SHA-256 is {found[:12]}, manifest.json's "
                    f'files["{rel}"] states {str(digest)[:12]}')
    except OSError as exc:
        return f"unreadable: {exc.strerror or type(exc).__name__}"
    if rows is None or not path.endswith(".parquet"):
        return None
    pq = require("pyarrow.parquet", "release", "pyarrow")
    try:
        found = pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for a broken file
        return f"not a readable Parquet file ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if found != rows:
        return f"holds {found} rows, manifest.json says {rows} (truncated or replaced)"
    return None
