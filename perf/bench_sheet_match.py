"""How far a contact sheet stands from the video it was drawn from, and from the unblurred input, tile by tile
(``anonymize/contact_sheet.py``: ``tile_differences``, the measure ``sheet_problem`` holds to ``MATCH``).

    python perf/bench_sheet_match.py [--scenes street,crowd,turned,pan,holdout] [--sizes 1280x720,1920x1080,720x1280]
                                     [--crfs 18,32] [--seconds 2] [--fps 10]

Each labelled clip (``synthetic.write_clip``, upright) is anonymized at each crf with the default preset; its sheet
is then compared with the published video (the largest difference over its tiles: what ``sheet_problem`` must let
through) and with the input the clip was made as (the smallest and largest over the tiles: what it must refuse). Nothing
here is timed. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.anonymize.contact_sheet import MATCH, tile_differences  # noqa: E402
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.synthetic import write_clip  # noqa: E402


def differences(report: dict, folder: Path, video: Path) -> list[float]:
    """Each tile's difference from ``video``'s frame, the sheet being the one beside ``report`` in ``folder``."""
    sheet = folder / report["contact_sheet"]["path"]
    return [worst for _, _, worst in tile_differences(sheet, video, report["contact_sheet"], report["input"]["fps"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="street,crowd,turned,pan,holdout")
    parser.add_argument("--sizes", default="1280x720,1920x1080,720x1280")
    parser.add_argument("--crfs", default=f"18,{MATCH['most_crf']}")
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--fps", type=float, default=10)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; limit {MATCH['most_difference']} of 255", flush=True)
    print("| clip | crf | its own video: largest | the input: smallest / largest |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            width, height = map(int, size.split("x"))
            for scene in args.scenes.split(","):
                clip = Path(tmp) / f"{scene}-{size}.mp4"
                write_clip(clip, width=width, height=height, fps=args.fps, seconds=args.seconds, scene=scene)
                for crf in map(int, args.crfs.split(",")):
                    out = Path(tmp) / f"crf{crf}"
                    report = anonymize_video(clip, out, anonymizer=Anonymizer(AnonymizeConfig(crf=crf)))
                    own = differences(report, out, out / report["output"]["path"])
                    raw = differences(report, out, clip)
                    print(f"| {scene} {size} | {crf} | {max(own):.1f} | {min(raw):.1f} / {max(raw):.1f} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
