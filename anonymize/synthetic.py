"""A labelled test clip: real face photos and synthetic licence plates moving over a scene.

The faces are real photographs that ship with scikit-image (the astronaut portrait and
faces from its LFW subset), pasted at several sizes and moving across the frame; the plates
are white with black characters in a 4.6:1 box, like the cascade's training plates. Every
frame comes with its ground-truth boxes, so recall can be measured:

* recall: the share of ground-truth face (plate) pixels that were hidden;
* hidden share: the share of all frame pixels that were hidden (the price of recall), and the share hidden away from
  every face and plate (:func:`hidden_elsewhere`: what was hidden that need not be);
* detail recall: read from the published video, the share of ground-truth area whose inner part lost
  its detail (what the benchmark and the docs' recall figures measure, for any tool's output).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.extras import require

__all__ = ["FACE_SIZES", "CROWD_FACE_SIZES", "PLATE_WIDTHS", "PLATE_SHARES", "SCENES", "TUNING_SCENES",
           "HELD_OUT_SCENES", "ORIENTATIONS", "Truth", "clip_frames", "write_clip", "large_faces", "recall",
           "hidden_elsewhere", "detail_recall"]


#: Face heights at 720p (scaled with the frame height for other sizes).
FACE_SIZES = (28, 40, 56, 80, 112, 160)
PLATE_WIDTHS = (90, 130, 180)
#: Plate widths of the ``plates`` scene, as shares of the frame width (the measured range: 2 % to 25 %).
PLATE_SHARES = (0.02, 0.04, 0.08, 0.14, 0.2, 0.25)
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


def _dark_plate(width: int, text: str) -> np.ndarray:
    """A dark plate with light characters (the negative of :func:`_plate`'s)."""
    return 255 - _plate(width, text)


def _angled(cv2: Any, patch: np.ndarray, degrees: float, fill: int) -> np.ndarray:
    """``patch`` turned by ``degrees`` in a box that holds it, its corners filled with grey ``fill``."""
    h, w = patch.shape[:2]
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    cos, sin = abs(turn[0, 0]), abs(turn[0, 1])
    bw, bh = int(np.ceil(w * cos + h * sin)), int(np.ceil(w * sin + h * cos))
    turn[:, 2] += ((bw - w) / 2, (bh - h) / 2)
    return cv2.warpAffine(patch, turn, (bw, bh), flags=cv2.INTER_LINEAR, borderValue=(fill, fill, fill))


def _plates_frames(width: int, height: int, fps: float, seconds: float,
                   seed: int) -> Iterator[tuple[np.ndarray, Truth]]:
    """A dark scene with only plates: each share of :data:`PLATE_SHARES` of the frame width twice, once light
    with dark characters and once dark with light ones, one of the two frontal and the other turned 12 degrees;
    each on its own row, moving sideways."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    background = (_background(width, height, seed, "coffee") * 0.35).astype(np.uint8)
    rng = np.random.default_rng(seed + 53)
    patches = []
    for i, share in enumerate(PLATE_SHARES):
        text = "%s%03d%s" % ("ABEKMH"[i], 100 + 37 * i, "XT")
        for dark, angle in ((False, 12 * (i % 2)), (True, 12 * (1 - i % 2))):
            patch = (_dark_plate if dark else _plate)(max(24, round(share * width)), text)
            patches.append(_angled(cv2, patch, angle, 25) if angle else patch)
    gap = max(0, height - sum(p.shape[0] for p in patches)) / (len(patches) + 1)
    movers, y = [], gap
    for patch in patches:
        start = np.array([rng.uniform(0, 0.7) * width, y])
        movers.append(("plate", patch, start, np.array([rng.choice([-1, 1]) * rng.uniform(60, 160) * width / 1280, 0])))
        y += patch.shape[0] + gap
    yield from _moving(width, height, fps, seconds, background, movers)


def _lone_plate_frames(width: int, height: int, fps: float, seconds: float,
                       seed: int) -> Iterator[tuple[np.ndarray, Truth]]:
    """One light plate with dark characters, about a fifth of the frame width (390x85 px at 1920x1080), moving
    over a dark scene: the case a 1080p report once called ``passed`` with the plate readable."""
    background = (_background(width, height, seed, "coffee") * 0.35).astype(np.uint8)
    plate = _plate(round(width * 390 / 1920), "A123BC77")
    yield from _moving(width, height, fps, seconds, background,
                       [("plate", plate, np.array([0.1 * width, 0.55 * height]), np.array([0.1 * width, 0.0]))])


def _background(width: int, height: int, seed: int, image: str = "coffee") -> np.ndarray:
    cv2 = require("cv2", "anonymize", "opencv-python")
    data = require("skimage.data", "anonymize", "scikit-image")
    scene = getattr(data, image)()
    scene = cv2.cvtColor(scene, cv2.COLOR_GRAY2BGR if scene.ndim == 2 else cv2.COLOR_RGB2BGR)
    scene = cv2.resize(scene, (width, height), interpolation=cv2.INTER_LINEAR)
    noise = np.random.default_rng(seed).normal(0, 6, scene.shape)
    return np.clip(scene * 0.6 + 40 + noise, 0, 255).astype(np.uint8)


def clip_frames(width: int = 1280, height: int = 720, fps: float = 10, seconds: float = 3,
                seed: int = 0, scene: str = "street", turn: int = 0) -> Iterator[tuple[np.ndarray, Truth]]:
    """``(frame, truth)`` pairs: faces and plates moving left to right at known positions.

    Other scenes (``SCENES``): ``crowd`` (other faces, sizes and background; faces move
    diagonally and bounce), ``turned`` (faces turned away from the camera and partly hidden),
    ``pan`` (a fast, shaking camera pan with motion blur; plates near and far) and ``holdout``
    (people and a car coming closer under a slow pan; never used to choose settings).
    Positions are functions of time in seconds, so a scene is the same at any frame rate.
    ``turn``: the frames turned by that many quarter turns (``np.rot90``'s k: 1 is 90 degrees
    counter-clockwise; a ``width`` x ``height`` scene turned by 1 or 3 is ``height`` x ``width``),
    their boxes with them.
    """
    for frame, truth in _scene_frames(width, height, fps, seconds, seed, scene):
        yield (frame, truth) if turn % 4 == 0 else _turn_frame(frame, truth, turn)


def _turn_frame(frame: np.ndarray, truth: Truth, turn: int) -> tuple[np.ndarray, Truth]:
    """``frame`` turned by ``np.rot90(frame, turn)``, and its boxes with it."""
    from streamcue.anonymize.blur import unturn_boxes

    turned = np.ascontiguousarray(np.rot90(frame, turn))
    boxes = np.asarray([b[1:] for b in truth.boxes], np.float64).reshape(-1, 4)
    h, w = turned.shape[:2]
    moved = unturn_boxes(boxes, (4 - turn) % 4, w, h).round().astype(int)  # turning back by 4 - k maps forward
    return turned, Truth([(b[0], *map(int, m)) for b, m in zip(truth.boxes, moved)])


def _scene_frames(width: int, height: int, fps: float, seconds: float,
                  seed: int, scene: str) -> Iterator[tuple[np.ndarray, Truth]]:
    """The scene's own frames, upright."""
    if scene != "street":
        if scene not in SCENES:
            raise ValueError(f"unknown scene {scene!r}; known: {', '.join(SCENES)}")
        yield from SCENES[scene](width, height, fps, seconds, seed)
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


def _turn(face: np.ndarray, yaw: float, side: int) -> np.ndarray:
    """A crude turned head: the face squeezed to cos(yaw) of its width, the far side shorter
    (a perspective warp, not a real profile); ``side`` -1 or 1 picks which way it turns."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    h, w = face.shape[:2]
    nw = max(8, round(w * np.cos(yaw)))
    shrink = h * 0.12 * np.sin(yaw)
    near, far = [[0, 0], [0, h - 1]], [[nw - 1, shrink], [nw - 1, h - 1 - shrink]]
    if side < 0:
        near, far = [[nw - 1, 0], [nw - 1, h - 1]], [[0, shrink], [0, h - 1 - shrink]]
        src = np.float32([[w - 1, 0], [w - 1, h - 1], [0, 0], [0, h - 1]])
    else:
        src = np.float32([[0, 0], [0, h - 1], [w - 1, 0], [w - 1, h - 1]])
    matrix = cv2.getPerspectiveTransform(src, np.float32(near + far))
    return cv2.warpPerspective(face, matrix, (nw, h), borderMode=cv2.BORDER_REPLICATE)


def _occlude(face: np.ndarray, share: float, where: str, colour: tuple[int, int, int]) -> np.ndarray:
    """The face with ``share`` of it covered (a hand, a cup, a scarf): ``where`` is bottom, left or right."""
    out = face.copy()
    h, w = out.shape[:2]
    if where == "bottom":
        out[h - round(h * share):] = colour
    elif where == "left":
        out[:, :round(w * share)] = colour
    else:
        out[:, w - round(w * share):] = colour
    return out


def _paste(frame: np.ndarray, patch: np.ndarray, x: int, y: int) -> tuple[int, int, int, int] | None:
    """Paste ``patch`` with its top-left at (x, y), clipped to the frame; the visible box or None."""
    h, w = frame.shape[:2]
    ph, pw = patch.shape[:2]
    x1, y1, x2, y2 = max(0, x), max(0, y), min(w, x + pw), min(h, y + ph)
    if x2 - x1 < 4 or y2 - y1 < 4:
        return None
    frame[y1:y2, x1:x2] = patch[y1 - y:y2 - y, x1 - x:x2 - x]
    return x1, y1, x2, y2


def _sized(cv2: Any, patch: np.ndarray, height: int) -> np.ndarray:
    height = max(8, round(height))
    width = max(6, round(height * patch.shape[1] / patch.shape[0]))
    return cv2.resize(patch, (width, height), interpolation=cv2.INTER_CUBIC if height > patch.shape[0] else
                      cv2.INTER_AREA)


def _turned_frames(width: int, height: int, fps: float, seconds: float,
                   seed: int) -> Iterator[tuple[np.ndarray, Truth]]:
    """Faces turned 25 to 40 degrees away and partly hidden (a quarter to a third covered), moving slowly."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    k = height / 720
    faces = _faces((1, 13, 17, 29, 44, 61))
    background = _background(width, height, seed, "coffee")
    rng = np.random.default_rng(seed + 31)
    looks = [(0.45, 1, None), (0.6, -1, None), (0.6, 1, ("bottom", 0.25)), (0.5, -1, ("left", 0.25)),
             (0.0, 1, ("right", 0.3)), (0.7, 1, None), (0.55, -1, ("bottom", 0.3))]
    sizes = (44, 60, 80, 110, 150, 190, 70)
    movers = []
    for i, ((yaw, side, hidden), size) in enumerate(zip(looks, sizes)):
        patch = _sized(cv2, faces[i % len(faces)], size * k)
        patch = _turn(patch, yaw, side) if yaw else patch
        if hidden:
            patch = _occlude(patch, hidden[1], hidden[0], tuple(int(c) for c in rng.integers(30, 200, 3)))
        start = np.array([rng.uniform(0.05, 0.85) * width, (0.08 + 0.13 * i) * height])
        speed = rng.uniform(40, 140, 2) * k * rng.choice([-1, 1], 2)
        movers.append(("face", patch, start, speed))
    for pw, y in ((70, 0.2), (210, 0.8)):
        movers.append(("plate", _plate(round(pw * k), "T%03dKX" % pw), np.array([0.5 * width, y * height]),
                       np.array([-90.0, 10.0]) * k))
    yield from _moving(width, height, fps, seconds, background, movers)


def _moving(width: int, height: int, fps: float, seconds: float, background: np.ndarray,
            movers: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]) -> Iterator[tuple[np.ndarray, Truth]]:
    for t in range(int(round(fps * seconds))):
        frame = background.copy()
        truth = Truth()
        for kind, patch, start, speed in movers:
            ph, pw = patch.shape[:2]
            span = np.array([max(1, width - pw - 1), max(1, height - ph - 1)], float)
            pos = start + speed * t / fps
            pos = np.abs((pos + span) % (2 * span) - span)  # bounce off the edges
            box = _paste(frame, patch, int(pos[0]), int(pos[1]))
            if box:
                truth.boxes.append((kind, *box))
        yield frame, truth


