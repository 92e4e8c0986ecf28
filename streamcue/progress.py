"""Progress bars for loops over files and records (rich, on stderr, hidden when not a terminal)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["track"]


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` showing a progress bar on stderr when it is a terminal."""
    if os.environ.get("STREAMCUE_NO_PROGRESS") or not sys.stderr.isatty():
        yield from items
        return
    from rich.progress import track as rich_track

    from streamcue import console  # its stderr console redacts secrets like every other output

    yield from rich_track(items, description=description, total=total, console=console.err, transient=True)
