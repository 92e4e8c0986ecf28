"""``streamcue run BENCHMARK RECORDS --out RUN``: replay and score in one command, into a run folder.

Every option is a field of :class:`streamcue.metrics.run_config.RunConfig` (a replay's options and the
metric's), generated from its declarations as ``streamcue replay``'s are; :func:`streamcue.metrics.run_config.run`
does the work. The run folder: docs/runs.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from streamcue import console
from streamcue.cli.options import config_command
from streamcue.metrics.run_config import RunConfig
from streamcue.registry import BENCHMARKS

__all__ = ["run_command", "print_results"]


def _run(
    config: RunConfig,
    benchmark: Annotated[str, typer.Argument(help=f"The benchmark: {', '.join(BENCHMARKS)}.")],
    records: Annotated[str, typer.Argument(help="Its records: a build folder (streamcue build ...), one record "
                                                "file, a release folder or a Hub dataset ORG/NAME@REVISION.")],
    out: Annotated[Path, typer.Option(help="The run folder: results.json, samples.jsonl, report.html, "
                                           "predictions.jsonl, replay_report.json, played/.")],
) -> None:
    """Replay a benchmark's records to a model and score them: one run folder with results, samples and a page.

    OVO-Bench and StreamingBench are asked with their official prompts by default (--prompt-set official:
    each question's official text sent alone, the plain answer scored by the official rule; --prompt-set
    streamcue: streamcue's prompts with JSON answers). Every call is cached: a re-run makes no call. A run
    folder is never replaced: the same command into it again does nothing when the run finished and resumes it
    when it did not; other settings are refused, naming the first difference (--concurrency, --llm-retries,
    --llm-timeout and --no-cache may differ). A partial run (--split, --ids, --limit) is scored over the records
    played, with n_played and n_benchmark in results.json. A source that ships its videos needs no --video-root.
    See docs/runs.md.

    Examples:

        streamcue run ovo-bench out/ovo --out runs/qwen-ovo --video-root /data/ovo --window-s 60 \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct --concurrency 8

        streamcue run estp out/ego4d --out runs/estp-1hz --strategy polling --poll-hz 1 --judge llm \\
            --video-root /data/ego4d --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct

        streamcue run streamingbench out/sb --out runs/sb-try --limit 20 --llm-model Qwen2.5-VL-7B-Instruct \\
            --llm-base-url http://127.0.0.1:8000/v1 --context last-60s --param rules=strict

        streamcue compare runs/qwen-ovo runs/llava-ovo
    """
    import sys

    from streamcue.redact import command_line
    from streamcue.metrics.run_config import run

    command = command_line(["streamcue", *sys.argv[1:]]) if sys.argv[1:2] == ["run"] else None
    print_results(run(config, out, command=command), out)


run_command = config_command(RunConfig, _run, "run_command")


def print_results(results: dict[str, Any], out: Path) -> None:
    """The group and task tables with their intervals, the counts and where the files are."""
    for name in ("group", "task"):
        rows = {row: {"estimate": v["estimate"], "95% low": v["low"], "95% high": v["high"], "n": v["n"],
                      "videos": v["videos"]} for row, v in results["tables"][name].items()}
        if rows:
            console.out.print(console.table(f"{results['benchmark']['name']} by {name} ({results['metric']['name']}, "
                                            f"{results['metric']['config_version']})",
                                            ["estimate", "95% low", "95% high", "n", "videos"], rows, name))
    counts = results["counts"]
    console.out.print(f"played {results['n_played']} of {results['n_benchmark']} records; asked {counts['asked']}, "
                      f"answered {counts['answered']}, unparseable {counts['unparseable']} "
                      "(records; scored as recorded); "
                      f"{counts.get('endpoint_calls', 0)} endpoint calls, {counts.get('cache_hits', 0)} cache hits",
                      markup=False)
    done = results.get("throughput") or {}
    if done.get("calls_per_hour") is not None:
        shares = ", ".join(f"{name} {mine['calls']}" for name, mine in (done.get("endpoints") or {}).items())
        console.out.print(f"throughput: {done['videos']} videos, {done['video_hours']:.3f} video hours, "
                          f"{done['calls_per_hour']:.0f} calls per hour" + (f" (calls by endpoint: {shares})"
                                                                             if len(done.get("endpoints") or {}) > 1
                                                                             else ""), markup=False)
    if results["n_played"] < results["n_benchmark"]:
        console.out.print("partial run: scored over the records played only", markup=False)
    console.out.print(f"run folder {out}: results.json, samples.jsonl, report.html", markup=False)