def _pan_frames(width: int, height: int, fps: float, seconds: float,
                seed: int) -> Iterator[tuple[np.ndarray, Truth]]:
    """A fast camera pan over a wide scene (up to 1000 px/s at 720p, out and back, with shake) and
    the motion blur of a 1/120 s exposure; faces 40 to 170 px, plates far (60 px) to near (260 px)."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    k = height / 720
    faces = _faces((2, 14, 26, 38, 50, 77))
    world_w = width * 2 + round(200 * k)
    world = _background(world_w, height, seed, "brick")
    rng = np.random.default_rng(seed + 47)
    items = []
    for i, size in enumerate((40, 52, 70, 95, 130, 170, 60, 85)):
        patch = _sized(cv2, faces[i % len(faces)], size * k)
        items.append(("face", patch, (i + 0.5) / 8 * (world_w - patch.shape[1]), rng.uniform(0.05, 0.75) * height))
    for i, pw in enumerate((60, 110, 180, 260)):
        patch = _plate(round(pw * k), ("P601AA", "B77KTT", "C12XYZ", "D980MN")[i])
        items.append(("plate", patch, (i + 0.3) / 4 * world_w, (0.45 + 0.14 * i) * height - patch.shape[0]))
    amplitude = 1000 * k * seconds / (2 * np.pi)  # peak speed 1000 px/s at 720p
    for t in range(int(round(fps * seconds))):
        s = t / fps
        cam_x = min(amplitude * (1 - np.cos(2 * np.pi * s / seconds)), world_w - width - 1)
        shake = np.array([12 * np.sin(2 * np.pi * 5 * s), 10 * np.sin(2 * np.pi * 3.7 * s + 1)]) * k
        x0, y0 = cam_x + shake[0], shake[1]
        frame = world.copy()
        truth = Truth()
        placed = []
        for kind, patch, wx, wy in items:
            box = _paste(frame, patch, int(wx), int(wy))
            if box:
                placed.append((kind, *box))
        speed = abs(amplitude * 2 * np.pi / seconds * np.sin(2 * np.pi * s / seconds))  # px/s
        length = int(round(speed / 120))  # blur of a 1/120 s exposure
        shift = np.float32([[1, 0, -x0], [0, 1, -y0]])
        view = cv2.warpAffine(frame, shift, (width, height), borderMode=cv2.BORDER_REFLECT)
        if length > 1:
            kernel = np.zeros((1, length), np.float32)
            kernel[:] = 1 / length
            view = cv2.filter2D(view, -1, kernel)
        for kind, x1, y1, x2, y2 in placed:
            box = (max(0, round(x1 - x0)), max(0, round(y1 - y0)), min(width, round(x2 - x0)),
                   min(height, round(y2 - y0)))
            if box[2] - box[0] >= 4 and box[3] - box[1] >= 4:
                truth.boxes.append((kind, *box))
        yield view, truth


def _holdout_frames(width: int, height: int, fps: float, seconds: float,
                    seed: int) -> Iterator[tuple[np.ndarray, Truth]]:
    """Never used to choose settings: people walking towards the camera (faces grow from 30 to
    about 170 px), two of them turned and one partly hidden, a car coming closer (its plate from
    60 to 220 px), under a slow pan; other faces and another background."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    k = height / 720
    faces = _faces((5, 19, 33, 57, 71, 86))
    background = _background(width, height, seed, "immunohistochemistry")
    rng = np.random.default_rng(seed + 101)
    people = []
    for i in range(6):
        face = faces[i % len(faces)]
        if i in (1, 4):
            face = _turn(_sized(cv2, face, 200), 0.5, 1 if i == 1 else -1)
        if i == 3:
            face = _occlude(_sized(cv2, face, 200), 0.3, "bottom", (40, 60, 90))
        grow = rng.uniform(0.3, 1.0)            # grows from size0 by this share of it per second
        size0 = rng.uniform(30, 70)
        start = np.array([rng.uniform(0.05, 0.85) * width, rng.uniform(0.05, 0.6) * height])
        drift = rng.uniform(-160, 160, 2) * k
        people.append((face, size0, grow, start, drift))
    plate = _plate(400, "H7Q2WX")
    for t in range(int(round(fps * seconds))):
        s = t / fps
        frame = np.roll(background, -int(60 * k * s), axis=1).copy()
        truth = Truth()
        for face, size0, grow, start, drift in people:
            patch = _sized(cv2, face, min(size0 * (1 + grow * s), 180) * k)
            span = np.array([max(1, width - patch.shape[1] - 1), max(1, height - patch.shape[0] - 1)], float)
            pos = np.abs((start + drift * s + span) % (2 * span) - span)  # turn back at the edges, never leave
            box = _paste(frame, patch, int(pos[0]), int(pos[1]))
            if box:
                truth.boxes.append(("face", *box))
        pw = round((60 + 160 * min(1.0, s / seconds)) * k)
        patch = cv2.resize(plate, (pw, max(8, round(pw / 4.6))), interpolation=cv2.INTER_AREA)
        box = _paste(frame, patch, int((0.15 + 0.05 * s) * width), int(0.75 * height))
        if box:
            truth.boxes.append(("plate", *box))
        yield frame, truth


