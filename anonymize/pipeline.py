"""Blur every face and licence plate of a video; write the blurred copy and its report.

Four stages overlap: ffmpeg decodes in its own process (a thread reads its frames), the
detector looks in a thread (onnxruntime releases the GIL; its threads are set and never spin,
see :class:`~streamcue.anonymize.detectors.CenterFaceDetector`), hiding runs in a thread, and
the calling thread feeds the encoding ffmpeg process. Recall before precision:

* a low detector threshold, boxes padded by ``pad`` of their size;
* temporal dilation: a region found at time t is hidden from t - dilate_s to t + dilate_s,
  which covers missed detections and motion blur;
* a named detection schedule (``PRESETS``): frames looked at on every ``stride``-th frame at
  ``max_side`` pixels (large faces), and at full size on every ``full_every``-th frame (small
  faces); a frame between two looks also hides each face or plate at its position interpolated
  between them (boxes paired by nearest centre), and the dilation window is at least
  ``stride - 1`` frames;
* the window's regions are merged per frame (one running count, :class:`WindowMask`) and each
  merged region is pixelated once to a few blocks and smoothed, so hiding costs the same
  however long the window and however many faces it holds.

For many videos, ``streamcue anonymize DIR --engine ray`` runs one Ray Data task per file
(:mod:`streamcue.anonymize.ray_engine`); each call is independent and writes its own output
and report atomically.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.anonymize.blur import WindowMask, hide, pad_boxes, stamps
from streamcue.anonymize.detectors import make_face_detector, make_plate_detector
from streamcue.video import FrameWriter, ffmpeg_exe, ffmpeg_version, probe, read_frames
from streamcue.anonymize.report import REPORT_FORMAT, anonymization_status, sha256_file
from streamcue.errors import ConfigError, InputError
from streamcue.interrupt import EXIT_SIGTERM, Terminated, on_interrupt
from streamcue.io import write_json
from streamcue.progress import track
from streamcue.version import __version__

__all__ = ["VIDEO_SUFFIXES", "PRESETS", "DEFAULT_PRESET", "AnonymizeConfig", "FrameResult", "Anonymizer",
           "interpolate", "output_paths", "anonymize_video", "find_videos", "anonymize_many"]


VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".mpg", ".mpeg")


PRESETS: dict[str, dict[str, Any]] = {
    # every frame at full size, plates too: the most CenterFace and the cascade can find
    "thorough": {"max_side": None, "stride": 1, "full_every": 0, "plate_max_side": None, "plate_step": 1.05,
                 "plates_at_full_only": False, "pad": 0.25, "dilate_s": 0.2},
    # every frame at 640 px (large faces), every 2nd at full size (small faces); plates on every frame
    "balanced": {"max_side": 640, "stride": 1, "full_every": 2, "plate_max_side": None, "plate_step": 1.1,
                 "plates_at_full_only": False, "pad": 0.25, "dilate_s": 0.2},
    # every 2nd frame at 640 px, every 6th at full size (small faces, plates); boxes carried between looks
    # (interpolated), padded and dilated more
    "fast": {"max_side": 640, "stride": 2, "full_every": 6, "plate_max_side": None, "plate_step": 1.1,
             "plates_at_full_only": True, "pad": 0.35, "dilate_s": 0.3},
}
DEFAULT_PRESET = "balanced"


@dataclass(frozen=True)
class AnonymizeConfig:
    face: str = "centerface"
    face_model: str | None = None
    face_threshold: float | None = None
    plate: str = "haar"
    plate_model: str | None = None
    plate_threshold: float | None = None
    preset: str = DEFAULT_PRESET   # named detection schedule (see PRESETS); the fields below override it
    max_side: int | None = 640    # detect on frames scaled to this longest side (None: full size)
    stride: int = 1               # detect on every stride-th frame
    full_every: int = 2           # instead at full size on every full_every-th frame (0: never)
    plate_max_side: int | None = None  # plates are looked for on frames scaled to this longest side
    plate_step: float = 1.1       # scale step of the plate cascade's search (smaller: finer, slower)
    plates_at_full_only: bool = False  # with two sizes, look for plates on the full-size looks only
    pad: float = 0.25             # face boxes grow by this share of their size on each side
    plate_pad: float = 0.1
    dilate_s: float = 0.2         # seconds before and after a detection that stay hidden
    keep_audio: bool = False
    crf: int = 18
    threads: int | None = None    # detector threads (None: the cores this process may use)

    def __post_init__(self) -> None:
        if self.stride < 1 or self.full_every < 0 or self.dilate_s < 0 or self.pad < 0 or self.plate_pad < 0:
            raise ConfigError("stride must be >= 1 and full_every, dilate_s, pad, plate_pad >= 0")
        if self.preset not in PRESETS:
            raise ConfigError(f"unknown preset {self.preset!r}; known: {', '.join(PRESETS)}")

    @classmethod
    def from_preset(cls, preset: str = DEFAULT_PRESET, **overrides: Any) -> AnonymizeConfig:
        """The preset's detection schedule, then every override that is not None."""
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        given = {k: v for k, v in overrides.items() if v is not None}
        return cls(preset=preset, **{**PRESETS[preset], **given})


