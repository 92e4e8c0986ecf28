"""Terminal output helpers shared by the CLI commands: rich tables on stdout, notes on stderr."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

out = Console(highlight=False, markup=False)  # record texts and extras like [embed] print as they are
err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)  # a message is one line, never wrapped

__all__ = ["out", "err", "table", "fmt"]


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
