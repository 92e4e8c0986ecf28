"""Decode and encode video through ffmpeg (commands built with ffmpeg-python, frames piped raw).

The ffmpeg binary is ``$STREAMCUE_FFMPEG``, else ``ffmpeg`` on the PATH, else the static build
inside the ``imageio-ffmpeg`` wheel. Metadata comes from ``imageio_ffmpeg``'s header parser, so
no ``ffprobe`` is needed (the wheel ships none).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.errors import InputError, MissingExtraError, ServiceError
from streamcue.extras import require
from streamcue.interrupt import on_interrupt


__all__ = ["ffmpeg_exe", "ffmpeg_version", "VideoInfo", "probe", "display_rotation", "sample_aspect", "parse_ratio",
           "shown_size", "read_frames", "FrameWriter",
           "jpeg_frames", "Jpeg", "frame_size", "cut_clip", "cut_audio", "AUDIO_RATE"]


@cache
def ffmpeg_exe() -> str:
    """The ffmpeg binary to run; a clear error naming both ways to get one."""
    env = os.environ.get("STREAMCUE_FFMPEG")
    if env:
        if not Path(env).is_file():
            raise InputError("STREAMCUE_FFMPEG does not point to a file", file=env)
        return env
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg
    except ImportError:
        raise MissingExtraError("no ffmpeg: install the system package (apt install ffmpeg) or "
                                "pip install 'streamcue[video]' (imageio-ffmpeg ships a static ffmpeg)") from None
    return imageio_ffmpeg.get_ffmpeg_exe()


@cache
def ffmpeg_version() -> str:
    done = subprocess.run([ffmpeg_exe(), "-version"], capture_output=True, text=True)
    return (done.stdout.splitlines() or ["ffmpeg (unknown version)"])[0]


@dataclass(frozen=True)
class VideoInfo:
    width: int
    height: int
    fps: float
    duration_s: float
    codec: str
    has_audio: bool


def probe(path: str | Path) -> VideoInfo:
    """Size, frame rate, duration, codec and audio presence; a one-line error for non-video input.

    A file is read once while it stays the same file (device, inode, size, modification and change times): the
    evidence check and the builders ask again for every span and record of a video (each read starts ffmpeg)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None or not path.is_file():
        raise InputError("video file not found", file=path)
    return _probe(path, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))


@lru_cache(maxsize=1024)
def _probe(path: Path, _same_file: tuple[int, ...]) -> VideoInfo:
    """:func:`probe` of ``path`` as it is while its stat (``_same_file``) is unchanged; an error is not kept. Read
    from ``ffmpeg -i``'s header (:func:`_stream_header`, which the rotation and the sample aspect ratio are read
    from too) by imageio-ffmpeg's parser of that header, the one its reader runs: one ffmpeg process a file."""
    require("imageio_ffmpeg", "video", "imageio-ffmpeg")
    from imageio_ffmpeg._parsing import parse_ffmpeg_header

    header = _stream_header(path)
    try:
        meta = parse_ffmpeg_header(header)
    except (IndexError, AttributeError, ValueError):  # no video stream, or a header it cannot read
        raise InputError(_unreadable(path, header), file=path) from None
    turned = _rotation_problem(path, header)
    if turned:
        raise InputError(turned, file=path)
    width, height = meta.get("source_size") or (0, 0)
    fps = float(meta.get("fps") or 0)
    if not width or not height or fps <= 0:
        raise InputError(f"not a readable video (size {width}x{height}, {fps} fps)", file=path)
    if display_rotation(path, header) in (90, 270):  # frames come as shown: turned by a quarter
        width, height = height, width
    return VideoInfo(int(width), int(height), fps, float(meta.get("duration") or 0.0), str(meta.get("codec", "?")),
                     bool(meta.get("audio_codec")))


def _unreadable(path: Path, header: str) -> str:
    """Why ``path``'s header names no readable video stream: rotation metadata off a quarter turn (ffmpeg decodes such
    a file, but imageio-ffmpeg's header parser fails on some, such as 45 degrees), with how to re-mux it; else no
    video stream."""
    return _rotation_problem(path, header) or "not a readable video (ffmpeg found no video stream)"