@dataclass
class FrameResult:
    frame: np.ndarray
    mask: np.ndarray
    faces: int
    plates: int
    detected: bool = True


@dataclass
class _Detected:
    index: int
    frame: np.ndarray
    faces: np.ndarray | None = None   # padded boxes; None: not looked at
    plates: np.ndarray | None = None
    full: bool = False                # looked at full size (small faces too)


class Anonymizer:
    """Detectors plus the dilation window; usable on any frame iterator (files, arrays, tests)."""

    def __init__(self, options: AnonymizeConfig | None = None) -> None:
        self.options = options or AnonymizeConfig.from_preset()
        o = self.options
        self.face = make_face_detector(o.face, model=o.face_model, threshold=o.face_threshold, max_side=o.max_side,
                                       threads=o.threads)
        self.plate = make_plate_detector(o.plate, model=o.plate_model, threshold=o.plate_threshold,
                                         max_side=o.plate_max_side, step=o.plate_step)
        self._full = o.full_every if o.full_every and o.max_side and hasattr(self.face, "detect_at") else 0

    def window(self, fps: float) -> int:
        """Frames hidden on each side of a detection."""
        return max(int(np.ceil(self.options.dilate_s * fps - 1e-9)), self.options.stride - 1)

    def describe(self) -> dict[str, Any]:
        def one(det: Any) -> Any:
            return None if det is None else {"name": det.name, "version": det.version, "settings": det.settings}
        return {"face": one(self.face), "plate": one(self.plate)}

    def schedule(self) -> dict[str, Any]:
        """The detection schedule as the report states it."""
        o = self.options
        return {"preset": o.preset, "stride": o.stride, "max_side": o.max_side, "full_every": self._full,
                "plate_max_side": o.plate_max_side, "plate_step": o.plate_step,
                "plates_at_full_only": bool(o.plates_at_full_only and self._full)}

    def _look(self, item: _Detected, full: bool) -> _Detected:
        frame = item.frame
        h, w = frame.shape[:2]
        if self.face is None:
            faces = np.zeros((0, 5))
        else:
            faces = self.face.detect_at(frame, None) if full and self._full else self.face.detect(frame)
        skip_plates = self.options.plates_at_full_only and self._full and not full
        plates = self.plate.detect(frame) if self.plate and not skip_plates else np.zeros((0, 5))
        item.faces = pad_boxes(faces, self.options.pad, w, h)
        item.plates = pad_boxes(plates, self.options.plate_pad, w, h)
        item.full = full or not self._full
        return item

    def detect(self, frames: Iterable[np.ndarray]) -> Iterator[_Detected]:
        """Each frame with its detections when the schedule looks at it (the last frame always)."""
        stride, full = self.options.stride, self._full
        previous: _Detected | None = None
        for i, frame in enumerate(frames):
            if previous is not None:
                yield previous
            item = _Detected(i, frame)
            if full and i % full == 0:
                item = self._look(item, True)
            elif i % stride == 0:
                item = self._look(item, False)
            previous = item
        if previous is not None:  # the last frame is looked at (at full size with two sizes): nothing after it
            yield previous if previous.full and previous.faces is not None else self._look(previous, bool(full))

    def process(self, frames: Iterable[np.ndarray], fps: float, *, overlap: bool = False) -> Iterator[FrameResult]:
        """Hidden frames in order, each with the mask of what was hidden and its detection counts.

        ``overlap`` runs detection in its own thread, ahead of hiding.
        """
        detected = self.detect(frames)
        return self.hide_frames(_prefetch(detected, 4) if overlap else detected, fps)

    def hide_frames(self, items: Iterable[_Detected], fps: float) -> Iterator[FrameResult]:
        """Hide what the +-window asks for in each frame: the union of the regions found in the
        window (one running count, see :class:`WindowMask`) plus, on a frame between two
        detections, each region at its position interpolated between them."""
        d = self.window(fps)
        ahead = max(d, self.options.stride - 1, self._full - 1)   # frames read before one is hidden
        pending: deque[_Detected] = deque()
        looked: deque[_Detected] = deque()     # looked-at frames from j - d (or the last before it) on
        full: deque[_Detected] = deque()       # full-size looks from the last one before j on
        added: deque[tuple[int, list]] = deque()
        window: WindowMask | None = None
        last_added = -1

        def between(j: int, seq: deque[_Detected]) -> list:
            before = [x for x in seq if x.index < j]
            after = [x for x in seq if x.index > j]
            if not before or not after:
                return []
            p, n = before[-1], after[0]
            w = (j - p.index) / (n.index - p.index)
            reach = max(1.0, (n.index - p.index) / 2)  # faces move further between looks far apart
            return stamps(interpolate(p.faces, n.faces, w, reach), interpolate(p.plates, n.plates, w, reach))

        def emit(item: _Detected) -> FrameResult:
            nonlocal window, last_added
            j = item.index
            if window is None:
                window = WindowMask(item.frame.shape[:2])
            for x in looked:
                if last_added < x.index <= j + d:
                    regions = stamps(x.faces, x.plates)
                    window.add(regions)
                    added.append((x.index, regions))
                    last_added = x.index
            while added and added[0][0] < j - d:
                window.remove(added.popleft()[1])
            extra = [] if item.faces is not None else between(j, looked)
            if self._full and not item.full:
                extra += between(j, full)
            mask = window.mask(extra)
            while len(looked) > 1 and looked[1].index <= j - d:
                looked.popleft()
            while len(full) > 1 and full[1].index <= j:
                full.popleft()
            own = item.faces is not None
            return FrameResult(hide(item.frame, mask), mask, len(item.faces) if own else 0,
                               len(item.plates) if own else 0, own)

        for item in items:
            if item.faces is not None:
                looked.append(item)
                if item.full:
                    full.append(item)
            pending.append(item)
            if len(pending) > ahead:
                yield emit(pending.popleft())
        while pending:
            yield emit(pending.popleft())


