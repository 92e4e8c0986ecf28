"""``streamcue compare RUN_A RUN_B``: paired differences per task and group with 95 % intervals over shared videos."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console

__all__ = ["compare_command"]


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="The first run folder (streamcue run --out): the baseline A.")],
    run_b: Annotated[Path, typer.Argument(help="The second run folder: B; differences are B - A.")],
    allow_different: Annotated[bool, typer.Option(
        "--allow-different", help="Compare runs of different benchmark versions, protocols or metric configs "
                                  "anyway (the output says what differs).")] = False,
    output: Annotated[Optional[Path], typer.Option(help="Also write the comparison as JSON here.")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples (over the videos both runs played).")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
) -> None:
    """Compare two runs of one benchmark: B - A per task and group, with paired 95% intervals over shared videos.

    Only the records both runs scored count; the videos both played are resampled together, so a
    video that is hard for both models does not widen the interval of the difference. Runs of
    different benchmark versions, protocols or metric configs are refused unless --allow-different.

    Examples:

        streamcue compare runs/qwen-ovo runs/llava-ovo

        streamcue compare runs/k8 runs/k16 --output k8_vs_k16.json

        streamcue compare runs/json-prompts runs/official-prompts --allow-different
    """
    from streamcue.errors import ConfigError
    from streamcue.io import write_json
    from streamcue.metrics.bootstrap import BootstrapSettings
    from streamcue.metrics.compare import compare_runs
    from streamcue.prologue import check_io

    if resamples < 1:
        raise ConfigError("--resamples must be at least 1")
    if output is not None:
        if output.is_dir():
            raise ConfigError(f"--output {output} is a folder; give the file's name")
        check_io({output: "--output"}, [run_a, run_b])
    result = compare_runs(run_a, run_b, allow_different=allow_different,
                          settings=BootstrapSettings(resamples=resamples, seed=seed))
    if result["differences"]:
        console.out.print(f"note: compared although the runs differ in {'; '.join(result['differences'])} "
                          "(--allow-different)", markup=False)
    a, b = result["a"]["model"].get("name") or "A", result["b"]["model"].get("name") or "B"
    for name in ("group", "task"):
        rows = {row: {"A": v["a"], "B": v["b"], "B - A": v["estimate"], "95% low": v["low"], "95% high": v["high"],
                      "n": v["n"], "videos": v["videos"]} for row, v in result["tables"][name].items()}
        if rows:
            console.out.print(console.table(f"B - A by {name} (A: {a} {run_a}, B: {b} {run_b})",
                                            ["A", "B", "B - A", "95% low", "95% high", "n", "videos"], rows, name))
    console.out.print(f"paired over {result['shared_records']} records on {result['shared_videos']} videos both runs "
                      "played", markup=False)
    if output is not None:
        write_json(output, result)
        console.out.print(f"comparison written to {output}", markup=False)
