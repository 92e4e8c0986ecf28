"""Shared file I/O: JSON and JSONL reading with precise errors, atomic writes.

Every text file written here passes :func:`streamcue.redact.redact` line by line (no key, URL credential,
token or Authorization value reaches a file), goes to a unique temporary beside its path and is renamed
over it only when whole. A refused write names the output, never the temporary: a full disk, a file-size
limit, a quota and a read-only disk are named as such (:func:`disk_error`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from streamcue.errors import InputError
from streamcue.finite import NonFiniteNumber, non_finite_path, parse_json_float, parse_json_int, reject_json_constant
from streamcue.redact import redact

__all__ = ["loads", "read_json", "iter_jsonl", "read_jsonl", "atomic_write", "write_jsonl", "write_json",
           "dumps_record", "MAX_DEPTH", "NestedTooDeep", "disk_error", "RedactedWriter", "as_usual_file"]

#: The deepest nesting of arrays and objects a JSON text may have. No source, record or prediction comes
#: near it; a deeper one (``[[[[...]]]]`` 3,000 levels) would blow Python's recursion limit in the parser, the
#: schema validator or the NaN check, so every reader refuses it here, naming the file.
MAX_DEPTH = 100


class NestedTooDeep(json.JSONDecodeError):
    """A JSON text nested deeper than :data:`MAX_DEPTH` (a ``JSONDecodeError``, so callers that catch
    those already report it as malformed JSON)."""

    def __init__(self, doc: str | bytes = "") -> None:
        super().__init__(f"arrays and objects nested more than {MAX_DEPTH} levels deep", str(doc)[:0], 0)


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests lists and dicts deeper than :data:`MAX_DEPTH` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _parse(text: str | bytes, **hooks: Any) -> Any:
    """``json.loads`` under the finite-number and depth rules."""
    try:
        value = json.loads(text, parse_constant=reject_json_constant, parse_float=parse_json_float,
                           parse_int=parse_json_int, **hooks)
    except RecursionError:
        raise NestedTooDeep(text) from None
    if _too_deep(value):
        raise NestedTooDeep(text)
    return value


def _open_text(path: Path) -> IO[str]:
    try:
        return path.open("r", encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror}", file=path) from None


def read_json(path: str | Path, on_duplicate: Callable[[str], None] | None = None) -> Any:
    """Read one JSON document; a syntax error names the file, line and column.

    A key repeated within one object (JSON readers silently keep the last) is an error naming
    it, unless ``on_duplicate`` is given: it is called with the key and the first value is kept.
    NaN, Infinity and overflowing numbers are refused (:mod:`streamcue.finite`).
    """
    path = Path(path)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                if on_duplicate is None:
                    raise _DuplicateKey(key)
                on_duplicate(key)
                continue
            obj[key] = value
        return obj

    with _open_text(path) as fh:
        try:
            return _parse(fh.read(), object_pairs_hook=unique)
        except NestedTooDeep as exc:
            raise InputError(exc.msg, file=path) from None
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path, line=exc.lineno) from None
        except _DuplicateKey as exc:
            raise InputError("key appears twice in one JSON object (which one is meant?)", file=path,
                             field=str(exc)) from None
        except NonFiniteNumber as exc:
            raise InputError(str(exc), file=path) from None
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=path) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", file=path) from None


class _DuplicateKey(ValueError):
    pass


def loads(text: str | bytes) -> Any:
    """``json.loads`` under the finite-number rule (NaN, Infinity and ``1e999`` are refused) and the depth rule
    (nesting past :data:`MAX_DEPTH` is :class:`NestedTooDeep`, a ``JSONDecodeError``)."""
    return _parse(text)


def iter_jsonl(path: str | Path, on_error: Callable[[InputError], None] | None = None
               ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line of a JSONL file.

    Every line must hold one JSON object with finite numbers; anything else is an
    :class:`InputError` naming the file and line. With ``on_error``, such a line is handed to it
    and skipped, so that a caller can report every bad line of a file, not only the first.
    """
    path = Path(path)

    def bad(error: InputError) -> None:
        if on_error is None:
            raise error
        on_error(error)

    with _open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = loads(line)
                except NestedTooDeep as exc:
                    bad(InputError(exc.msg, file=path, line=lineno))
                    continue
                except json.JSONDecodeError as exc:
                    bad(InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", file=path, line=lineno))
                    continue
                except NonFiniteNumber as exc:
                    bad(InputError(str(exc), file=path, line=lineno))
                    continue
                if not isinstance(record, dict):
                    bad(InputError(f"expected a JSON object, got {type(record).__name__}", file=path, line=lineno))
                    continue
                yield lineno, record
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=path) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", file=path) from None


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """All records of a JSONL file."""
    return [record for _, record in iter_jsonl(path)]


