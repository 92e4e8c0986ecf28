"""Plate recall of the plate detector alone on the ``plates`` scene (anonymize.synthetic): plates of 2 % to 25 % of
the frame width, light and dark, frontal and turned 12 degrees.

Per plate, the share of its ground-truth box covered by the detector's boxes padded 10 % each way (the pipeline's
plate padding), averaged over the frames looked at; one row per frame size. Usage::

    python perf/bench_plates.py --sizes 1280x720,1920x1080,2560x1440 --fps 2 --seconds 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from streamcue.anonymize.detectors import HaarPlateDetector
from streamcue.anonymize.synthetic import clip_frames


def covered(width: int, height: int, fps: float, seconds: float, search: str) -> tuple[dict[str, float], float]:
    """Per plate (``<share index><L|D>:<px wide>``), the mean share of its box covered; and seconds a frame."""
    detector = HaarPlateDetector(scale_factor=1.1, search=search)
    hit: dict[str, float] = {}
    count: dict[str, int] = {}
    start, frames = time.perf_counter(), 0
    for frame, truth in clip_frames(width=width, height=height, fps=fps, seconds=seconds, scene="plates"):
        mask = np.zeros(frame.shape[:2], bool)
        for x1, y1, x2, y2, _ in detector.detect(frame):
            px, py = 0.1 * (x2 - x1), 0.1 * (y2 - y1)
            mask[max(0, int(y1 - py)):int(y2 + py), max(0, int(x1 - px)):int(x2 + px)] = True
        for j, (_, x1, y1, x2, y2) in enumerate(truth.boxes):
            key = f"{j // 2}{'LD'[j % 2]}:{x2 - x1}"
            hit[key] = hit.get(key, 0.0) + float(mask[y1:y2, x1:x2].mean())
            count[key] = count.get(key, 0) + 1
        frames += 1
    return {k: round(hit[k] / count[k], 2) for k in sorted(hit)}, (time.perf_counter() - start) / max(frames, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1280x720,1920x1080,2560x1440")
    parser.add_argument("--fps", type=float, default=2)
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--search", default="texture", choices=["texture", "frame"])
    args = parser.parse_args()
    for size in args.sizes.split(","):
        width, height = map(int, size.split("x"))
        shares, seconds = covered(width, height, args.fps, args.seconds, args.search)
        print(f"{size}: {seconds:.2f} s a frame; " + ", ".join(f"{k} {v:.2f}" for k, v in shares.items()))


if __name__ == "__main__":
    main()
