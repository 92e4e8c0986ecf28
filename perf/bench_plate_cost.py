"""The plate search of issue 45 beside the one before it, in one run: the plate detector's cost a frame and the
plates it covers, then a preset's whole-clip wall time with each.

    python perf/bench_plate_cost.py [--before b66229c] [--sizes 1280x720,1920x1080] [--scenes plates,street]
                                    [--fps 3] [--seconds 2] [--clip-scenes street] [--clip-seconds 3]
                                    [--clip-sizes SIZES] [--rounds 3] [--preset balanced]

The search before is ``anonymize/detectors.py`` as commit ``--before`` has it (read with ``git show`` and loaded as a
module of its own; b66229c is main before issue 45's plate work), so both run in the same process on the same
frames, alternating (which goes first swaps every frame and every round). The detector alone
(``HaarPlateDetector(scale_factor=1.1, search="texture")``, the presets' search) on frames of each scene
(``anonymize.synthetic``; ``plates``: plates of 2 to 25 % of the frame width, light and dark, level and turned 12
degrees): milliseconds a frame, and, where the scene has plates, each plate's share of its box covered by the boxes
padded 10 % each way (the pipeline's plate padding), averaged over the frames, as the lowest over the plates of 4 to
25 % of the width and over those of 2 %. Then ``anonymize_video`` on each ``--clip-scenes`` clip (30 fps, at each of
``--clip-sizes``, by default ``--sizes``) with the preset, the one Anonymizer with either plate detector,
``--rounds`` times alternating: the median wall time, the ratio now / before, and face and plate recall of the output
(``synthetic.detail_recall``). The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.anonymize.detectors import HaarPlateDetector  # noqa: E402
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.synthetic import PLATE_SHARES, clip_frames, detail_recall, write_clip  # noqa: E402


def detectors_before(commit: str, folder: Path) -> Any:
    """``anonymize/detectors.py`` at ``commit``, loaded as a module of its own."""
    source = subprocess.run(["git", "show", f"{commit}:anonymize/detectors.py"], check=True, capture_output=True,
                            text=True, cwd=Path(__file__).resolve().parents[1]).stdout
    path = folder / "detectors_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("detectors_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def covered(boxes: np.ndarray, truth: Any, shape: tuple[int, ...]) -> list[tuple[int, float]]:
    """(plate width, share of its box covered by ``boxes`` padded 10 %) for each plate of ``truth``."""
    mask = np.zeros(shape[:2], bool)
    for x1, y1, x2, y2 in boxes[:, :4]:
        px, py = 0.1 * (x2 - x1), 0.1 * (y2 - y1)
        mask[max(0, int(y1 - py)):int(y2 + py), max(0, int(x1 - px)):int(x2 + px)] = True
    return [(x2 - x1, float(mask[y1:y2, x1:x2].mean())) for kind, x1, y1, x2, y2 in truth.boxes if kind == "plate"]


def per_frame(old: Any, scene: str, width: int, height: int, fps: float, seconds: float) -> str:
    """One line: ms a frame and the lowest coverage (4-25 %, 2 %) before and now on ``scene``."""
    pair = {"before": old.HaarPlateDetector(scale_factor=1.1, search="texture"),
            "now": HaarPlateDetector(scale_factor=1.1, search="texture")}
    spent = {name: 0.0 for name in pair}
    narrow: dict[str, set[int]] = {name: set() for name in pair}
    shares: dict[str, dict[int, list[float]]] = {name: {} for name in pair}
    frames = list(clip_frames(width=width, height=height, fps=fps, seconds=seconds, scene=scene))
    for i, (frame, truth) in enumerate(frames):
        for name in (list(pair) if i % 2 == 0 else list(pair)[::-1]):
            start = time.perf_counter()
            boxes = pair[name].detect(frame)
            spent[name] += time.perf_counter() - start
            for j, (plate_px, share) in enumerate(covered(boxes, truth, frame.shape)):
                shares[name].setdefault(j, []).append(share)
                if plate_px < 0.03 * width:
                    narrow[name].add(j)
    line = f"{scene} {width}x{height}:"
    if scene == "plates":  # each plate of the ``plates`` scene: its share index, light (L) or dark (D), width
        line += " now per plate " + ", ".join(
            f"{PLATE_SHARES[j // 2]:.0%} {'LD'[j % 2]} {float(np.mean(v)):.2f}" for j, v in shares["now"].items()) + ";"
    for name in pair:
        means = {j: float(np.mean(v)) for j, v in shares[name].items()}
        wide = [m for j, m in means.items() if j not in narrow[name]]
        small = [m for j, m in means.items() if j in narrow[name]]
        line += f" {name} {1000 * spent[name] / len(frames):.0f} ms a frame"
        if means:
            line += f" (4-25 % plates: lowest {min(wide):.2f}; 2 %: lowest {min(small, default=float('nan')):.2f})"
        line += ";"
    return line


def whole_clips(old: Any, scene: str, width: int, height: int, args: argparse.Namespace, root: Path) -> str:
    """One line: ``args.preset``'s median wall time on the whole clip with each plate search, ratio, recall."""
    clip = root / f"{scene}_{width}x{height}.mp4"
    truths = write_clip(clip, width=width, height=height, fps=30, seconds=args.clip_seconds, scene=scene)
    anonymizer = Anonymizer(AnonymizeConfig.from_preset(args.preset))
    options = anonymizer.options
    plates = {"now": anonymizer.plate,
              "before": old.HaarPlateDetector(scale_factor=options.plate_step, max_side=options.plate_max_side,
                                              search=options.plate_search)}
    walls: dict[str, list[float]] = {name: [] for name in plates}
    scores: dict[str, dict[str, float]] = {}
    for r in range(args.rounds):
        for name in (["before", "now"] if r % 2 == 0 else ["now", "before"]):
            anonymizer.plate = plates[name]
            out = root / f"out-{name}-{r}"
            start = time.perf_counter()
            report = anonymize_video(clip, out, anonymizer=anonymizer)
            walls[name].append(time.perf_counter() - start)
            scores[name] = detail_recall(clip, out / report["output"]["path"], truths)
    median = {name: statistics.median(v) for name, v in walls.items()}
    return (f"{scene} {width}x{height} {args.preset}, {args.clip_seconds:g} s at 30 fps, {args.rounds} rounds: "
            + "; ".join(f"{name} {median[name]:.2f} s (" + ", ".join(f"{kind} {value:.3f}" for kind, value
                                                                      in sorted(scores[name].items())) + ")"
                        for name in ("before", "now"))
            + f"; now/before {median['now'] / median['before']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="b66229c")
    parser.add_argument("--sizes", default="1280x720,1920x1080")
    parser.add_argument("--scenes", default="plates,street", help="'' for none")
    parser.add_argument("--fps", type=float, default=3)
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--clip-scenes", default="street", help="'' for none")
    parser.add_argument("--clip-seconds", type=float, default=3)
    parser.add_argument("--clip-sizes", default=None, help="the whole clips' sizes (default: --sizes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--preset", default="balanced")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        old = detectors_before(args.before, Path(folder))
        sizes = [tuple(map(int, size.split("x"))) for size in args.sizes.split(",")]
        clip_sizes = [tuple(map(int, size.split("x"))) for size in (args.clip_sizes or args.sizes).split(",")]
        for scene in filter(None, args.scenes.split(",")):
            for width, height in sizes:
                print(per_frame(old, scene, width, height, args.fps, args.seconds), flush=True)
        for scene in filter(None, args.clip_scenes.split(",")):
            for width, height in clip_sizes:
                print(whole_clips(old, scene, width, height, args, Path(folder)), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
