"""A folder written whole or not at all: filled under a temporary name beside it, then renamed."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["staged_folder"]


@contextmanager
def staged_folder(out: Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a new temporary folder beside ``out`` (``.NAME.*SUFFIX``, in ``out``'s parent, which must exist).

    When the block ends without error, the folder replaces ``out`` (which may exist only as an empty
    folder); when it raises, the folder is removed and the error goes on, so nothing is left under
    the final name.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=suffix, dir=out.parent))
    try:
        yield tmp
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
