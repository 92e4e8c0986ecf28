"""Frame memory policies: which of the frames seen so far a model gets in one call (VSAS-Bench Sec. 3.2).

``SW`` keeps the last ``k`` frames; ``U`` keeps ``k`` spread uniformly over all of them; ``SW+U``
keeps the last ``k // 2`` plus ``k - k // 2`` spread uniformly over the older ones. The replay
harness (:mod:`streamcue.loaders.replay`) and the recorded builder's captioner
(:mod:`streamcue.dataset_builders.recorded`) both choose frames here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.errors import ConfigError

__all__ = ["POLICIES", "Frame", "select_frames"]

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
