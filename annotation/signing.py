"""Verification as a signature kept by the maintainer: Ed25519 (the ``cryptography`` package).

``annotate pull`` signs every record it decides (verified or rejected) with the project's key: the signature
covers the whole record, its verification included (who checked it, when, which Label Studio task and
annotations), less the signature itself, as canonical JSON (:func:`payload`). ``release build`` checks each
verified record's signature against the maintainer's key before it counts as verified, and signs the record it
publishes (annotators as pseudonyms) again; every reader of a release checks the published records against the
public key the release states (its manifest and card). So a record edited by hand, or a verification written by
hand, no longer verifies: what is not signed by the key is not verified.

What a signature proves: that whoever holds the private key stated this record, with this verification. It does
not prove that the key's holder was honest (they could sign anything), nor that the people named looked
carefully; and a reader who does not know the maintainer's key fingerprint from elsewhere (an earlier release,
the project's page) cannot tell the maintainer's key from another one (``release verify --key`` pins it).

The private key is a PEM file (PKCS #8) kept outside every build and release folder (``streamcue annotate
keygen``); commands find it through ``--key`` or :data:`KEY_ENV`. Its public part is written beside it
(``KEY.pub``) and in every release that holds verified records.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.extras import require

__all__ = ["KEY_ENV", "SIGNATURE", "SigningKey", "generate", "key_files", "load_key", "payload", "public_key"]

#: The environment variable that names the private key file (when ``--key`` is not given).
KEY_ENV = "STREAMCUE_SIGNING_KEY"
#: The field of ``verification`` that holds the signature: ``{"key": FINGERPRINT, "ed25519": HEX}``.
SIGNATURE = "signature"
_PREFIX = "ed25519:"


def _ed25519(extra: str = "annotation") -> Any:
    """The Ed25519 module: in the [annotation] extra (pull signs) and the [release] extra (readers check)."""
    return require("cryptography.hazmat.primitives.asymmetric.ed25519", extra, "cryptography")


def _plain(value: Any) -> Any:
    """The form a record is signed in: integral floats as integers (a Parquet release may hand a time back as a
    float) and null-valued keys left out (a struct column adds the keys other records have, as null)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    return value


def canonical(value: Any) -> bytes:
    """``value`` as canonical JSON: keys sorted, no spaces, UTF-8, NaN refused (:func:`_plain`)."""
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def payload(record: dict[str, Any]) -> bytes:
    """The bytes a record's signature covers: the record, less ``verification.signature``, as canonical JSON."""
    return canonical({**record, "verification": {k: v for k, v in (record.get("verification") or {}).items()
                                                 if k != SIGNATURE}})


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 key: the public part always, the private part when it was read from the private key file."""

    public: bytes
    private: Any = None

    @property
    def fingerprint(self) -> str:
        """The first 16 hex digits of the SHA-256 of the raw public key: how a release names the key."""
        return hashlib.sha256(self.public).hexdigest()[:16]

    @property
    def public_text(self) -> str:
        """``ed25519:`` and the raw public key in hex (what a release publishes; :func:`public_key` reads it)."""
        return _PREFIX + self.public.hex()

    def sign(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with ``verification.signature`` set (needs the private key)."""
        signature = {"key": self.fingerprint, "ed25519": self.sign_bytes(payload(record))}
        return {**record, "verification": {**record["verification"], SIGNATURE: signature}}

    def sign_bytes(self, data: bytes) -> str:
        """The Ed25519 signature of ``data`` in hex (needs the private key)."""
        if self.private is None:
            raise ConfigError(f"key {self.fingerprint} is a public key: signing needs the private key file")
        return self.private.sign(data).hex()

    def holds(self, data: bytes, signature: Any) -> bool:
        """Whether ``signature`` (hex) is this key's signature of ``data``."""
        invalid = require("cryptography.exceptions", "release", "cryptography").InvalidSignature
        try:
            self._public().verify(bytes.fromhex(signature), data)
        except (TypeError, ValueError, invalid):
            return False
        return True

    def problem(self, record: dict[str, Any]) -> str | None:
        """Why ``record``'s signature does not hold under this key, starting with the field (None: it holds)."""
        signature = (record.get("verification") or {}).get(SIGNATURE)
        where = f"verification.{SIGNATURE}"
        if not isinstance(signature, dict) or not isinstance(signature.get("ed25519"), str):
            return f"{where}: not signed (a verification that annotate pull did not write)"
        if signature.get("key") != self.fingerprint:
            return f"{where}.key: signed by key {str(signature.get('key'))[:16]!r}, not by {self.fingerprint}"
        try:
            bytes.fromhex(signature["ed25519"])
        except ValueError:
            return f"{where}.ed25519: not a signature in hex"
        if not self.holds(payload(record), signature["ed25519"]):
            return f"{where}: does not match the record (edited after verification, or written by hand)"
        return None

    def _public(self) -> Any:
        return _ed25519("release").Ed25519PublicKey.from_public_bytes(self.public)