def interpolate(a: np.ndarray, b: np.ndarray, w: float, reach: float = 1.0) -> np.ndarray:
    """Boxes a fraction ``w`` of the way from ``a`` to ``b``, pairing each box of ``a`` with the
    box of ``b`` whose centre is nearest (within ``reach`` times the box's own size); unpaired
    boxes are left to the dilation window."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((0, 4), np.int32)
    ca, cb = (a[:, :2] + a[:, 2:]) / 2, (b[:, :2] + b[:, 2:]) / 2
    dist = np.linalg.norm(ca[:, None, :] - cb[None, :, :], axis=2)
    reach = np.maximum(a[:, 2] - a[:, 0], a[:, 3] - a[:, 1])[:, None] * reach
    out, used = [], set()
    for i, k in sorted(((i, int(np.argmin(dist[i]))) for i in range(len(a))), key=lambda p: dist[p[0], p[1]]):
        if k in used or dist[i, k] > reach[i, 0]:
            continue
        used.add(k)
        out.append((i, np.round(a[i] * (1 - w) + b[k] * w)))
    return np.asarray([box for _, box in sorted(out, key=lambda p: p[0])], np.int32).reshape(-1, 4)


def _prefetch(items: Iterator[Any], size: int = 8) -> Iterator[Any]:
    """Run ``items`` in a thread, ``size`` ahead (decoding overlaps detection)."""
    q: queue.Queue = queue.Queue(maxsize=size)
    done = object()

    def work() -> None:
        try:
            for item in items:
                q.put(item)
        except BaseException as exc:  # handed to the consumer
            q.put(exc)
        q.put(done)

    threading.Thread(target=work, daemon=True).start()
    while (item := q.get()) is not done:
        if isinstance(item, BaseException):
            raise item
        yield item


def output_paths(video: str | Path, out_dir: str | Path) -> tuple[Path, Path]:
    """Where the blurred video and its report go: ``OUT/<stem>.mp4`` and ``OUT/<stem>.anonymization.json``."""
    stem = Path(video).stem
    return Path(out_dir) / f"{stem}.mp4", Path(out_dir) / f"{stem}.anonymization.json"


def anonymize_video(video: str | Path, out_dir: str | Path, options: AnonymizeConfig | None = None, *,
                    anonymizer: Anonymizer | None = None) -> dict[str, Any]:
    """Blur one video into ``out_dir``; returns the report (also written beside the output).

    Nothing is left behind on failure: the output is encoded to a temporary file and renamed
    only after the encoder finished and the result was checked.
    """
    anonymizer = anonymizer or Anonymizer(options)
    options = anonymizer.options
    video, out_dir = Path(video), Path(out_dir)
    info = probe(video)
    out_path, report_path = output_paths(video, out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{out_path.name}.tmp.mp4"
    started = time.perf_counter()
    writer = FrameWriter(tmp, info.width, info.height, info.fps, crf=options.crf,
                         audio_from=video if options.keep_audio and info.has_audio else None)
    face_counts: list[int] = []
    plate_counts: list[int] = []
    hidden_share = 0.0
    looked = 0
    try:
        # four stages at once: ffmpeg decodes (a process, read by a thread), the detector looks (a thread),
        # hiding (a thread) and this thread feeds the encoding ffmpeg process
        results = anonymizer.process(_prefetch(read_frames(video, info)), info.fps, overlap=True)
        expected = round(info.duration_s * info.fps) or None
        for result in track(_prefetch(results, 4), f"anonymizing {video.name}", total=expected):
            writer.write(result.frame)
            face_counts.append(result.faces)
            plate_counts.append(result.plates)
            looked += result.detected
            hidden_share += float(result.mask.mean())
        writer.close()
    except BaseException:
        writer.abort()
        tmp.unlink(missing_ok=True)
        raise
    wall = time.perf_counter() - started
    frames = len(face_counts)
    check = probe(tmp)
    problems = []
    if (check.width, check.height) != (info.width, info.height):
        problems.append(f"size changed to {check.width}x{check.height}")
    if abs(check.fps - info.fps) > 0.01:
        problems.append(f"frame rate changed to {check.fps}")
    if info.duration_s and abs(check.duration_s - info.duration_s) > max(0.1, 2 / info.fps):
        problems.append(f"duration changed from {info.duration_s:.2f} s to {check.duration_s:.2f} s")
    if frames == 0:
        problems.append("no frames decoded")
    if problems:  # a failed result is never left under the final name
        tmp.unlink(missing_ok=True)
        raise InputError(f"anonymization failed, nothing written: {'; '.join(problems)}", file=video)
    os.replace(tmp, out_path)

    def counts(values: list[int]) -> dict[str, Any]:
        return {"total": int(sum(values)), "frames_with": int(sum(v > 0 for v in values)),
                "max_per_frame": int(max(values, default=0)), "per_frame": values}

    detectors = anonymizer.describe()
    report = {
        "format": REPORT_FORMAT,
        "status": anonymization_status(problems, detectors),
        "problems": problems,
        "missing_detectors": [what for what in ("face", "plate") if not detectors.get(what)],
        "input": {"path": video.name, "sha256": sha256_file(video), **asdict(info)},
        "output": {"path": out_path.name, "sha256": sha256_file(out_path), "frames": frames,
                   "audio": "kept" if options.keep_audio and info.has_audio else "dropped"},
        "frames_processed": frames,
        "frames_detected": looked,
        "detectors": detectors,
        "settings": {"pad": options.pad, "plate_pad": options.plate_pad, "dilate_s": options.dilate_s,
                     "dilate_frames": anonymizer.window(info.fps),
                     **anonymizer.schedule(),
                     "blur": "ellipse for faces; each merged region pixelated to 5 blocks + gaussian"},
        "detections": {"face": counts(face_counts), "plate": counts(plate_counts)},
        "hidden_share_mean": hidden_share / frames if frames else 0.0,
        "wall_s": round(wall, 3),
        "fps": round(frames / wall, 2) if wall > 0 else None,
        "ffmpeg": {"binary": Path(ffmpeg_exe()).name, "version": ffmpeg_version()},  # never a local path
        "streamcue_version": __version__,
    }
    write_json(report_path, report)
    return report


def find_videos(path: str | Path) -> list[Path]:
    """A video file, or the video files of a folder (sorted, by suffix)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    return [path]


