"""A contact sheet per anonymized video: frames sampled across it as published (blurred), each hidden region
outlined, in one JPEG beside the report (``NAME.contact.jpg``), so that a person can see a missed face or plate
before the video is published (issue 45's anonymization check; the review task that shows it is not built here).

Frames are kept as they go by: every ``stride``-th frame from the first (the stride the expected count of frames
gives, when known: a tile is drawn only for a frame that can stay), and when more than ``SHEET["most"]`` are kept
every other one is dropped and the stride doubles, so the sheet holds frames spread evenly over the whole video
(the last one too: it is always added at the end).

A sheet is drawn from the frames given to the encoder, so it is bound to the published bytes afterwards
(:func:`sheet_problem`, run before a person is shown it): each tile is drawn again from the published video's frame,
and the two may differ no more than the encoder and the JPEG make them (``MATCH``).
"""

from __future__ import annotations

import hashlib
import math
import os
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from streamcue.extras import require
from streamcue.video import probe, read_frames

__all__ = ["SHEET", "MATCH", "ContactSheet", "contact_sheet_path", "sheet_problem", "tile_differences"]

#: How a sheet looks (stated in the report's ``contact_sheet``): at most ``most`` tiles, ``columns`` a row, each
#: ``tile_width`` px wide, hidden regions outlined ``outline_px`` thick in ``outline_bgr``, JPEG ``quality``.
SHEET = {"most": 12, "columns": 4, "tile_width": 480, "outline_bgr": [0, 0, 255], "outline_px": 2, "quality": 85}


#: How near a sheet's tile must be to the published frame drawn again as a tile (:func:`sheet_problem`): in every
#: ``block_px`` square of the tile, the mean over its pixels compared (away from the red outlines: a pixel set aside is
#: unknown, not equal) of the largest of the three channels' absolute differences is at most ``most_difference`` (of
#: 255), for a video encoded at crf ``most_crf`` or less (above it the encoder moves the frames as far as other frames
#: are: 31 at crf 40). A square compared on less than ``least_compared`` of its pixels is blind (:func:`_shares`).
#: ``perf/bench_sheet_match.py`` measures it (docs/anonymize.md, "A contact sheet per video"): a sheet and its own
#: video differ by 19 at most, the unblurred input and its sheet by 62.9 or more on every tile of the upright clips.
#: Red outlines are thin, and what they set aside from the comparison (each red pixel and the 2 px around it) is a
#: band: a tile whose red, where the frame itself is not red, holds a disk of ``widest_red_px`` (a red box over an
#: unblurred face) or leaves squares blind over a disk of ``widest_blind_px`` (a fine red grid or mesh of lines over
#: it), disks inside the tile, is painted, not outlined; red lines farther apart leave squares compared between them.
#: On the labelled scenes' sheets (every scene, size, crf and orientation measured: docs/anonymize.md) the widest were
#: 21 and 39 px (outlines of plates a few px apart, their JPEG fringes joined): the limits leave 8 px to spare, so red
#: narrower than them still hides what it covers (the measured limit).
MATCH = {"block_px": 8, "most_difference": 30, "most_crf": 32, "widest_red_px": 29, "widest_blind_px": 47,
         "least_compared": 0.4}


def contact_sheet_path(out_path: str | Path) -> Path:
    """Where the sheet of the blurred video ``out_path`` goes: ``<stem>.contact.jpg`` beside it."""
    out_path = Path(out_path)
    return out_path.with_name(f"{out_path.stem}.contact.jpg")


