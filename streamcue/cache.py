"""A small persistent key-value cache on SQLite, shared by the judges and the LLM client.

Keys are SHA-256 digests of a canonical JSON of everything that determines the value
(who answers, which model, which prompt version, the exact inputs); values are JSON.
Never store secrets in a key or value: callers pass no API key here. Values with NaN or Infinity
are never written, and an old entry holding one reads as a miss (asked again, rewritten).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from streamcue.errors import InputError
from streamcue.paths import cache_dir

__all__ = ["Cache", "cache_key"]


def _refuse(name: str) -> Any:
    raise ValueError(name)


def cache_key(*parts: Any) -> str:
    """Digest of the canonical JSON of ``parts``."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Cache:
    """``get``/``put`` JSON values by key in one SQLite table; safe across threads and processes."""

    def __init__(self, path: str | Path | None = None, table: str = "entries") -> None:
        self.path = Path(path) if path is not None else cache_dir() / "cache.sqlite3"
        if not table.isidentifier():
            raise ValueError(f"bad table name {table!r}")
        self.table = table
        self._lock = threading.Lock()
        with self._errors():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """A damaged, unwritable or unreachable cache database is one line naming it and what is wrong, never a
        traceback; only a damaged one is worth deleting (a full disk or a file-size limit keeps every answer)."""
        try:
            yield
        except sqlite3.Error as exc:
            name = getattr(exc, "sqlite_errorname", "")
            if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
                problem = f"cache database unusable (damaged: {exc}); delete it or set $STREAMCUE_CACHE_DIR elsewhere"
            elif name.startswith(("SQLITE_FULL", "SQLITE_IOERR")):
                problem = f"cache database cannot be written ({self._why_not_written(exc)}); the answers cached so " \
                          "far are kept: free space or set $STREAMCUE_CACHE_DIR elsewhere"
            elif name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
                problem = f"cache database cannot be opened for writing ({exc}); set $STREAMCUE_CACHE_DIR elsewhere"
            elif name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
                problem = f"cache database is locked by another process ({exc}); wait for it or set " \
                          "$STREAMCUE_CACHE_DIR elsewhere"
            else:
                problem = f"cache database unusable ({exc}); set $STREAMCUE_CACHE_DIR elsewhere"
            raise InputError(problem, file=self.path) from None
        except OSError as exc:
            raise InputError(f"cache folder unusable ({exc.strerror}); set $STREAMCUE_CACHE_DIR to a folder",
                             file=self.path.parent) from None

    def _why_not_written(self, exc: sqlite3.Error) -> str:
        """What stopped a write: the file-size limit of this process, a full disk, or the disk itself."""
        import resource
        import shutil

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        sizes = [p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file()]
        if limit != resource.RLIM_INFINITY and max(sizes, default=0) + (1 << 16) >= limit:
            return f"a file reached this process's file-size limit of {limit:,} bytes (ulimit -f)"
        if shutil.disk_usage(self.path.parent).free < (1 << 20):
            return "the disk is full"
        return f"{exc}: a full disk, a file-size or quota limit, or a failing disk"

    def get(self, key: str) -> Any | None:
        with self._lock, self._errors():
            row = self._db.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0], parse_constant=_refuse)
        except ValueError:  # a damaged entry is a miss: the value is asked for again and rewritten
            return None

    def put(self, key: str, value: Any) -> None:
        """Store ``value``; a value with NaN or Infinity in it is refused (``ValueError``), never written."""
        blob = json.dumps(value, ensure_ascii=False, allow_nan=False)
        with self._lock, self._errors():
            self._db.execute(f"INSERT OR REPLACE INTO {self.table} (key, value) VALUES (?, ?)", (key, blob))

    def __len__(self) -> int:
        with self._lock, self._errors():
            return self._db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