#: Clip generators by name; ``street`` is :func:`clip_frames`'s own.
SCENES: dict[str, Any] = {"crowd": _crowd_frames, "turned": _turned_frames, "pan": _pan_frames,
                          "holdout": _holdout_frames, "plates": _plates_frames, "lone-plate": _lone_plate_frames}
#: Scenes the presets' settings were chosen on; ``HELD_OUT_SCENES`` never were.
TUNING_SCENES = ("street", "crowd", "turned", "pan")
HELD_OUT_SCENES = ("holdout",)
#: The orientations every labelled clip is measured in (:func:`write_clip`'s ``turn`` and ``rotation``): upright, a
#: phone's portrait clip (stored sideways, shown upright by its rotation metadata), rotation metadata that shows
#: upright pixels sideways, and pixels turned 90 and 180 degrees.
ORIENTATIONS: dict[str, dict[str, int]] = {
    "upright": {}, "phone portrait": {"turn": -1, "rotation": 90}, "rotation 90": {"rotation": 90},
    "turned 90": {"turn": 1}, "upside down": {"turn": 2}}


def write_clip(path: str | Path, **kwargs: Any) -> list[Truth]:
    """Encode the clip to ``path`` (H.264); returns the per-frame ground truth.

    ``kwargs`` are :func:`clip_frames`'s: ``width``, ``height``, ``fps`` (default 10),
    ``seconds``, ``seed``, ``scene`` and ``turn`` (pixels turned), and ``rotation``: degrees of
    rotation metadata (a phone's display matrix) put on the file, the truth then given as shown
    (decoded frames are shown frames, see :func:`streamcue.video.read_frames`); and ``sar``, a sample aspect
    ratio (``"2:1"``: anamorphic video): the clip is made at ``width`` x ``height`` as shown, stored squeezed to
    :func:`streamcue.video.shown_size`'s inverse with that ratio on the file, the truth as shown; e.g.
    ``write_clip("crowd.mp4", fps=30, seconds=4, scene="crowd")`` for a 1280x720 30 fps clip like
    the benchmark's."""
    from streamcue.video import FrameWriter, parse_ratio

    rotation, sar = kwargs.pop("rotation", 0), parse_ratio(kwargs.pop("sar", "1:1"))
    width, height, fps = kwargs.get("width", 1280), kwargs.get("height", 720), kwargs.get("fps", 10)
    if kwargs.get("turn", 0) % 2:
        width, height = height, width
    stored = (2 * round(width / sar / 2), height) if sar > 1 else (width, 2 * round(height * sar / 2))
    writer = FrameWriter(path, *stored, fps)
    truths = []
    try:
        for frame, truth in clip_frames(**kwargs):
            writer.write(frame if sar == 1 else _squeezed(frame, stored))
            truths.append(truth)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    if sar != 1:
        _set_metadata(Path(path), ["-bsf:v", f"h264_metadata=sample_aspect_ratio={sar.numerator}/{sar.denominator}"])
    if rotation % 360:
        _set_rotation(Path(path), rotation)
        truths = [_turn_frame(np.zeros((height, width, 1), np.uint8), t, rotation // 90)[1] for t in truths]
    return truths


def _squeezed(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``frame`` scaled to ``size`` (width, height): a shown frame as an anamorphic file stores it."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


def _set_rotation(path: Path, degrees: int) -> None:
    """Give ``path``'s video stream rotation metadata (a display matrix of ``degrees`` counter-clockwise,
    what a phone writes), its pixels untouched: players and ffmpeg show it turned by ``degrees``."""
    _set_metadata(path, ["-c", "copy"], before=["-display_rotation", str(degrees)])


def _set_metadata(path: Path, after: list[str], before: tuple[str, ...] | list[str] = ()) -> None:
    """Copy ``path``'s streams into itself with ffmpeg's options ``before`` its input and ``after`` it (metadata
    only: the pixels are copied)."""
    import subprocess

    from streamcue.video import ffmpeg_exe

    tmp = path.with_name(f".{path.name}.metadata.mp4")
    done = subprocess.run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", *before, "-i", str(path),
                           "-c", "copy", *after, str(tmp)], capture_output=True, text=True)
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"ffmpeg could not set the metadata of {path}: {done.stderr.strip()}")
    tmp.replace(path)