_WORKER: Anonymizer | None = None
_IN_JOB = False


def _worker_sigterm(signum: int, frame: Any) -> None:
    if _IN_JOB:  # unwind through anonymize_video: its encoder is killed and its temporary file removed
        raise Terminated()
    os._exit(EXIT_SIGTERM)


def _worker_init(options: AnonymizeConfig) -> None:
    """A worker process: the parent alone answers Ctrl-C; SIGTERM (from the parent) ends it cleanly."""
    import signal

    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_sigterm)
    _WORKER = Anonymizer(options)


def _worker_run(video: Path, out_dir: Path) -> dict[str, Any]:
    global _IN_JOB
    _IN_JOB = True
    try:
        return anonymize_video(video, out_dir, anonymizer=_WORKER)
    except Terminated:
        os._exit(EXIT_SIGTERM)  # cleaned up already; never go on to the next video
    finally:
        _IN_JOB = False


def _stop_workers(pool: Any) -> None:
    """SIGTERM every worker, wait for them to clean up (then SIGKILL), drop what was queued."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()
    pool.shutdown(wait=False, cancel_futures=True)


def anonymize_many(videos: list[Path], out_dir: Path, options: AnonymizeConfig, workers: int = 1) -> Iterator[
        tuple[Path, dict[str, Any] | BaseException]]:
    """``(video, report or error)`` per video, in completion order; ``workers`` processes.

    Close the generator (or let Ctrl-C/SIGTERM reach it) and the worker processes are stopped
    and their temporary files removed; nothing keeps encoding in the background.
    """
    if workers <= 1:
        anonymizer = Anonymizer(options)
        for video in videos:
            try:
                yield video, anonymize_video(video, out_dir, anonymizer=anonymizer)
            except Exception as exc:  # reported per file; the others go on
                yield video, exc
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawned, not forked: a fork copies onnxruntime's thread pools and this process's threads half-way
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(options,))
    stop = lambda: _stop_workers(pool)  # noqa: E731
    on_interrupt(stop)
    finished = False
    try:
        futures = {pool.submit(_worker_run, v, out_dir): v for v in videos}
        for future in as_completed(futures):
            try:
                yield futures[future], future.result()
            except Exception as exc:
                yield futures[future], exc
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _stop_workers(pool)
