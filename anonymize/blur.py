"""Regions to hide and how they are hidden: padded boxes, ellipses for faces, a blur that
leaves nothing to recognise (pixelate to a few blocks, then smooth)."""

from __future__ import annotations

import numpy as np

from streamcue.extras import require


__all__ = ["pad_boxes", "region_mask", "obscure"]


def pad_boxes(boxes: np.ndarray, pad: float, width: int, height: int) -> np.ndarray:
    """Grow each box by ``pad`` of its size on every side, clipped to the frame; integer (N, 4)."""
    if len(boxes) == 0:
        return np.zeros((0, 4), np.int32)
    b = np.asarray(boxes[:, :4], np.float32)
    dw, dh = (b[:, 2] - b[:, 0]) * pad, (b[:, 3] - b[:, 1]) * pad
    grown = np.stack([b[:, 0] - dw, b[:, 1] - dh, b[:, 2] + dw, b[:, 3] + dh], axis=1)
    grown = np.round(grown).astype(np.int32)
    grown[:, [0, 2]] = grown[:, [0, 2]].clip(0, width)
    grown[:, [1, 3]] = grown[:, [1, 3]].clip(0, height)
    return grown[(grown[:, 2] > grown[:, 0]) & (grown[:, 3] > grown[:, 1])]


def region_mask(shape: tuple[int, int], faces: np.ndarray, plates: np.ndarray) -> np.ndarray:
    """Boolean mask of what to hide: an ellipse inscribed in each face box, each plate box whole."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    mask = np.zeros(shape, np.uint8)
    for x1, y1, x2, y2 in faces:
        center = ((x1 + x2) // 2, (y1 + y2) // 2)
        axes = (max(1, (x2 - x1) // 2), max(1, (y2 - y1) // 2))
        cv2.ellipse(mask, center, axes, 0, 0, 360, 1, thickness=-1)
    for x1, y1, x2, y2 in plates:
        mask[y1:y2, x1:x2] = 1
    return mask.astype(bool)


def obscure(frame: np.ndarray, boxes: np.ndarray, mask: np.ndarray, blocks: int = 5) -> np.ndarray:
    """A copy of ``frame`` where the masked pixels of each box are pixelated to about ``blocks``
    blocks across and smoothed: faces and characters become a few colour patches."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    out = frame.copy()
    for x1, y1, x2, y2 in boxes:
        roi = frame[y1:y2, x1:x2]
        h, w = roi.shape[:2]
        small = cv2.resize(roi, (max(1, min(w, blocks)), max(1, min(h, blocks))), interpolation=cv2.INTER_AREA)
        hidden = cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
        k = max(3, (min(w, h) // 3) | 1)
        hidden = cv2.GaussianBlur(hidden, (k, k), 0)
        region = mask[y1:y2, x1:x2]
        out[y1:y2, x1:x2][region] = hidden[region]
    return out