def large_faces(truths: list[Truth], smallest: int = 40) -> list[Truth]:
    """``truths`` without the faces whose box is under ``smallest`` px on its longer side (plates kept): the faces of
    the measured range (40 px and more, docs/anonymize.md)."""
    return [Truth([b for b in t.boxes if b[0] != "face" or max(b[3] - b[1], b[4] - b[2]) >= smallest])
            for t in truths]


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


def hidden_elsewhere(masks: list[np.ndarray], truths: list[Truth], grow: float = 0.5) -> float:
    """The mean share of a frame hidden away from every labelled face and plate: over the frames,
    mean(|mask \\ G| / |frame|), G the union of the frame's truth boxes each grown by ``grow`` times its width
    sideways and its height up and down (0.5: room for the padding, 0.35 of a face box, and for a box carried a frame
    or two behind a moving object). What a run hides that no one needed hidden: the price of a false detection."""
    shares = []
    for mask, truth in zip(masks, truths):
        near = np.zeros(mask.shape[:2], bool)
        h, w = near.shape
        for _, x1, y1, x2, y2 in truth.boxes:
            gx, gy = round((x2 - x1) * grow), round((y2 - y1) * grow)
            near[max(0, y1 - gy):min(h, y2 + gy), max(0, x1 - gx):min(w, x2 + gx)] = True
        shares.append(np.count_nonzero(mask & ~near) / mask.size)
    return float(np.mean(shares)) if shares else 0.0


