"""Anamorphic video measured like rotation: face and plate recall of a preset on labelled clips stored with a sample
aspect ratio, upright and in each orientation, at each size (issue 45).

    python perf/bench_anamorphic.py [--sars 4:3,2:1] [--orientations upright,phone portrait,rotation 90,turned 90,
                                    upside down] [--sizes 1280x720] [--scenes street] [--fps 10] [--seconds 1]
                                    [--preset balanced]

Each clip is ``anonymize.synthetic.write_clip(scene=..., width=W, height=H, sar=..., **ORIENTATIONS[o])``: the scene
made at W x H as shown before any rotation, stored squeezed with that sample aspect ratio (2:1 at 2560x720: stored
1280x720), then turned in its pixels or given rotation metadata as the orientation says; ``anonymize_video`` with the
preset and ``allow_unmeasured`` (a ratio outside ``MEASURED_SAR`` runs, its report ``unmeasured``), one Anonymizer
for every clip (its start-up paid once). Recall is the benchmark's measure
(``synthetic.detail_recall``, both files decoded as shown) for faces, faces of 40 px and more (the longer side of
their box as shown) and plates, with the report's status, and ``face40 mask``: the share of the area of the faces of
40 px and more that the masks cover (``synthetic.recall``, the clip looked at again as shown), which tells a face left
visible from one whose middle the measure misreads (a face with little detail to lose, covered in full).
The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.synthetic import ORIENTATIONS, Truth, detail_recall, recall, write_clip  # noqa: E402
from streamcue.video import probe, read_frames, sample_aspect, shown_size  # noqa: E402


def with_large_faces(truths: list[Truth]) -> list[Truth]:
    """``truths`` with each face whose box is 40 px or more on its longer side also given as kind ``face40``."""
    return [Truth([*t.boxes, *(("face40", *b[1:]) for b in t.boxes
                               if b[0] == "face" and max(b[3] - b[1], b[4] - b[2]) >= 40)]) for t in truths]


def one(anonymizer: Anonymizer, folder: Path, scene: str, size: tuple[int, int], sar: str, orientation: str,
        args: argparse.Namespace) -> str:
    """One line: the clip's settings, the report's status and sizes, recall and wall time."""
    clip = folder / f"{scene}_{size[0]}x{size[1]}_{sar.replace(':', 'x')}_{orientation.replace(' ', '_')}.mp4"
    truths = write_clip(clip, width=size[0], height=size[1], fps=args.fps, seconds=args.seconds, scene=scene,
                        sar=sar, **ORIENTATIONS[orientation])
    start = time.perf_counter()
    report = anonymize_video(clip, folder / "out", anonymizer=anonymizer)
    wall = time.perf_counter() - start
    scores = detail_recall(clip, folder / "out" / report["output"]["path"], with_large_faces(truths))
    info = probe(clip)  # the masks again, as the video was looked at (as shown): the share of face area they cover
    size_shown = shown_size(info.width, info.height, sample_aspect(clip))
    frames = read_frames(clip, info, size=None if size_shown == (info.width, info.height) else size_shown)
    masks = [r.mask for r in anonymizer.process(frames, info.fps)]
    scores["face40 mask"] = recall(masks, with_large_faces(truths))["face40"]
    source = report["input"]
    return (f"{scene} {size[0]}x{size[1]} sar {sar} {orientation}: stored {source['stored_size'][0]}x"
            f"{source['stored_size'][1]}, shown {source['width']}x{source['height']}, {report['status']}; "
            + ", ".join(f"{kind} {value:.3f}" for kind, value in sorted(scores.items())) + f"; {wall:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sars", default="4:3,2:1")
    parser.add_argument("--orientations", default=",".join(ORIENTATIONS))
    parser.add_argument("--sizes", default="1280x720")
    parser.add_argument("--scenes", default="street")
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=1)
    parser.add_argument("--preset", default="balanced")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    # allowed to run outside the measured ratios (their reports say unmeasured): this is where they are measured
    anonymizer = Anonymizer(replace(AnonymizeConfig.from_preset(args.preset), allow_unmeasured=True))
    with tempfile.TemporaryDirectory() as folder:
        for scene in args.scenes.split(","):
            for size in [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")]:
                for sar in args.sars.split(","):
                    for orientation in args.orientations.split(","):
                        print(one(anonymizer, Path(folder), scene, size, sar, orientation, args), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
