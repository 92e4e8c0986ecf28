"""Response-in-last (ESTP-Bench App. E.2): one call after the clip, answers as ``[frame index] answer`` lines.

The model sees the clip's frames (at most ``max_frames``, spread uniformly), each labelled with
its index counted from the clip start at the replay's sampling rate, and lists the moments it
would have answered. Line ``[i] text`` becomes a response at ``clip start + i / fps``. A line
that does not parse, or names a frame outside the clip, is counted in the report
(``malformed_lines``, ``out_of_range_lines``), never fatal.

Calls per record: exactly one, whatever the clip's length.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from streamcue.errors import ConfigError
from streamcue.loaders.replay import Frame, select_frames, with_pixels
from streamcue.loaders.strategies.base import TEXT, Option, VisionStrategy, current_trace, frame_parts

__all__ = ["ResponseInLast", "parse_lines"]

_LINE = re.compile(r"^\s*\[\s*(\d+)\s*\]\s*(\S.*?)\s*$")


def parse_lines(text: str) -> tuple[list[tuple[int, str]], int]:
    """``[(frame index, answer)]`` from the model's lines, and how many non-empty lines did not parse."""
    parsed, malformed = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match:
            parsed.append((int(match.group(1)), match.group(2)))
        else:
            malformed += 1
    return parsed, malformed


class ResponseInLast(VisionStrategy):
    """Silent while the clip plays; one call at its end."""

    name = "response-in-last"
    help = "ESTP-Bench response-in-last: one call after the clip, '[frame index] answer' lines"
    applies = {"interval_qa": None}
    options = (Option("max_frames", int, 64, "frames shown in the one call (spread uniformly over the clip)",
                      minimum=1, why="the one call must see a frame"),)
    PROMPT = "response_in_last.v1"

    def __init__(self, settings: Any = None, *, kind: str, max_frames: int = 64, **options: Any) -> None:
        if max_frames < 1:
            raise ConfigError("max_frames must be at least 1")
        super().__init__(settings, kind=kind, **options)
        self.max_frames = max_frames

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float, context: str | None = None) -> None:
        return None

    def _index(self, frame: Frame) -> int:
        episode = self.episode
        return round((frame.t_s - episode.start_s) * episode.fps) if episode else frame.index

    def finish(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
               now: float) -> list[dict[str, Any]]:
        if self.episode is None or not frames or not prompt:
            return []
        shown = with_pixels(select_frames(frames, self.max_frames, "U"), self.episode.pixels)
        trace = current_trace()
        if trace is not None:
            trace.now = now
        parts = [{"type": "text", "text": f"Task: {prompt}\nThe clip is sampled at {self.episode.fps:g} frames per "
                                          f"second; it has {len(frames)} frames, of which {len(shown)} are shown."}]
        content = parts + frame_parts(shown, lambda f: f"[{self._index(f)}]")
        reply = self.try_ask(self.PROMPT, content, TEXT, "ask_last")
        lines, malformed = parse_lines(reply.parsed["text"] if reply.ok else "")
        self.count("malformed_lines", malformed)
        last = self._index(frames[-1])
        responses = []
        for index, text in lines:
            if index > last:
                self.count("out_of_range_lines")
                continue
            responses.append({"t_s": self.episode.start_s + index / self.episode.fps, "text": text})
        self.count("answers", len(responses))
        return sorted(responses, key=lambda r: r["t_s"])
