"""The headline speed ratios, each beside the committed baseline (``./dev.sh perf``).

    ./dev.sh perf [--only CASE[,CASE]] [--dry-run] [--update-baseline WHY]

Runs, each as its own process and one after the other, the perf scripts below at the settings of ``CASES``
(16.8 minutes on the 2 shared cores at load average 8 to 15; see docs/perf.md), then prints every figure beside
the one recorded in ``perf/baseline.json``
and names, one line each, every figure that lost more than 15 %:

* ``anonymize-720p``, ``anonymize-1080p``: ``bench_anonymize.py`` on one held-out clip (1 s, 30 fps), deface and
  ``streamcue anonymize --preset fast`` / ``balanced`` as whole processes alternating over 2 rounds. Figures:
  deface's wall time over each preset's (higher is better) and each preset's face recall (higher is better).
* ``replay``: ``bench_replay.py --quick``: ``streamcue replay`` against an instant server over the decode floor, and
  against a 1 s server at concurrency 8 over max(floor, calls x 1 s / 8) (lower is better; 1.0 is the floor).
* ``release``: ``bench_release.py --videos``: ``release build`` publishing the videos over ``cp`` + ``sha256sum`` of
  the same bytes, the median over alternated pairs, wall and CPU time (lower is better; 1.0 is the floor).
* ``metrics``: ``bench_metrics.py``: ESTP-F1, VSAS (substring, subsequence) and BERTScore, each in seconds over a
  fixed pure-Python reference timed in the same process (lower is better).

A figure lost more than 15 % when the speed it stands for kept less than 0.85 of the baseline's: ``now / before``
for a higher-is-better figure, ``before / now`` for a lower-is-better one. Exit status: 0 when no figure lost more
than 15 % (or the baseline was updated), 1 when one or more did, 2 when a bench failed or an option is wrong.

``--update-baseline WHY`` writes this run's figures to the baseline with WHY, the date, the commit, the machine (CPU
model, cores) and the load average before and after each case; the reasons of earlier baselines are kept in its
``history``. Only a whole run (no ``--only``) may update it. ``--dry-run`` prints the commands and the baseline's
figures and runs nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PERF = Path(__file__).resolve().parent
BASELINE = PERF / "baseline.json"
KEPT = 0.85  # a figure whose speed kept less than this share of the baseline's lost more than 15 %


def _anonymize_figures(data: dict) -> dict:
    figures = {}
    for row in data["rows"]:
        if row["tool"] != "deface":
            figures[f"{row['tool']} vs deface"] = (row["vs_deface"], "higher")
            figures[f"{row['tool']} face recall"] = (row["face_recall"], "higher")
    return figures


def _anonymize(size: str) -> dict:
    return {"script": "bench_anonymize.py",
            "args": ["--size", size, "--fps", "30", "--seconds", "1", "--scenes", "holdout",
                     "--presets", "fast,balanced", "--rounds", "2"],
            "settings": f"{size}, 30 fps, one held-out clip of 1 s, presets fast and balanced, deface at its "
                        "defaults, whole processes alternating over 2 rounds, median wall time",
            "figures": _anonymize_figures}


CASES = {
    "anonymize-720p": _anonymize("1280x720"),
    "anonymize-1080p": _anonymize("1920x1080"),
    "replay": {"script": "bench_replay.py", "args": ["--quick"],
               "settings": "22 questions over three 720p 30 fps videos (60 s in all), k = 16, 1 fps, --no-cache; "
                           "instant server at concurrency 1, 1 s server at concurrency 8",
               "figures": lambda data: {
                   "instant vs floor": (data["instant_vs_floor"], "lower"),
                   "concurrency 8 vs max(floor, calls x 1 s / 8)": (data["concurrency8_vs_target"], "lower")}},
    "release": {"script": "bench_release.py", "args": ["--videos", "4", "--video-mb", "20", "--rounds", "3"],
                "settings": "release build publishing 4 recorded videos of 20 MB against cp + sha256sum of the same "
                            "files, 3 alternated pairs, median ratio",
                "figures": lambda data: {
                    "build vs cp + sha256sum, wall": (statistics.median(p["wall_ratio"] for p in data["pairs"]),
                                                      "lower"),
                    "build vs cp + sha256sum, CPU": (statistics.median(p["cpu_ratio"] for p in data["pairs"]),
                                                     "lower")}},
    "metrics": {"script": "bench_metrics.py", "args": [],
                "settings": "ESTP-F1 2,264 questions x 20 responses, VSAS 92 tasks x 300 s (judge cached), BERTScore "
                            "2,000 pairs (second call); seconds over a pure-Python reference in the same process",
                "figures": lambda data: {f"{name} vs reference": (value, "lower")
                                         for name, value in data["vs_reference"].items()}},
}


def kept(before: float, now: float, better: str) -> float:
    """The share of the baseline's speed a figure kept: ``now / before`` (higher is better), else ``before / now``."""
    return now / before if better == "higher" else before / now


def _command(name: str, json_path: Path) -> list[str]:
    """The case's script and options, relative to the repository (run from its root), then ``--json FILE``."""
    case = CASES[name]
    return [f"perf/{case['script']}", *case["args"], "--json", str(json_path)]


