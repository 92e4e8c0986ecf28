"""Terminal output helpers shared by the CLI commands: rich tables on stdout, notes on stderr.

Both consoles write through :func:`streamcue.redact.redact`: no key, URL credential or token reaches
the terminal or a log captured from it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from streamcue.redact import redact


class _Redacted:
    """A text stream that redacts what it is given and hands it to ``sys.stdout`` or ``sys.stderr`` as they
    are at the time of the write (so a test's or a notebook's replacement of them is honoured)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def _stream(self) -> TextIO:
        stream = getattr(sys, self.name)
        # a progress bar (rich's live display) puts a proxy of this console in sys.stderr while it runs: the console's
        # own output goes to the file behind it, or it would be handed back to the console without end
        return getattr(stream, "rich_proxied_file", stream)

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


out = Console(file=_Redacted("stdout"), highlight=False, markup=False)  # texts and extras like [embed] as they are
err = Console(file=_Redacted("stderr"), highlight=False, markup=False, soft_wrap=True)  # one line, never wrapped

__all__ = ["out", "err", "table", "fmt", "listed"]


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def table(title: str, columns: Sequence[str], rows: Mapping[str, Mapping[str, Any]] | Sequence[Sequence[Any]],
          first: str = "") -> Table:
    """A rich table from ``{row name: {column: value}}`` or a list of row lists."""
    t = Table(title=title, title_justify="left")
    if isinstance(rows, Mapping):
        t.add_column(first)
        for c in columns:
            t.add_column(c, justify="right")
        for name, row in rows.items():
            t.add_row(str(name), *(fmt(row.get(c, "")) for c in columns))
    else:
        for c in columns:
            t.add_column(c)
        for row in rows:
            t.add_row(*(fmt(v) for v in row))
    return t


def listed(ids: list[str], limit: int = 300) -> str:
    """``ids`` joined by commas, whole ids only, within ``limit`` characters; "and N more" when some are left out."""
    shown: list[str] = []
    for rid in ids:
        if len(", ".join([*shown, rid])) > limit:
            return f"{', '.join(shown)} and {len(ids) - len(shown)} more"
        shown.append(rid)
    return ", ".join(shown)