def public_key(text: Any, where: str = "the public key") -> SigningKey:
    """The key of an ``ed25519:HEX`` text (a release's, or a ``KEY.pub`` file's); one line when it is not one."""
    raw = None
    if isinstance(text, str) and text.strip().startswith(_PREFIX):
        try:
            raw = bytes.fromhex(text.strip()[len(_PREFIX):])
        except ValueError:
            raw = None
    if raw is None or len(raw) != 32:
        raise InputError(f"{where} is not an Ed25519 public key (ed25519: and 64 hex digits)")
    return SigningKey(raw)


def _raw_public(private: Any) -> bytes:
    serialization = require("cryptography.hazmat.primitives.serialization", "annotation", "cryptography")
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_files(path: str | Path | None = None) -> list[Path]:
    """The signing key's files that exist: the key (``path``, else the file :data:`KEY_ENV` names) and its public
    part beside it (``KEY.pub``). A command's outputs must never overwrite them (they are inputs of the command
    even when the key comes from the environment)."""
    path = _key_path(path)
    if path is None:
        return []
    return [p for p in (Path(path), Path(f"{path}.pub")) if p.exists()]


def _key_path(path: str | Path | None) -> str | Path | None:
    """``path``, else the file :data:`KEY_ENV` names, else None."""
    return path or os.environ.get(KEY_ENV) or None


def load_key(path: str | Path | None = None, *, required: bool = True) -> SigningKey | None:
    """The key in ``path`` (a private key PEM file, or a ``.pub`` file of :func:`public_key` text), else in the
    file :data:`KEY_ENV` names; None when neither is given and not ``required``."""
    path = _key_path(path)
    if path is None:
        if required:
            raise ConfigError(f"no signing key: pass --key or set {KEY_ENV} to the key file (make one with "
                              "streamcue annotate keygen --out KEYFILE, outside every build and release folder)")
        return None
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the signing key ({exc.strerror or type(exc).__name__})", file=path) from None
    if data.lstrip().startswith(_PREFIX.encode()):
        return public_key(data.decode("ascii", "replace"), f"{path}")
    serialization = require("cryptography.hazmat.primitives.serialization", "annotation", "cryptography")
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        private = None
    if not isinstance(private, _ed25519().Ed25519PrivateKey):
        raise InputError("not an Ed25519 private key in PEM (make one with streamcue annotate keygen)", file=path)
    return SigningKey(_raw_public(private), private)


def generate(path: str | Path) -> SigningKey:
    """Write a new private key to ``path`` (readable by its owner only; an existing file is never overwritten)
    and its public part to ``path.pub``; return the key."""
    serialization = require("cryptography.hazmat.primitives.serialization", "annotation", "cryptography")
    path = Path(path)
    pub = path.with_name(path.name + ".pub")
    for target in (path, pub):
        if target.exists():
            raise ConfigError(f"{target} already exists: a key is never overwritten (its signatures would no longer "
                              "verify); choose another path")
    private = _ed25519().Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    key = SigningKey(_raw_public(private), private)
    pub.write_text(key.public_text + "\n", encoding="ascii")
    return key