def run_case(name: str, work: Path) -> dict:
    """Run one case's script; its figures, settings and the load average (1, 5, 15 min) before and after."""
    json_path = work / f"{name}.json"
    command = _command(name, json_path)
    print(f"== {name}: python {' '.join(command[:-2])}", flush=True)
    load_before, started = os.getloadavg(), time.perf_counter()
    done = subprocess.run([sys.executable, *command], cwd=PERF.parent, env=dict(os.environ, STREAMCUE_NO_PROGRESS="1"))
    if done.returncode != 0 or not json_path.is_file():
        _fail(f"{name} failed (exit {done.returncode}); its output is above")
    figures = CASES[name]["figures"](json.loads(json_path.read_text()))
    wrong = [k for k, (v, _) in figures.items() if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0)]
    if wrong:
        _fail(f"{name}: {', '.join(wrong)} is not a positive finite number ({json_path.name})")
    return {"settings": CASES[name]["settings"], "command": "python " + " ".join(command[:-2]),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
            "wall_s": round(time.perf_counter() - started, 1),
            "figures": {k: {"value": round(v, 4), "better": b} for k, (v, b) in figures.items()}}


def _fail(message: str) -> None:
    print(f"perf: {message}", file=sys.stderr)
    raise SystemExit(2)


def compare(cases: dict, baseline: dict | None) -> list[str]:
    """Print each figure beside the baseline's; return one line per figure that lost more than 15 %."""
    regressions = []
    before = (baseline or {}).get("cases", {})
    print(f"\n{'case':16} {'figure':48} {'better':6} {'baseline':>9} {'now':>9}  kept")
    for name, case in cases.items():
        for figure, now in case["figures"].items():
            old = before.get(name, {}).get("figures", {}).get(figure)
            share = kept(old["value"], now["value"], now["better"]) if old else None
            print(f"{name:16} {figure:48} {now['better']:6} {old['value'] if old else '-':>9} {now['value']:>9}  "
                  + (f"{share:.2f}" if share is not None else "(no baseline)"))
            if share is not None and share < KEPT:
                regressions.append(f"REGRESSION {name}: {figure} went from {old['value']} to {now['value']} "
                                   f"({now['better']} is better): kept {share:.2f} of the baseline, "
                                   f"{1 - share:.0%} lost (more than 15 %)")
    return regressions


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), None) if Path("/proc/cpuinfo").is_file() else None
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=PERF.parent, capture_output=True, text=True).stdout.strip()

    dirty = any(not line.endswith("perf/baseline.json") for line in git("status", "--porcelain").splitlines())
    return git("rev-parse", "--short=12", "HEAD") + ("+uncommitted changes" if dirty else "")


def update(baseline: dict | None, cases: dict, why: str, load_before, load_after) -> None:
    history = (baseline or {}).get("history", [])
    if baseline:
        history = [*history, {k: baseline[k] for k in ("date", "commit", "reason")}]
    record = {"reason": why, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit(), "machine": machine(), "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in load_after], "cases": cases, "history": history}
    tmp = BASELINE.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, BASELINE)
    print(f"perf: the baseline ({BASELINE.name}) now holds this run: {why}")


def dry_run(names: list[str], baseline: dict | None) -> None:
    for name in names:
        print(f"{name}: python {' '.join(_command(name, Path('FILE.json')))}\n  {CASES[name]['settings']}")
        for figure, old in (baseline or {}).get("cases", {}).get(name, {}).get("figures", {}).items():
            print(f"  baseline {figure}: {old['value']} ({old['better']} is better)")
    print(f"baseline: {(baseline or {}).get('date', 'none')}, {(baseline or {}).get('reason', '')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev.sh perf", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help=f"comma-separated cases to run (of {', '.join(CASES)}); a prefix names all "
                        "it starts (anonymize: both sizes)")
    parser.add_argument("--update-baseline", metavar="WHY", help="write this run's figures to perf/baseline.json "
                        "with WHY (a whole run only)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and the baseline; run nothing")
    args = parser.parse_args(argv)
    names = [n for n in CASES if not args.only or any(n.startswith(p) for p in args.only.split(","))]
    if not names:
        parser.error(f"--only {args.only}: no such case (of {', '.join(CASES)})")
    if args.update_baseline is not None and (args.only or not args.update_baseline.strip()):
        parser.error("--update-baseline needs a reason and a whole run (no --only)")
    try:
        baseline = json.loads(BASELINE.read_text()) if BASELINE.is_file() else None
    except json.JSONDecodeError as exc:
        parser.error(f"perf/baseline.json is not JSON (line {exc.lineno}): restore it from git")
    if args.dry_run:
        dry_run(names, baseline)
        return 0
    load_before, started = os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="streamcue-perf-") as work:
        cases = {name: run_case(name, Path(work)) for name in names}
    print(f"\n{len(names)} cases in {(time.perf_counter() - started) / 60:.1f} min; load average (1, 5, 15 min) "
          f"{' '.join(f'{x:.2f}' for x in load_before)} before, {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"after; baseline: {(baseline or {}).get('date', 'none')} at {(baseline or {}).get('commit', '-')}")
    regressions = compare(cases, baseline)
    print("\n".join(regressions) or "no figure lost more than 15 %")
    if args.update_baseline:
        update(baseline, cases, args.update_baseline.strip(), load_before, os.getloadavg())
        return 0
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
