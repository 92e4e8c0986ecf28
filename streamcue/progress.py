"""Progress bars for loops over files and records (rich, on stderr, hidden when not a terminal)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["shown", "track"]


def shown() -> bool:
    """Whether progress bars are shown: stderr is a terminal and STREAMCUE_NO_PROGRESS is unset (also for the
    bars of libraries streamcue calls, such as the Hub client's downloads)."""
    return not os.environ.get("STREAMCUE_NO_PROGRESS") and sys.stderr.isatty()


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` showing a progress bar on stderr when it is a terminal."""
    if not shown():
        yield from items
        return
    from rich.progress import track as rich_track

    from streamcue import console  # its stderr console redacts secrets like every other output

    yield from rich_track(items, description=description, total=total, console=console.err, transient=True)
