"""``streamcue build ovo-bench`` and ``streamcue build streamingbench``: the two published benchmarks as records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console

__all__ = ["build_ovo_bench", "build_streamingbench"]


def _build(name: str, config: Any, out: Path) -> None:
    from streamcue.dataset_builders import get_builder, run_builder

    result, report = run_builder(get_builder(name), config, out)
    summary = report.details
    rows = {f"{group} {task}": {"records": n}
            for group, tasks in summary["by_task"].items() for task, n in tasks.items()}
    console.out.print(console.table("records by group and task", ["records"], rows, "task"))
    quirks = ", ".join(f"{n} {name}" for name, n in summary["quirks"].items()) or "none"
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    console.out.print(f"wrote {counts} to {out} (quirks: {quirks}; see build_report.json)")
    for line in summary.get("warnings", []):
        console.err.print(f"warning: {line}", markup=False, soft_wrap=True)


_WARN = typer.Option("--warn-inconsistent", help="Keep source records no one can answer (a target before its "
                     "question, an unknown task, a probe about a missing step): counted as quirks, each a warning.")


def build_ovo_bench(
    annotations: Annotated[Path, typer.Option(help="OVO-Bench's data/ovo_bench_new.json.")],
    out: Annotated[Path, typer.Option(
        help="Output folder: mc_question.jsonl, active_item.jsonl, videos.jsonl, build_report.json.")],
    warn_inconsistent: Annotated[bool, _WARN] = False,
) -> None:
    """Convert OVO-Bench: backward and real-time questions to mc_question, forward REC/SSR/CRR to active_item.

    Videos are not copied: videos.jsonl lists each one's path relative to your OVO-Bench video
    root. The annotations are CC BY-NC-SA 4.0: convert locally, do not redistribute.

    Example:

        streamcue build ovo-bench --annotations ../shared/data/ovo_bench/ovo_bench_new.json --out out/ovo
    """
    from streamcue.dataset_builders import ovo_bench

    _build("ovo-bench", ovo_bench.Config(annotations, warn_inconsistent), out)


def build_streamingbench(
    questions: Annotated[Path, typer.Option(help="StreamingBench's src/data folder with the questions_*.json files.")],
    out: Annotated[Path, typer.Option(
        help="Output folder: mc_question.jsonl, active_item.jsonl, videos.jsonl, build_report.json.")],
    subset: Annotated[Optional[list[str]], typer.Option(
        help="Convert only questions_<SUBSET>.json (repeatable), e.g. real, sqa, proactive, real_stream.")] = None,
    warn_inconsistent: Annotated[bool, _WARN] = False,
    all_files: Annotated[bool, typer.Option(
        "--all-files", help="Convert every questions_*.json of the folder, the _stream and _50 variants too (they "
                            "repeat the paper's questions), instead of the paper's four files.")] = False,
) -> None:
    """Convert StreamingBench: real, omni and SQA questions to mc_question, proactive ones to active_item.

    By default the paper's 4,500 questions: questions_real, _omni, _sqa and _proactive.json
    (--all-files: every questions_*.json, the _stream and _50 variants too; each record names its
    subset). Videos are not copied: videos.jsonl lists relative paths.

    Example:

        streamcue build streamingbench --questions ../shared/data/streamingbench --out out/sb
    """
    from streamcue.dataset_builders import streamingbench

    _build("streamingbench", streamingbench.Config(questions, tuple(subset or ()), warn_inconsistent, all_files), out)