def _rotation_problem(path: Path, header: str) -> str | None:
    """Rotation metadata that is not a quarter turn, in words with the command that re-muxes ``path`` without it; else
    None. ffmpeg turns the frames of 92 degrees by that angle inside the stored frame (its corners cut, black filling
    the rest) where a player shows them turned whole, and those of 89.2 so too, while it turns 90.5 by a quarter turn:
    only a quarter turn is taken."""
    degrees = _stated_rotation(header)
    if degrees % 90 == 0:
        return None
    fixed = path.with_name(f"{path.stem}.unrotated{path.suffix}")
    return (f"rotation metadata of {degrees:g} degrees (not a quarter turn): streamcue cannot show its frames as a "
            f"player would; re-mux it without the rotation: ffmpeg -display_rotation 0 -i {shlex.quote(str(path))} "
            f"-c copy {shlex.quote(str(fixed))}")


@lru_cache(maxsize=1024)
def _header(path: Path, _same_file: tuple[int, ...]) -> str:
    """What ``ffmpeg -i`` says of ``path`` while its stat (``_same_file``) is unchanged."""
    return subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(path)], capture_output=True, text=True,
                          errors="replace").stderr


def _stream_header(path: str | Path) -> str:
    """What ``ffmpeg -i`` says of ``path`` (its streams, their size, sample aspect ratio and side data), read once
    while it stays the same file."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        return ""
    return _header(path, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))


def display_rotation(path: str | Path, header: str | None = None) -> int:
    """Degrees (counter-clockwise) of the video stream's rotation metadata (its display matrix), 0 when none: a quarter
    turn (:func:`probe` refuses any other), what :func:`read_frames` applies, so that frames come as shown and
    :func:`probe`'s size is the shown one."""
    return round(_stated_rotation(header if header is not None else _stream_header(path))) % 360


def _stated_rotation(header: str) -> float:
    """Degrees of rotation metadata as ffmpeg's header states them (two decimals), 0 when none."""
    found = re.search(r"rotation of (-?[0-9.]+) degrees", header)
    return float(found.group(1)) if found else 0.0


def sample_aspect(path: str | Path) -> Fraction:
    """The width over the height of one pixel of :func:`read_frames`' frames as a player shows them (the video
    stream's sample aspect ratio, inverted when its rotation metadata turns it by 90 or 270 degrees); 1 when the
    file states none (ffmpeg's 0:1 or N/A). The container's ratio (an MP4 ``pasp`` box, a Matroska display size:
    ffmpeg's unbracketed ``SAR a:b DAR``) comes before the codec's (bracketed), as ffmpeg itself shows the frames.
    Frames are square-pixelled as shown at :func:`shown_size`."""
    header = _stream_header(path)
    video = re.search(r"Video:.*", header)
    line = video.group(0) if video else ""
    for pattern in (r"(?<=, )SAR (\d+:\d+) DAR", r"\[SAR (\d+:\d+) DAR"):
        found = re.search(pattern, line)
        try:
            sar = parse_ratio(found.group(1)) if found else None
        except ValueError:  # ffmpeg's 0:1: no ratio stated there
            sar = None
        if sar is not None:
            return 1 / sar if display_rotation(path, header) in (90, 270) else sar
    return Fraction(1)


def parse_ratio(text: Any) -> Fraction:
    """The ratio ``"a:b"`` (a sample aspect ratio as ffmpeg and the anonymization report write it) as ``a / b``;
    a :class:`ValueError` naming the text for anything else: not a string, not two parts, a part that is not a
    whole number above 0 written in ASCII digits (``0:1``, ``-2:1``, ``1.5:1``, ``2/1``, `` 2:1``, ``2_0:1``)."""
    parts = text.split(":") if isinstance(text, str) else []
    if len(parts) != 2 or not all(part.isascii() and part.isdigit() and int(part) > 0 for part in parts):
        raise ValueError(f"{text!r} is not a ratio a:b of two whole numbers above 0")
    return Fraction(int(parts[0]), int(parts[1]))


def shown_size(width: int, height: int, sar: Fraction) -> tuple[int, int]:
    """The size at which frames of ``width`` x ``height`` pixels of aspect ``sar`` are shown with square pixels:
    wider when ``sar`` is above 1, taller when below (never fewer pixels than stored), in even numbers."""
    if sar == 1:
        return width, height
    if sar > 1:
        return 2 * round(width * sar / 2), height
    return width, 2 * round(height / sar / 2)


