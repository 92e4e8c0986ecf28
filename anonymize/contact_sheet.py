"""A contact sheet per anonymized video: frames sampled across it as published (blurred), each hidden region
outlined, in one JPEG beside the report (``NAME.contact.jpg``), so that a person can see a missed face or plate
before the video is published (issue 45's anonymization check; the review task that shows it is not built here).

Frames are kept as they go by: every ``stride``-th frame from the first (the stride the expected count of frames
gives, when known: a tile is drawn only for a frame that can stay), and when more than ``SHEET["most"]`` are kept
every other one is dropped and the stride doubles, so the sheet holds frames spread evenly over the whole video
(the last one too: it is always added at the end).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.extras import require

__all__ = ["SHEET", "ContactSheet", "contact_sheet_path"]

#: How a sheet looks (stated in the report's ``contact_sheet``): at most ``most`` tiles, ``columns`` a row, each
#: ``tile_width`` px wide, hidden regions outlined ``outline_px`` thick in ``outline_bgr``, JPEG ``quality``.
SHEET = {"most": 12, "columns": 4, "tile_width": 480, "outline_bgr": [0, 0, 255], "outline_px": 2, "quality": 85}


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


def _tile(frame: np.ndarray, mask: np.ndarray, label: str) -> np.ndarray:
    """``frame`` scaled to ``SHEET["tile_width"]`` with ``mask``'s regions outlined and ``label`` written on it."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    h, w = frame.shape[:2]
    size = (SHEET["tile_width"], max(1, round(h * SHEET["tile_width"] / w)))
    tile = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
    small = cv2.resize(mask.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST)
    contours, _ = cv2.findContours(small, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    cv2.drawContours(tile, contours, -1, tuple(SHEET["outline_bgr"]), SHEET["outline_px"])
    cv2.putText(tile, label, (6, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2, cv2.LINE_AA)
    return tile
