"""Frame memory policies: which of the frames seen so far a model gets in one call (VSAS-Bench Sec. 3.2).

``SW`` keeps the last ``k`` frames; ``U`` keeps ``k`` spread uniformly over all of them; ``SW+U``
keeps the last ``k // 2`` plus ``k - k // 2`` spread uniformly over the older ones.

One window rule everywhere: a window of ``window_s`` seconds at time ``now`` holds the frames with
``now - window_s < t <= now`` (at 1 fps a 60 s window is 60 frames), see :func:`in_window`. The replay
harness (:mod:`streamcue.loaders.replay`) and the recorded builder's captioner
(:mod:`streamcue.dataset_builders.recorded`) both choose frames here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.errors import ConfigError

__all__ = ["POLICIES", "Frame", "select_frames", "in_window", "frames_until", "grid_span"]

POLICIES = ("SW", "U", "SW+U")


@dataclass(frozen=True)
class Frame:
    index: int
    t_s: float
    image: Any = None


def _uniform(items: Sequence[Frame], k: int) -> list[Frame]:
    if k <= 0 or not items:
        return []
    if len(items) <= k:
        return list(items)
    if k == 1:
        return [items[-1]]
    step = (len(items) - 1) / (k - 1)
    return [items[round(i * step)] for i in range(k)]


def select_frames(frames: Sequence[Frame], k: int, policy: str = "SW+U") -> list[Frame]:
    """The ``k`` frames a memory policy keeps out of ``frames`` (oldest first)."""
    if policy not in POLICIES:
        raise ConfigError(f"unknown memory policy {policy!r}; known: {', '.join(POLICIES)}")
    if k < 1:
        raise ConfigError("k must be at least 1")
    if policy == "SW":
        return list(frames[-k:])
    if policy == "U":
        return _uniform(frames, k)
    recent = k // 2 if k > 1 else 1
    older = frames[:-recent] if len(frames) > recent else []
    return _uniform(older, k - recent) + list(frames[-recent:])


def in_window(frames: Sequence[Frame], now: float, window_s: float | None) -> list[Frame]:
    """The frames of the last ``window_s`` seconds at ``now``: ``now - window_s < t_s <= now`` (all when None)."""
    if window_s is None:
        return [f for f in frames if f.t_s <= now + 1e-9]
    return [f for f in frames if now - window_s + 1e-9 < f.t_s <= now + 1e-9]


def grid_span(now: float, fps: float, window_s: float | None = None, start_s: float = 0.0) -> tuple[int, int]:
    """``(first, stop)``: the positions, counted from ``start_s``, of the frames sampled at ``fps`` up to ``now`` that
    may lie in the window (``first`` the first after ``now - window_s``; :func:`in_window` decides at the edge)."""
    import math

    stop = int((now - start_s) * fps + 1e-9) + 1
    first = 0 if window_s is None else max(0, math.floor((now - window_s - start_s) * fps + 1e-9) + 1)
    return first, max(stop, 0)


def frames_until(now: float, fps: float, window_s: float | None = None, image: Any = None) -> list[Frame]:
    """The video's frames sampled at ``fps`` (``i / fps``) up to ``now``, within the window (see :func:`in_window`).

    ``image(index, t_s)`` gives a frame's pixels; frames carry only index and time without it.
    """
    first, stop = grid_span(now, fps, window_s)
    frames = in_window([Frame(i, i / fps) for i in range(first, stop)], now, window_s)
    return frames if image is None else [Frame(f.index, f.t_s, image(f.index, f.t_s)) for f in frames]
