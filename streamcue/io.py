"""Shared file I/O: JSON and JSONL reading with precise errors, atomic writes."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from streamcue.errors import InputError

__all__ = ["read_json", "iter_jsonl", "read_jsonl", "atomic_write", "write_jsonl", "write_json", "dumps_record"]


def _open_text(path: Path) -> IO[str]:
    try:
        return path.open("r", encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror}", file=path) from None


def read_json(path: str | Path) -> Any:
    """Read one JSON document; a syntax error names the file, line and column."""
    path = Path(path)
    with _open_text(path) as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path, line=exc.lineno) from None
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=path) from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line of a JSONL file.

    Every line must hold one JSON object; anything else is an :class:`InputError`
    naming the file and line.
    """
    path = Path(path)
    with _open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path, line=lineno) from None
                if not isinstance(record, dict):
                    raise InputError(f"expected a JSON object, got {type(record).__name__}", file=path, line=lineno)
                yield lineno, record
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=path) from None


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """All records of a JSONL file."""
    return [record for _, record in iter_jsonl(path)]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` only on success.

    An exception or a kill half-way leaves the old file (or no file) in place, never a
    half-written one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; give it the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def dumps_record(record: dict[str, Any]) -> str:
    """The canonical one-line JSON form of a record (UTF-8, no ASCII escaping)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Atomically write records, one per line; returns how many were written."""
    n = 0
    with atomic_write(path) as fh:
        for record in records:
            fh.write(dumps_record(record) + "\n")
            n += 1
    return n


def write_json(path: str | Path, data: Any) -> None:
    """Atomically write one pretty-printed JSON document."""
    with atomic_write(path) as fh:
        json.dump(data, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
