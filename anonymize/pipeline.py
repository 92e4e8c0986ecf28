"""Blur every face and licence plate of a video; write the blurred copy and its report.

Four stages overlap: ffmpeg decodes in its own process (a thread reads its frames), the
detector looks in a thread (onnxruntime releases the GIL; its threads are set and never spin,
see :class:`~streamcue.anonymize.detectors.CenterFaceDetector`), hiding runs in a thread, and
the calling thread feeds the encoding ffmpeg process. Recall before precision:

* a low detector threshold, boxes padded by ``pad`` of their size; a face scored between the
  track threshold and the threshold counts once linked to a face that reached the threshold
  (ByteTrack's two thresholds, see :mod:`streamcue.anonymize.tracks`);
* a named detection schedule (``PRESETS``) in seconds, whatever the frame rate: faces looked
  for every ``look_s`` at ``max_side`` pixels (large faces) and every ``full_s`` at full size
  (small faces), plates every ``plate_s`` (0: every frame); :meth:`Anonymizer.plan` turns it
  into frames for one video. At a look at ``max_side``, faces under ``follow_px`` high found
  at an earlier look are looked for again at full size in crops around them;
* the expensive looks (full size, the turned sweep, plates) by that clock (``looks="clock"``) or only
  where the frame asks for them (``looks="triggered"``: a scene change, motion outside the boxes
  followed, a track lost, a weak face no sweep saw, ``recheck_s`` without one), never sooner after
  the last look of their kind than the clock's spacing (:class:`_LookChoice`,
  :class:`~streamcue.anonymize.tracks.LookTriggers`); the report counts them by reason (``looks``);
* the camera's motion, measured on every frame (:class:`~streamcue.anonymize.tracks.CameraMotion`),
  keeps boxes in scene coordinates; each box found at a look is paired with the nearest box at
  the next look of its kind or, when the detector missed it there, at a later one up to
  ``bridge_s`` on (:class:`~streamcue.anonymize.tracks.Links`), and every frame between hides it
  at its interpolated position;
* temporal dilation: a region found at time t is hidden from t - dilate_s to t + dilate_s
  (moved with the camera), at least the gap between two looks;
* what a frame must hide is merged into one mask (the window as one running count,
  :class:`WindowMask`) and each merged region is pixelated once to a few blocks and smoothed,
  so hiding costs the same however long the window and however many faces it holds.

For many videos, ``streamcue anonymize DIR --engine ray`` runs one Ray Data task per file
(:mod:`streamcue.anonymize.ray_engine`); each call is independent and writes its own output
and report atomically.
"""

from __future__ import annotations

import errno
import math
import os
import queue
import signal
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.anonymize.blur import WindowMask, hide, pad_boxes, stamps, unturn_boxes
from streamcue.anonymize.canary import run_canary
from streamcue.anonymize.detectors import (DEFAULT_FACE_RUNTIME, DEVICES, asks_for_gpu, check_face_runtime,
                                           check_plate_search, make_face_detector, make_plate_detector)
from streamcue.anonymize.contact_sheet import MATCH, ContactSheet, contact_sheet_path
from streamcue.anonymize.tracks import (LOOK_KINDS, CameraMotion, Chain, Links, LookTriggers, crops_in_steps,
                                        follow_regions, lost_boxes, suppress)
from streamcue.video import (FrameWriter, display_rotation, ffmpeg_exe, ffmpeg_version, probe, read_frames,
                             sample_aspect, shown_size)
from streamcue.anonymize.report import (MEASURED, MEASURED_FOLLOW_SCALE, MEASURED_ORIENTATION,
                                        MEASURED_RUNTIMES, MEASURED_SCHEDULE, MEASURED_TURNED_FACES, REPORT_FORMAT,
                                        anonymization_status, frame_problem, frames_at, hidden_samples, report_problem,
                                        sar_problem, schedule_problems, sha256_file, turn_frames)
from streamcue.errors import ConfigError, InputError
from streamcue.interrupt import EXIT_SIGTERM, Terminated, held, held_back, on_interrupt
from streamcue.io import as_usual_file, read_json, write_json
from streamcue.seal import seal
from streamcue.progress import track
from streamcue.version import __version__

__all__ = ["VIDEO_SUFFIXES", "PRESETS", "DEFAULT_PRESET", "MEASURED", "LIMITS", "SHOWN_SAR", "SHOWN_SIDE_MAX",
           "ENCODER", "X264_PRESETS", "LOOKS", "AnonymizeConfig", "Schedule", "FrameResult", "Anonymizer",
           "output_paths", "already_done", "anonymize_video", "look_counts", "find_videos", "anonymize_many"]


VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".mpg", ".mpeg")


PRESETS: dict[str, dict[str, Any]] = {
    # every frame at full size, plates too: the most CenterFace and the cascade can find
    "thorough": {"max_side": None, "look_s": 0.0, "full_s": 0.0, "plate_s": 0.0, "plate_max_side": None,
                 "plate_step": 1.05, "plate_search": "frame",
                 "pad": 0.25, "dilate_s": 0.2, "follow_px": 0, "turn_s": 0.0, "looks": "clock"},
    # faces at 640 px 10 times a second, at full size every 0.4 s and, in crops, at every look for the small
    # or weakly found ones; boxes carried between looks; plates 10 times a second (every frame up to 10 fps),
    # where the frame's texture can hold one; boxes padded 35 % (turned faces' boxes are narrow)
    "balanced": {"max_side": 640, "look_s": 0.1, "full_s": 0.4, "plate_s": 0.1, "plate_max_side": None,
                 "plate_step": 1.1, "plate_search": "texture",
                 "pad": 0.35, "dilate_s": 0.2, "follow_px": 120, "turn_s": 0.5, "looks": "clock"},
    # faces at 640 px 5 times a second, at full size every 0.5 s (crops at every look as above; every 1 s
    # missed 0.98 face recall on ``turned`` at 1920x1080); plates every 0.2 s (upright only, as in every
    # preset, unless a turn found a face); boxes carried between looks, padded and dilated more
    "fast": {"max_side": 640, "look_s": 0.2, "full_s": 0.5, "plate_s": 0.2, "plate_max_side": None,
             "plate_step": 1.1, "plate_search": "texture",
             "pad": 0.35, "dilate_s": 0.3, "follow_px": 120, "turn_s": 1.0, "looks": "clock"},
}
DEFAULT_PRESET = "balanced"

#: How the expensive looks (faces at full size, the turned sweep, plates) are scheduled (``AnonymizeConfig.looks``):
#: ``clock``, at every one the preset's seconds give (schedule 1); ``triggered``, at those of them that what the frame
#: shows asks for (:class:`~streamcue.anonymize.tracks.LookTriggers`), never more, a still scene looked at again at
#: least every ``recheck_s`` (docs/anonymize.md "Looks where they are needed"). Every preset keeps the clock:
#: ``triggered`` missed the measured face recall on ``street`` turned 90 degrees (0.977, in its pixels and by rotation
#: metadata, 10 fps), so it is ``unmeasured`` (``AnonymizeConfig.unmeasured``).
LOOKS = ("clock", "triggered")

#: option -> (lowest, highest, both ends excluded): every number is finite and inside these, or refused.
LIMITS: dict[str, tuple[float, float, bool]] = {
    "face_threshold": (0.0, 1.0, True), "track_threshold": (0.0, 1.0, True), "plate_threshold": (0.0, 1.0, True),
    "max_side": (64, 16384, False), "plate_max_side": (64, 16384, False),
    "look_s": (0.0, 5.0, False), "full_s": (0.0, 5.0, False), "plate_s": (0.0, 5.0, False), "turn_s": (0.0, 5.0, False),
    "recheck_s": (0.0, 5.0, True),
    "stride": (1, 300, False), "full_every": (0, 300, False), "plate_every": (1, 300, False),
    "plate_step": (1.0, 2.0, True), "pad": (0.0, 1.0, False), "plate_pad": (0.0, 1.0, False),
    "dilate_s": (0.0, 5.0, False), "bridge_s": (0.0, 5.0, False), "follow_px": (0, 16384, False),
    "crf": (0, MATCH["most_crf"], False), "threads": (1, 1024, False), "encoder_threads": (1, 64, False),
}  # crf up to the one where a contact sheet still stands for the published frames (contact_sheet.MATCH)

#: How the blurred video is encoded (``streamcue.video.FrameWriter``), as the report states it. x264's
#: bytes depend on its thread count, and its default count follows the CPUs this process may use: a
#: fixed count (``AnonymizeConfig.encoder_threads``) makes the same input give the same bytes on any
#: machine and under any CPU affinity (tests/anonymize/test_anonymize.py, ``test_same_input_same_bytes``). Frames go
#: to the encoder as yuv420p, converted by OpenCV: on a 4 s 720p clip the encoder took 2.5 to 2.7 s of CPU given BGR
#: and 2.4 s given OpenCV's yuv420p (docs/anonymize.md, "The encoder is given yuv420p frames").
#: The report adds the pixel format written and what converted the frames to it (``FrameWriter.pix_fmt``,
#: ``converted_by``: ``yuv420p`` by ``opencv``, BT.601 limited range; odd sizes ``yuv444p`` by ``ffmpeg``).
ENCODER = {"codec": "libx264", "preset": "veryfast"}

