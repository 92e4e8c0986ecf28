"""``streamcue export RUN --out DIR``: a run folder in its benchmark's official output format, for its own scorer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console

__all__ = ["export_command"]


def export_command(
    run: Annotated[Path, typer.Argument(help="A run folder (streamcue run --out).")],
    out: Annotated[Path, typer.Option("--out", help="The folder to write (new or empty; never inside RUN).")],
    model: Annotated[Optional[str], typer.Option(
        help="The model name the exported files use (where it goes is the format's own: a folder and file names, or "
             "the key each answer is stored under; see the benchmark's page). Default: a name the official scorer "
             "accepts where it accepts only some (see the benchmark's page), else the run's model name, characters "
             "other than letters, digits, '.', '_' and '-' written as '_'.")] = None,
) -> None:
    """Write a run in its benchmark's official output format, for the benchmark's own scorer.

    OVO-Bench: a results folder OUT/MODEL/ (one MODEL_TASK_offline.json per task), read by the
    official score.py. StreamingBench: answered question files OUT/questions_SUBSET.json, read by
    the official count.py. OUT/export.json lists the files and the official command line.

    Examples:

        streamcue export runs/qwen-ovo --out exports/qwen-ovo --model GPT

        streamcue export runs/sb-try --out exports/sb-try
    """
    from streamcue.io import write_json
    from streamcue.metrics.bench_readers import exporter, read_results, read_run
    from streamcue.prologue import check_io
    from streamcue.registry import get_benchmark
    from streamcue.staging import staged_folder

    check_io({out: "--out"}, [run], out_folder=out)
    if out.exists() and any(out.iterdir()):
        from streamcue.errors import ConfigError

        raise ConfigError(f"--out {out} exists and is not empty; give a new folder")
    results = read_results(run)  # read and checked once: the export writes what was checked
    benchmark = results.get("benchmark", {}).get("name")
    export = exporter(get_benchmark(str(benchmark)).metric)
    played = read_run(run, results)
    out.parent.mkdir(parents=True, exist_ok=True)
    with staged_folder(out) as tmp:
        written = export(played, tmp, model)
        written["official_command"] = written["official_command"].replace(str(tmp), str(out.resolve()))
        write_json(tmp / "export.json", {"run": str(run), "benchmark": benchmark, **written})
    files = [f["file"] if isinstance(f, dict) else f for f in written["files"]]
    console.out.print(f"{benchmark} run written as {written['format']} files to {out}: {', '.join(files)}",
                      markup=False)
    console.out.print(f"official scorer: {written['official_command']}", markup=False)
