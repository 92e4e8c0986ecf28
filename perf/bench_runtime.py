"""CenterFace's runtimes side by side: the network's own speed, and face recall on the labelled clips.

    python perf/bench_runtime.py [--runtimes onnxruntime,openvino-fp32,openvino-bf16] [--threads 2]
                                 [--speed-only | --recall-only] [--rounds 5]
                                 [--scenes street,crowd,turned,pan,holdout] [--sizes 1280x720,1600x900,...]
                                 [--orientations upright,...] [--seconds 1] [--fps 10] [--preset balanced]
                                 [--json figures.jsonl]

Speed: one process builds CenterFace once per runtime (``CenterFaceDetector(runtime=...)``, ``--threads``
threads) and runs the network alone (no resizing, no box decoding) on a random image of each input size
(640x384, 1280x736, 1920x1088: what 640 px looks, 720p and 1080p full-size looks give it), the runtimes
alternating look by look, ``--rounds`` looks each after one to warm up; the figure is the median time of
a look and each runtime's ratio to onnxruntime. Then, after one look, the process sleeps 1 s per runtime
and the CPU time it used meanwhile is printed: threads that spin while idle would show there.

Recall: every labelled clip (``streamcue.anonymize.synthetic``: the scenes, each at every size and in every
one of ``ORIENTATIONS``; ``--seconds`` long at ``--fps``) goes through one ``Anonymizer`` per runtime (the
preset's schedule, the models loaded once), its hidden frames encoded as the pipeline encodes them, and is scored
on the faces of 40 px and more (a box whose longer side is at least 40 px: the measured range, docs/anonymize.md)
by the benchmark's measure (``synthetic.detail_recall``, as ``perf/bench_anonymize.py`` scores: the share of face
area whose middle lost its detail) and, beside it, by the orientation tests' (``synthetic.recall``: the share of
face area the masks cover). The table gives each case's face recall per runtime, then each runtime's lowest and
the cases where it is below onnxruntime's.
The load average (1 minute) is printed before and after.

Start-up (``--startup N``): N short clips (1280x720, 0.5 s at 10 fps) in one folder go through
``anonymize_on_ray`` (what ``streamcue anonymize FOLDER --engine ray --workers 2`` calls: a local Ray instance with
2 CPUs, the ``balanced`` defaults), in a process of its own, with this checkout's code and with ``--before``'s (a
folder holding an earlier checkout's ``streamcue`` package, put first on ``PYTHONPATH``), alternating ``--rounds``
times (without ``--before``, only the first part below). First, in this process, the start-up itself: ``N`` builds
of an ``Anonymizer`` (what each task paid) against ``N`` calls of ``ray_engine.worker_anonymizer`` once its worker
built one (what each later task pays now). Then, per run: its wall time, the sum of its tasks' times
(``VideoOutcome.ran``), of its reports' ``wall_s`` (decoding, looking, hiding and encoding) and the difference: what
the tasks paid besides, models, canary and hashing included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

import numpy as np  # noqa: E402

from streamcue.anonymize.detectors import FACE_RUNTIMES, CenterFaceDetector  # noqa: E402
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer  # noqa: E402
from streamcue.anonymize.synthetic import ORIENTATIONS, detail_recall, large_faces, recall, write_clip  # noqa: E402
from streamcue.video import FrameWriter, probe, read_frames  # noqa: E402

INPUTS = ((640, 384), (1280, 736), (1920, 1088))
SIZES = "1280x720,1600x900,1920x1080,2560x1440"


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def speed(runtimes: list[str], threads: int, rounds: int) -> list[dict]:
    """The median time of a network run per runtime and input size, the runtimes alternating."""
    nets = {rt: CenterFaceDetector(runtime=rt, threads=threads)._net for rt in runtimes}
    rng = np.random.default_rng(0)
    rows = []
    for w, h in INPUTS:
        blob = rng.uniform(0, 255, (1, 3, h, w)).astype(np.float32)
        times: dict[str, list[float]] = {rt: [] for rt in runtimes}
        outputs = {}
        for k in range(rounds + 1):
            for rt in runtimes if k % 2 else runtimes[::-1]:
                net = nets[rt]
                started = time.perf_counter()
                outputs[rt] = net.sess.run(net.onnx_output_names[:3], {net.onnx_input_name: blob})
                if k:  # the first look of a size warms up
                    times[rt].append(time.perf_counter() - started)
        for rt in runtimes:
            diff = max(float(np.abs(a - b).max()) for a, b in zip(outputs[rt], outputs[runtimes[0]]))
            rows.append({"input": f"{w}x{h}", "runtime": rt, "ms": 1000 * statistics.median(times[rt]),
                         "max_diff": diff})
    for row in rows:
        base = next(r["ms"] for r in rows if r["input"] == row["input"] and r["runtime"] == runtimes[0])
        row["speedup"] = base / row["ms"]
    return rows


def idle_cpu(runtimes: list[str], threads: int) -> dict[str, float]:
    """CPU seconds this process used in the 1 s after a look, per runtime (spinning threads would use it)."""
    out = {}
    blob = np.zeros((1, 3, 736, 1280), np.float32)
    for rt in runtimes:
        net = CenterFaceDetector(runtime=rt, threads=threads)._net
        net.sess.run(net.onnx_output_names[:3], {net.onnx_input_name: blob})
        before = time.process_time()
        time.sleep(1.0)
        out[rt] = time.process_time() - before
    return out


def recall_cases(args: argparse.Namespace, runtimes: list[str], out) -> list[dict]:
    # allow_unmeasured: openvino-bf16 is outside the measured range (this measure put it there); nothing else differs
    anonymizers = {rt: Anonymizer(AnonymizeConfig.from_preset(args.preset, face_runtime=rt, threads=args.threads,
                                                              allow_unmeasured=True)) for rt in runtimes}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            width, height = map(int, size.split("x"))
            for scene in args.scenes.split(","):
                for orientation in args.orientations.split(","):
                    clip = Path(tmp) / "clip.mp4"
                    truths = large_faces(write_clip(clip, width=width, height=height, fps=args.fps,
                                                  seconds=args.seconds, scene=scene, **ORIENTATIONS[orientation]))
                    info = probe(clip)
                    row = {"size": size, "scene": scene, "orientation": orientation}
                    for rt in runtimes:
                        hidden, masks = Path(tmp) / "hidden.mp4", []
                        writer = FrameWriter(hidden, info.width, info.height, info.fps)
                        for result in anonymizers[rt].process(read_frames(clip, info), info.fps):
                            writer.write(result.frame)
                            masks.append(result.mask)
                        writer.close()
                        row[rt] = detail_recall(clip, hidden, truths).get("face")
                        row[f"{rt} mask"] = recall(masks, truths).get("face")
                    rows.append(row)
                    print(json.dumps(row), file=out, flush=True)
    return rows


def render_recall(rows: list[dict], runtimes: list[str]) -> str:
    """One row per size and scene, one column per orientation, each cell the runtimes' detail recall (``a / b``);
    then, per runtime and measure, the lowest and the cases below the first runtime's."""
    orientations = list(dict.fromkeys(r["orientation"] for r in rows))
    lines = [f"| size | scene | {' | '.join(orientations)} |", "|---|---|" + "---|" * len(orientations)]
    cells = {(r["size"], r["scene"], r["orientation"]): " / ".join(f"{r[rt]:.3f}" for rt in runtimes) for r in rows}
    for size, scene in dict.fromkeys((r["size"], r["scene"]) for r in rows):
        lines.append(f"| {size} | {scene} | " + " | ".join(cells.get((size, scene, o), "-") for o in orientations)
                     + " |")
    lines.append("")
    for rt in runtimes[1:]:
        for measure, suffix in (("detail recall", ""), ("mask share", " mask")):
            below = [f"{r['size']} {r['scene']} {r['orientation']} ({r[rt + suffix]:.4f} against "
                     f"{r[runtimes[0] + suffix]:.4f})" for r in rows if r[rt + suffix] < r[runtimes[0] + suffix] - 1e-9]
            lines.append(f"* {measure}: {rt} lowest {min(r[rt + suffix] for r in rows):.4f}, {runtimes[0]} lowest "
                         f"{min(r[runtimes[0] + suffix] for r in rows):.4f}; {rt} below {runtimes[0]} on {len(below)} "
                         f"of {len(rows)} cases{': ' + '; '.join(below[:8]) if below else ''}"
                         f"{f' and {len(below) - 8} more' if len(below) > 8 else ''}")
    return "\n".join(lines)


