"""``streamcue compare RUN_A RUN_B``: paired differences per task and group with 95 % intervals over shared videos."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.metrics.bootstrap import MAX_RESAMPLES

__all__ = ["compare_command"]


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="The first run folder (streamcue run --out): the baseline A.")],
    run_b: Annotated[Path, typer.Argument(help="The second run folder: B; differences are B - A.")],
    allow_different: Annotated[bool, typer.Option(
        "--allow-different", help="Compare runs whose protocol, frames, generation, prompts, benchmark version or "
                                  "metric config differ anyway (the output names each difference).")] = False,
    leak: Annotated[bool, typer.Option(
        "--leak", help="Measure a leak: the runs are one model under a setting that reads the gold (an answer or its "
                       "time, as a schedule that asks at the gold answer time) and under the default, nothing else "
                       "differing; rows give leak = gold-reading - gold-blind, in either order of the runs.")] = False,
    clock: Annotated[bool, typer.Option(
        "--clock", help="Measure a latency cost: the runs are one model under the free clock and under --clock live "
                        "or fixed:S, nothing else differing; rows give latency cost = live - free, in either order "
                        "of the runs (docs/clock.md).")] = False,
    output: Annotated[Optional[Path], typer.Option(help="Also write the comparison as JSON here.")] = None,
    resamples: Annotated[int, typer.Option(min=1, max=MAX_RESAMPLES, help=(
        f"Bootstrap resamples (over the videos both runs played), 1 to {MAX_RESAMPLES:,}."))] = 2000,
    seed: Annotated[int, typer.Option(min=0, max=2 ** 63 - 1, help="Seed of the bootstrap (0 or more).")] = 0,
) -> None:
    """Compare two runs of one benchmark: B - A per task and group, with paired 95% intervals over shared videos.

    Both runs' settings are listed side by side. Runs whose protocol, frames, generation, prompts,
    benchmark version or metric config differ are refused, each difference named, unless
    --allow-different; runs sharing no record are refused. Each run's results.json is checked against its
    own seal (a field edited after the run is refused) and its samples.jsonl against its results.json first.
    Only the records both runs scored count; the videos both played are resampled together, so a video that is
    hard for both models does not widen the interval of the difference.

    With --leak, the two runs must be one model under a setting its benchmark declares gold-reading (its
    protocol's leaky_options, e.g. a schedule that asks at the gold answer time) and under the default, the same
    in every other setting; each row is then the leak, the gold-reading run's score minus the gold-blind run's,
    with its paired interval; the output says what figures were compared (score-only ones named so: a 0 there is
    not a finding of no leak) and how many paired records the two runs scored differently.

    Examples:

        streamcue compare runs/qwen-ovo runs/llava-ovo

        streamcue compare runs/k8 runs/k16 --output k8_vs_k16.json

        streamcue compare runs/json-prompts runs/official-prompts --allow-different

        streamcue compare runs/sparse runs/every-chunk --leak --output leak.json

        streamcue compare runs/free runs/live --clock
    """
    from streamcue.errors import ConfigError
    from streamcue.io import write_json
    from streamcue.metrics.bootstrap import BootstrapSettings
    from streamcue.metrics.compare import compare_runs
    from streamcue.prologue import check_io

    if leak and allow_different:
        raise ConfigError("--leak and --allow-different exclude each other: a leak is measured on runs that differ "
                          "only in a gold-reading setting")
    if clock and (leak or allow_different):
        raise ConfigError("--clock excludes --leak and --allow-different: a latency cost is measured on runs that "
                          "differ only in their clock")
    if output is not None:
        if output.is_dir():
            raise ConfigError(f"--output {output} is a folder; give the file's name")
        check_io({output: "--output"}, [run_a, run_b])
    result = compare_runs(run_a, run_b, allow_different=allow_different, leak=leak,
                          settings=BootstrapSettings(resamples=resamples, seed=seed), clock=clock)
    a, b = result["a"]["model"].get("name") or "A", result["b"]["model"].get("name") or "B"
    folder_a, folder_b = result["a"]["folder"], result["b"]["folder"]
    _side_by_side("settings", result["settings"], result["differences"])
    if result["models"]:
        console.out.print(f"models compared: A and B differ in {'; '.join(result['models'])}", markup=False)
    if leak:
        _say_leak(result)
    elif clock:
        _say_clock(result)
    elif result["differences"]:
        console.out.print(f"note: compared although the runs differ in {'; '.join(result['differences'])} "
                          "(--allow-different)", markup=False)
    diff = "leak (B - A)" if leak else "latency cost (B - A)" if clock else "B - A"
    for name in ("group", "task"):
        rows = {row: {"A": v["a"], "B": v["b"], diff: v["estimate"], "95% low": v["low"], "95% high": v["high"],
                      "n": v["n"], "videos": f"{v['videos']}{' (few)' if v.get('few_videos') else ''}"}
                for row, v in result["tables"][name].items()}
        if rows:
            console.out.print(console.table(f"{diff} by {name} (A: {a} {folder_a}, B: {b} {folder_b})",
                                            ["A", "B", diff, "95% low", "95% high", "n", "videos"], rows, name))
    if any(v.get("few_videos") for table in result["tables"].values() for v in table.values()):
        console.out.print(f"note: rows marked (few) rest on fewer than {result['bootstrap']['min_videos']} videos: "
                          "their intervals are too narrow to trust", markup=False)
    _efficiency(result)
    console.out.print(f"paired over {result['shared_records']} records on {result['shared_videos']} videos both runs "
                      "played", markup=False)
    if output is not None:
        write_json(output, result)
        console.out.print(f"comparison written to {output}", markup=False)


def _say_leak(result: dict[str, Any]) -> None:
    """Which run reads the gold, what figures the leak is measured on (score-only ones named so) and how many paired
    records the runs scored differently: a leak of 0 in figures that cannot move is not a finding of no leak."""
    leak = result["leak"]
    console.out.print(f"leak measurement: A is gold-blind ({'; '.join(leak['gold_blind'])}), B reads the gold "
                      f"({'; '.join(leak['gold_reading'])}); leak = B - A", markup=False)
    console.out.print(f"figures compared: {leak['scored']}", markup=False)
    console.out.print(f"{leak['records_scored_differently']} of {result['shared_records']} paired records were scored "
                      "differently (their per-record scores, results.json report.per_item)", markup=False)
    rows = [row for table in result["tables"].values() for row in table.values()]
    if leak["score_only"] and all(row["estimate"] == 0 for row in rows):
        console.out.print("note: every leak row is 0 in score-only figures, which do not score what the gold-reading "
                          "setting changes: this is not a finding of no leak; score both runs with the metric's judge "
                          "to measure it", markup=False)


def _efficiency(result: dict[str, Any]) -> None:
    """Both runs' efficiency side by side; throughputs at different concurrency shown as not comparable."""
    from streamcue.metrics.compare import THROUGHPUTS

    note = result.get("efficiency_note")
    values = {name: (["not comparable", "not comparable"] if note and name in THROUGHPUTS else pair)
              for name, pair in result["efficiency"].items()}
    _side_by_side("efficiency", values, None)
    if note:
        console.out.print(f"note: {note}", markup=False)


def _say_clock(result: dict[str, Any]) -> None:
    """Which run is free and which live (or fixed), what figures are compared and the clocked run's latencies."""
    entry = result["clock"]
    console.out.print(f"latency cost measurement: A is {entry['free']}, B is {entry['clocked']}; latency cost = "
                      "live - free = B - A", markup=False)
    console.out.print(f"figures compared: {entry['scored']}", markup=False)
    latency = entry["latency"].get("clocked") or {}
    if latency.get("answers"):
        within = ", ".join(f"{share:.0%} within {w} s" for w, share in latency["within_s"].items())
        console.out.print(f"B's answers: {latency['answers']}, mean latency {latency['latency_mean_s']:.3g} s, "
                          f"{within}; {latency['skipped_moments']} moments skipped", markup=False)
    console.out.print(f"{entry['records_scored_differently']} of {result['shared_records']} paired records were "
                      "scored differently", markup=False)


def _side_by_side(title: str, values: dict[str, Any], differences: list[str] | None) -> None:
    """``{name: [A, B]}`` as a table; with ``differences``, a differing setting marked."""
    differ = {line.split(": ", 1)[0] for line in differences or []}
    rows = {name: {"A": _cell(va), "B": _cell(vb), "": "differs" if name in differ else ""}
            for name, (va, vb) in values.items()}
    columns = ["A", "B", ""] if differences is not None else ["A", "B"]
    if rows:
        console.out.print(console.table(title, columns, rows, title[:-1] if title.endswith("s") else title))


def _cell(value: Any) -> Any:
    if value is None:
        return "none"
    return ", ".join(map(str, value)) if isinstance(value, list) else value
