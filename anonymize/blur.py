"""Regions to hide and how they are hidden: padded boxes, ellipses for faces, a blur that
leaves nothing to recognise (pixelate to a few blocks, then smooth).

The cost of hiding one frame does not grow with the dilation window times the number of
faces: :class:`WindowMask` keeps the union of the window's regions as a per-pixel count
(a frame's regions are added once when they enter the window and subtracted once when they
leave), and :func:`hide` pixelates each connected region of that union once.
"""

from __future__ import annotations

import numpy as np

from streamcue.extras import require

__all__ = ["WindowMask", "hide", "pad_boxes", "region_mask", "stamps", "unturn_boxes"]

Stamp = tuple[int, int, int, int, np.ndarray]  # x1, y1, x2, y2 and the uint8 mask inside that box


def unturn_boxes(boxes: np.ndarray, k: int, width: int, height: int) -> np.ndarray:
    """Boxes (x1, y1, x2, y2) found on a frame of ``width`` x ``height`` turned by ``np.rot90(frame, k)``,
    in the unturned frame's pixels: a point (x, y) of the turned frame is (W - y, x) for k = 1,
    (W - x, H - y) for k = 2 and (y, H - x) for k = 3."""
    x1, y1, x2, y2 = boxes.T
    if k == 1:
        corners = (width - y2, x1, width - y1, x2)
    elif k == 2:
        corners = (width - x2, height - y2, width - x1, height - y1)
    else:
        corners = (y1, height - x2, y2, height - x1)
    return np.stack(corners, axis=1).reshape(-1, 4)