class ContactSheet:
    """Frames sampled over a video as it is written (:meth:`add` each), then one image (:meth:`write`)."""

    def __init__(self, fps: float, expected: int | None = None) -> None:
        self.fps, self.last = fps, None
        self.stride = 1 << max(0, ((expected or 0) - 1) // SHEET["most"]).bit_length()  # what doubling would reach
        self.tiles: dict[int, np.ndarray] = {}

    def add(self, index: int, frame: np.ndarray, mask: np.ndarray) -> None:
        """Keep frame ``index`` (BGR, as published) with ``mask``'s regions outlined when the sampling wants it."""
        self.last = (index, frame, mask)
        if index % self.stride:
            return
        self.tiles[index] = _tile(frame, mask, f"{index / self.fps:.1f} s")
        if len(self.tiles) > SHEET["most"]:
            self.stride *= 2
            self.tiles = {i: tile for i, tile in self.tiles.items() if i % self.stride == 0}

    def write(self, path: str | Path) -> dict[str, Any]:
        """Write the sheet to ``path`` (atomically) and return what the report states of it: its name, the SHA-256
        of its bytes, how it looks and the frames it holds."""
        cv2 = require("cv2", "anonymize", "opencv-python")
        if self.last is not None and self.last[0] not in self.tiles:
            index, frame, mask = self.last
            self.tiles[index] = _tile(frame, mask, f"{index / self.fps:.1f} s")
        tiles = [self.tiles[i] for i in sorted(self.tiles)]
        columns = SHEET["columns"]
        blank = np.zeros_like(tiles[0])
        rows = [np.hstack(tiles[r:r + columns] + [blank] * (columns - len(tiles[r:r + columns])))
                for r in range(0, len(tiles), columns)]
        ok, data = cv2.imencode(".jpg", np.vstack(rows), [cv2.IMWRITE_JPEG_QUALITY, SHEET["quality"]])
        if not ok:
            raise RuntimeError("OpenCV could not encode the contact sheet")
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_bytes(data.tobytes())
            os.replace(tmp, path)
        except BaseException:  # a full disk or a Ctrl-C leaves no half-written sheet
            tmp.unlink(missing_ok=True)
            raise
        # the report states the sheet's bytes: a person's tick holds for this sheet only (annotate anonymization)
        return {"path": path.name, "sha256": hashlib.sha256(data.tobytes()).hexdigest(), **SHEET,
                "frames": sorted(self.tiles)}


def sheet_problem(sheet: Path, video: Path, stated: dict[str, Any], fps: float, crf: Any) -> str | None:
    """None when each tile of ``sheet`` (the report's ``contact_sheet``: ``stated``) shows the published ``video``'s
    frame it names within ``MATCH`` (:func:`tile_differences`) and the video was encoded at ``crf`` at most
    ``MATCH["most_crf"]``; else one line naming the tile, its frame and time (or the crf)."""
    if not isinstance(crf, int) or isinstance(crf, bool) or crf > MATCH["most_crf"]:
        return (f"encoded at crf {crf!r}: above crf {MATCH['most_crf']} the published frames differ from the contact "
                "sheet as much as other frames do, so the sheet cannot stand for them; anonymize it again (the "
                f"anonymizer encodes at crf {MATCH['most_crf']} at most)")
    try:
        for tile, index, worst in tile_differences(sheet, video, stated, fps):
            if worst > MATCH["most_difference"]:
                return (f"tile {tile} of the contact sheet ({index / fps:.1f} s) is not frame {index} of {video.name}: "
                        f"they differ by {worst:.0f} of 255 (at most {MATCH['most_difference']}); the sheet was drawn "
                        "from other frames than those published")
    except ValueError as exc:
        return str(exc)
    return None


def tile_differences(sheet: Path, video: Path, stated: dict[str, Any], fps: float) -> Iterator[tuple[int, int, float]]:
    """Per tile of ``sheet`` (``stated["frames"]`` names their frames; ``fps`` the labels' rate, the report's
    ``input.fps``): its number from 1, its frame and how far it is from that frame of ``video`` drawn again as a tile
    (:func:`_difference`). A ValueError in one line when the sheet is not laid out for that many frames of the
    video, names a frame the video does not hold, or a tile within ``MATCH`` of its frame is painted red
    (:func:`_painted`)."""
    for tile, index, shown, drawn in _tile_pairs(sheet, video, stated, fps):
        worst = _difference(shown, drawn)  # other frames first: their red is not where the sheet's is
        if worst <= MATCH["most_difference"] and _painted(shown, drawn):
            raise ValueError(f"tile {tile} of the contact sheet ({index / fps:.1f} s) is painted red where frame "
                             f"{index} of {video.name} is not red, wider than outlines are (a red area holding a "
                             f"{MATCH['widest_red_px']} px disk, or red dots or lines leaving too few pixels compared "
                             f"over one of {MATCH['widest_blind_px']} px): it hides what it covers from the "
                             "comparison")
        yield tile, index, worst


def _tile_pairs(sheet: Path, video: Path, stated: dict[str, Any],
                fps: float) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Per tile of ``sheet``: its number from 1, its frame, the tile as shown and that frame of ``video`` drawn again
    as a tile without outlines (:func:`tile_differences`, whose ValueErrors on the layout and frames it raises)."""
    frames, info = stated.get("frames"), probe(video)
    width, height = _tile_size(info.width, info.height)
    size = (SHEET["columns"] * width, math.ceil(len(frames) / SHEET["columns"]) * height) if isinstance(
        frames, list) and frames else None
    image = _sheet_image(sheet, size) if size else None
    if image is None:
        raise ValueError(f"the contact sheet is not laid out as drawn for {len(frames or ())} frames of {video.name}")
    for k, index in enumerate(frames):
        row, column = divmod(k, SHEET["columns"])
        frame = _frame_at(video, info, index) if _held(info, index) else None
        if frame is None:
            raise ValueError(f"tile {k + 1} of the contact sheet names frame {index!r}, which {video.name} does not "
                             "hold")
        shown = image[row * height:(row + 1) * height, column * width:(column + 1) * width]
        yield k + 1, index, shown, _tile(frame, None, f"{index / fps:.1f} s")


def _sheet_image(sheet: Path, size: tuple[int, int]) -> np.ndarray | None:
    """The sheet decoded (BGR) when its header states ``size`` (width, height); None for no image, or one of another
    size, which is never decoded (an image of 30000 px a side would take gigabytes)."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    Image = require("PIL.Image", "anonymize", "pillow")  # noqa: N806 (the module, by its usual name)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # its size is what is asked, not read
            with Image.open(sheet) as header:
                if header.size != size:
                    return None
    except (Image.UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError):
        return None
    image = cv2.imdecode(np.fromfile(sheet, np.uint8), cv2.IMREAD_COLOR)
    return image if image is not None and image.shape[1::-1] == size else None


def _held(info: Any, index: Any) -> bool:
    """Whether ``index`` may be a frame of the video ``info`` describes: a whole number from 0, not past its duration
    (a frame named 10**30 would reach ffmpeg as a seek it cannot parse, blamed on the video)."""
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return False
    return not info.duration_s or index <= (info.duration_s + 1) * info.fps


def _frame_at(video: Path, info: Any, index: int) -> np.ndarray | None:
    """Frame ``index`` of ``video`` (frames at a constant rate, as the anonymizer writes them), None past its end."""
    start = max(0.0, (index - 0.5) / info.fps)  # a seek lands on the first frame at or after it: frame index
    frames = read_frames(video, info, span=(start, start + 2 / info.fps))
    try:
        return next(frames, None)
    finally:
        frames.close()


def _difference(shown: np.ndarray, drawn: np.ndarray) -> float:
    """The largest mean, over ``MATCH["block_px"]`` squares, of the per-pixel largest channel difference between
    the tile as shown and as drawn again without outlines, over each square's pixels compared only: a pixel on or
    next to a red outline (on the sheet: :func:`_set_aside`) is unknown, not equal, and a square blind to the
    comparison (:func:`_shares`) is left to :func:`_painted`."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    compared = _set_aside(_red(shown).astype(np.uint8)) == 0
    difference = np.abs(shown.astype(np.int16) - drawn.astype(np.int16)).max(axis=2).astype(np.float32)
    shares = _shares(compared)
    sums = cv2.resize(difference * compared, shares.shape[::-1], interpolation=cv2.INTER_AREA)
    known = shares >= MATCH["least_compared"]
    return float((sums[known] / shares[known]).max()) if known.any() else 0.0


def _shares(compared: np.ndarray) -> np.ndarray:
    """The share of each ``MATCH["block_px"]`` square of a tile whose pixels are ``compared`` (bool). A square of
    which less than ``MATCH["least_compared"]`` is compared (26 of 64 px) is blind: too few pixels to average (beside
    an outline, past the 2 px set aside, its JPEG fringe moved a square compared on a quarter of its pixels 32 from
    its own video on a genuine sheet; at a half, outlines converging blinded a 45 px disk of a genuine `street`
    sheet; docs/anonymize.md)."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    h, w = compared.shape
    size = (max(1, w // MATCH["block_px"]), max(1, h // MATCH["block_px"]))
    return cv2.resize(compared.astype(np.float32), size, interpolation=cv2.INTER_AREA)


def _red(tile: np.ndarray) -> np.ndarray:
    """Where ``tile`` (BGR) is red as an outline is, its JPEG fringe too: red above the larger other channel by 60."""
    tile = tile.astype(np.int16)
    return (tile[..., 2] - np.maximum(tile[..., 0], tile[..., 1])) > 60


def _added_red(shown: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """Where the tile as shown is red and the frame drawn again (``drawn``) is neither red nor next to red (the
    scene's own red is its own): outlines, or paint. uint8, 1 there."""
    return (_red(shown) & ~(_set_aside(_red(drawn).astype(np.uint8)) > 0)).astype(np.uint8)


def _set_aside(red: np.ndarray) -> np.ndarray:
    """``red`` (uint8) and the 2 px around it: what the comparison sets aside for an outline, its JPEG fringe too."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    return cv2.dilate(red, np.ones((5, 5), np.uint8))


def _painted(shown: np.ndarray, drawn: np.ndarray) -> int:
    """How many pixels of the tile's paint areas (:func:`_paint_areas`) lie in a disk of their limit."""
    return sum(int(np.count_nonzero(_disks(area, MATCH[widest]))) for area, widest in _paint_areas(shown, drawn))


def _disks(area: np.ndarray, width: int) -> np.ndarray:
    """The pixels of ``area`` (uint8) that lie in a disk ``width`` px wide inside it and inside the tile (OpenCV's
    opening would count the outside as area: an outline along two edges of a tile held a wide disk at its corner)."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    return cv2.morphologyEx(area, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width, width)),
                            borderType=cv2.BORDER_CONSTANT, borderValue=0)


def _paint_areas(shown: np.ndarray, drawn: np.ndarray) -> tuple[tuple[np.ndarray, str], ...]:
    """The tile's added red (:func:`_added_red`), which must hold no disk of ``MATCH["widest_red_px"]``, and the
    squares it leaves blind to the comparison (:func:`_shares` of what it does not set aside), which must hold none
    of ``["widest_blind_px"]``: every square is compared on its own pixels or blind, so red lines of any spacing
    either blind a wide area or leave the pixels between them to carry the difference. uint8 masks, 1 there."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    added = _added_red(shown, drawn)
    blind = (_shares(_set_aside(added) == 0) < MATCH["least_compared"]).astype(np.uint8)
    return (added, "widest_red_px"), (cv2.resize(blind, added.shape[::-1], interpolation=cv2.INTER_NEAREST),
                                      "widest_blind_px")


def _tile(frame: np.ndarray, mask: np.ndarray | None, label: str) -> np.ndarray:
    """``frame`` scaled to ``SHEET["tile_width"]`` with ``mask``'s regions outlined (none without one) and ``label``
    written on it."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    size = _tile_size(frame.shape[1], frame.shape[0])
    tile = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
    if mask is not None:
        small = cv2.resize(mask.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST)
        contours, _ = cv2.findContours(small, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        cv2.drawContours(tile, contours, -1, tuple(SHEET["outline_bgr"]), SHEET["outline_px"])
    cv2.putText(tile, label, (6, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2, cv2.LINE_AA)
    return tile


def _tile_size(width: int, height: int) -> tuple[int, int]:
    """The size (width, height) of a tile of a ``width`` x ``height`` frame: ``SHEET["tile_width"]`` wide."""
    return SHEET["tile_width"], max(1, round(height * SHEET["tile_width"] / width))
