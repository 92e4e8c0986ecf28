"""``streamcue build streambench``: StreamBench's open-ended questions (OASIS's file) as open_question records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from streamcue import console

__all__ = ["build_streambench"]


def build_streambench(
    annotations: Annotated[Path, typer.Option(help="OASIS's metadata/eval_streambench.json.")],
    out: Annotated[Path, typer.Option(help="Output folder: open_question.jsonl, videos.jsonl, build_report.json.")],
    drop_repeated_entries: Annotated[bool, typer.Option(
        "--drop-repeated-entries", help="Leave out an entry equal to an earlier one (the official evaluation asks "
        "its questions twice; kept by default).")] = False,
) -> None:
    """Convert StreamBench: every breakpoint becomes an open_question asked at its time.

    Videos are not copied: videos.jsonl lists each one's path relative to your StreamBench video
    root. Quirks of the source (repeated entries, missing video names, ...) are kept and counted.

    Example:

        streamcue build streambench --annotations ../shared/data/streambench/eval_streambench.json --out out/sb
    """
    from streamcue.dataset_builders import get_builder, run_builder, streambench

    config = streambench.Config(annotations, drop_repeated_entries=drop_repeated_entries)
    result, report = run_builder(get_builder("streambench"), config, out)
    details = report.details
    rows = {f"{domain} {cls}": {"questions": n} for domain, classes in details["by_task"].items()
            for cls, n in classes.items()}
    console.out.print(console.table("questions by video domain and class", ["questions"], rows, "class"))
    quirks = ", ".join(f"{n} {name}" for name, n in details["quirks"].items()) or "none"
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    console.out.print(f"wrote {counts} from {details['entries']} entries to {out} (quirks: {quirks}; "
                      "see build_report.json)")