def detail_recall(source: str | Path, output: str | Path, truths: list[Truth], ratio: float = 0.2) -> dict[str, float]:
    """Per kind, the share of ground-truth area whose inner part lost its detail in ``output``.

    For each box of each frame, its inner part (the middle 3/5 each way) counts, with the box's
    area, as hidden when its Laplacian variance in ``output`` is below ``ratio`` times the
    variance in ``source``: sum(area * [var_out < ratio * var_in]) / sum(area), per kind.
    """
    cv2 = require("cv2", "anonymize", "opencv-python")
    from streamcue.video import probe, read_frames, sample_aspect, shown_size

    def shown(path: str | Path) -> Iterator[np.ndarray]:
        info = probe(path)
        size = shown_size(info.width, info.height, sample_aspect(path))
        return read_frames(path, info, size=None if size == (info.width, info.height) else size)

    def sharpness(image: np.ndarray) -> float:
        return float(cv2.Laplacian(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), cv2.CV_64F).var())

    hidden: dict[str, float] = {}
    total: dict[str, float] = {}
    for before, after, truth in zip(shown(source), shown(output), truths):
        for kind, x1, y1, x2, y2 in truth.boxes:
            mx, my = (x2 - x1) // 5, (y2 - y1) // 5
            inner = (slice(y1 + my, y2 - my), slice(x1 + mx, x2 - mx))
            if before[inner].size == 0:
                continue
            area = (x2 - x1) * (y2 - y1)
            total[kind] = total.get(kind, 0) + area
            lost = sharpness(after[inner]) < ratio * max(sharpness(before[inner]), 1e-9)
            hidden[kind] = hidden.get(kind, 0) + area * lost
    return {kind: hidden.get(kind, 0) / total[kind] for kind in total}