#: What a write to a full or limited disk raises, and how it is named (the system's own words kept for search).
DISK_ERRORS = {
    errno.ENOSPC: "the disk is full (no space left on device)",
    errno.EFBIG: "the file-size limit was reached (file too large; see `ulimit -f`)",
    errno.EDQUOT: "the disk quota is used up (disk quota exceeded)",
    errno.EROFS: "the disk is read-only (read-only file system)",
    errno.EIO: "the disk failed (input/output error)",
}


def disk_error(exc: OSError, output: str | Path, temporaries: Iterable[str | Path] = ()) -> OSError:
    """``exc`` naming ``output`` where it names one of ``temporaries`` or nothing, with a disk problem named
    as such (:data:`DISK_ERRORS`); any other error is returned as it is."""
    temps = [str(t) for t in temporaries]
    named = None if exc.filename is None else str(exc.filename)
    if named is not None and any(named == t or named.startswith(t + os.sep) for t in temps):
        named = None  # a temporary: name the output instead
    elif exc.errno not in DISK_ERRORS:
        return exc
    what = DISK_ERRORS.get(exc.errno or 0, exc.strerror or str(exc))
    second = None if exc.filename2 is None or str(exc.filename2) == str(output) else str(exc.filename2)
    args = (exc.errno, what, named or str(output), None, *(() if second is None else (second,)))
    try:
        return type(exc)(*args)
    except TypeError:  # a subclass with a constructor of its own
        return OSError(*args)


def as_usual_file(path: str | Path) -> None:
    """Give ``path`` (a temporary from :func:`tempfile.mkstemp`, private to its owner) the permissions a file made
    by ``open`` would have: 0666 less the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


class RedactedWriter:
    """A text file handle whose every complete line passes :func:`~streamcue.redact.redact` before it is
    written (a line is held back until its newline or :meth:`flush`, so a secret written in pieces is
    still seen whole)."""

    def __init__(self, fh: IO[str]) -> None:
        self._fh = fh
        self._pending: list[str] = []

    def write(self, text: str) -> int:
        head, newline, tail = text.rpartition("\n")
        if newline:
            self._fh.write(redact("".join([*self._pending, head, newline])))
            self._pending = [tail] if tail else []
        elif text:
            self._pending.append(text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write what is held back (a last line without newline) and flush the file."""
        if self._pending:
            self._fh.write(redact("".join(self._pending)))
            self._pending = []
        self._fh.flush()

    def fileno(self) -> int:
        return self._fh.fileno()


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a unique temporary file beside ``path`` and rename it over ``path`` only on success.

    An exception or a kill half-way leaves the old file (or no file) in place, never a
    half-written one. In text mode every line passes :func:`~streamcue.redact.redact`
    (:class:`RedactedWriter`); binary files (videos, Parquet) are written as they are.

    A write that the file system refuses (a full disk, the file-size limit, a read-only folder) is an
    :class:`OSError` that names ``path`` (the CLI prints it as one line), never the temporary (:func:`disk_error`).
    """
    path = Path(path)
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            writer = fh if "b" in mode else RedactedWriter(fh)
            yield writer  # type: ignore[misc]
            writer.flush()
            os.fsync(fh.fileno())
        as_usual_file(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise disk_error(exc, path, [tmp] if tmp else []) from None
    except BaseException:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def dumps_record(record: dict[str, Any]) -> str:
    """The canonical one-line JSON form of a record (UTF-8, no ASCII escaping); NaN and Infinity are refused."""
    try:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        _refuse_non_finite(record)
        raise


def _refuse_non_finite(data: Any, file: str | Path | None = None) -> None:
    where = non_finite_path(data)
    if where:
        raise InputError("not a finite number (NaN or Infinity cannot be written as JSON)", file=file, field=where)


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
    _refuse_non_finite(data, path)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    with atomic_write(path) as fh:
        fh.write(text)  # one write: the redaction reads the document once, not each of its lines
