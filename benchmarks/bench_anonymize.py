"""Anonymizer figures: end-to-end fps at 640x360, 1280x720 and 1920x1080, the ffmpeg ceiling,
and recall on the labelled synthetic clip.

    python benchmarks/bench_anonymize.py [--seconds 3] [--fps 10] [--sizes 640x360,1280x720,1920x1080]

For each size: plain ffmpeg decode + encode through the same pipes (the ceiling), then the
whole anonymizer on the same file (decode, detect faces and plates, blur, encode), then
recall measured in memory on the same frames (share of ground-truth pixels hidden, per
face height). The execution provider is printed: on a machine with onnxruntime-gpu and a
GPU it is CUDAExecutionProvider.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.anonymize.ffmpeg_io import FrameWriter, probe, read_frames  # noqa: E402
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.synthetic import clip_frames, recall, write_clip  # noqa: E402


def ceiling(path: Path, out: Path) -> float:
    info = probe(path)
    start = time.perf_counter()
    writer = FrameWriter(out, info.width, info.height, info.fps)
    n = 0
    for frame in read_frames(path, info):
        writer.write(frame)
        n += 1
    writer.close()
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--sizes", default="640x360,1280x720,1920x1080")
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--max-side", type=int, default=1280)
    args = parser.parse_args()
    options = AnonymizeConfig(stride=args.stride, max_side=args.max_side or None)
    anonymizer = Anonymizer(options)
    print(f"face detector {anonymizer.face.version} on {anonymizer.face.settings['provider']}, "
          f"max side {options.max_side}, stride {options.stride}; plates {anonymizer.plate.version}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for size in args.sizes.split(","):
            w, h = map(int, size.split("x"))
            src = tmp / f"clip{w}.mp4"
            truths = write_clip(src, width=w, height=h, fps=args.fps, seconds=args.seconds)
            ceil = ceiling(src, tmp / f"copy{w}.mp4")
            report = anonymize_video(src, tmp / "out", anonymizer=anonymizer)
            frames = [f for f, _ in clip_frames(w, h, fps=args.fps, seconds=args.seconds)]
            scores = recall([r.mask for r in anonymizer.process(frames, args.fps)], truths)
            sizes = ", ".join(f"{k.split(':')[1]} {v:.2f}" for k, v in scores.items() if k.startswith("face:"))
            print(f"{w}x{h}: anonymize {report['fps']:.1f} fps (ffmpeg decode+encode alone {ceil:.0f} fps); "
                  f"recall faces {scores['face']:.3f} plates {scores['plate']:.3f}, "
                  f"frame hidden {scores['hidden_share']:.2f}; by face height: {sizes}")


if __name__ == "__main__":
    main()
