"""Frames for the replay harness from a video file under your video root (releases hold no video).

>>> frames = VideoFrames(video_path(video, "/data/ego4d"), fps=1)      # doctest: +SKIP
>>> replay_records(model, records, "interval_qa", durations, fps=1, frame_image=frames)  # doctest: +SKIP

Decoding uses ffmpeg through the [video] extra (ffmpeg-python + imageio-ffmpeg); frames are
JPEG bytes, the form the OpenAI-compatible adapter sends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from streamcue.errors import InputError


__all__ = ["VideoFrames", "SpanFrames", "FrameSource"]


class VideoFrames:
    """``frame_image(index, t_s)`` for :func:`streamcue.loaders.replay.replay`: the video sampled at ``fps``."""

    def __init__(self, path: str | Path, fps: float = 1.0, side: int | None = 448, quality: int = 85) -> None:
        from streamcue.video import jpeg_frames

        self.path = Path(path)
        self.images = jpeg_frames(self.path, fps=fps, side=side, quality=quality)

    def __call__(self, index: int, t_s: float) -> bytes | None:
        """The frame's JPEG; None past the end (a duration rounded up by a frame)."""
        if index < 0:
            raise InputError(f"frame index {index} is negative", file=self.path)
        return self.images[index] if index < len(self.images) else None


class SpanFrames:
    """``frames(video_id, start_s, end_s, fps)`` -> ``[(t_s, jpeg)]``: only the spans asked for are decoded.

    ``paths`` maps video ids to files (e.g. :func:`streamcue.loaders.video_path` of each video record).
    The evidence pre-check (:mod:`streamcue.annotation.evidence`) takes one of these.
    """

    def __init__(self, paths: dict[str, Path], side: int | None = 448, quality: int = 85) -> None:
        self.paths, self.side, self.quality = paths, side, quality

    def __call__(self, video_id: str, start_s: float, end_s: float, fps: float) -> list[tuple[float, bytes]]:
        from streamcue.video import jpeg_frames

        if video_id not in self.paths:
            raise InputError(f"no video file for video {video_id}", record=video_id, field="video_id")
        images = jpeg_frames(self.paths[video_id], fps=fps, side=self.side, quality=self.quality,
                             span=(start_s, end_s))
        return [(start_s + i / fps, jpeg) for i, jpeg in enumerate(images)]


class FrameSource:
    """The replay engine's frames: each video decoded once at ``fps`` when first needed, reused by every
    question, turn and probe of it (the engine plays a video's records together; ``keep`` videos stay decoded).

    ``paths`` maps video ids to files; ``decoded`` counts decodes per video (the report shows them).
    """

    def __init__(self, paths: Mapping[str, Path], fps: float = 1.0, side: int | None = 448, quality: int = 85,
                 keep: int = 1) -> None:
        self.paths, self.fps, self.side, self.quality, self.keep = dict(paths), fps, side, quality, keep
        self._videos: dict[str, VideoFrames] = {}
        self.decoded: Counter[str] = Counter()

    def __call__(self, video_id: str) -> VideoFrames:
        """``frame_image(index, t_s)`` of one video."""
        if video_id not in self._videos:
            if video_id not in self.paths:
                raise InputError(f"no video file for video {video_id}", record=f"video_id={video_id}", field="$.uri")
            while len(self._videos) >= self.keep:
                self._videos.pop(next(iter(self._videos)))
            self._videos[video_id] = VideoFrames(self.paths[video_id], fps=self.fps, side=self.side,
                                                 quality=self.quality)
            self.decoded[video_id] += 1
        return self._videos[video_id]