#: the driver each start-up run is: ``anonymize_on_ray`` on a local Ray with 2 CPUs, each task's time and report
_DRIVER = """
import json, sys
from pathlib import Path
from streamcue.anonymize.pipeline import AnonymizeConfig
from streamcue.anonymize.ray_engine import anonymize_on_ray
videos = sorted(Path(sys.argv[1]).glob("*.mp4"))
for o in anonymize_on_ray(videos, Path(sys.argv[2]), AnonymizeConfig(), cpus=2):
    settings = o.report["detectors"]["face"]["settings"] if o.report else {}
    print(json.dumps({"state": o.state, "task_s": o.ran[1] - o.ran[0], "wall_s": (o.report or {}).get("wall_s"),
                      "named": "runtime" in settings, "error": o.error}))
"""


def builds(count: int) -> None:
    """What a Ray task paid before its video, in this process: ``Anonymizer(AnonymizeConfig())`` (every task, before
    workers kept theirs; the canary was already cached per settings in a process) against ``worker_anonymizer``
    (every task now: the first in a worker builds, the rest reuse), ``count`` times each after a first build."""
    from dataclasses import asdict

    from streamcue.anonymize.ray_engine import worker_anonymizer

    options = AnonymizeConfig()
    given, stated = json.dumps(asdict(options)), json.dumps(options.stated())
    worker_anonymizer(given, stated)
    for label, build in (("Anonymizer(AnonymizeConfig())", lambda: Anonymizer(options)),
                         ("worker_anonymizer (kept)", lambda: worker_anonymizer(given, stated))):
        times = []
        for _ in range(count):
            started = time.perf_counter()
            build()
            times.append(time.perf_counter() - started)
        print(f"{label}: {count} builds, median {statistics.median(times):.3f} s, total {sum(times):.2f} s "
              f"(load average {load()})", flush=True)


