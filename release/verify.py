"""``streamcue release verify``: check a downloaded release the way a researcher would, before trusting it.

Three checks, each refused in one line naming what failed: every file the manifest lists is there with its
SHA-256 (:func:`~streamcue.release.manifest.check_record_files` for the record files, with their row counts);
every record marked verified carries a signature that holds under the key the release names
(:func:`~streamcue.release.manifest.check_signatures`), and as many hold as the release states; and, when the
researcher names the key they trust (``trusted``: its fingerprint or public key, from the maintainer's page or an
earlier release), the release names that key. What a signature proves, and what it does not, is in
:mod:`streamcue.annotation.signing`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.io import read_json
from streamcue.release.diff import read_release
from streamcue.release.manifest import MANIFEST, check_repo_id, hub_file, read_manifest, release_key, verify_listed

__all__ = ["Verified", "verify_release"]


@dataclass
class Verified:
    """What ``release verify`` checked."""

    source: str
    version: str
    files: int
    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    verified: int = 0
    key: str | None = None


def _local_copy(source: str | Path, revision: str | None) -> tuple[Path, str]:
    """The release as a folder (a Hub dataset's files downloaded into the Hub cache: its snapshot folder) and the
    name its files are reported under (``ORG/NAME@REV`` for a Hub dataset)."""
    if Path(source).is_dir():
        return Path(source), str(source)
    if "@" not in str(source) and not Path(source).exists() and str(Path(source).parent) not in ("", ".") \
            and Path(source).parent.is_dir():
        raise InputError("no such release folder (for a Hub dataset named like it, give its revision: "
                         "ORG/NAME@vX.Y.Z)", file=source)
    repo, _, tag = str(source).partition("@")
    try:
        check_repo_id(repo)
    except ConfigError:
        raise InputError("not a release folder, nor a Hub dataset ORG/NAME[@vX.Y.Z]", file=source) from None
    revision = tag or revision
    where = f"{repo}@{revision or 'main'}"
    manifest_path = hub_file(repo, MANIFEST, revision)
    files = read_json(manifest_path).get("files")
    if not isinstance(files, dict):
        raise InputError("not a streamcue release manifest (no files)", file=f"{where}/{MANIFEST}")
    for rel in files:
        hub_file(repo, rel, revision)
    return manifest_path.parent, where


def _trusted_fingerprint(trusted: str) -> str:
    from streamcue.annotation.signing import load_key, public_key

    if Path(trusted).is_file():
        return load_key(trusted).fingerprint
    if trusted.startswith("ed25519:"):
        return public_key(trusted, "--key").fingerprint
    if not re.fullmatch(r"[0-9a-fA-F]{16}", trusted.strip()):
        raise ConfigError(f"--key {trusted!r} is not a key fingerprint (16 hex digits), a public key (ed25519:...) "
                          "or a key file")
    return trusted.strip().lower()


def verify_release(source: str | Path, revision: str | None = None, trusted: str | None = None) -> Verified:
    """Check the release ``source`` (a folder, or a Hub dataset ``ORG/NAME[@REV]``); raise on the first problem."""
    dist, where = _local_copy(source, revision)
    try:
        return _verify(dist, where, trusted)
    except InputError as exc:
        if exc.file is None or not str(exc.file).startswith(str(dist)):
            raise
        named = where + str(exc.file)[len(str(dist)):]
        raise InputError(exc.message, file=named, line=exc.line, record=exc.record, field=exc.field) from None


def _verify(dist: Path, where: str, trusted: str | None) -> Verified:
    manifest = read_manifest(dist)
    verify_listed(dist)
    _, records = read_release(dist)   # row counts, and every verified record's signature
    key = release_key(manifest, dist / MANIFEST)
    from streamcue.release.build import verified_ids

    ids = verified_ids(records)
    _check_statement(manifest.get("signing"), key, ids, dist / MANIFEST)
    verified = len(ids)
    stated = (manifest.get("signing") or {}).get("verified", 0)
    if verified != stated:
        raise InputError(f"{verified} record(s) marked verified, the manifest states {stated}", file=dist / MANIFEST,
                         field="signing.verified")
    if trusted is not None:
        expected = _trusted_fingerprint(trusted)
        if key is None or key.fingerprint != expected:
            raise InputError(f"signed with key {key.fingerprint if key else 'none'}, not with the key you trust "
                             f"({expected})", file=dist / MANIFEST, field="signing.key")
    rows = {config: {split: info["rows"] for split, info in splits.items()}
            for config, splits in manifest["configs"].items()}
    return Verified(where, str(manifest.get("version")), len(manifest["files"]), rows, verified,
                    key.fingerprint if key else None)


def _check_statement(signing: Any, key: Any, verified: list[str], manifest: Path) -> None:
    """The manifest's list of verified records holds under the release's key and names exactly the records marked
    verified: a record edited and made unverified after the build, with the manifest's count and hashes rewritten to
    match, is named."""
    from streamcue.annotation.signing import canonical

    if key is None:
        return
    stated = {k: v for k, v in signing.items() if k != "statement"}
    if not key.holds(canonical(stated), signing.get("statement")):
        raise InputError("the list of verified records is not signed by the release's key (edited after the build, "
                         "or a release built before the list was signed)", file=manifest, field="signing.statement")
    missing = sorted(set(stated.get("records") or []) - set(verified))
    if missing:
        raise InputError(f"signed as verified at the build, but not verified now: {', '.join(missing[:5])}",
                         file=manifest, field="signing.records")
