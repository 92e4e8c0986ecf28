"""What the anonymizer hides that need not be hidden: on each labelled clip, the share of the frame hidden, the share
hidden away from every face and plate, and which detector hid it.

    python perf/bench_hidden.py [--scenes street,crowd,turned,pan,holdout,plates] [--sizes 1280x720,1920x1080]
                                [--presets fast,balanced] [--seconds 1] [--fps 10]

Each clip (``synthetic.clip_frames``, upright) goes through one ``Anonymizer`` per preset three times: as the preset
runs (faces and plates), with plates off (``plate="none"``: the faces' masks) and with faces off (``face="none"``:
the plates'). Per run, from the masks and the ground truth: face and plate recall (``synthetic.recall``, the share of
their area the masks cover), the mean share of the frame hidden, and ``synthetic.hidden_elsewhere`` (the mean share
hidden away from every face and plate box grown by half its size). The two detectors' parts need not add up to the
whole: their masks overlap. No video is encoded; nothing here is timed. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer  # noqa: E402
from streamcue.anonymize.synthetic import clip_frames, hidden_elsewhere, recall  # noqa: E402

PARTS = {"both": {}, "faces": {"plate": "none"}, "plates": {"face": "none"}}


def one(anonymizer: Anonymizer, pairs: list, fps: float) -> dict[str, float]:
    """Recall, hidden share and hidden elsewhere of ``anonymizer``'s masks on ``pairs`` (frame, truth)."""
    truths = [truth for _, truth in pairs]
    masks = [r.mask for r in anonymizer.process((frame.copy() for frame, _ in pairs), fps)]
    scores = recall(masks, truths)
    return {"face": scores.get("face", float("nan")), "plate": scores.get("plate", float("nan")),
            "hidden": scores["hidden_share"], "elsewhere": hidden_elsewhere(masks, truths)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="street,crowd,turned,pan,holdout,plates")
    parser.add_argument("--sizes", default="1280x720,1920x1080")
    parser.add_argument("--presets", default="fast,balanced")
    parser.add_argument("--seconds", type=float, default=1)
    parser.add_argument("--fps", type=float, default=10)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    anonymizers = {(preset, part): Anonymizer(replace(AnonymizeConfig.from_preset(preset, **change),
                                                      allow_unmeasured=True))
                   for preset in args.presets.split(",") for part, change in PARTS.items()}
    print("| clip | preset | face / plate recall | hidden | hidden elsewhere | of it, by faces / by plates |")
    print("|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        width, height = map(int, size.split("x"))
        for scene in args.scenes.split(","):
            pairs = list(clip_frames(width, height, fps=args.fps, seconds=args.seconds, scene=scene))
            for preset in args.presets.split(","):
                got = {part: one(anonymizers[preset, part], pairs, args.fps) for part in PARTS}
                both, faces, plates = got["both"], got["faces"], got["plates"]
                print(f"| {scene} {size} | `{preset}` | {both['face']:.3f} / {both['plate']:.3f} "
                      f"| {both['hidden']:.3f} | {both['elsewhere']:.3f} "
                      f"| {faces['elsewhere']:.3f} / {plates['elsewhere']:.3f} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
