"""The canary: before a run writes anything, its face detector, with the run's settings, must find
a known real face.

The face is the head in scikit-image's ``astronaut`` photograph (a real photo shipped inside the
scikit-image wheel, which the synthetic test clips use too), pasted at 120x150 px on a 1280x720
grey frame. Each look the schedule makes is tried on it: at the detection size (``max_side``) on
the 1280x720 frame and, when the detector also looks at full size, at full size on a 640x360 crop
of that frame around the head (the full-size look never scales, so the crop runs the same path
with the head's pixels unchanged, at about a quarter of the cost). The canary passes when every
look finds a box that, padded as the run pads, covers the middle of the face (its inner 3/5 each
way, the part the recall figures score). A threshold no face can reach, a model that finds
nothing, a size too small to see a face: the run stops before its first output.

The result is cached in the process per model (its SHA-256), runtime and settings (one CenterFace
call per look, about 0.1 s each; see docs/anonymize.md for the measured start-up cost): every
Anonymizer a process builds with them (each ``--workers`` process, each Ray worker process, a
test module) pays it once.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from streamcue.anonymize.blur import pad_boxes
from streamcue.errors import ConfigError
from streamcue.extras import require

__all__ = ["CANARY_IMAGE", "canary_frame", "run_canary"]

CANARY_IMAGE = ("scikit-image data.astronaut() (head 120x150 px on a 1280x720 grey frame; full size: a 640x360 "
                "crop of it)")
_HEAD = (165, 40, 285, 190)   # x1, y1, x2, y2 of the head in the astronaut photo
_AT = (384, 104)              # where the 512x512 photo is pasted on the frame
_SIZE = (1280, 720)
_CROP = (640, 360)            # the full-size look's frame: this much of the frame, centred on the head
_CACHE: dict[tuple[Any, ...], dict[str, Any]] = {}


def canary_frame() -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The 1280x720 BGR frame and the head's box on it."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    data = require("skimage.data", "anonymize", "scikit-image")
    # its PNG read by OpenCV: the pixels of data.astronaut() without importing skimage.io (~0.35 s)
    photo = cv2.imread(os.path.join(data.data_dir, "astronaut.png"), cv2.IMREAD_COLOR)
    if photo is None or photo.shape != (512, 512, 3):  # not in that folder (or unreadable): scikit-image's loader
        photo = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)
    frame = np.full((_SIZE[1], _SIZE[0], 3), 128, np.uint8)
    x, y = _AT
    frame[y:y + photo.shape[0], x:x + photo.shape[1]] = photo
    x1, y1, x2, y2 = _HEAD
    return frame, (x + x1, y + y1, x + x2, y + y2)


def _crop(frame: np.ndarray, head: tuple[int, int, int, int]) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The :data:`_CROP` part of ``frame`` centred on the head (inside the frame), and the head's box on it."""
    (w, h), (fw, fh) = _CROP, _SIZE
    x = min(max(0, (head[0] + head[2] - w) // 2), fw - w)
    y = min(max(0, (head[1] + head[3] - h) // 2), fh - h)
    return np.ascontiguousarray(frame[y:y + h, x:x + w]), (head[0] - x, head[1] - y, head[2] - x, head[3] - y)


def _covers(boxes: np.ndarray, head: tuple[int, int, int, int]) -> bool:
    """A box covers the head's middle (its inner 3/5 each way)."""
    x1, y1, x2, y2 = head
    mx, my = (x2 - x1) / 5, (y2 - y1) / 5
    inner = (x1 + mx, y1 + my, x2 - mx, y2 - my)
    return any(b[0] <= inner[0] and b[1] <= inner[1] and b[2] >= inner[2] and b[3] >= inner[3] for b in boxes)


def run_canary(face: Any, key: tuple[Any, ...], pad: float, two_sizes: bool) -> dict[str, Any] | None:
    """The canary's result for ``face`` (None: no face detector); raises ConfigError when it fails.

    ``key`` names the settings the result is cached under (detector, model hash, runtime, threshold, sizes).
    """
    if face is None:
        return None
    cache_key = (*key, pad, two_sizes)
    if cache_key in _CACHE:
        return _CACHE[cache_key]
    frame, head = canary_frame()
    looks = {"detection size": (face.detect, frame, head)}
    if two_sizes:  # at full size nothing is scaled: a crop around the head is the same look, for less
        looks["full size"] = (lambda f: face.detect_at(f, None), *_crop(frame, head))
    missed = []
    for name, (look, image, box) in looks.items():
        try:
            found = look(image)
        except Exception as exc:  # a model that loads but does not run as this detector (another ONNX graph)
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise ConfigError(f"canary failed: the face detector {face.name} ({face.version}) fails on a frame: "
                              f"{reason}; nothing was written") from None
        found = found[found[:, 4] >= getattr(face, "threshold", 0.0)] if len(found) else found  # strong boxes only
        h, w = image.shape[:2]
        if not _covers(pad_boxes(found, pad, w, h), box):
            missed.append(name)
    if missed:
        settings = ", ".join(f"{k} {v}" for k, v in face.settings.items() if k in ("threshold", "max_side"))
        raise ConfigError(f"canary failed: the face detector {face.name} ({settings}) finds no face in a known "
                          f"face photo ({CANARY_IMAGE}) at {' and '.join(missed)}; these settings would leave "
                          "faces visible, nothing was written")
    result = {"passed": True, "image": CANARY_IMAGE, "looks": list(looks)}
    _CACHE[cache_key] = result
    return result