_CHILDREN: weakref.WeakSet[subprocess.Popen] = weakref.WeakSet()


def kill_children() -> None:
    """Kill every ffmpeg process this process started that still runs (on Ctrl-C or SIGTERM)."""
    for proc in list(_CHILDREN):
        if proc.poll() is None:
            proc.kill()
            proc.wait()


on_interrupt(kill_children)


def _run(stream: Any, **pipes: Any) -> tuple[subprocess.Popen, Any]:
    ffmpeg = require("ffmpeg", "video", "ffmpeg-python")
    args = ffmpeg.compile(stream.global_args("-hide_banner", "-loglevel", "error", "-nostdin"), cmd=ffmpeg_exe())
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, stderr=log, **pipes)
    _CHILDREN.add(proc)
    return proc, log


def _log_text(log: Any) -> str:
    log.seek(0)
    lines = log.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no message"


def read_frames(path: str | Path, info: VideoInfo, *, fps: float | None = None,
                size: tuple[int, int] | None = None, span: tuple[float, float] | None = None) -> Iterator[np.ndarray]:
    """BGR frames (H, W, 3) uint8, as shown: ffmpeg applies the rotation metadata (a phone's display matrix,
    :func:`display_rotation`) unless told not to, and :func:`probe`'s size is the turned one; ``fps`` resamples
    (e.g. 1 for captions), ``size`` scales, ``span`` = (start_s, end_s) decodes only that part (the first frame
    is the one at start_s)."""
    ffmpeg = require("ffmpeg", "video", "ffmpeg-python")
    width, height = size or (info.width, info.height)
    seek = {"ss": span[0], "t": max(0.0, span[1] - span[0])} if span is not None else {}
    stream = ffmpeg.input(str(path), **seek)
    if fps is not None:
        stream = stream.filter("fps", fps=fps)
    if size is not None:
        stream = stream.filter("scale", width, height)
    proc, log = _run(stream.output("pipe:", format="rawvideo", pix_fmt="bgr24"), stdout=subprocess.PIPE)
    frame_bytes = width * height * 3
    finished = False
    try:
        while True:
            data = bytearray(frame_bytes)  # each frame its own writable buffer: a consumer may change it in place
            if proc.stdout.readinto(data) < frame_bytes:
                break
            yield np.frombuffer(data, np.uint8).reshape(height, width, 3)
        finished = True
    finally:
        if not finished:  # closed early or interrupted: stop the decoder, whatever it was doing
            proc.kill()
        proc.stdout.close()
        code = proc.wait()
        if finished and code != 0:
            raise InputError(f"ffmpeg could not decode it: {_log_text(log)}", file=path)
        log.close()