#: x264's presets, fastest first (``AnonymizeConfig.encoder_preset``; ``ENCODER["preset"]`` by default). A
#: faster one takes less CPU for a larger file at the same crf: where many videos share a machine's cores
#: beside a GPU, the encoder is most of what is left on the CPU (docs/anonymize.md, "On a GPU").
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")

#: the CLI option of each setting, for messages
_OPTION = {"face_threshold": "--face-threshold", "track_threshold": "--track-threshold", "max_side": "--max-side",
           "stride": "--stride", "full_every": "--full-every", "plate_every": "--plate-every", "pad": "--pad",
           "dilate_s": "--dilate", "recheck_s": "--recheck"}


def _check_number(name: str, value: Any, low: float, high: float, open_: bool) -> None:
    """``value`` (None: not set) is a finite number within [low, high] ((low, high) when ``open_``)."""
    if value is None:
        return
    option = _OPTION.get(name, name)
    whole = isinstance(low, int) and isinstance(high, int)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not float(value).is_integer()):
        raise ConfigError(f"{option} must be {'a whole number' if whole else 'a number'}, got {value!r}")
    if not math.isfinite(value) or value > high or value < low or (open_ and value in (low, high)):
        span = f"above {low} and below {high}" if open_ else f"from {low} to {high}"
        raise ConfigError(f"{option} must be a {'whole' if whole else 'finite'} number {span}, got {value!r}")


