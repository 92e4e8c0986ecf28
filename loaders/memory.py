"""Replay memories: which of the frames seen so far (and which text) one call gets, behind one registry.

=======  =============================================================================  =========
name     what a call sees                                                               endpoint
=======  =============================================================================  =========
SW       the last ``k`` frames (VSAS-Bench)                                             no
U        ``k`` frames spread uniformly over all (VSAS-Bench)                            no
SW+U     the last ``k // 2`` plus the rest spread over the older ones (VSAS-Bench)      no
window   every frame of the last ``--window-s`` seconds (at most ``k``, spread evenly)  no
OASIS    the last ``min(k, 16)`` frames plus retrieved event summaries (OASIS)          yes
=======  =============================================================================  =========

``--window-s`` applies to every memory: only the frames of the last N seconds are offered
(``now - N < t <= now``, :func:`streamcue.frame_memory.in_window`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.errors import ConfigError
from streamcue.frame_memory import Frame, in_window, select_frames
from streamcue.loaders.replay import PolicyMemory, as_memory

__all__ = ["MEMORIES", "MemorySpec", "PolicyMemory", "WindowMemory", "as_memory", "make_memory"]


class WindowMemory:
    """The frames of the last ``window_s`` seconds (at most ``k``, spread uniformly); no text context."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s

    def view(self, frames: Sequence[Frame], k: int, now: float, prompt: str,
             history: Sequence[tuple[float, str, str]]) -> tuple[list[Frame], str | None]:
        return select_frames(in_window(frames, now, self.window_s), k, "U"), None


@dataclass(frozen=True)
class MemorySpec:
    name: str
    help: str
    needs_endpoint: bool = False
    needs_window: bool = False


MEMORIES: dict[str, MemorySpec] = {
    "SW": MemorySpec("SW", "the last k frames"),
    "U": MemorySpec("U", "k frames spread uniformly over all seen"),
    "SW+U": MemorySpec("SW+U", "the last k/2 frames plus k/2 spread over the older ones"),
    "window": MemorySpec("window", "every frame of the last --window-s seconds (at most k)", needs_window=True),
    "OASIS": MemorySpec("OASIS", "OASIS event memory: the last min(k, 16) frames plus retrieved event summaries "
                                 "(needs the embed extra and the endpoint)", needs_endpoint=True),
}


def make_memory(name: str, *, k: int, window_s: float | None = None, settings: Any = None,
                use_cache: bool = True) -> Any:
    """The memory object (``view``, see :class:`streamcue.loaders.replay.Memory`) of the memory ``name``."""
    if name not in MEMORIES:
        raise ConfigError(f"unknown memory {name!r}; known: {', '.join(MEMORIES)}")
    if name in ("SW", "U", "SW+U"):
        return PolicyMemory(name)
    if name == "window":
        if window_s is None:
            raise ConfigError("memory window shows the last --window-s seconds: pass --window-s")
        return WindowMemory(window_s)
    from streamcue.loaders.strategies.oasis import OasisMemory

    return OasisMemory(settings, short_k=min(k, 16), use_cache=use_cache)  # 16: OASIS's now-window
