"""Frames for the replay harness from a video file under your video root (releases hold no video).

>>> frames = VideoFrames(video_path(video, "/data/ego4d"), fps=1)      # doctest: +SKIP
>>> play(records, "interval_qa", strategy=model, durations=durations, frames=lambda video_id: frames)  # doctest: +SKIP

Decoding uses ffmpeg through the [video] extra (ffmpeg-python + imageio-ffmpeg); frames are
JPEG bytes, the form the OpenAI-compatible adapter sends.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tempfile
import threading
import wave
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from streamcue.errors import InputError


__all__ = ["VideoFrames", "SpanFrames", "FrameSource"]


class VideoFrames:
    """``frame_image(index, t_s)`` for :func:`streamcue.loaders.replay.replay`: the video sampled at ``fps``."""

    def __init__(self, path: str | Path, fps: float = 1.0, side: int | None = 448, quality: int = 85,
                 pixels: int | None = None) -> None:
        from streamcue.video import jpeg_frames

        self.path = Path(path)
        self.fps = fps
        self.images = jpeg_frames(self.path, fps=fps, side=side, quality=quality, pixels=pixels)

    @property
    def duration_s(self) -> float:
        """The file's length as decoded: its frames at ``fps`` (a record's times past it get no pixels)."""
        return len(self.images) / self.fps

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
    question, turn and probe of it, by every thread that plays it.

    ``paths`` maps video ids to files; ``decoded`` counts decodes per video (the report shows them).
    Frames are at most ``side`` pixels on the longest side and ``pixels`` pixels in all (aspect kept),
    JPEG ``quality``. A video stays decoded while the engine holds it (:meth:`hold` / :meth:`release`,
    counted) and, once released, among the ``keep`` most recent; :meth:`prefetch` decodes a video in a
    background thread while calls for another go on. :meth:`clip` cuts the clip sent with the
    ``video_url`` transport (the same size, at ``fps``; with its sound when ``audio`` is ``video``) and
    :meth:`sound` the sound sent with a call (``audio``: ``parts`` or ``video``).
    """

    def __init__(self, paths: Mapping[str, Path], fps: float = 1.0, side: int | None = 448, quality: int = 85,
                 keep: int = 1, pixels: int | None = None, audio: str = "none") -> None:
        self.paths, self.fps, self.side, self.quality, self.keep = dict(paths), fps, side, quality, keep
        self.pixels, self.audio = pixels, audio
        self._has_audio: dict[str, bool] = {}
        self._videos: OrderedDict[str, Future[VideoFrames]] = OrderedDict()
        self._holds: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._clips: tempfile.TemporaryDirectory[str] | None = None
        self.decoded: Counter[str] = Counter()

    def settings(self) -> dict[str, object]:
        return {"fps": self.fps, "side": self.side, "pixels": self.pixels, "jpeg_quality": self.quality}

    def _decode(self, video_id: str) -> VideoFrames:
        return VideoFrames(self.paths[video_id], fps=self.fps, side=self.side, quality=self.quality,
                           pixels=self.pixels)

    def _future(self, video_id: str, background: bool) -> Future[VideoFrames]:
        """The video's (pending) decode, started when first asked for; evicts released videos beyond ``keep``."""
        if video_id not in self.paths:
            raise InputError(f"no video file for video {video_id}", record=f"video_id={video_id}", field="$.uri")
        with self._lock:
            future = self._videos.get(video_id)
            if future is not None:
                self._videos.move_to_end(video_id)
                return future
            future = Future()
            self._videos[video_id] = future
            self.decoded[video_id] += 1
            idle = [v for v in self._videos if self._holds[v] <= 0 and v != video_id]
            for old in idle[:max(0, len(self._videos) - max(self.keep, 1))]:
                del self._videos[old]
            if background:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamcue-decode")
                pool = self._pool
        if background:
            pool.submit(self._fill, future, video_id)
        else:
            self._fill(future, video_id)
        return future

    def _fill(self, future: Future[VideoFrames], video_id: str) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(self._decode(video_id))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for this video
            future.set_exception(exc)

    def __call__(self, video_id: str) -> VideoFrames:
        """``frame_image(index, t_s)`` of one video (decoded now, or waited for when another thread decodes it)."""
        return self._future(video_id, background=False).result()

    def prefetch(self, video_id: str) -> None:
        """Start decoding ``video_id`` in the background (no-op when it is decoded or decoding)."""
        self._future(video_id, background=True)

    def hold(self, video_id: str) -> None:
        with self._lock:
            self._holds[video_id] += 1

    def release(self, video_id: str) -> None:
        """The engine is done with one user of ``video_id``; the last release lets it be evicted."""
        with self._lock:
            self._holds[video_id] -= 1
            if self._holds[video_id] <= 0:
                del self._holds[video_id]
                idle = [v for v in self._videos if self._holds[v] <= 0]
                for old in idle[:max(0, len(self._videos) - max(self.keep, 1))]:
                    del self._videos[old]

    def clip(self, video_id: str, times: Sequence[float], form: str = "data") -> tuple[str, int]:
        """``(url, bytes)`` of the clip of exactly the frames at ``times`` (on the ``fps`` grid, each at its own time
        from the first: a server that samples the clip gets the frames the memory chose, no others), same size as
        the frames: a ``data:video/mp4;base64`` URL or a ``file://`` path."""
        from streamcue.video import cut_clip, frame_size, probe

        if video_id not in self.paths:
            raise InputError(f"no video file for video {video_id}", record=f"video_id={video_id}", field="$.uri")
        path = self.paths[video_id]
        info = probe(path)
        with self._lock:
            if self._clips is None:
                self._clips = tempfile.TemporaryDirectory(prefix="streamcue-clips-")
            folder = Path(self._clips.name)
        start_s, end_s = times[0], times[-1]
        out = folder / f"{hashlib.sha256(json.dumps([video_id, list(times)]).encode()).hexdigest()[:24]}.mp4"
        if not out.is_file():
            tmp = out.with_suffix(f".{threading.get_ident()}.mp4")
            cut_clip(path, start_s, end_s + 1.0 / self.fps, tmp, fps=self.fps,
                     size=frame_size(info.width, info.height, self.side, self.pixels), audio=self.audio == "video",
                     keep=[round((t - start_s) * self.fps) for t in times])
            tmp.replace(out)
        data = out.read_bytes()
        if form == "file":
            return out.resolve().as_uri(), len(data)
        return "data:video/mp4;base64," + base64.b64encode(data).decode("ascii"), len(data)

    def has_audio(self, video_id: str) -> bool:
        """Whether the video file has an audio stream (probed once)."""
        from streamcue.video import probe

        if video_id not in self._has_audio:
            self._has_audio[video_id] = probe(self.paths[video_id]).has_audio
        return self._has_audio[video_id]

    def sound(self, video_id: str, start_s: float, end_s: float) -> tuple[str | None, dict[str, Any]] | None:
        """The sound of the span a call covers (the frames at ``start_s`` to ``end_s``, as :meth:`clip`): ``(data URL
        base64 or None, what was sent)``. ``parts``: a 16 kHz mono WAV cut by ffmpeg; ``video``: the clip's own
        AAC track (nothing apart). None when the video has no audio stream."""
        from streamcue.video import cut_audio

        if not self.has_audio(video_id):
            return None
        end_s += 1.0 / self.fps
        if self.audio == "video":
            return None, {"mode": "video", "seconds": round(end_s - start_s, 6), "bytes": None, "format": "aac"}
        with tempfile.TemporaryDirectory(prefix="streamcue-sound-") as folder:
            data = cut_audio(self.paths[video_id], start_s, end_s, Path(folder) / "sound.wav").read_bytes()
        with wave.open(io.BytesIO(data)) as wav:
            seconds = wav.getnframes() / wav.getframerate()
        return (base64.b64encode(data).decode("ascii"),
                {"mode": "parts", "seconds": round(seconds, 6), "bytes": len(data), "format": "wav"})

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            clips, self._clips = self._clips, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if clips is not None:
            clips.cleanup()
