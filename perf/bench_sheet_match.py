"""How far a contact sheet stands from the video it was drawn from, and from the unblurred input, tile by tile
(``anonymize/contact_sheet.py``: ``tile_differences``, the measure ``sheet_problem`` holds to ``MATCH``).

    python perf/bench_sheet_match.py [--scenes street,crowd,turned,pan,holdout] [--sizes 1280x720,1920x1080,720x1280]
                                     [--crfs 18,32] [--seconds 2] [--fps 10] [--orientations upright,...]

Each labelled clip (``synthetic.write_clip``, upright unless ``--orientations`` names others of
``synthetic.ORIENTATIONS``, with ``_`` for a space) is anonymized at each crf with the default preset; its sheet
is then compared with the published video (the largest difference over its tiles: what ``sheet_problem`` must let
through) and with the input the clip was made as (the smallest and largest over the tiles: what it must refuse). Nothing
here is timed. Each sheet's red where its own video's frame is not red (outlines: ``_added_red``) is also measured: the
widest disk its red holds and the widest the squares it leaves blind to the comparison hold (``_paint_areas``), over
the tiles (what ``MATCH["widest_red_px"]`` and ``["widest_blind_px"]`` must stay above).
The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

import numpy as np  # noqa: E402

from streamcue.anonymize.contact_sheet import MATCH, _difference, _disks, _paint_areas, _tile_pairs  # noqa: E402
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.synthetic import ORIENTATIONS, write_clip  # noqa: E402


def differences(report: dict, folder: Path, video: Path) -> list[float]:
    """Each tile's difference from ``video``'s frame (``_difference``: what ``tile_differences`` yields, its paint
    check aside, measured apart), the sheet being the one beside ``report`` in ``folder``."""
    sheet = folder / report["contact_sheet"]["path"]
    return [_difference(shown, drawn) for _, _, shown, drawn in _tile_pairs(sheet, video, report["contact_sheet"],
                                                                            report["input"]["fps"])]


def widest_red(report: dict, folder: Path, video: Path) -> tuple[int, int]:
    """The widest disk (odd px, 0 for none) held by a tile's added red and by the squares it leaves blind to the
    comparison (``_paint_areas``), over the tiles of the sheet beside ``report`` compared with ``video``."""
    sheet, widest = folder / report["contact_sheet"]["path"], [0, 0]
    for _, _, shown, drawn in _tile_pairs(sheet, video, report["contact_sheet"], report["input"]["fps"]):
        for i, (area, _) in enumerate(_paint_areas(shown, drawn)):
            widest[i] = max(widest[i], _widest_disk(area))
    return widest[0], widest[1]


def _widest_disk(area: np.ndarray) -> int:
    """The widest odd disk inside ``area`` and the tile (``_disks``; 0 when ``area`` is empty)."""
    width = 1 if area.any() else 0
    while width and width < 99 and _disks(area, width + 2).any():
        width += 2
    return width


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="street,crowd,turned,pan,holdout",
                        help="labelled scenes (synthetic.write_clip), comma-separated")
    parser.add_argument("--sizes", default="1280x720,1920x1080,720x1280", help="frame sizes WxH, comma-separated")
    parser.add_argument("--crfs", default=f"18,{MATCH['most_crf']}",
                        help=f"encoder crfs, comma-separated (the anonymizer takes 0 to {MATCH['most_crf']})")
    parser.add_argument("--seconds", type=float, default=2, help="clip length")
    parser.add_argument("--fps", type=float, default=10, help="clip frame rate")
    parser.add_argument("--orientations", default="upright",
                        help="synthetic.ORIENTATIONS names, comma-separated (phone_portrait, rotation_90, ...)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; limit {MATCH['most_difference']} of 255", flush=True)
    print(f"widest disks allowed: red {MATCH['widest_red_px'] - 2}, blind {MATCH['widest_blind_px'] - 2}")
    print("| clip | crf | its own video: largest | the input: smallest / largest | widest disk: red / blind |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size, scene, turn in itertools.product(args.sizes.split(","), args.scenes.split(","),
                                                   args.orientations.split(",")):
            width, height = map(int, size.split("x"))
            clip = Path(tmp) / f"{scene}-{size}-{turn}.mp4"
            write_clip(clip, width=width, height=height, fps=args.fps, seconds=args.seconds, scene=scene,
                       **ORIENTATIONS[turn.replace("_", " ")])
            for crf in map(int, args.crfs.split(",")):
                out = Path(tmp) / f"crf{crf}"
                report = anonymize_video(clip, out, anonymizer=Anonymizer(AnonymizeConfig(crf=crf)))
                own = differences(report, out, out / report["output"]["path"])
                raw = differences(report, out, clip)
                red, aside = widest_red(report, out, out / report["output"]["path"])
                name = f"{scene} {size}" + ("" if turn == "upright" else f" {turn.replace('_', ' ')}")
                if not any(report["detections"][kind]["total"] for kind in ("face", "plate")):
                    name += " (nothing hidden: the input is the output there)"  # its input column then says nothing
                print(f"| {name} | {crf} | {max(own):.1f} | {min(raw):.1f} / {max(raw):.1f} | {red} / {aside} |",
                      flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
