"""``streamcue validate``: check a record file against its schema and the semantic rules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console

__all__ = ["validate"]


def validate(
    file: Annotated[Path, typer.Argument(help="JSONL file of records, one per line.")],
    kind: Annotated[str, typer.Option(help="Record kind: video, interval_qa, dense_caption, guidance or a "
                                           "*_prediction kind.")],
    videos: Annotated[Optional[Path], typer.Option(help="videos.jsonl to check times against (default: the one "
                                                        "beside FILE, if any).")] = None,
    max_errors: Annotated[int, typer.Option(help="Print at most this many violations.")] = 50,
) -> None:
    """Check every record of FILE against its schema and the semantic rules.

    Every violation is printed on one line (file:line, record id, JSON path, message); the exit
    code is non-zero when there is any.

    Example:

        streamcue validate out/cc4d/guidance.jsonl --kind guidance
    """
    from streamcue.prologue import check_numbers
    from streamcue.schemas import check_file

    check_numbers(("--max-errors", max_errors, 0, None))
    report = check_file(file, kind, videos=videos)
    if report.ok:
        console.out.print(f"{file}: {report.records} {kind} records, all valid")
        return
    for violation in report.violations[:max_errors]:
        console.err.print(str(violation), markup=False, soft_wrap=True)  # one line each, piped or not
    hidden = len(report.violations) - max_errors
    console.err.print(f"{file}: {len(report.violations)} violations in {report.records} records"
                      + (f" ({hidden} not shown)" if hidden > 0 else ""), markup=False, soft_wrap=True)
    raise typer.Exit(2)

