"""Following faces and plates between looks: the camera's motion, boxes linked from look to look,
chains that confirm weak detections, and the regions to look at again at full size.

* :class:`CameraMotion` measures the camera's path on every frame, so a box is kept in scene
  coordinates (frame pixels plus the camera's position) while the camera pans or shakes.
* :class:`Links` pairs each box of a look with the nearest box of a later look of the same kind
  (the next look or, when the detector missed it there, one up to ``gap`` frames on) and
  interpolates it on every frame between.
* A :class:`Chain` is what linked boxes share. A box scored between the track threshold and
  the detection threshold counts only once its chain holds a box at or above the detection
  threshold: the two-threshold association of ByteTrack (Zhang et al., "ByteTrack: Multi-Object
  Tracking by Associating Every Detection Box", ECCV 2022), applied forwards and backwards in
  time. A turned or partly hidden face that scores 0.08-0.2 on most frames is kept between the
  frames where it scores higher; a weak box that never joins a strong one is dropped.
* :class:`LookTriggers` decides when an expensive look (faces at full size, the turned sweep,
  plates) is needed: a scene change, motion outside the boxes being followed, a track lost or an
  orientation in doubt since the last look of that kind, or too long without one; never sooner
  after the last look of that kind than the clock's spacing (the ceiling).
* :func:`follow_regions` gives the crops around faces found at earlier looks that are small
  enough to need full size, so that a look at reduced size also looks at those faces at full size;
  :func:`crops_in_steps` grows them to a few sizes for a network that prepares itself per input size.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import numpy as np

from streamcue.extras import require

__all__ = ["LOOK_KINDS", "CameraMotion", "Chain", "Links", "LookTriggers", "lost_boxes", "follow_regions",
           "crops_in_steps", "suppress"]


class CameraMotion:
    """The camera's path, frame to frame, from phase correlation of small grey copies (about
    1 ms a frame): with it, a region found on one frame is carried to where it is on another
    even while the camera pans or shakes."""

    def __init__(self, side: int = 320) -> None:
        self._cv2 = require("cv2", "anonymize", "opencv-python")
        self.side = side
        self._previous: np.ndarray | None = None
        self._window: np.ndarray | None = None
        self.position = np.zeros(2)
        self.grey: np.ndarray | None = None  # the latest frame's small grey copy (a new array each frame)

    def update(self, frame: np.ndarray) -> tuple[float, float]:
        cv2 = self._cv2
        h, w = frame.shape[:2]
        scale = min(1.0, self.side / max(h, w))
        small = cv2.resize(frame, (max(8, round(w * scale)), max(8, round(h * scale))), interpolation=cv2.INTER_AREA)
        grey = np.float32(cv2.cvtColor(small, cv2.COLOR_BGR2GRAY))
        self.grey = grey.copy()  # phaseCorrelate below windows its inputs in place
        if self._previous is not None:
            if self._window is None:
                self._window = cv2.createHanningWindow(grey.shape[::-1], cv2.CV_32F)
            (dx, dy), response = cv2.phaseCorrelate(self._previous, grey, self._window)
            if response > 0.05 and abs(dx) < grey.shape[1] / 3 and abs(dy) < grey.shape[0] / 3:
                self.position -= np.array([dx, dy]) / scale  # the picture moved by (dx, dy): the camera the other way
        self._previous = grey
        return float(self.position[0]), float(self.position[1])


class Chain:
    """Boxes linked across looks (one face or plate); ``strong`` once any of them scored at or
    above the detection threshold. Chains merge when two of their boxes are linked (the smaller
    one's members move to the larger, so a box's chain is always ``members_list[k]``)."""

    __slots__ = ("strong", "members")

    def __init__(self, strong: bool, members: list[Chain], k: int) -> None:
        self.strong = strong
        self.members: list[tuple[list[Chain], int]] = [(members, k)]

    @staticmethod
    def new(strong: np.ndarray) -> list[Chain]:
        """One chain per box of a look; the list is where each box finds its chain."""
        chains: list[Chain] = []
        chains.extend(Chain(bool(s), chains, k) for k, s in enumerate(strong))
        return chains

    def merge(self, other: Chain) -> Chain:
        if other is self:
            return self
        big, small = (self, other) if len(self.members) >= len(other.members) else (other, self)
        big.strong = big.strong or small.strong
        for chains, k in small.members:
            chains[k] = big
        big.members.extend(small.members)
        small.members = []
        return big


class Links:
    """The looks of one kind (faces at any size, at full size, plates) in scene coordinates, and
    for each box the box it continues as in a later look: the next look, or, when the detector
    missed it there, a later one up to ``gap`` frames on. Linked boxes share a :class:`Chain`."""

    def __init__(self, gap: int, fps: float) -> None:
        self.gap, self.fps = gap, fps
        # index, scene boxes (N, 4), link per box, the look's chains (None: every box counts)
        self.looks: deque[tuple[int, np.ndarray, list, list[Chain] | None]] = deque()

    def add(self, index: int, boxes: np.ndarray, camera: tuple[float, float],
            chains: list[Chain] | None = None) -> None:
        scene = np.asarray(boxes[:, :4], np.float64) + np.tile(camera, 2)
        taken = np.zeros(len(scene), bool)
        centres = (scene[:, :2] + scene[:, 2:]) / 2
        for p, old, links, old_chains in reversed(self.looks):  # the latest look first, then boxes lost since
            if index - p > self.gap or taken.all():
                break
            reach = max(1.0, 5.0 * (index - p) / self.fps)  # up to 5 box sizes a second
            for i in range(len(old)):
                if links[i] is not None:
                    continue
                size = max(old[i, 2] - old[i, 0], old[i, 3] - old[i, 1])
                dist = np.linalg.norm(centres - (old[i, :2] + old[i, 2:]) / 2, axis=1)
                dist[taken] = np.inf
                k = int(np.argmin(dist)) if len(dist) else -1
                if k >= 0 and dist[k] <= reach * size:
                    links[i] = (index, scene[k])
                    taken[k] = True
                    if chains is not None and old_chains is not None:
                        old_chains[i].merge(chains[k])
        self.looks.append((index, scene, [None] * len(scene), chains))

    def at(self, j: int, camera: tuple[float, float]) -> np.ndarray:
        """Boxes (frame pixels) interpolated on frame ``j`` from every link that spans it (a weak
        box's link only once its chain is strong)."""
        while self.looks and self.looks[0][0] < j - self.gap:
            self.looks.popleft()
        out = []
        for p, old, links, chains in self.looks:
            if p >= j:
                break
            for i, link in enumerate(links):
                if link is not None and link[0] > j and (chains is None or chains[i].strong):
                    w = (j - p) / (link[0] - p)
                    out.append(old[i] * (1 - w) + link[1] * w)
        if not out:
            return np.zeros((0, 4), np.int32)
        return np.round(np.asarray(out) - np.tile(camera, 2)).astype(np.int32)


#: A pixel of the small grey copy (:class:`CameraMotion`'s, 320 px on its long side) has changed when it differs by
#: more than this many grey levels from the same pixel at the last look of a kind (a 28 px face at 1280x720 covers
#: about 50 of them; the copy's averaging leaves sensor and coding noise far below it).
CHANGE_GREY = 16.0
#: Motion outside the followed boxes: at least this many changed pixels of the small copy.
CHANGE_PIXELS = 8
#: A scene change (a cut): more than this share of the small copy's pixels changed from one frame to the next.
CUT_SHARE = 0.5
#: The kinds of expensive look, as the report counts them.
LOOK_KINDS = ("full", "turned", "plates")
#: The boxes whose changes do not ask for a look of each kind: plates are followed by plate looks alone (no look in
#: between finds them again), so the motion of a plate asks for the next plate look.
COVERS = {"full": ("faces", "plates"), "turned": ("faces", "plates"), "plates": ("faces",)}


class LookTriggers:
    """When an expensive look of each kind (``LOOK_KINDS``) is taken, instead of by the clock alone.

    A look of kind K is taken on frame i when at least ``every[K]`` frames passed since the last
    look of kind K (the clock's spacing: so no stretch of the video gets more looks of K than the
    clock gives it, and a video never more in all) and one of these, the reason it is counted under:

    * ``first``: no look of K yet; ``last``: the video's last frame (see :meth:`due`);
    * ``scene_change``: on some frame since the last look of K, more than ``CUT_SHARE`` of the small
      grey copy changed from the frame before (a cut, a flash, a whip pan);
    * ``track_lost``: a box found at one look was not found near where it was at the next look of
      its kind (faces for ``full`` and ``turned``, plates for ``plates``);
    * ``orientation``: a face look found a weak face (scored under the threshold) that no strong
      face holds (``turned`` only): a face may be there, turned;
    * ``motion``: at least ``CHANGE_PIXELS`` pixels of the small copy changed by more than
      ``CHANGE_GREY`` since the last look of K, outside every box found at the looks since then (faces
      and plates; for ``plates``, faces only: a plate is followed by plate looks alone, so a moving
      plate gets the clock's), each grown on every side by how far what it holds may have moved since
      it was found (``growth`` frame pixels a frame: the speed up to which a found face is followed);
    * ``recheck``: ``recheck`` frames passed since the last look of K (a still scene is looked at
      again).

    Otherwise the look the clock would take is skipped. Boxes and copies are in frame pixels and
    copy pixels as they are, the camera's motion not taken out: a moving camera changes the copy
    outside the boxes, so it gets the clock's looks."""

    def __init__(self, every: dict[str, int], recheck: int, scale: float = 1.0, growth: float = 0.0) -> None:
        self.every, self.recheck = every, recheck
        self.scale = scale    # copy pixels per frame pixel
        self.growth = growth  # frame pixels a found box grows by on each side per frame since it was found
        self.last: dict[str, int] = {}
        self._reference: dict[str, np.ndarray] = {}
        self.pending: dict[str, str] = {}
        # (frame, what, boxes in frame pixels) found at looks: what is "faces" or "plates"
        self._boxes: deque[tuple[int, str, np.ndarray]] = deque()
        self._previous: np.ndarray | None = None

    def watch(self, grey: np.ndarray) -> None:
        """Every frame, in order: a cut since the frame before makes every kind's next look due."""
        if self._previous is not None and self._previous.shape == grey.shape \
                and _changed(self._previous, grey).mean() > CUT_SHARE:
            self.flag(self.every, "scene_change")
        self._previous = grey

    def flag(self, kinds: Iterable[str], reason: str) -> None:
        """The next look of each of ``kinds`` is due for ``reason`` (the first reason since its last look stands)."""
        for kind in kinds:
            self.pending.setdefault(kind, reason)

    def due(self, kind: str, i: int, grey: np.ndarray, last: bool = False) -> str | None:
        """Why frame ``i`` gets a look of ``kind``, or None (skipped). ``last``: the video's last frame, looked at
        whatever the spacing (no later look carries a box back to it) except by ``turned``, which keeps its
        spacing there too."""
        if kind not in self.last:
            return "first"
        gap = i - self.last[kind]
        if last and (kind != "turned" or gap >= self.every[kind]):
            return "last"
        if gap < self.every[kind]:
            return None
        if kind in self.pending:
            return self.pending[kind]
        if self._moved(kind, i, grey):
            return "motion"
        return "recheck" if gap >= self.recheck else None

    def looked(self, kind: str, i: int, grey: np.ndarray) -> None:
        """A look of ``kind`` was taken on frame ``i`` (whose small copy is ``grey``)."""
        self.last[kind], self._reference[kind] = i, grey
        self.pending.pop(kind, None)

    def found(self, i: int, boxes: np.ndarray, what: str = "faces") -> None:
        """Boxes (frame pixels) of ``what`` (faces, plates) a look on frame ``i`` found: changes inside them are
        what is followed."""
        if len(boxes):
            self._boxes.append((i, what, np.asarray(boxes[:, :4], np.float64)))
        oldest = min(self.last.values(), default=i)
        while self._boxes and self._boxes[0][0] < oldest:
            self._boxes.popleft()

    def _moved(self, kind: str, i: int, grey: np.ndarray) -> bool:
        reference = self._reference[kind]
        if reference.shape != grey.shape:
            return True
        changed = _changed(reference, grey)
        h, w = changed.shape
        for index, what, boxes in self._boxes:
            if index < self.last[kind] or what not in COVERS[kind]:
                continue
            grown = boxes + self.growth * (i - index) * np.array([-1, -1, 1, 1])
            for x1, y1, x2, y2 in np.round(grown * self.scale).astype(np.int64):
                changed[max(0, y1):max(0, min(h, y2 + 1)), max(0, x1):max(0, min(w, x2 + 1))] = False
        return int(np.count_nonzero(changed)) >= CHANGE_PIXELS


def _changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Pixels of two small grey copies that differ by more than ``CHANGE_GREY``."""
    return np.abs(after.astype(np.float32) - before.astype(np.float32)) > CHANGE_GREY


def lost_boxes(before: np.ndarray, after: np.ndarray, shift: tuple[float, float] = (0.0, 0.0)) -> bool:
    """Whether some box of ``before`` (N, 4+, frame pixels at an earlier look, moved by ``shift`` for the camera) has
    no box of ``after`` whose centre lies within the larger of its sides of its centre: a track lost."""
    if len(before) == 0:
        return False
    if len(after) == 0:
        return True
    old = np.asarray(before[:, :4], np.float64) + np.tile(shift, 2)
    centres = (old[:, :2] + old[:, 2:]) / 2
    new = (np.asarray(after[:, :2], np.float64) + np.asarray(after[:, 2:4], np.float64)) / 2
    reach = np.maximum(old[:, 2] - old[:, 0], old[:, 3] - old[:, 1])
    nearest = np.linalg.norm(centres[:, None] - new[None], axis=2).min(axis=1)
    return bool((nearest > reach).any())


def follow_regions(boxes: np.ndarray, width: int, height: int, margins: np.ndarray,
                   budget: float = 0.25) -> np.ndarray:
    """Crops (x1, y1, x2, y2) around ``boxes``, each grown on every side by its margin (pixels, one
    per box) and clipped to the frame, overlapping crops merged. The smallest boxes come first (a
    reduced look misses them first); crops stop at ``budget`` of the frame's area, so a look costs
    at most that share of a look at the whole frame at full size."""
    if len(boxes) == 0:
        return np.zeros((0, 4), np.int32)
    b = np.asarray(boxes[:, :4], np.float64)
    dw = dh = np.asarray(margins, np.float64)
    crops = np.stack([b[:, 0] - dw, b[:, 1] - dh, b[:, 2] + dw, b[:, 3] + dh], axis=1)
    crops = np.round(crops).astype(np.int64)
    crops[:, [0, 2]] = crops[:, [0, 2]].clip(0, width)
    crops[:, [1, 3]] = crops[:, [1, 3]].clip(0, height)
    merged: list[np.ndarray] = []
    for k in np.argsort(b[:, 3] - b[:, 1], kind="stable"):  # the smallest faces first
        crop = crops[k]
        if crop[2] <= crop[0] or crop[3] <= crop[1]:
            continue
        kept = list(merged)
        while True:  # merge with every crop it overlaps (a handful of crops: quadratic is fine)
            hit = next((i for i, q in enumerate(kept)
                        if crop[0] < q[2] and q[0] < crop[2] and crop[1] < q[3] and q[1] < crop[3]), None)
            if hit is None:
                break
            q = kept.pop(hit)
            crop = np.array([min(crop[0], q[0]), min(crop[1], q[1]), max(crop[2], q[2]), max(crop[3], q[3])])
        kept.append(crop)
        if sum(float((q[2] - q[0]) * (q[3] - q[1])) for q in kept) <= budget * width * height:
            merged = kept  # else this face is left to the looks at reduced and at full size
    return np.asarray(merged, np.int32).reshape(-1, 4)


def crops_in_steps(crops: np.ndarray, width: int, height: int, step: int) -> np.ndarray:
    """``crops`` (x1, y1, x2, y2) each grown about its centre to the next multiple of ``step`` on each
    side (at most the frame's side) and moved inside the frame: a crop still holds everything it held,
    at the same scale, and crops take few distinct sizes. On a GPU, the network's first look at an input
    size costs several times the next ones; crops around faces have a new size at almost every look."""
    if len(crops) == 0:
        return np.asarray(crops, np.int32).reshape(-1, 4)
    c = np.asarray(crops, np.int64)
    sides = np.stack([c[:, 2] - c[:, 0], c[:, 3] - c[:, 1]], axis=1)
    sized = np.minimum(-(-sides // step) * step, [width, height])
    start = c[:, :2] - (sized - sides) // 2
    start = np.clip(start, 0, np.array([width, height]) - sized)
    return np.concatenate([start, start + sized], axis=1).astype(np.int32)


def suppress(boxes: np.ndarray, overlap: float = 0.4) -> np.ndarray:
    """Boxes (N, 5 or more: x1, y1, x2, y2, score, ...) without those overlapping a higher-scored
    one by more than ``overlap`` (intersection over union), highest score first: one face found
    twice counts once. OpenCV's non-maximum suppression (``cv2.dnn.NMSBoxes``); every score is
    above 0 (the detectors return boxes from a threshold above 0 up)."""
    if len(boxes) < 2:
        return boxes
    cv2 = require("cv2", "anonymize", "opencv-python")
    rects = np.column_stack([boxes[:, :2], boxes[:, 2:4] - boxes[:, :2]]).astype(np.float64)  # x, y, w, h
    keep = cv2.dnn.NMSBoxes(rects.tolist(), boxes[:, 4].astype(np.float64).tolist(), 0.0, overlap)
    return boxes[np.asarray(keep, np.int64).reshape(-1)]