def startup(count: int, before: Path, rounds: int) -> None:
    """``--startup``: the same folder through this checkout and ``before``'s, alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        clips = Path(tmp) / "clips"
        clips.mkdir()
        for k in range(count):
            write_clip(clips / f"clip{k:02d}.mp4", width=1280, height=720, fps=10, seconds=0.5, seed=k)
        print("| code | run | run's wall s | tasks done | tasks' time s | anonymizing s (reports' wall_s) | "
              "the rest s |\n|---|---|---|---|---|---|---|")
        for k in range(rounds):
            for label in ("before", "after") if k % 2 == 0 else ("after", "before"):
                env = {**os.environ, "STREAMCUE_NO_PROGRESS": "1"}
                if label == "before":
                    env["PYTHONPATH"] = os.pathsep.join([str(before), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
                started = time.perf_counter()
                # run in the temporary folder, not a checkout: python puts the folder it runs in first on its path
                done = subprocess.run([sys.executable, "-c", _DRIVER, str(clips), str(Path(tmp) / f"{label}-{k}")],
                                      capture_output=True, text=True, env=env, cwd=tmp)
                for task in (json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")):
                    if task["state"] != "done":
                        print(f"  {label}: a task {task['state']}: {task.get('error')}", flush=True)
                wall = time.perf_counter() - started
                tasks = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
                ok = [t for t in tasks if t["state"] == "done"]
                code = f"{label} ({sum(t['named'] for t in ok)} of {len(ok)} reports name a runtime)"
                task_s, anonymizing = sum(t["task_s"] for t in ok), sum(t["wall_s"] for t in ok)
                print(f"| {code} | {k + 1} | {wall:.1f} | {len(ok)} of {count} | {task_s:.1f} | {anonymizing:.1f} | "
                      f"{task_s - anonymizing:.1f} |", flush=True)
                if done.returncode:
                    print(done.stderr.strip().splitlines()[-1:], flush=True)
        print(f"load average {load()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runtimes", default=",".join(FACE_RUNTIMES), help="the first is the reference")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--recall-only", action="store_true")
    parser.add_argument("--scenes", default="street,crowd,turned,pan,holdout")
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--orientations", default=",".join(ORIENTATIONS))
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--preset", default="balanced")
    parser.add_argument("--json", type=Path, help="write each recall case as a JSON line here too")
    parser.add_argument("--table", type=Path, nargs="+", help="print the recall table of these --json files only")
    parser.add_argument("--startup", type=int, help="measure start-up instead, on this many short clips")
    parser.add_argument("--before", type=Path, help="--startup: a folder with an earlier checkout's streamcue package")
    args = parser.parse_args()
    runtimes = args.runtimes.split(",")
    print(f"load average {load()}, {args.threads} threads, {os.cpu_count()} CPUs", flush=True)
    if args.startup:
        builds(args.startup)
        return startup(args.startup, args.before, args.rounds) if args.before else None
    if args.table:
        return print(render_recall([json.loads(line) for path in args.table for line in path.open()], runtimes))
    if not args.recall_only:
        print(f"| input | runtime | ms a look | vs {runtimes[0]} | largest output difference |\n|---|---|---|---|---|")
        for row in speed(runtimes, args.threads, args.rounds):
            print(f"| {row['input']} | {row['runtime']} | {row['ms']:.1f} | {row['speedup']:.2f}x | "
                  f"{row['max_diff']:.2g} |", flush=True)
        idle = idle_cpu(runtimes, args.threads)
        print("CPU seconds used in the 1 s after a look: " + ", ".join(f"{k} {v:.3f}" for k, v in idle.items()))
        print(f"load average {load()}", flush=True)
    if not args.speed_only:
        out = args.json.open("a") if args.json else open(os.devnull, "w")
        with out:
            rows = recall_cases(args, runtimes, out)
        print(render_recall(rows, runtimes))
        print(f"load average {load()}", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
