"""Blur every face and licence plate of a video; write the blurred copy and its report.

Frames flow through a pipeline: ffmpeg decodes in its own process, a reader thread prefetches
frames, detection runs in the main thread (onnxruntime releases the GIL), a writer thread
feeds the encoding ffmpeg process. Recall before precision:

* a low detector threshold, boxes padded by ``pad`` of their size;
* temporal dilation: a region found at time t is hidden from t - dilate_s to t + dilate_s,
  which covers missed detections and motion blur;
* with ``stride`` > 1 (detect on every stride-th frame), a frame between two detections also
  hides each face or plate at its position interpolated between them (boxes paired by
  nearest centre), and the dilation window is at least ``stride - 1`` frames;
* the hidden pixels are pixelated to a few blocks and smoothed.

For thousands of video-hours, run :func:`anonymize_video` per file on an existing engine,
e.g. ``datasets.Dataset.from_dict({"path": paths}).map(fn, num_proc=N)`` or Ray Data's
``map``; each call is independent and writes its own output and report atomically.
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

from streamcue.anonymize.blur import obscure, pad_boxes, region_mask
from streamcue.anonymize.detectors import make_face_detector, make_plate_detector
from streamcue.anonymize.ffmpeg_io import FrameWriter, ffmpeg_exe, ffmpeg_version, probe, read_frames
from streamcue.anonymize.report import REPORT_FORMAT, anonymization_status, sha256_file
from streamcue.errors import ConfigError, InputError
from streamcue.interrupt import EXIT_SIGTERM, Terminated, on_interrupt
from streamcue.io import write_json
from streamcue.progress import track
from streamcue.version import __version__

__all__ = ["VIDEO_SUFFIXES", "AnonymizeConfig", "FrameResult", "Anonymizer", "interpolate", "output_paths",
           "anonymize_video", "find_videos", "anonymize_many"]


VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".mpg", ".mpeg")


@dataclass(frozen=True)
class AnonymizeConfig:
    face: str = "centerface"
    face_model: str | None = None
    face_threshold: float | None = None
    plate: str = "haar"
    plate_model: str | None = None
    plate_threshold: float | None = None
    max_side: int | None = 1280   # detect on frames scaled to this longest side (None: full size)
    pad: float = 0.25             # face boxes grow by this share of their size on each side
    plate_pad: float = 0.1
    dilate_s: float = 0.2         # seconds before and after a detection that stay hidden
    stride: int = 1               # detect on every stride-th frame
    keep_audio: bool = False
    crf: int = 18

    def __post_init__(self) -> None:
        if self.stride < 1 or self.dilate_s < 0 or self.pad < 0 or self.plate_pad < 0:
            raise ConfigError("stride must be >= 1 and dilate_s, pad, plate_pad >= 0")


@dataclass
class FrameResult:
    frame: np.ndarray
    mask: np.ndarray
    faces: int
    plates: int


class Anonymizer:
    """Detectors plus the dilation window; usable on any frame iterator (files, arrays, tests)."""

    def __init__(self, options: AnonymizeConfig | None = None) -> None:
        self.options = options or AnonymizeConfig()
        o = self.options
        self.face = make_face_detector(o.face, model=o.face_model, threshold=o.face_threshold, max_side=o.max_side)
        self.plate = make_plate_detector(o.plate, model=o.plate_model, threshold=o.plate_threshold)

    def window(self, fps: float) -> int:
        """Frames hidden on each side of a detection."""
        return max(int(np.ceil(self.options.dilate_s * fps - 1e-9)), self.options.stride - 1)

    def describe(self) -> dict[str, Any]:
        def one(det: Any) -> Any:
            return None if det is None else {"name": det.name, "version": det.version, "settings": det.settings}
        return {"face": one(self.face), "plate": one(self.plate)}

    def _detect(self, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h, w = frame.shape[:2]
        faces = self.face.detect(frame) if self.face else np.zeros((0, 5))
        plates = self.plate.detect(frame) if self.plate else np.zeros((0, 5))
        return pad_boxes(faces, self.options.pad, w, h), pad_boxes(plates, self.options.plate_pad, w, h)

    def process(self, frames: Iterable[np.ndarray], fps: float) -> Iterator[FrameResult]:
        """Hidden frames in order, each with the mask of what was hidden and its detection counts."""
        d, stride = self.window(fps), self.options.stride
        pending: deque[tuple[int, np.ndarray]] = deque()
        found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        empty = (np.zeros((0, 4), np.int32), np.zeros((0, 4), np.int32))

        def emit(j: int, frame: np.ndarray) -> FrameResult:
            near = [found.get(i, empty) for i in range(j - d, j + d + 1)]
            if j not in found:  # between two detections: hide where each region should be now
                before = [k for k in found if k < j]
                after = [k for k in found if k > j]
                if before and after:
                    p, n = max(before), min(after)
                    w = (j - p) / (n - p)
                    near.append((interpolate(found[p][0], found[n][0], w), interpolate(found[p][1], found[n][1], w)))
            faces = np.concatenate([f for f, _ in near])
            plates = np.concatenate([p for _, p in near])
            mask = region_mask(frame.shape[:2], faces, plates)
            own = found.get(j, empty)
            for i in [k for k in found if k < j - d]:
                del found[i]
            return FrameResult(obscure(frame, np.concatenate([faces, plates]), mask), mask, len(own[0]), len(own[1]))

        for i, frame in enumerate(frames):
            if i % stride == 0:
                found[i] = self._detect(frame)
            pending.append((i, frame))
            if len(pending) > d:
                yield emit(*pending.popleft())
        if pending and pending[-1][0] not in found:  # the last frame is always looked at
            found[pending[-1][0]] = self._detect(pending[-1][1])
        while pending:
            yield emit(*pending.popleft())


def interpolate(a: np.ndarray, b: np.ndarray, w: float) -> np.ndarray:
    """Boxes a fraction ``w`` of the way from ``a`` to ``b``, pairing each box of ``a`` with the
    box of ``b`` whose centre is nearest (within the box's own size); unpaired boxes are left
    to the dilation window."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((0, 4), np.int32)
    ca, cb = (a[:, :2] + a[:, 2:]) / 2, (b[:, :2] + b[:, 2:]) / 2
    dist = np.linalg.norm(ca[:, None, :] - cb[None, :, :], axis=2)
    reach = np.maximum(a[:, 2] - a[:, 0], a[:, 3] - a[:, 1])[:, None]
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
    try:
        results = anonymizer.process(_prefetch(read_frames(video, info)), info.fps)
        expected = round(info.duration_s * info.fps) or None
        for result in track(_prefetch(results, 4), f"anonymizing {video.name}", total=expected):
            writer.write(result.frame)
            face_counts.append(result.faces)
            plate_counts.append(result.plates)
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
        "frames_detected": (len(range(0, frames, options.stride))
                            + int(frames > 0 and (frames - 1) % options.stride != 0)),
        "detectors": detectors,
        "settings": {"pad": options.pad, "plate_pad": options.plate_pad, "dilate_s": options.dilate_s,
                     "dilate_frames": anonymizer.window(info.fps),
                     "stride": options.stride, "blur": "pixelate to 5 blocks + gaussian, ellipse for faces"},
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
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(workers, initializer=_worker_init, initargs=(options,))
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