@dataclass(frozen=True)
class AnonymizeConfig:
    face: str = "centerface"
    face_model: str | None = None
    face_threshold: float | None = None   # a face counts from this score (None: the detector's default)
    track_threshold: float | None = None  # CenterFace: a face scored from this up to face_threshold counts once
                                          # linked to one that reached it (None: 0.08, or face_threshold if lower)
    plate: str = "haar"
    plate_model: str | None = None
    plate_threshold: float | None = None
    preset: str = DEFAULT_PRESET   # named detection schedule (see PRESETS); the fields below override it
    max_side: int | None = 640    # detect on frames scaled to this longest side (None: full size)
    look_s: float = 0.1           # seconds between two looks for faces at max_side (0: every frame)
    full_s: float = 0.4           # seconds between two looks at full size (small faces; 0: every look)
    plate_s: float = 0.1          # seconds between two looks for plates (0: every frame)
    turn_s: float = 0.5           # seconds between two looks on the frame turned 90/180/270 (0: at every look for
                                  # faces); a turn where a face was found is looked at at every look for faces
                                  # while it keeps finding them (see TURNS)
    stride: int | None = None     # frames between two looks at max_side (overrides look_s)
    full_every: int | None = None  # frames between two looks at full size (overrides full_s; 0: never)
    plate_every: int | None = None  # frames between two looks for plates (overrides plate_s)
    plate_max_side: int | None = None  # plates are looked for on frames scaled to this longest side
    plate_step: float = 1.1       # scale step of the plate cascade's search (smaller: finer, slower)
    plate_search: str = "texture"  # where the cascade looks: the whole "frame", or where its "texture" can hold a
                                   # plate (anonymize.detectors.plate_regions)
    pad: float = 0.35             # face boxes grow by this share of their size on each side
    plate_pad: float = 0.1
    dilate_s: float = 0.2         # seconds before and after a detection that stay hidden
    bridge_s: float = 1.0         # a face or plate missed for up to this long is hidden where it was between
    follow_px: int = 120          # faces below this height, found at an earlier look, are looked for at full size
                                  # (in a crop around them) at every look at max_side (0: never)
    keep_audio: bool = False
    crf: int = 18
    threads: int | None = None    # detector threads (None: the cores this process may use)
    encoder_threads: int = 8      # x264's threads, whatever the machine: its bytes depend on them (see ENCODER)
    encoder_preset: str = ENCODER["preset"]  # x264's preset (X264_PRESETS): faster, a larger file at the same crf
    looks: str = "clock"          # expensive looks by the "clock", or "triggered" by what the frame shows (see LOOKS;
                                  # unmeasured)
    recheck_s: float = 1.0        # triggered: a still scene gets each expensive look at least this often (never
                                  # more often than the clock)
    device: str = "cpu"           # the face detector's: cpu, cuda (CenterFace in torch, half precision) or auto
                                  # (cuda when a CUDA device and the [gpu] extra are there); on a GPU: unmeasured
    face_runtime: str = DEFAULT_FACE_RUNTIME  # CenterFace on the CPU: onnxruntime, openvino-fp32 or openvino-bf16
                                              # (anonymize.detectors.FACE_RUNTIMES; docs/anonymize.md, "Runtimes")

    allow_unmeasured: bool = False  # run with settings outside MEASURED (the report's status is then "unmeasured")

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        check_plate_search(self.plate_search)
        check_face_runtime(self.face_runtime)
        if self.encoder_preset not in X264_PRESETS:
            raise ConfigError(f"--encoder-preset must be one of {', '.join(X264_PRESETS)}, got {self.encoder_preset!r}")
        if self.looks not in LOOKS:
            raise ConfigError(f"--looks must be one of {', '.join(LOOKS)}, got {self.looks!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"--device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        for name in ("max_side", "plate_max_side"):  # 0: full size, as the CLI's --max-side 0 says
            if getattr(self, name) == 0:
                object.__setattr__(self, name, None)
        for name, (low, high, open_) in LIMITS.items():
            _check_number(name, getattr(self, name), low, high, open_)
        track = self.track_threshold
        face = self.face_threshold if self.face_threshold is not None else 0.2  # CenterFace's default
        if track is not None and self.face == "centerface" and track > face:
            raise ConfigError(f"--track-threshold {track} is above --face-threshold {face}: "
                              "weak faces are those scored from the track threshold up to the face threshold")
        outside = self.unmeasured()
        if outside and not self.allow_unmeasured:
            raise ConfigError(f"{'; '.join(outside)}: outside the range where recall was measured "
                              f"(docs/anonymize.md); pass --allow-unmeasured to run anyway (the report's status is "
                              f"then 'unmeasured' and a release refuses it)")

    def unmeasured(self) -> list[str]:
        """The settings outside the range where recall was measured (see ``MEASURED``), each in words."""
        out = []
        if self.face == "centerface" and self.face_threshold is not None \
                and self.face_threshold > MEASURED["face_threshold"]:
            out.append(f"--face-threshold {self.face_threshold} is above {MEASURED['face_threshold']}")
        if self.face == "centerface" and self.track_threshold is not None \
                and self.track_threshold > MEASURED["track_threshold"]:
            out.append(f"--track-threshold {self.track_threshold} is above {MEASURED['track_threshold']}")
        if self.pad < MEASURED["pad"]:
            out.append(f"--pad {self.pad} is below {MEASURED['pad']}")
        if self.looks == "triggered":
            out.append("--looks triggered missed the measured face recall on a turned clip (0.977)")
        if self.full_every == 0 and self.max_side is not None and self.face == "centerface":
            out.append("--full-every 0 never looks for small faces at full size")
        if self.face == "centerface" and not asks_for_gpu(self.device):
            out += _unmeasured_runtime(self.face_runtime)
        if self.face == "centerface" and asks_for_gpu(self.device):
            out.append(f"--device {self.device} runs CenterFace in half precision on a GPU, whose recall was "
                       f"measured end to end in one run on one GPU only")
        # the schedule in seconds (a frame override is checked at the video's frame rate, in anonymize_video)
        return out + self._unmeasured_sweeps() + schedule_problems({
            "look_s": self.look_s if self.stride is None else None, "plate_s": self.plate_s if self.plate_every is None
            else None, "full_s": self.full_s if self.full_every is None else None, "full_every": self.full_every,
            "dilate_s": self.dilate_s, "max_side": self.max_side})

    def _unmeasured_sweeps(self) -> list[str]:
        """Settings the CLI has no option for, the Python API has: the turns' sweeps, the bridge across misses and
        the faces followed at full size, outside ``MEASURED_SCHEDULE`` (the presets' values), each in words."""
        measured, out = MEASURED_SCHEDULE, []
        if self.turn_s > measured["turn_s"]:
            out.append(f"turn_s {self.turn_s} sweeps the turned frames less often than the measured "
                       f"{measured['turn_s']} s")
        if self.bridge_s < measured["bridge_s"]:
            out.append(f"bridge_s {self.bridge_s} carries boxes across misses for less than the measured "
                       f"{measured['bridge_s']} s")
        if self.face == "centerface" and self.max_side is not None and self.follow_px < measured["follow_px"]:
            out.append(f"follow_px {self.follow_px} follows fewer small faces at full size than the measured "
                       f"{measured['follow_px']} px")
        return out

    def stated(self) -> dict[str, Any]:
        """The options that decide a run's output, as its report states them (``options``): every field but the
        detector's threads and ``allow_unmeasured``; a model file as its name and SHA-256, never its folder. A
        re-run skips a video only when its report states the same (:func:`already_done`)."""
        stated = {k: v for k, v in asdict(self).items() if k not in ("threads", "allow_unmeasured")}
        if self.looks == "clock":  # the schedule every report before LOOKS had: its outputs stay done
            del stated["looks"], stated["recheck_s"]
        for name in ("face_model", "plate_model"):
            path = stated[name] and Path(stated[name])
            stated[name] = path and {"name": path.name, "sha256": sha256_file(path) if path.is_file() else None}
        return stated

    @classmethod
    def from_preset(cls, preset: str = DEFAULT_PRESET, **overrides: Any) -> AnonymizeConfig:
        """The preset's detection schedule, then every override that is not None."""
        if preset not in PRESETS:
            raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
        given = {k: v for k, v in overrides.items() if v is not None}
        return cls(preset=preset, **{**PRESETS[preset], **given})


#: Why a runtime outside ``MEASURED_RUNTIMES`` is (docs/anonymize.md, "Runtimes").
_UNMEASURED_RUNTIMES = {
    "openvino-bf16": "hid less than onnxruntime on labelled clips (720p holdout upside down: face recall 0.955 against "
                     "1.000; docs/anonymize.md, \"Runtimes\")",
    "onnxruntime-int8": "hid less than onnxruntime on a labelled clip (900p holdout upside down: face recall 0.924 "
                        "against 1.000; docs/anonymize.md, \"Runtimes\")"}


def _unmeasured_runtime(runtime: str) -> list[str]:
    """Why CenterFace on the CPU by ``runtime`` is outside the measured range, in words (none: inside)."""
    if runtime in MEASURED_RUNTIMES:
        return []
    return [f"--face-runtime {runtime} {_UNMEASURED_RUNTIMES[runtime]}"]


@dataclass(frozen=True)
class Schedule:
    """The detection schedule of one video, in frames (from the preset's seconds and the frame rate)."""

    stride: int       # faces looked for on every stride-th frame (at max_side)
    full_every: int   # at full size instead on every full_every-th frame (0: no second size)
    plate_every: int  # plates looked for on every plate_every-th frame
    window: int       # frames hidden on each side of a detection
    fps: float
    turn_every: int = 1  # every turn looked at on every turn_every-th frame (a look for faces)
    turn_hold: int = 0   # a turn that found something is looked at at every look for faces for this many frames
    triggered: bool = False  # the expensive looks (full, the turned sweep, plates) only where needed (LOOKS)
    recheck: int = 0     # triggered: frames after which a still scene gets each expensive look again
    whole: bool = False  # faces looked for at full size only (no reduced size): every look for faces is one at full
    plate_sweep_every: int = 0  # a sweep on every plate_sweep_every-th frame looks for plates at SIDEWAYS too (0: none)

    def plate_sweep(self, i: int, face_turns: tuple[tuple[int, ...], tuple[int, ...]],
                    last: bool = False) -> tuple[int, ...]:
        """The :data:`SIDEWAYS` turns frame ``i``'s sweep (``face_turns``: :meth:`turns`) looks for plates at too: on
        every ``plate_sweep_every``-th frame and the last."""
        due = self.plate_sweep_every and (i % self.plate_sweep_every == 0 or last)
        return tuple(k for k in SIDEWAYS if k in face_turns[1]) if due else ()

    def turns(self, i: int, found: dict[int, int], last: bool = False,
              sweep: bool | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The turns (``TURNS``'s k) to look at on face look ``i``: (at this look's size, at ``max_side``).
        The first: those that found something at a look up to ``turn_hold`` frames back (``found``: k ->
        frame); the second: every other one on every ``turn_every``-th frame and the last (``sweep``: where
        the look was triggered instead)."""
        active = tuple(k for k in TURNS if i - found.get(k, -10**9) <= self.turn_hold)
        sweep = (i % self.turn_every == 0 or last) if sweep is None else sweep
        return active, tuple(k for k in TURNS if sweep and k not in active)

    def clock_looks(self, frames: int) -> dict[str, int]:
        """The expensive looks of each kind (``LOOK_KINDS``) the clock takes on a video of ``frames`` frames: every
        ``full_every``-th, ``turn_every``-th (a sweep of the turns, at a look for faces) and ``plate_every``-th
        frame from the first, and the last (a sweep there when it gets a look for faces at full size then)."""
        if frames < 1:
            return dict.fromkeys(LOOK_KINDS, 0)
        last = frames - 1

        def every(n: int) -> int:
            return len(range(0, frames, n)) + (last % n != 0)

        # the last frame's first pass looked at faces at full size: no second look (and sweep) there
        full_first = last % self.full_every == 0 if self.full_every else last % self.stride == 0
        sweeps = len(range(0, frames, self.turn_every)) + (last % self.turn_every != 0 and not full_first)
        full = every(self.full_every) if self.full_every else every(self.stride) if self.whole else 0
        return {"full": full, "turned": sweeps, "plates": every(self.plate_every)}

    def looks(self, i: int, last: bool = False) -> tuple[bool, bool, bool]:
        """(faces, at full size, plates) for frame ``i``; the last frame is always looked at."""
        full = bool(self.full_every) and (i % self.full_every == 0 or last)
        faces = full or i % self.stride == 0 or last
        return faces, full, i % self.plate_every == 0 or last


@dataclass
class FrameResult:
    frame: np.ndarray
    mask: np.ndarray
    faces: int
    plates: int
    detected: bool = True
    looks: dict[str, str] = field(default_factory=dict)  # the expensive looks taken on this frame: kind -> reason


@dataclass
class _Detected:
    index: int
    frame: np.ndarray
    faces: np.ndarray | None = None   # padded boxes; None: not looked at
    plates: np.ndarray | None = None  # None: not looked at
    full: bool = False                # looked at full size (small faces too)
    strong: np.ndarray | None = None  # per face box: scored at or above the face threshold
    chains: list[Chain] | None = None  # per face box: the chain it belongs to (set while hiding)
    found: np.ndarray | None = None   # the face boxes as found (N, 5), unpadded: where to look again
    camera: tuple[float, float] = (0.0, 0.0)  # where the camera is, in pixels from where it was at frame 0
    turned: tuple[int, ...] = ()      # the turns (TURNS's k) where this look found a face better than upright
    plate_turned: tuple[int, ...] = ()  # the sideways turns (SIDEWAYS) where this look's plate sweep found a plate
    why: dict[str, str] = field(default_factory=dict)  # the expensive looks taken here: kind (LOOK_KINDS) -> reason


class Anonymizer:
    """Detectors plus the dilation window; usable on any frame iterator (files, arrays, tests)."""

    def __init__(self, options: AnonymizeConfig | None = None) -> None:
        self.options = options or AnonymizeConfig.from_preset()
        o = self.options
        self.face = make_face_detector(o.face, model=o.face_model, threshold=o.face_threshold, max_side=o.max_side,
                                       threads=o.threads, track_threshold=o.track_threshold, device=o.device,
                                       runtime=o.face_runtime)
        # a face box counts from this score; weaker ones (CenterFace's track threshold) once linked to one
        self.threshold = float(getattr(self.face, "threshold", 0.0))
        self.plate = make_plate_detector(o.plate, model=o.plate_model, threshold=o.plate_threshold,
                                         max_side=o.plate_max_side, step=o.plate_step, search=o.plate_search)
        self._two_sizes = bool(o.max_side and hasattr(self.face, "detect_at"))
        # before anything is written: these settings must find a known face, or the run stops here; once per
        # process for a model (by its hash), runtime and settings
        known = getattr(self.face, "settings", None) or {}
        model = known.get("model_sha256", o.face_model)
        self.canary = run_canary(self.face, (o.face, model, known.get("runtime"), known.get("precision"),
                                             o.face_threshold, o.max_side), o.pad, self._two_sizes)
        # what each report states of these options, model files hashed once, as they were loaded
        self.stated = o.stated()

    def plan(self, fps: float) -> Schedule:
        """The schedule in frames at ``fps``: the preset's seconds, or the frame overrides."""
        o = self.options
        stride = o.stride if o.stride is not None else frames_at(o.look_s, fps)
        full = o.full_every if o.full_every is not None else frames_at(o.full_s, fps)
        full = full if self._two_sizes else 0
        plates = o.plate_every if o.plate_every is not None else frames_at(o.plate_s, fps)
        window = max(int(np.ceil(o.dilate_s * fps - 1e-9)), stride - 1)
        turn_every = turn_frames(o.turn_s, fps, stride)  # at a look for faces
        # plates swept sideways at the measured sweeps' pace (fast's 1 s), on a frame that has a sweep and a look for
        # plates (a multiple of both spacings, whatever the overrides): each costs a plate search
        both = math.lcm(turn_every, plates)
        plate_sweep = both * max(1, round(frames_at(MEASURED_SCHEDULE["turn_s"], fps) / both))
        return Schedule(stride, full, plates, window, fps, turn_every, max(turn_every, round(o.bridge_s * fps)),
                        o.looks == "triggered", frames_at(o.recheck_s, fps),
                        whole=o.max_side is None and o.face == "centerface", plate_sweep_every=plate_sweep)

    def window(self, fps: float) -> int:
        """Frames hidden on each side of a detection."""
        return self.plan(fps).window

    def describe(self) -> dict[str, Any]:
        def one(det: Any) -> Any:
            return None if det is None else {"name": det.name, "version": det.version, "settings": det.settings}
        return {"face": one(self.face), "plate": one(self.plate)}

    def schedule(self, fps: float = 10.0) -> dict[str, Any]:
        """The detection schedule as the report states it: the preset's seconds and, at ``fps``, frames."""
        o, plan = self.options, self.plan(fps)

        def seconds(frames: int | None, preset_s: float) -> float:  # a frame override, in seconds at this rate
            return preset_s if frames is None else round(frames / fps, 4)

        return {"preset": o.preset, "max_side": o.max_side, "look_s": seconds(o.stride, o.look_s),
                "full_s": seconds(o.full_every, o.full_s), "plate_s": seconds(o.plate_every, o.plate_s),
                "stride": plan.stride, "full_every": plan.full_every,
                "plate_every": plan.plate_every, "plate_max_side": o.plate_max_side, "plate_step": o.plate_step,
                "plate_search": o.plate_search if o.plate == "haar" else None,  # only the cascade searches
                "follow_px": o.follow_px if self._two_sizes else 0,
                # faces are looked for on the frame turned by each of these too, every turn_every frames, and at
                # every look for faces for turn_hold frames after a turn found one; plates: turned_plates
                "turns_deg": [90 * k for k in TURNS], "turn_s": o.turn_s, "turn_every": plan.turn_every,
                "turn_hold": plan.turn_hold, "turned_plates": MEASURED_SCHEDULE["turned_plates"],
                "turned_faces": MEASURED_TURNED_FACES, "follow_scale": MEASURED_FOLLOW_SCALE,
                # the expensive looks: every one the clock gives, or those of them a trigger asks for (see LOOKS)
                "looks": o.looks, "recheck_s": o.recheck_s if plan.triggered else None,
                "recheck_every": plan.recheck if plan.triggered else None}

    def _plate_thread(self) -> ThreadPoolExecutor:
        """The thread plates are looked for in: one per Anonymizer and process (a forked child makes its own)."""
        if getattr(self, "_plates_pid", None) != os.getpid():
            self._plates, self._plates_pid = ThreadPoolExecutor(1, thread_name_prefix="streamcue-plates"), os.getpid()
        return self._plates

    def _look(self, item: _Detected, faces: bool, full: bool, plates: bool,
              follow: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
              turns: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
              plate_turns: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())) -> _Detected:
        """Detections on ``item``'s frame; ``follow``: boxes found at earlier looks (moved with the
        camera) to look at again at full size, in crops around them turned as each was found, when this look is at
        max_side;
        ``turns``: the frame turned by these (``Schedule.turns``) is looked at too, at a look for faces;
        ``plate_turns``: turns where a plate sweep found a plate lately, looked at for plates, and the turns swept for
        plates here (:data:`SIDEWAYS`, :meth:`Schedule.plate_sweep`)."""
        frame = item.frame
        h, w = frame.shape[:2]
        # plates in a thread of their own while the face detector runs (both release the GIL): the cores
        # one of them leaves idle between its parallel parts go to the other
        plates_found = self._plate_thread().submit(self.plate.detect, frame) if plates and self.plate else None
        # faces on the frame turned 90/180/270 too, as the schedule says; plates there at turns where faces were
        # found, and at 90/270 where a sweep for plates found one (see TURNS, SIDEWAYS)
        every_turn = (*turns[0], *turns[1]) if faces else ()
        held_plates, sideways = plate_turns
        plate_turns = tuple(sorted({*turns[0], *held_plates})) if plates and self.plate else ()
        turned_plates = [self._plate_thread().submit(_turned, self.plate.detect, frame, plate_turns)] \
            if plate_turns else []
        sideways = tuple(k for k in sideways if k not in plate_turns) if plates and self.plate else ()
        plate_sweep = self._plate_thread().submit(_turned, self.plate.detect, frame, sideways) if sideways else None
        if faces:
            found = item.found = self._upright_faces(frame, full, follow)  # where to look again: each at its turn
            if every_turn and self.face is not None:
                item.turned, turned = self._turned_faces(frame, found[found[:, 6] == 0], full, turns)
                fresh = tuple(k for k in item.turned if k not in plate_turns)
                if fresh and plates and self.plate:  # a turn found at this sweep: its plates at this look too
                    turned_plates.append(self._plate_thread().submit(_turned, self.plate.detect, frame, fresh))
                item.found = np.concatenate([found, turned])  # each turn's faces followed at it, unsuppressed
                found = suppress(item.found)
            item.faces, scores = pad_boxes(found, self.options.pad, w, h, scores=True)
            item.strong = scores >= self.threshold
            item.full = full or not self._two_sizes
        if plates:
            found = plates_found.result() if plates_found is not None else np.zeros((0, 5))
            swept = plate_sweep.result() if plate_sweep is not None else np.zeros((0, 6), np.float32)
            item.plate_turned = _turns_that_add(swept, found[:, :5]) if len(swept) else ()
            found = np.concatenate([found[:, :5], swept[:, :5], *(f.result()[:, :5] for f in turned_plates)])
            item.plates = pad_boxes(found, self.options.plate_pad, w, h)
        return item

    def _turned_faces(self, frame: np.ndarray, found: np.ndarray, full: bool,
                      turns: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[tuple[int, ...], np.ndarray]:
        """Faces on ``frame`` turned as ``turns`` says (``Schedule.turns``: held, swept), in its pixels, and the turns
        where a strong one was found better than upright (``found``). A sweep looks at ``max_side`` (large faces) and
        keeps strong boxes only: weak boxes on a turned frame are mostly texture. A held turn, and a turn the sweep
        found a face at (looked at again at this look's size: small faces are seen at full size only), keeps weak
        boxes too, which count once linked to a strong one, as upright (``MEASURED_TURNED_FACES``)."""
        held, sweep = turns
        if not hasattr(self.face, "detect_at"):
            out = np.concatenate([_turned(self.face.detect, frame, held),
                                  self._strong(_turned(self.face.detect, frame, sweep))])
            return _turns_that_add(self._strong(out), found), _reduced(out, False, turned=True)
        at = None if full and self._two_sizes else self.options.max_side  # this look's size
        swept = self._strong(_turned(self.face.detect_at, frame, sweep, self.options.max_side))
        new = _turns_that_add(swept, found) if at != self.options.max_side else ()
        looked = _turned(self.face.detect_at, frame, (*held, *new), at)
        swept = swept[~np.isin(swept[:, 5], new)]
        out = np.concatenate([_reduced(looked, at is not None, turned=True), _reduced(swept, True, turned=True)])
        return _turns_that_add(self._strong(np.concatenate([looked, swept])), found), out

    def _upright_faces(self, frame: np.ndarray, full: bool,
                       follow: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> np.ndarray:
        """Faces on ``frame`` as it is shown (N, 7: box, score, found at reduced size, turn 0), and in crops at full
        size around ``follow``'s faces (``_small_faces``), each looked at at its turn: at a look at ``max_side``."""
        if self.face is None:
            return np.zeros((0, 7), np.float32)
        if full and self._two_sizes:
            return _reduced(self.face.detect_at(frame, None), False)
        found = _reduced(self.face.detect(frame), self._two_sizes)
        if not self._two_sizes or follow is None:
            return found
        h, w = frame.shape[:2]
        boxes, margins, turns = follow
        more = []
        for k in np.unique(turns):  # a face seen at a turn is looked for at that turn, in its crop
            crops = follow_regions(boxes[turns == k], w, h, margins[turns == k])
            if getattr(self.face, "crop_step", None):  # a few input sizes for a network that prepares per size
                crops = crops_in_steps(crops, w, h, self.face.crop_step)
            more += [_reduced(_turned(self.face.detect_at, frame[y1:y2, x1:x2], (int(k),), None), False, turned=True)
                     + np.float32([x1, y1, x1, y1, 0, 0, 0]) for x1, y1, x2, y2 in crops]
        return suppress(np.concatenate([found, *more])) if more else found

    def _strong(self, boxes: np.ndarray) -> np.ndarray:
        """The boxes scored at or above the face threshold."""
        return boxes[boxes[:, 4] >= self.threshold]

    def detect(self, frames: Iterable[np.ndarray], fps: float = 10.0, *, overlap: bool = False) -> Iterator[_Detected]:
        """Each frame with its detections when the schedule looks at it (the last frame always);
        ``overlap`` measures the camera's motion in a thread of its own, off the detector's path."""
        plan = self.plan(fps)
        moving = _with_camera(frames)
        previous: _Detected | None = None
        follow_px = self.options.follow_px if self._two_sizes else 0
        recent: deque[tuple[int, tuple[float, float], np.ndarray]] = deque()  # face looks of the last bridge_s
        reach = max(plan.stride, round(self.options.bridge_s * fps))
        turned_at: dict[int, int] = {}  # turn -> the last frame where a look on the frame so turned found something
        plates_at: dict[int, int] = {}  # sideways turn -> the last frame where a plate sweep found a plate there
        choice = _LookChoice(plan, faces=self.face is not None, plates=self.plate is not None)
        grey = None
        for i, (frame, position, grey) in enumerate(_prefetch(moving, 8) if overlap else moving):
            if previous is not None:
                yield previous
            item = _Detected(i, frame, camera=position)
            while recent and recent[0][0] < i - reach:
                recent.popleft()
            faces, full, plates, sweep = choice.choose(item, grey)
            # crops only matter at a look at reduced size: the other frames need no list of faces to follow
            follow = (_small_faces(recent, i, item.camera, follow_px, fps, _follow_reach(frame, 1), self.threshold)
                      if faces and not full else None)
            turns = plan.turns(i, turned_at, sweep=sweep)
            previous = self._look(item, faces, full, plates, follow=follow, turns=turns,
                                  plate_turns=(plan.turns(i, plates_at)[0], plan.plate_sweep(i, turns)))
            choice.seen(previous, grey)
            turned_at.update(dict.fromkeys(previous.turned, i))
            plates_at.update(dict.fromkeys(previous.plate_turned, i))
            if previous.found is not None and follow_px:
                recent.append((i, previous.camera, previous.found))
        if previous is not None:  # the last frame is looked at (at full size with two sizes): nothing after it
            faces, full, plates, sweep = choice.choose(previous, grey, last=True)
            turns = plan.turns(previous.index, turned_at, last=True, sweep=sweep)
            yield self._look(previous, faces, full, plates, turns=turns,
                             plate_turns=(plan.turns(previous.index, plates_at)[0],
                                          plan.plate_sweep(previous.index, turns, last=True)))

    def process(self, frames: Iterable[np.ndarray], fps: float, *, overlap: bool = False,
                inplace: bool = False) -> Iterator[FrameResult]:
        """Hidden frames in order, each with the mask of what was hidden and its detection counts.

        ``overlap`` runs detection in its own thread, ahead of hiding, and the camera's motion in
        another, ahead of detection; ``inplace`` hides in the given (writable) frames instead of
        copies.
        """
        detected = self.detect(frames, fps, overlap=overlap)
        return self.hide_frames(_prefetch(detected, 4) if overlap else detected, fps, inplace=inplace)

    def hide_frames(self, items: Iterable[_Detected], fps: float, *, inplace: bool = False) -> Iterator[FrameResult]:
        """Hide what the +-window asks for in each frame: the union of the regions found in the
        window (one running count, see :class:`WindowMask`) plus, on a frame between two looks of
        one kind (faces at any size, faces at full size, plates), what that kind found at its
        position interpolated between them; the frame is hidden once, with one mask."""
        plan = self.plan(fps)
        d = plan.window
        # boxes are linked across the longest gap between two looks of a kind: a triggered schedule's recheck too
        gap = max(plan.stride, plan.full_every, plan.plate_every, round(self.options.bridge_s * fps),
                  plan.recheck if plan.triggered else 0)
        ahead = max(d, gap)  # frames read before one is hidden
        pending: deque[_Detected] = deque()
        kinds = {"faces": Links(gap, fps), "full": Links(gap, fps), "plates": Links(gap, fps)}
        added: deque[tuple[int, list]] = deque()
        window: WindowMask | None = None
        entered: deque[_Detected] = deque()     # frames with detections not yet added to the window
        looks: deque[_Detected] = deque()       # frames with detections from j - d on (for a moving camera)
        none = np.zeros((0, 4), np.int32)

        def own(x: _Detected) -> tuple[np.ndarray, np.ndarray]:
            """The look's faces that count now (strong, or linked to a strong one) and its plates."""
            faces = none if x.faces is None else x.faces[[c.strong for c in x.chains]] if len(x.faces) else x.faces
            return faces, (x.plates if x.plates is not None else none)

        def emit(item: _Detected) -> FrameResult:
            nonlocal window
            j, camera = item.index, item.camera
            if window is None:
                window = WindowMask(item.frame.shape[:2])
            while entered and entered[0].index <= j + d:
                x = entered.popleft()
                regions = stamps(*own(x))
                window.add(regions)
                added.append((x.index, regions))
            while added and added[0][0] < j - d:
                window.remove(added.popleft()[1])
            while looks and looks[0].index < j - d:
                looks.popleft()
            faces = [kinds["faces"].at(j, camera) if item.faces is None else none]
            if plan.full_every and not item.full:
                faces.append(kinds["full"].at(j, camera))
            plates = [kinds["plates"].at(j, camera) if item.plates is None else none]
            for x in looks:  # the window's regions where a moving camera has carried them
                if x.index > j + d:
                    break
                shift = np.round(np.subtract(x.camera, camera)).astype(np.int32)
                if np.abs(shift).max() > 2:
                    f, q = own(x)
                    faces.append(_moved(f, shift, item.frame.shape))
                    plates.append(_moved(q, shift, item.frame.shape))
            zero = np.zeros(2, np.int32)
            mask = window.mask(stamps(_moved(np.concatenate(faces), zero, item.frame.shape),
                                      _moved(np.concatenate(plates), zero, item.frame.shape)))
            nf = sum(c.strong for c in item.chains) if item.faces is not None else 0
            np_ = len(item.plates) if item.plates is not None else 0
            return FrameResult(hide(item.frame, mask, inplace=inplace and item.frame.flags.writeable), mask, nf, np_,
                               item.faces is not None, item.why)

        for item in items:
            if _linked(item, kinds):
                entered.append(item)
                looks.append(item)
            pending.append(item)
            if len(pending) > ahead:
                yield emit(pending.popleft())
        while pending:
            yield emit(pending.popleft())


def _linked(item: _Detected, kinds: Mapping[str, Links]) -> bool:
    """Add a look's finds to the links of each kind it looked for (its faces chained, strong or not); True when it
    looked for anything."""
    if item.faces is not None:
        strong = item.strong if item.strong is not None else np.ones(len(item.faces), bool)
        item.chains = Chain.new(strong)
        kinds["faces"].add(item.index, item.faces, item.camera, item.chains)
        if item.full:
            kinds["full"].add(item.index, item.faces, item.camera, item.chains)
    if item.plates is not None:
        kinds["plates"].add(item.index, item.plates, item.camera)
    return item.faces is not None or item.plates is not None


#: How far a followed face may have moved since it was found, in lengths of the frame's short side per second (about
#: 290 px/s at 720p, a brisk walk across the frame): the crop around it grows by this, times the time. The short side,
#: not the height: a frame shown portrait (rotation metadata, turned pixels) holds faces of the size and speed the
#: same scene has landscape (``MEASURED_FOLLOW_SCALE``).
FOLLOW_SPEED = 0.4


def _follow_reach(frame: np.ndarray, seconds: float) -> float:
    """How far (px) a followed face may move on ``frame`` in ``seconds``: :data:`FOLLOW_SPEED` of its short side a
    second."""
    return FOLLOW_SPEED * min(frame.shape[:2]) * seconds


def _with_camera(frames: Iterable[np.ndarray]) -> Iterator[tuple[np.ndarray, tuple[float, float], np.ndarray]]:
    """Each frame with where the camera is and its small grey copy
    (:class:`~streamcue.anonymize.tracks.CameraMotion`)."""
    camera = CameraMotion()
    for frame in frames:
        position = camera.update(frame)
        yield frame, position, camera.grey


class _LookChoice:
    """Which looks each frame of one video gets, and why (``_Detected.why``): the clock's (``Schedule.looks``, the
    turned sweep every ``turn_every`` frames), or, on a ``triggered`` schedule, those that
    :class:`~streamcue.anonymize.tracks.LookTriggers` finds needed, never sooner after the last look of their kind
    than the clock's spacing. Looks for faces at ``max_side`` keep the clock either way."""

    def __init__(self, plan: Schedule, faces: bool = True, plates: bool = True) -> None:
        self.plan = plan
        self.sweeps, self.plates = faces, plates  # the detectors there are (a turned sweep looks for faces)
        every = {"full": plan.full_every or 1, "turned": plan.turn_every, "plates": plan.plate_every}
        self.triggers = LookTriggers(every, plan.recheck) if plan.triggered else None
        # (camera, boxes) of the last look of each kind: faces at each size (strong), plates, the weak faces no
        # strong one holds at the last sweep of the turns ("doubt")
        self._last: dict[tuple, tuple[tuple[float, float], np.ndarray]] = {}

    def choose(self, item: _Detected, grey: np.ndarray, last: bool = False) -> tuple[bool, bool, bool, bool]:
        """(faces, at full size, plates, sweep the turns) for ``item``'s frame, each look taken named with its
        reason in ``item.why``; ``last``: the second pass over the video's last frame (what the first looked at is
        not looked at again)."""
        i, plan = item.index, self.plan
        if self.triggers is None:
            faces, full, plates = plan.looks(i, last)
            why = dict.fromkeys(("full", "plates", "turned"), "last" if last else "clock")
            if i % plan.turn_every != 0 and not last:
                why.pop("turned")
        else:
            why = self._due(item, grey, last)
            full, plates = "full" in why, "plates" in why
            faces = full or i % plan.stride == 0 or last
        if last:
            faces = faces and not (item.faces is not None and item.full)
            plates = plates and item.plates is None
        if self.triggers is not None and faces and self.sweeps:
            why["turned"] = self.triggers.due("turned", i, grey, last)
        if plan.whole:  # one size: every look for faces is at full size, taken when the faces' clock says
            why["full"] = "last" if last else "clock"
        at_full = (full and bool(plan.full_every)) or plan.whole
        taken = {"full": faces and at_full and self.sweeps, "plates": plates and self.plates,
                 "turned": faces and self.sweeps and why.get("turned") is not None}
        for kind, on in taken.items():
            if on:
                item.why[kind] = why[kind]
                if self.triggers is not None:
                    self.triggers.looked(kind, i, grey)
        return faces, full, plates, taken["turned"]

    def _due(self, item: _Detected, grey: np.ndarray, last: bool) -> dict[str, str]:
        """The triggered looks at full size and for plates due on ``item``'s frame, with their reasons."""
        t = self.triggers
        if not last:
            t.scale = grey.shape[1] / item.frame.shape[1]
            t.growth = _follow_reach(item.frame, 1 / self.plan.fps)  # as fast as a followed face may move
            t.watch(grey)
        why = {"full": t.due("full", item.index, grey, last) if self.plan.full_every else None,
               "plates": t.due("plates", item.index, grey, last)}
        return {kind: reason for kind, reason in why.items() if reason is not None}

    def seen(self, item: _Detected, grey: np.ndarray) -> None:
        """What a look found, for the triggers: boxes followed (motion inside them is theirs), a box of the last look
        of its kind (faces at the same size, plates) not found again (``track_lost``), a weak face that no strong one
        holds and that the last sweep of the turns did not see (``orientation``)."""
        t = self.triggers
        if t is None:
            return
        for what, boxes in (("faces", item.faces), ("plates", item.plates)):
            if boxes is not None:
                t.found(item.index, boxes, what)
        if item.faces is not None:
            strong = item.strong if item.strong is not None else np.ones(len(item.faces), bool)
            if self._lost(("faces", item.full), item, item.faces[strong]):
                t.flag(("full", "turned"), "track_lost")
            unheld = _unheld(item.faces[~strong], item.faces[strong])
            if "turned" in item.why:
                self._last[("doubt",)] = item.camera, unheld
            elif self._lost(("doubt",), item, unheld, keep=False):
                t.flag(("turned",), "orientation")
        if item.plates is not None and self._lost(("plates",), item, item.plates):
            t.flag(("plates",), "track_lost")

    def _lost(self, key: tuple, item: _Detected, boxes: np.ndarray, keep: bool = True) -> bool:
        """With ``keep``: whether a box of the last look under ``key`` is not near one of ``boxes`` (then ``boxes``
        are that look's); without: whether one of ``boxes`` is not near one of that look's."""
        camera, before = self._last.get(key, (item.camera, np.zeros((0, 4))))
        if keep:
            self._last[key] = item.camera, boxes
            return lost_boxes(before, boxes, np.subtract(camera, item.camera))
        return lost_boxes(boxes, before, np.subtract(item.camera, camera))


def _unheld(weak: np.ndarray, strong: np.ndarray) -> np.ndarray:
    """The ``weak`` boxes whose centre lies in no ``strong`` box."""
    if len(weak) == 0 or len(strong) == 0:
        return weak
    centres = (weak[:, None, :2] + weak[:, None, 2:4]) / 2
    inside = ((centres >= strong[None, :, :2]) & (centres <= strong[None, :, 2:4])).all(axis=2)
    return weak[~inside.any(axis=1)]


#: The quarter turns (``np.rot90``'s k: 90, 180 and 270 degrees) a frame is looked at besides upright (faces and
#: plates): a video carries its faces and plates in any of four orientations (a phone held sideways or upside
#: down, rotation metadata applied or not), and the detectors find them upright only. Every turn is swept every
#: ``turn_s`` (faces at ``max_side``); a turn where a face was found at the threshold and better than the upright
#: look found it (no upright box over its centre scored as high) is looked at at every look for faces, at that
#: look's size, for ``bridge_s`` after (``Schedule.turns``): a video's orientation rarely changes, so an upright
#: video pays for a sweep now and then. Plates are looked for on a turned frame at such a turn, at the plates' looks,
#: and at a sideways turn (:data:`SIDEWAYS`) where a sweep's plate look found a plate. A sweep's boxes count at or
#: above the face threshold only; at a held turn weak boxes count too, once linked to a strong one, as upright.
TURNS = tuple(degrees // 90 for degrees in MEASURED_SCHEDULE["turns_deg"])  # (1, 2, 3)

#: The turns a sweep also looks for plates at (90 and 270 degrees), when it falls on a look for plates, every
#: ``MEASURED_SCHEDULE["turn_s"]`` (1 s, ``Schedule.plate_sweep``): a turn where it finds one that no upright plate box
#: holds is looked at for plates at every look for plates for ``bridge_s`` after, as a face's turn is. Upside down, the
#: cascade finds plates as they are; sideways it finds none, so a video shown sideways with plates and no face kept
#: every plate (plate recall 0.000 on ``plates`` turned 90; docs/anonymize.md). On the labelled clips upright the
#: cascade found no box at these turns: an upright video holds none.
SIDEWAYS = (1, 3)


def _turned(detect: Any, frame: np.ndarray, turns: Iterable[int], *args: Any) -> np.ndarray:
    """What ``detect(turned, *args)`` finds on ``frame`` turned by each of ``turns`` (``np.rot90``'s k; 0: as it
    is), as boxes (N, 6) in ``frame``'s pixels: x1, y1, x2, y2, score, the turn."""
    h, w = frame.shape[:2]
    out = [np.zeros((0, 6), np.float32)]
    for k in turns:
        found = np.asarray(detect(np.ascontiguousarray(np.rot90(frame, k)) if k else frame, *args), np.float32)[:, :5]
        boxes = unturn_boxes(found[:, :4], k, w, h) if k else found[:, :4]
        out.append(np.column_stack([boxes, found[:, 4], np.full(len(found), k)]))
    return np.concatenate(out).astype(np.float32)


def _turns_that_add(turned: np.ndarray, upright: np.ndarray) -> tuple[int, ...]:
    """The turns (``turned``'s sixth column) with a box scored above every ``upright`` box that holds its
    centre: a face seen better turned (CenterFace finds many faces on a frame turned 90 or 180 too, less
    surely than upright)."""
    centres = (turned[:, :2] + turned[:, 2:4]) / 2
    inside = ((centres[:, None, 0] >= upright[None, :, 0]) & (centres[:, None, 0] <= upright[None, :, 2])
              & (centres[:, None, 1] >= upright[None, :, 1]) & (centres[:, None, 1] <= upright[None, :, 3]))
    beaten = (inside & (upright[None, :, 4] >= turned[:, None, 4])).any(axis=1)
    return tuple(int(k) for k in np.unique(turned[~beaten, 5]))


def _reduced(boxes: np.ndarray, reduced: bool, turned: bool = False) -> np.ndarray:
    """Face boxes (N, 7): ``boxes``' first five columns, whether they were found at reduced size (1: a face that
    needs no crop while strong) and the turn (``TURNS``'s k) they were found at: ``boxes``' sixth column when they
    are ``turned`` (:func:`_turned`'s), else 0 (upright)."""
    turn = boxes[:, 5] if turned else np.zeros(len(boxes), np.float32)
    return np.column_stack([boxes[:, :5], np.full(len(boxes), float(reduced)), turn]).astype(np.float32)


def _small_faces(recent: Iterable[tuple[int, tuple[float, float], np.ndarray]], index: int,
                 camera: tuple[float, float], below: int, fps: float, reach: float,
                 threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The faces to look at again at full size on frame ``index``: those under ``below`` px high (as found: at a turn
    of 90 or 270 degrees, their box's width) found at the ``recent`` looks (``_reduced``'s columns) that the reduced
    look did not find at or above ``threshold`` (found at full size only, or weakly), where the camera has carried
    them, the margin (px) to look around each: half its size plus how far it may have moved since, and the turn each
    was found at (``reach``: px a face may move a second). A face found at several looks counts once, at its latest
    look (None: nothing to follow)."""
    if not below:
        return None
    seen: dict[float, list[np.ndarray]] = {}  # per turn: a face seen turned and upright is followed at both
    out: list[np.ndarray] = []
    margins: list[float] = []
    turns: list[float] = []
    for then_index, then, found in reversed(list(recent)):  # the latest look first
        tall = np.where(found[:, 6] % 2 == 1, found[:, 2] - found[:, 0], found[:, 3] - found[:, 1])
        for row in found[tall < below]:
            box = row[:4] + np.tile(np.subtract(then, camera), 2)
            centre = (box[:2] + box[2:]) / 2
            if any(b[0] <= centre[0] <= b[2] and b[1] <= centre[1] <= b[3] for b in seen.get(row[6], ())):
                continue
            seen.setdefault(row[6], []).append(box)
            if row[5] and row[4] >= threshold:
                continue  # the reduced look sees this one well enough
            out.append(box)
            turns.append(row[6])
            moved = reach * (index - then_index) / fps
            margins.append(max(box[2] - box[0], box[3] - box[1]) / 2 + moved)
    if not out:
        return None
    return np.asarray(out, np.float64).reshape(-1, 4), np.asarray(margins), np.asarray(turns, np.int64)


def _moved(boxes: np.ndarray, shift: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Boxes moved by ``shift`` (x, y), clipped to the frame; the empty ones dropped."""
    if len(boxes) == 0:
        return boxes
    h, w = shape[:2]
    out = boxes[:, :4] + np.tile(shift, 2)
    out[:, [0, 2]] = out[:, [0, 2]].clip(0, w)
    out[:, [1, 3]] = out[:, [1, 3]].clip(0, h)
    return out[(out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])]


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


def already_done(video: Path, out_dir: Path, stated: dict[str, Any]) -> dict[str, Any] | None:
    """The report of an earlier run when its output and passing report match ``video``'s bytes and it states
    ``stated``, this run's options (:meth:`AnonymizeConfig.stated`: another preset, encoder or model is done
    again): a re-run into the same folder, on either engine, skips that video."""
    out, report_path = output_paths(video, out_dir)
    if not report_path.is_file() or report_problem(report_path, out) is not None:
        return None
    report = read_json(report_path)
    same_input = (report.get("input") or {}).get("sha256") == sha256_file(video)
    return report if same_input and report.get("options") == stated else None


#: A video is encoded to a hidden file beside its output, ``.NAME.mp4.RANDOM.tmp.mp4``, renamed once it is checked.
_TEMPORARY = ".tmp.mp4"


def _temporary_prefix(out_path: Path) -> str:
    """The start of the name of ``out_path``'s temporary file (unique by ``tempfile.mkstemp``'s random part)."""
    return f".{out_path.name}."


def _output_problems(info: Any, check: Any, frames: int) -> list[str]:
    """How the encoded output (``check``, probed) differs from the input (``info``): size, frame rate, duration, or
    no frames at all."""
    problems = []
    if (check.width, check.height) != (info.width, info.height):
        problems.append(f"size changed to {check.width}x{check.height}")
    if abs(check.fps - info.fps) > 0.01:
        problems.append(f"frame rate changed to {check.fps}")
    if info.duration_s and abs(check.duration_s - info.duration_s) > max(0.1, 2 / info.fps):
        problems.append(f"duration changed from {info.duration_s:.2f} s to {check.duration_s:.2f} s")
    if frames == 0:
        problems.append("no frames decoded")
    return problems


#: The shown frames a run decodes (as :func:`streamcue.video.shown_size` gives them), checked before any frame is:
#: a sample aspect ratio from 1:4 to 4:1, no camera records pixels more elongated (an anamorphic lens' 2:1 and DV's
#: 64:45 are the most in use), and at most 16384 px a side, the largest x264 encodes (the venv's ffmpeg with libx264
#: refuses a 16386 px wide frame; ``LIMITS``' ``max_side`` stops there too). A 640x720 clip whose header said 30:1
#: was decoded at 19200x720, held 4 to 5 GB for a minute and failed with a misleading error.
SHOWN_SAR = (Fraction(1, 4), Fraction(4))
SHOWN_SIDE_MAX = 16384


def _shown(video: Path, stored: Any, sar: Fraction) -> Any:
    """``stored`` (the probed :class:`streamcue.video.VideoInfo`) at the size its frames are shown with square pixels;
    an :class:`InputError` naming ``video`` when that lies outside :data:`SHOWN_SAR` or :data:`SHOWN_SIDE_MAX`."""
    width, height = shown_size(stored.width, stored.height, sar)
    if not SHOWN_SAR[0] <= sar <= SHOWN_SAR[1] or max(width, height) > SHOWN_SIDE_MAX:
        raise InputError(f"frames stored {stored.width}x{stored.height} with a sample aspect ratio of "
                         f"{sar.numerator}:{sar.denominator} are shown {width}x{height}: outside what a run decodes "
                         f"(ratios 1:4 to 4:1, at most {SHOWN_SIDE_MAX} px a side); check the file's sample aspect "
                         "ratio", file=video)
    return replace(stored, width=width, height=height)


def anonymize_video(video: str | Path, out_dir: str | Path, options: AnonymizeConfig | None = None, *,
                    anonymizer: Anonymizer | None = None) -> dict[str, Any]:
    """Blur one video into ``out_dir``; returns the report (also written beside the output).

    Nothing is left behind on failure: the output is encoded to a temporary file and renamed
    only after the encoder finished and the result was checked.
    """
    anonymizer = anonymizer or Anonymizer(options)
    options = anonymizer.options
    video, out_dir = Path(video), Path(out_dir)
    stored = probe(video)
    sar = sample_aspect(video)
    info = _shown(video, stored, sar)
    settings = {"dilate_s": options.dilate_s, **anonymizer.schedule(info.fps)}
    schedule = schedule_problems(settings, info.fps)
    # with a detector off the status is not_anonymized whatever the size: the size is checked only with both on
    both = anonymizer.face is not None and anonymizer.plate is not None
    geometry = [frame_problem(info.width, info.height), sar_problem(sar)] if both else []
    unmeasured = list(dict.fromkeys([*options.unmeasured(), *schedule, *filter(None, geometry)]))
    if unmeasured and not options.allow_unmeasured:
        raise ConfigError(f"{'; '.join(unmeasured)}: outside the range where recall was measured "
                          f"({video.name}; docs/anonymize.md); pass --allow-unmeasured to run anyway (the "
                          "report's status is then 'unmeasured' and a release refuses it)")
    out_path, report_path = output_paths(video, out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    face_counts: list[int] = []
    plate_counts: list[int] = []
    hidden_share = 0.0
    looked = 0
    taken: dict[str, dict[str, int]] = {kind: {} for kind in LOOK_KINDS}  # expensive looks: kind -> reason -> count
    samples: list[dict[str, Any]] = []  # hidden regions of a few frames, for the release to check the blur
    tmp: Path | None = None
    writer: FrameWriter | None = None
    try:
        with held():  # a Ctrl-C or SIGTERM between creating the file and the encoder waits until both are known
            handle, name = tempfile.mkstemp(prefix=_temporary_prefix(out_path), suffix=_TEMPORARY, dir=out_dir)
            os.close(handle)
            tmp = Path(name)
            started = time.perf_counter()
            writer = FrameWriter(tmp, info.width, info.height, info.fps, crf=options.crf, preset=options.encoder_preset,
                                 threads=options.encoder_threads, convert="opencv",
                                 audio_from=video if options.keep_audio and info.has_audio else None)
        # all at once: ffmpeg decodes (a process, read by a thread), the camera's motion (a thread), the face
        # detector (a thread, plates beside it in another), hiding (a thread) and this thread feeds the encoder
        # as shown: rotation metadata applied by ffmpeg, and non-square pixels scaled to square (shown_size)
        frames_in = read_frames(video, stored, size=None if info == stored else (info.width, info.height))
        results = anonymizer.process(_prefetch(frames_in), info.fps, overlap=True, inplace=True)
        expected = round(info.duration_s * info.fps) or None
        sheet = ContactSheet(info.fps, expected)
        for result in track(_prefetch(results, 4), f"anonymizing {video.name}", total=expected):
            writer.write(result.frame)
            sheet.add(len(face_counts), result.frame, result.mask)
            face_counts.append(result.faces)
            plate_counts.append(result.plates)
            looked += result.detected
            for kind, reason in result.looks.items():
                taken[kind][reason] = taken[kind].get(reason, 0) + 1
            if result.faces or result.plates:
                hidden_samples(len(face_counts) - 1, result.mask, samples, info.fps)
            hidden_share += np.count_nonzero(result.mask) / result.mask.size  # mean() casts every pixel to float
        writer.close()
    except BaseException as exc:
        if writer is not None:
            writer.abort()
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        killed = writer is not None and writer.proc.returncode is not None and writer.proc.returncode < 0
        if (killed and -writer.proc.returncode == getattr(signal, "SIGXFSZ", None)) or _disk_full(exc):
            raise InputError("file too large: the disk is full or the file-size limit was reached; nothing "
                             "written", file=out_path) from None
        raise
    wall = time.perf_counter() - started
    frames = len(face_counts)
    with _removed_on_failure(tmp):  # a signal while the output is checked or the report made leaves nothing
        problems = _output_problems(info, probe(tmp), frames)
        if problems:  # a failed result is never left under the final name (the block removes it)
            raise InputError(f"anonymization failed, nothing written: {'; '.join(problems)}", file=video)

        def counts(values: list[int]) -> dict[str, Any]:
            return {"total": int(sum(values)), "frames_with": int(sum(v > 0 for v in values)),
                    "max_per_frame": int(max(values, default=0)), "per_frame": values}

        detectors = anonymizer.describe()
        report = {
            "format": REPORT_FORMAT,
            "status": anonymization_status(problems, detectors, unmeasured),
            "problems": problems,
            "missing_detectors": [what for what in ("face", "plate") if not detectors.get(what)],
            "unmeasured": unmeasured,  # settings outside the range where recall was measured
            "canary": anonymizer.canary,
            "input": {"path": video.name, "sha256": sha256_file(video), **asdict(info),
                      "rotation_deg": display_rotation(video),
                      "sample_aspect_ratio": f"{sar.numerator}:{sar.denominator}",
                      "stored_size": [stored.width, stored.height]},
            # frames are decoded as shown (rotation metadata and sample aspect ratio applied) and written so, square
            # pixels without rotation metadata; looks for faces (and plates, at a turn where a face or a plate was
            # found) also look at the frame turned by settings.turns_deg
            "orientation": {**MEASURED_ORIENTATION, "looked_deg": [0, *(90 * k for k in TURNS)]},
            "output": {"path": out_path.name, "sha256": sha256_file(tmp), "frames": frames,
                       "audio": "kept" if options.keep_audio and info.has_audio else "dropped"},
            "frames_processed": frames,
            "frames_detected": looked,
            "looks": look_counts(taken, anonymizer.plan(info.fps).clock_looks(frames), options.looks),
            "detectors": detectors,
            "options": anonymizer.stated,
            "settings": {"pad": options.pad, "plate_pad": options.plate_pad, **settings,
                         "dilate_frames": anonymizer.window(info.fps),
                         "blur": "ellipse for faces; each merged region pixelated to 5 blocks + gaussian",
                         "encoder": {**ENCODER, "pix_fmt": writer.pix_fmt, "converted_by": writer.converted_by,
                                     "preset": options.encoder_preset, "crf": options.crf,
                                     "threads": options.encoder_threads}},
            "detections": {"face": counts(face_counts), "plate": counts(plate_counts)},
            "hidden_share_mean": hidden_share / frames if frames else 0.0,
            "hidden_samples": samples,
            "wall_s": round(wall, 3),
            "fps": round(frames / wall, 2) if wall > 0 else None,
            "ffmpeg": {"binary": Path(ffmpeg_exe()).name, "version": ffmpeg_version()},  # never a local path
            "streamcue_version": __version__,
        }
        # the sheet and the report first (atomically), then the video: a failure at any step leaves none of them under
        # its final name
    sheet_path = contact_sheet_path(out_path)
    try:
        report["contact_sheet"] = sheet.write(sheet_path)
        report = seal(report)  # every field as written: a release refuses a report edited after the run
        write_json(report_path, report)
        as_usual_file(tmp)  # readable as the report beside it is, not private as its temporary was
        os.replace(tmp, out_path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        sheet_path.unlink(missing_ok=True)
        report_path.unlink(missing_ok=True)  # last: it raises where the report's name is taken by a folder
        if _disk_full(exc):
            raise InputError("file too large: the disk is full or the file-size limit was reached; nothing "
                             "written", file=report_path) from None
        raise
    return report


@contextmanager
def _removed_on_failure(path: Path) -> Iterator[None]:
    """Remove ``path`` when the block raises anything (a SIGTERM's :class:`Terminated` too), then raise it again."""
    try:
        yield
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def look_counts(taken: dict[str, dict[str, int]], clock: dict[str, int], schedule: str) -> dict[str, Any]:
    """The report's ``looks``: per kind of expensive look (``LOOK_KINDS``), how many were taken for each reason; what
    the clock would have taken (``clock``) and how many of those were skipped (``skipped``: the clock's less those
    taken, never below 0 since a triggered schedule never takes more)."""
    counts: dict[str, Any] = {"schedule": schedule}
    for kind in LOOK_KINDS:
        counts[kind] = {"total": sum(taken[kind].values()), **dict(sorted(taken[kind].items()))}
    counts["clock"] = dict(clock)
    counts["skipped"] = {kind: clock[kind] - counts[kind]["total"] for kind in LOOK_KINDS}
    return counts


def _disk_full(exc: BaseException) -> bool:
    """An error of a full disk or of the file-size limit (EFBIG, ENOSPC, EDQUOT), raised or wrapped."""
    codes = {errno.EFBIG, errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno in codes:
            return True
        if any(word in str(exc).lower() for word in ("file too large", "no space left")):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def find_videos(path: str | Path) -> list[Path]:
    """A video file, or the video files of a folder (sorted, by suffix)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    return [path]


_WORKER: Anonymizer | None = None
_IN_JOB = False
_UNWINDING = False  # a SIGTERM is being answered: another one must not cut the cleanup short


def _worker_sigterm(signum: int, frame: Any) -> None:
    global _UNWINDING
    if held_back(signum) or _UNWINDING:
        return
    if _IN_JOB:  # unwind through anonymize_video: its encoder is killed and its temporary file removed
        _UNWINDING = True
        raise Terminated()
    os._exit(EXIT_SIGTERM)


def _worker_init(options: AnonymizeConfig, parent: int) -> None:
    """A worker process: the parent alone answers Ctrl-C; SIGTERM (from the parent, or from Linux when the parent
    dies) ends it cleanly."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_sigterm)
    _die_with(parent)
    _WORKER = Anonymizer(options)


def _die_with(parent: int) -> None:
    """On Linux, a SIGTERM to this worker when ``parent`` dies (prctl's PR_SET_PDEATHSIG): a parent SIGKILLed (the
    out-of-memory killer) left its workers taking video after video from the queue with no one to report to."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's own stop is all there is
        return
    if os.getppid() != parent:  # it died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)


def _worker_run(video: Path, out_dir: Path) -> dict[str, Any]:
    global _IN_JOB
    _IN_JOB = True
    try:
        return anonymize_video(video, out_dir, anonymizer=_WORKER)
    except Terminated:
        os._exit(EXIT_SIGTERM)  # cleaned up already; never go on to the next video
    finally:
        _IN_JOB = False


def _remove_leftovers(videos: list[Path], out_dir: Path, since: float) -> None:
    """Remove the temporary files of ``videos`` in ``out_dir`` made since ``since`` (this run's): those a worker killed
    before it could clean up left behind (``anonymize_video``'s names for them): one stopped by SIGKILL after it did
    not end in time, or one that died."""
    for video in videos:
        prefix = _temporary_prefix(output_paths(video, out_dir)[0])
        # the encoder's file, and the frames it encodes alone first when audio is kept (FrameWriter: ".NAME.frames.mp4")
        for path in (*out_dir.glob(f"{prefix}*{_TEMPORARY}"), *out_dir.glob(f".{prefix}*{_TEMPORARY}.frames.mp4")):
            try:
                if path.stat().st_mtime >= since - 1:  # 1 s: a file system's coarse clock
                    path.unlink()
            except OSError:
                pass  # gone already


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


def anonymize_many(videos: list[Path], out_dir: Path, options: AnonymizeConfig, workers: int = 1, *,
                   anonymizer: Anonymizer | None = None) -> Iterator[tuple[Path, dict[str, Any] | BaseException]]:
    """``(video, report or error)`` per video, in completion order; ``workers`` processes.

    Close the generator (or let Ctrl-C/SIGTERM reach it) and the worker processes are stopped
    and their temporary files removed; nothing keeps encoding in the background.
    """
    if workers < 1:
        raise ConfigError(f"workers must be 1 or more, got {workers}")
    if workers == 1:
        anonymizer = anonymizer or Anonymizer(options)
        for video in videos:
            try:
                yield video, anonymize_video(video, out_dir, anonymizer=anonymizer)
            except Exception as exc:  # reported per file; the others go on
                yield video, exc
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # spawned, not forked: a fork copies onnxruntime's thread pools and this process's threads half-way
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(options, os.getpid()))
    started = time.time()

    def stop() -> None:
        _stop_workers(pool)
        _remove_leftovers(videos, out_dir, started)

    on_interrupt(stop)
    finished = False
    try:
        futures = {pool.submit(_worker_run, v, out_dir): v for v in videos}
        for future in as_completed(futures):
            try:
                yield futures[future], future.result()
            except BrokenProcessPool:  # one worker died: the pool stops every video it held, each said as such
                yield futures[future], InputError("a worker process died (killed, or out of memory) while this video "
                                                  "was anonymized or waited its turn; nothing was written for it",
                                                  file=futures[future])
            except Exception as exc:
                yield futures[future], exc
        finished = True
    finally:
        if finished:  # a worker that died (killed, out of memory) left its temporary files: removed too
            pool.shutdown(wait=True)
            _remove_leftovers(videos, out_dir, started)
        else:
            stop()
