"""A labelled test clip: real face photos and synthetic licence plates moving over a scene.

The faces are real photographs that ship with scikit-image (the astronaut portrait and
faces from its LFW subset), pasted at several sizes and moving across the frame; the plates
are white with black characters in a 4.6:1 box, like the cascade's training plates. Every
frame comes with its ground-truth boxes, so recall can be measured:

* recall: the share of ground-truth face (plate) pixels that were hidden;
* hidden share: the share of all frame pixels that were hidden (the price of recall).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.extras import require

__all__ = ["FACE_SIZES", "CROWD_FACE_SIZES", "PLATE_WIDTHS", "Truth", "clip_frames", "write_clip", "recall"]


#: Face heights at 720p (scaled with the frame height for other sizes).
FACE_SIZES = (28, 40, 56, 80, 112, 160)
PLATE_WIDTHS = (90, 130, 180)
_ASTRONAUT_FACE = (165, 40, 285, 190)  # x1, y1, x2, y2 of the head in skimage's astronaut image


@dataclass
class Truth:
    """Ground-truth boxes of one frame: ``(kind, x1, y1, x2, y2)`` with kind ``face`` or ``plate``."""

    boxes: list[tuple[str, int, int, int, int]] = field(default_factory=list)


def _faces(lfw_indices: tuple[int, ...] = (0, 7, 21, 34, 55)) -> list[np.ndarray]:
    cv2 = require("cv2", "anonymize", "opencv-python")
    data = require("skimage.data", "anonymize", "scikit-image")
    x1, y1, x2, y2 = _ASTRONAUT_FACE
    faces = [cv2.cvtColor(data.astronaut()[y1:y2, x1:x2], cv2.COLOR_RGB2BGR)]
    lfw = data.lfw_subset()  # the first 100 of 200 are faces
    for i in lfw_indices:
        faces.append(cv2.cvtColor((lfw[i] * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR))
    return faces


def _plate(width: int, text: str) -> np.ndarray:
    cv2 = require("cv2", "anonymize", "opencv-python")
    height = max(8, round(width / 4.6))
    plate = np.full((height, width, 3), 245, np.uint8)
    cv2.rectangle(plate, (1, 1), (width - 2, height - 2), (20, 20, 20), max(1, width // 60))
    scale = height / 32
    cv2.putText(plate, text, (round(width * 0.06), round(height * 0.78)), cv2.FONT_HERSHEY_SIMPLEX, scale,
                (15, 15, 15), max(1, round(scale * 2)), cv2.LINE_AA)
    return plate


def _background(width: int, height: int, seed: int, image: str = "coffee") -> np.ndarray:
    cv2 = require("cv2", "anonymize", "opencv-python")
    data = require("skimage.data", "anonymize", "scikit-image")
    scene = cv2.cvtColor(getattr(data, image)(), cv2.COLOR_RGB2BGR)
    scene = cv2.resize(scene, (width, height), interpolation=cv2.INTER_LINEAR)
    noise = np.random.default_rng(seed).normal(0, 6, scene.shape)
    return np.clip(scene * 0.6 + 40 + noise, 0, 255).astype(np.uint8)


def clip_frames(width: int = 1280, height: int = 720, fps: float = 10, seconds: float = 3,
                seed: int = 0, scene: str = "street") -> Iterator[tuple[np.ndarray, Truth]]:
    """``(frame, truth)`` pairs: faces and plates moving left to right at known positions.

    ``scene="crowd"`` is another clip, never used to choose settings: other faces, other
    sizes, another background, and faces that move diagonally and bounce at other speeds.
    """
    if scene == "crowd":
        yield from _crowd_frames(width, height, fps, seconds, seed)
        return
    cv2 = require("cv2", "anonymize", "opencv-python")
    k = height / 720
    faces = _faces()
    background = _background(width, height, seed)
    items: list[tuple[str, np.ndarray, int]] = []
    for i, size in enumerate(FACE_SIZES):
        face = faces[i % len(faces)]
        h = max(12, round(size * k))
        w = max(10, round(h * face.shape[1] / face.shape[0]))
        items.append(("face", cv2.resize(face, (w, h), interpolation=cv2.INTER_CUBIC), round((60 + i * 100) * k)))
    for i, pw in enumerate(PLATE_WIDTHS):
        plate = _plate(max(24, round(pw * k)), ("A123BC77", "K456MM99", "E789TT50")[i])
        items.append(("plate", plate, round((80 + i * 170) * k) + height // 2))
    n = int(round(fps * seconds))
    for t in range(n):
        frame = background.copy()
        truth = Truth()
        for j, (kind, patch, y) in enumerate(items):
            ph, pw = patch.shape[:2]
            span = max(1, width - pw - 1)
            x = int((j * 137 * k + t * (4 + j) * k * 30 / fps) % span)
            y = min(y, height - ph - 1)
            frame[y:y + ph, x:x + pw] = patch
            truth.boxes.append((kind, x, y, x + pw, y + ph))
        yield frame, truth


#: Face heights at 720p in the crowd scene.
CROWD_FACE_SIZES = (34, 48, 66, 96, 136, 200, 60)


def _crowd_frames(width: int, height: int, fps: float, seconds: float,
                  seed: int) -> Iterator[tuple[np.ndarray, Truth]]:
    cv2 = require("cv2", "anonymize", "opencv-python")
    k = height / 720
    faces = _faces((3, 12, 40, 66, 80, 95))
    background = _background(width, height, seed, "rocket")
    rng = np.random.default_rng(seed + 17)
    movers = []
    for i, size in enumerate(CROWD_FACE_SIZES):
        face = faces[(i + 1) % len(faces)]
        h = max(12, round(size * k))
        w = max(10, round(h * face.shape[1] / face.shape[0]))
        patch = cv2.resize(face, (w, h), interpolation=cv2.INTER_CUBIC)
        start = rng.uniform(0, 1, 2)
        speed = rng.uniform(60, 260, 2) * k * rng.choice([-1, 1], 2)  # pixels per second, both axes
        movers.append(("face", patch, start, speed))
    plate = _plate(max(24, round(150 * k)), "M314OP21")
    movers.append(("plate", plate, rng.uniform(0, 1, 2), np.array([120.0, -40.0]) * k))
    n = int(round(fps * seconds))
    for t in range(n):
        frame = background.copy()
        truth = Truth()
        for kind, patch, start, speed in movers:
            ph, pw = patch.shape[:2]
            span = np.array([max(1, width - pw - 1), max(1, height - ph - 1)], float)
            pos = start * span + speed * t / fps
            pos = np.abs((pos + span) % (2 * span) - span)  # bounce off the edges
            x, y = int(pos[0]), int(pos[1])
            frame[y:y + ph, x:x + pw] = patch
            truth.boxes.append((kind, x, y, x + pw, y + ph))
        yield frame, truth


def write_clip(path: str | Path, **kwargs: Any) -> list[Truth]:
    """Encode the clip to ``path`` (H.264); returns the per-frame ground truth."""
    from streamcue.video import FrameWriter

    width, height, fps = kwargs.get("width", 1280), kwargs.get("height", 720), kwargs.get("fps", 10)
    writer = FrameWriter(path, width, height, fps)
    truths = []
    try:
        for frame, truth in clip_frames(**kwargs):
            writer.write(frame)
            truths.append(truth)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return truths


def recall(masks: list[np.ndarray], truths: list[Truth]) -> dict[str, Any]:
    """Pixel recall per kind (and per face size), and the mean share of the frame hidden."""
    hit: dict[str, int] = {}
    total: dict[str, int] = {}
    for mask, truth in zip(masks, truths):
        for kind, x1, y1, x2, y2 in truth.boxes:
            key = f"{kind}:{y2 - y1}px" if kind == "face" else f"{kind}:{x2 - x1}px"
            for name in (kind, key):
                hit[name] = hit.get(name, 0) + int(mask[y1:y2, x1:x2].sum())
                total[name] = total.get(name, 0) + (y2 - y1) * (x2 - x1)
    out = {name: hit[name] / total[name] for name in sorted(total)}
    out["hidden_share"] = float(np.mean([m.mean() for m in masks])) if masks else 0.0
    return out
