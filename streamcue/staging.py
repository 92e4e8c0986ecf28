"""A folder written whole or not at all: filled under a temporary name beside it, then renamed.

Before the rename, every text file in the folder (:data:`TEXT_SUFFIXES`: cards, manifests, records, pages)
passes :func:`streamcue.redact.redact`, whoever wrote it, so a file written with ``Path.write_text`` is
covered as well as one written through :mod:`streamcue.io`. An error that names a file inside the
temporary folder is raised naming the same file under the final name (:func:`streamcue.io.disk_error`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from streamcue.io import atomic_write, disk_error
from streamcue.redact import redact

__all__ = ["staged_folder", "TEXT_SUFFIXES"]

#: The files of a staged folder that are text, redacted before the folder takes its final name.
TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".md", ".html", ".txt", ".csv", ".tsv", ".yaml", ".yml", ".cff",
                           ".bib"})


def _redact_folder(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.suffix.lower() not in TEXT_SUFFIXES or path.is_symlink() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if redact(text) != text:
            with atomic_write(path) as fh:  # redacts as it writes
                fh.write(text)


def _named_as_final(exc: OSError, tmp: Path, out: Path) -> OSError:
    """``exc`` naming ``out/...`` where it named ``tmp/...``."""
    named = disk_error(exc, out, [tmp])
    if exc.filename is not None and str(exc.filename).startswith(str(tmp) + os.sep):
        inner = out / Path(exc.filename).relative_to(tmp)
        named = type(named)(named.errno, named.strerror, str(inner))
    return named


@contextmanager
def staged_folder(out: Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a new temporary folder beside ``out`` (``.NAME.*SUFFIX``, in ``out``'s parent, which must exist;
    its name is unique, so two writers never share it).

    When the block ends without error, its text files are redacted and the folder replaces ``out`` (which
    may exist only as an empty folder); when it raises, the folder is removed and the error goes on, so
    nothing is left under the final name.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=suffix, dir=out.parent))
    try:
        yield tmp
        _redact_folder(tmp)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _named_as_final(exc, tmp, out) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