def pad_boxes(boxes: np.ndarray, pad: float, width: int, height: int, *,
              scores: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Grow each box by ``pad`` of its size on every side, clipped to the frame; integer (N, 4),
    the boxes left empty by the clipping dropped (with ``scores``: and the fifth column of the
    boxes kept, as a second array)."""
    if len(boxes) == 0:
        empty = np.zeros((0, 4), np.int32)
        return (empty, np.zeros(0, np.float32)) if scores else empty
    b = np.asarray(boxes[:, :4], np.float32)
    dw, dh = (b[:, 2] - b[:, 0]) * pad, (b[:, 3] - b[:, 1]) * pad
    grown = np.stack([b[:, 0] - dw, b[:, 1] - dh, b[:, 2] + dw, b[:, 3] + dh], axis=1)
    grown = np.round(grown).astype(np.int32)
    grown[:, [0, 2]] = grown[:, [0, 2]].clip(0, width)
    grown[:, [1, 3]] = grown[:, [1, 3]].clip(0, height)
    keep = (grown[:, 2] > grown[:, 0]) & (grown[:, 3] > grown[:, 1])
    return (grown[keep], np.asarray(boxes[keep, 4], np.float32)) if scores else grown[keep]


def stamps(faces: np.ndarray, plates: np.ndarray) -> list[Stamp]:
    """Each region as its box and the uint8 mask inside it: the inscribed ellipse for a face,
    the whole box for a plate."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    out: list[Stamp] = []
    for x1, y1, x2, y2 in faces:
        w, h = int(x2 - x1), int(y2 - y1)
        sub = np.zeros((h, w), np.uint8)
        cv2.ellipse(sub, (w // 2, h // 2), (max(1, w // 2), max(1, h // 2)), 0, 0, 360, 1, thickness=-1)
        out.append((int(x1), int(y1), int(x2), int(y2), sub))
    for x1, y1, x2, y2 in plates:
        out.append((int(x1), int(y1), int(x2), int(y2), np.ones((int(y2 - y1), int(x2 - x1)), np.uint8)))
    return out


def region_mask(shape: tuple[int, int], faces: np.ndarray, plates: np.ndarray) -> np.ndarray:
    """Boolean mask of what to hide: an ellipse inscribed in each face box, each plate box whole."""
    mask = np.zeros(shape, np.uint8)
    for x1, y1, x2, y2, sub in stamps(faces, plates):
        np.maximum(mask[y1:y2, x1:x2], sub, out=mask[y1:y2, x1:x2])
    return mask.astype(bool)


class WindowMask:
    """The union of the regions of every frame inside a sliding window, as a per-pixel count."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.count = np.zeros(shape, np.uint16)

    def add(self, regions: list[Stamp]) -> None:
        for x1, y1, x2, y2, sub in regions:
            self.count[y1:y2, x1:x2] += sub

    def remove(self, regions: list[Stamp]) -> None:
        for x1, y1, x2, y2, sub in regions:
            self.count[y1:y2, x1:x2] -= sub

    def mask(self, extra: list[Stamp] = ()) -> np.ndarray:
        """The union now (a new array), with ``extra`` regions for this frame only."""
        mask = self.count > 0
        for x1, y1, x2, y2, sub in extra:
            mask[y1:y2, x1:x2] |= sub.astype(bool)
        return mask


def hide(frame: np.ndarray, mask: np.ndarray, blocks: int = 5, *, inplace: bool = False) -> np.ndarray:
    """``frame`` with the masked pixels hidden (the same array when nothing is masked; with
    ``inplace``, always the same array, changed).

    Each connected region of the mask is pixelated once to about ``blocks`` blocks across its
    short side, the blocks are smoothed and scaled back: a face or a plate's characters
    become a few colour patches. Regions of several frames that overlap (a moving face over
    the dilation window) merge into one region, so their blocks are larger, never smaller.
    Regions are found on a copy of the mask 4 times smaller each way (regions closer than 4 px
    count as one; 16 times fewer pixels to label).
    """
    cv2 = require("cv2", "anonymize", "opencv-python")
    if not mask.any():
        return frame
    h, w = mask.shape
    small_mask = cv2.resize(mask.view(np.uint8) * np.uint8(255), (max(1, -(-w // 4)), max(1, -(-h // 4))),
                            interpolation=cv2.INTER_AREA)  # any masked pixel in a 4x4 cell marks it
    n, labels, stats, _ = cv2.connectedComponentsWithStats((small_mask > 0).view(np.uint8), connectivity=8)
    out = frame if inplace else frame.copy()
    for k in range(1, n):
        sx, sy, sw, sh = (int(v) for v in stats[k, :4])
        x, y = sx * 4, sy * 4
        mine = np.repeat(np.repeat(labels[sy:sy + sh, sx:sx + sw] == k, 4, axis=0), 4, axis=1)
        region = mask[y:y + sh * 4, x:x + sw * 4]
        bh, bw = region.shape  # clipped to the frame
        region = region & mine[:bh, :bw]  # this region's pixels only: each pixel is hidden once
        cell = max(1.0, min(bw, bh) / blocks)
        nx, ny = max(1, round(bw / cell)), max(1, round(bh / cell))
        small = cv2.resize(out[y:y + bh, x:x + bw], (nx, ny), interpolation=cv2.INTER_AREA)
        small = cv2.GaussianBlur(small, (3, 3), 0)
        hidden = cv2.resize(small, (bw, bh), interpolation=cv2.INTER_LINEAR)
        _masked_copy(out[y:y + bh, x:x + bw], hidden, region)
    return out


def _masked_copy(dst: np.ndarray, src: np.ndarray, where: np.ndarray) -> None:
    """``np.copyto(dst, src, where=where[..., None])``, through OpenCV's masked copy where ``dst``'s rows are
    contiguous (a region of a frame), NumPy's broadcast one for other layouts (a turned view), which OpenCV
    refuses. The same pixels either way; OpenCV's takes a fraction of the time (docs/anonymize.md)."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    if dst.strides[1:] == (dst.shape[2] * dst.itemsize, dst.itemsize):
        done = cv2.copyTo(src, where.view(np.uint8), dst)
        if np.shares_memory(done, dst):
            return
    np.copyto(dst, src, where=where[..., None])