class FrameWriter:
    """Encode BGR frames to H.264 (yuv420p, or yuv444p for odd sizes) at the source's frame rate.

    ``audio_from`` copies the audio of that file into the output (only with --keep-audio).
    Call :meth:`close` to finish; :meth:`abort` kills the encoder. ``threads``: the encoder's (None:
    x264's default, from the CPUs this process may use; its bytes depend on the count). ``convert``: who turns
    BGR into yuv420p: ``ffmpeg`` (its scaler, in the encoder's process) or ``opencv`` (``cv2.cvtColor``, in the
    calling thread: BT.601 limited range as ffmpeg's, less CPU, half the bytes through the pipe; the ``anonymize``
    extra). Odd sizes are encoded yuv444p, converted by ffmpeg whatever ``convert`` says.
    """

    def __init__(self, path: str | Path, width: int, height: int, fps: float, *, crf: int = 18,
                 preset: str = "veryfast", audio_from: str | Path | None = None, threads: int | None = None,
                 convert: str = "ffmpeg") -> None:
        ffmpeg = require("ffmpeg", "video", "ffmpeg-python")
        self.path = Path(path)
        if not self.path.parent.is_dir():  # said as such before ffmpeg starts, not as its "Error opening output"
            there = self.path.parent.exists()
            raise InputError(f"its folder {'is a file' if there else 'does not exist: make the folder first'}",
                             file=self.path)
        if self.path.is_dir():
            raise InputError("is a folder: give a file name to write the video to", file=self.path)
        pix_fmt = "yuv420p" if width % 2 == 0 and height % 2 == 0 else "yuv444p"
        if convert not in ("ffmpeg", "opencv"):
            raise ValueError(f"convert must be ffmpeg or opencv, got {convert!r}")
        self._cv2 = require("cv2", "anonymize", "opencv-python") if convert == "opencv" and pix_fmt == "yuv420p" \
            else None
        #: what the encoder writes and what converted the BGR frames to it, as a report states them
        self.pix_fmt, self.converted_by = pix_fmt, "ffmpeg" if self._cv2 is None else "opencv"
        video = ffmpeg.input("pipe:", format="rawvideo", pix_fmt="bgr24" if self._cv2 is None else "yuv420p",
                             s=f"{width}x{height}", framerate=fps)
        options: dict[str, Any] = dict(vcodec="libx264", pix_fmt=pix_fmt, crf=crf, preset=preset, r=fps,
                                       movflags="+faststart", format="mp4")
        if threads is not None:
            options["threads"] = threads
        # with audio, the frames are encoded alone first and the audio added once their count is known (close)
        self._audio_from, self.fps = audio_from, fps
        self._encoded = self.path if audio_from is None else self.path.with_name(f".{self.path.name}.frames.mp4")
        out = ffmpeg.output(video, str(self._encoded), an=None, **options)
        self.proc, self._log = _run(out.overwrite_output(), stdin=subprocess.PIPE)
        self.frames = 0

    def write(self, frame: np.ndarray) -> None:
        try:
            if self._cv2 is not None:
                frame = self._cv2.cvtColor(frame, self._cv2.COLOR_BGR2YUV_I420)
            self.proc.stdin.write(np.ascontiguousarray(frame).data)  # the array's own buffer, not a copy
        except BrokenPipeError:
            self.proc.wait()
            raise ServiceError(f"ffmpeg stopped encoding {self.path}: {_log_text(self._log)}") from None
        self.frames += 1

    def close(self) -> None:
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            self._drop_frames_file()
            raise ServiceError(f"ffmpeg could not encode {self.path}: {_log_text(self._log)}")
        self._log.close()
        if self._audio_from is not None:
            self._add_audio()

    def _add_audio(self) -> None:
        """The encoded frames and ``audio_from``'s audio, both copied, into :attr:`path`, cut at the last frame's end:
        ffmpeg's ``-shortest`` in the encoding itself dropped the last frames when the audio ended a little before
        them (a 0.99 s sound under 1.0 s of video kept 9 of 10 frames)."""
        ffmpeg = require("ffmpeg", "video", "ffmpeg-python")
        try:
            out = ffmpeg.output(ffmpeg.input(str(self._encoded)).video, ffmpeg.input(str(self._audio_from)).audio,
                                str(self.path), c="copy", t=f"{self.frames / self.fps:.6f}", movflags="+faststart",
                                format="mp4")
            proc, log = _run(out.overwrite_output())
            if proc.wait() != 0:
                raise ServiceError(f"ffmpeg could not add the audio to {self.path}: {_log_text(log)}")
            log.close()
        finally:
            self._drop_frames_file()

    def abort(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._log.close()
        self._drop_frames_file()

    def _drop_frames_file(self) -> None:
        """Remove the frames encoded alone, when the audio was to be added beside them (the output is the caller's)."""
        if self._encoded != self.path:
            self._encoded.unlink(missing_ok=True)


class Jpeg(bytes):
    """JPEG bytes that know their size in pixels (what a replay sample records as sent)."""

    width: int
    height: int

    def __new__(cls, data: bytes, width: int, height: int) -> Jpeg:
        obj = super().__new__(cls, data)
        obj.width, obj.height = width, height
        return obj


def frame_size(width: int, height: int, side: int | None = None, pixels: int | None = None) -> tuple[int, int]:
    """The decoded size: scaled down (never up) so the longest side is at most ``side`` and width x height at most
    ``pixels``, keeping the aspect ratio; even numbers (what the encoders want), at least 2."""
    scale = min(1.0, side / max(width, height)) if side else 1.0
    if pixels:
        scale = min(scale, (pixels / (width * height)) ** 0.5)
    even = (lambda v: int(v / 2) * 2) if pixels else (lambda v: round(v / 2) * 2)  # a budget is never exceeded
    return max(2, even(width * scale)), max(2, even(height * scale))


def jpeg_frames(path: str | Path, *, fps: float = 1.0, side: int | None = 448, quality: int = 85,
                span: tuple[float, float] | None = None, pixels: int | None = None) -> list[bytes]:
    """The video (or its ``span``) sampled at ``fps`` as JPEG images (:class:`Jpeg`, with their size), at most
    ``side`` pixels on the longest side and ``pixels`` pixels in all (aspect kept). One ffmpeg pass samples and
    scales; each frame is encoded as it arrives while ffmpeg decodes on."""
    cv2 = require("cv2", "video", "opencv-python")
    info = probe(path)
    size = frame_size(info.width, info.height, side, pixels)
    params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    return [Jpeg(cv2.imencode(".jpg", frame, params)[1].tobytes(), size[0], size[1])
            for frame in read_frames(path, info, fps=fps, size=size, span=span)]


def cut_clip(path: str | Path, start_s: float, end_s: float, out: str | Path, *, fps: float | None = None,
             size: tuple[int, int] | None = None, audio: bool = False, keep: Sequence[int] | None = None) -> Path:
    """The video from ``start_s`` to ``end_s`` as an H.264 MP4 (re-encoded, so the cut is exact), resampled to
    ``fps`` and scaled to ``size`` when given; for servers that decode video themselves. Without audio unless
    ``audio`` (then the source's sound, AAC, when it has any). ``keep`` (with ``fps``): only the frames of these
    indices of the resampled cut (0: the frame at ``start_s``), each at its own time (no frame repeated to fill
    the gaps), so the clip holds exactly the frames chosen."""
    ffmpeg = require("ffmpeg", "video", "ffmpeg-python")
    source = ffmpeg.input(str(path), ss=max(0.0, start_s), t=max(0.001, end_s - start_s))
    stream = source.video
    if fps is not None:
        stream = stream.filter("fps", fps=fps)
    chosen = {}
    if keep is not None:
        stream = stream.filter("select", "+".join(f"eq(n,{int(i)})" for i in sorted(set(keep))) or "0")
        chosen = {"fps_mode": "passthrough"}
    if size is not None:
        stream = stream.filter("scale", size[0], size[1])
    out = Path(out)
    sound = [source.audio] if audio and probe(path).has_audio else []
    options = {"acodec": "aac"} if sound else {"an": None}
    proc, log = _run(ffmpeg.output(stream, *sound, str(out), vcodec="libx264", preset="ultrafast", pix_fmt="yuv420p",
                                   movflags="+faststart", format="mp4", **options, **chosen).overwrite_output())
    return _finished(proc, log, out, f"cut {start_s:g}-{end_s:g} s", path)


#: Sample rate of the audio parts sent (16 kHz mono: what speech encoders such as Whisper read).
AUDIO_RATE = 16000


def cut_audio(path: str | Path, start_s: float, end_s: float, out: str | Path) -> Path:
    """The sound from ``start_s`` to ``end_s`` as a WAV file (16-bit PCM, mono, :data:`AUDIO_RATE` Hz)."""
    ffmpeg = require("ffmpeg", "video", "ffmpeg-python")
    stream = ffmpeg.input(str(path), ss=max(0.0, start_s), t=max(0.001, end_s - start_s)).audio
    out = Path(out)
    proc, log = _run(stream.output(str(out), acodec="pcm_s16le", ac=1, ar=AUDIO_RATE, format="wav")
                     .overwrite_output())
    return _finished(proc, log, out, f"cut the sound of {start_s:g}-{end_s:g} s", path)


def _finished(proc: subprocess.Popen, log: Any, out: Path, what: str, path: str | Path) -> Path:
    """``out`` once ffmpeg ended well; else a one-line error naming ``what`` it could not do and its log's words."""
    failed = proc.wait() != 0
    message = _log_text(log) if failed else ""
    log.close()
    if failed:
        raise InputError(f"ffmpeg could not {what}: {message}", file=path)
    return out
