"""The anonymization report written beside every blurred video, and the check a release makes.

A report is a JSON object; the fields a release relies on are::

    {"format": "streamcue.anonymization/1", "status": "passed" | "failed" | "not_anonymized",
     "input": {"path": NAME, "sha256": ...}, "output": {"path": NAME, "sha256": ..., "frames": N},
     "detectors": {"face": {"name", "version", "settings"} | null, "plate": ... | null},
     "detections": {"face": {"per_frame": [...], ...}, "plate": {...}}, ...}

``status`` is ``failed`` when the output does not match the input (size, rate, duration, no
frames), ``not_anonymized`` when a detector was switched off (``--detector none`` or
``--plate-detector none``: faces or plates were never looked for, so nothing says they are
hidden), ``unmeasured`` when a setting lies outside the range where recall was measured
(``--allow-unmeasured``, listed in ``unmeasured``), else ``passed``. ``canary`` records that the
face detector, with the run's settings, found a known face before the run began
(:mod:`streamcue.anonymize.canary`). CenterFace's settings name what ran it (``runtime``:
onnxruntime, onnxruntime-int8, openvino-fp32, openvino-bf16 or torch) and the model's SHA-256 (``model_sha256``;
with onnxruntime-int8, also the quantized graph's, ``int8_sha256``).
Paths in a report are file names only, never a local folder.

A recorded video may be published only when its report exists, says ``passed``, names both
detectors with their versions, holds a detection log for every frame, names the SHA-256 of
exactly the file being published and one different from its input's, states a detection
schedule no sparser than the measured one (``MEASURED_SCHEDULE``) and looked at as many frames
as that schedule does, states the measured value of every other field that decides recall (``_MEASURED_FIELDS``:
a report lacking one was made before it was stated), and when the video is smooth inside the hidden regions the report
samples (``hidden_samples``: a square inside the mask of up to ``SAMPLES`` frames with
detections, the published frame's Laplacian variance there at most ``BLURRED_MAX``).
:func:`report_problem` is the one check; ``release build`` and ``build recorded
--anonymized`` call it.
"""

from __future__ import annotations

import hashlib
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.errors import InputError
from streamcue.extras import require
from streamcue.io import read_json
from streamcue.seal import SEAL, unsealed_field

REPORT_FORMAT = "streamcue.anonymization/1"
DETECTED = ("face", "plate")

__all__ = ["REPORT_FORMAT", "MEASURED", "MEASURED_RUNTIMES", "MEASURED_SCHEDULE", "MEASURED_ORIENTATION",
           "MEASURED_SHORT_SIDE", "MEASURED_SAR", "MEASURED_PLATE_WIDTHS", "MEASURED_TURNED_FACES",
           "MEASURED_FOLLOW_SCALE", "SAMPLES", "BLURRED_MAX", "JUDGED_SIDE", "sha256_file", "anonymization_status",
           "frame_problem", "sar_problem",
           "frames_at", "turn_frames", "schedule_problems", "hidden_samples", "report_problem", "seal_problem",
           "problem_field",
           "beside", "sheet_beside", "REPORT_FIELDS"]

#: The range where recall was measured (perf/bench_anonymize.py, docs/anonymize.md: CenterFace at
#: threshold 0.2, face boxes padded 0.25 (thorough) and 0.35 (balanced, fast)). A lower threshold
#: or a larger pad only adds or grows boxes; a higher threshold or a smaller pad needs
#: ``allow_unmeasured`` and the report's status is then ``unmeasured``, which a release refuses.
MEASURED = {"face_threshold": 0.2, "track_threshold": 0.08, "pad": 0.25}

#: CenterFace's runtimes on the CPU whose recall held on the labelled clips (``detectors.face.settings.runtime``,
#: which a CenterFace report must state); ``openvino-bf16`` hid less (docs/anonymize.md, "Runtimes") and ``torch``
#: on a GPU was measured in one run only: both ``unmeasured``; so is ``onnxruntime-int8``, which hid less on one
#: labelled clip (900p ``holdout`` upside down).
MEASURED_RUNTIMES = ("onnxruntime", "openvino-fp32")

#: The sparsest detection schedule whose recall was measured on the labelled clips, upright, turned
#: in their pixels and with rotation metadata (tests/anonymize/test_anonymize.py; the ``fast`` preset's
#: seconds, ``balanced``'s dilation, the presets' smallest ``max_side``): a schedule that looks
#: less often, at smaller frames or hides for less time is ``unmeasured``, never ``passed``. Plates every 0.2 s:
#: ``fast``'s since turned frames are searched for plates only at a turn where faces were found (every 0.3 s was
#: measured with plates on every turned sweep, which no longer run). Full size every 0.5 s: every 1 s gave face
#: recall 0.969 on ``turned`` at 1920x1080 (docs/anonymize.md, "Frames over 720 px").
#: The rest are the presets' values, measured with them (``AnonymizeConfig.unmeasured`` and :func:`report_problem`
#: read them here): every turn of ``turns_deg`` swept at least every ``turn_s`` (``fast``'s 1 s) and held for
#: ``bridge_s`` (1 s) after it found a face, boxes carried for ``bridge_s`` across misses, faces under ``follow_px``
#: (120) followed at full size at each look at ``max_side``, a look at reduced size keeping ``short_side_share``
#: (9/16) of ``max_side`` on the frame's short side (``detectors.SHORT_SIDE_SHARE``), plates on a turned frame
#: ``turned_plates``, and every look the clock gives (``looks``; ``triggered`` is unmeasured).
MEASURED_SCHEDULE = {"look_s": 0.2, "full_s": 0.5, "plate_s": 0.2, "dilate_s": 0.2, "max_side": 640,
                     "turn_s": 1.0, "bridge_s": 1.0, "follow_px": 120, "short_side_share": 9 / 16,
                     "turns_deg": (90, 180, 270),
                     "turned_plates": "at a turn where a face or, swept at 90 and 270 degrees, a plate was found",
                     "looks": "clock"}

#: How frames were looked at where recall was measured, stated in a report's ``orientation``: decoded as shown,
#: looked at upright and at every turn of ``MEASURED_SCHEDULE["turns_deg"]``, written with square pixels and no
#: rotation metadata.
MEASURED_ORIENTATION = {"decoded": "as displayed (rotation metadata and sample aspect ratio applied)",
                        "output_rotation_deg": 0, "output_sample_aspect_ratio": "1:1",
                        "looked_deg": (0, *MEASURED_SCHEDULE["turns_deg"])}

#: Pixels on a frame's short side, lowest and highest, where recall was measured: the labelled clips' faces and
#: plates are sized to the frame (faces 28 px and up at 1280x720, portrait 720x1280 too); from 1280x720 to
#: 2560x1440 every clip gave face recall 0.98 or more (``thorough`` at 1920x1080 but one face the measure misreads,
#: hidden in full). The same scenes on smaller frames gave less, and at
#: 3840x2160 plate recall fell to 0.24 (docs/anonymize.md, "Frames under 720 px", "Frames over 720 px"), so a
#: video outside is ``unmeasured``.
MEASURED_SHORT_SIDE = (720, 1440)

#: Sample aspect ratios (a pixel's width over its height, as shown: :func:`streamcue.video.sample_aspect`, turned with
#: the frame by rotation metadata) where recall was measured and held: square pixels only. Anamorphic video is decoded
#: as shown (square pixels at :func:`streamcue.video.shown_size`) and hidden so, but measured on every labelled clip in
#: every orientation at 720p (perf/bench_anamorphic.py, docs/anonymize.md "Anamorphic video") 4:3 left faces whole
#: (``holdout`` as a phone's portrait clip: a 45 px face in 4 of 10 frames; ``turned`` upside down) and a plate at
#: 0.868 (``pan``), where ``street``, the clip it had been measured on, kept them all: 4:3, 2:1 and the 3:4 and 1:2
#: they give turned are ``unmeasured``.
MEASURED_SAR = ("1:1",)

#: The plate widths where the plate search was measured, stated in a ``haar-plate`` report's plate settings as
#: ``measured_widths``: the ``plates`` scene's plates of 2 to 25 % of the frame width, light and dark, level and turned
#: 12 degrees, at 1280x720, 1920x1080 and 2560x1440 (tests/anonymize/test_anonymize_plates.py, docs/anonymize.md
#: "Plates of 2 % to 25 % of the frame width"). A report stating other widths (the search before, which found none
#: of 2 %) is ``unmeasured``.
MEASURED_PLATE_WIDTHS = "2 to 25 % of the frame width"

#: How a turned frame's faces count, stated in a report's ``settings`` as ``turned_faces``: at a turn held because a
#: face was found there (``Schedule.turns``), weak boxes count once linked to a strong one, as upright; a sweep's count
#: only at the threshold. Before (strong ones only at every turn) the ``turned`` clip shown sideways or upside down kept
#: 0.89 to 0.98 of its faces (docs/anonymize.md, "Runtimes"); a report that does not state this is ``unmeasured``.
MEASURED_TURNED_FACES = "weak ones linked to a strong one at a held turn"

#: What a followed face's speed is measured in, stated in a report's ``settings`` as ``follow_scale``
#: (``pipeline.FOLLOW_SPEED``). Before, it was the frame's height, so a frame shown portrait got crops 16/9 as wide as
#: the same scene landscape, fewer of them within the crops' budget, and a partly hidden face of ``turned`` at
#: 1600x900 with rotation metadata kept face recall 0.972 against 1.000 upright (docs/anonymize.md, "Faces shown
#: sideways or upside down"); a report that does not state this is ``unmeasured``.
MEASURED_FOLLOW_SCALE = "the frame's short side"

#: Frames with detections whose hidden regions a report samples, at least a second apart.
SAMPLES = 8
#: A hidden region of the published video has at most this Laplacian variance (grey levels squared):
#: the blur leaves 5 blocks across a region, smoothed. Measured on the squares of genuine reports of
#: 640x360 ``street`` and ``crowd`` clips and the contract test's clip: 0.2 to 27 blurred; the same
#: squares of the unblurred input: 164 to 55,000.
BLURRED_MAX = 100.0
#: Squares smaller than this (pixels a side) are not judged by :data:`BLURRED_MAX`: there a blur's 5 blocks are
#: 3 or 4 pixels wide and their edges alone reach it (a genuine 15 px square of the recorded builder's test clip
#: measured 100.4), so a small square says nothing either way.
JUDGED_SIDE = 24


def anonymization_status(problems: list[str], detectors: dict[str, Any], unmeasured: list[str] | None = None) -> str:
    """``failed`` with problems; ``not_anonymized`` when a detector is off; ``unmeasured`` when a
    setting lies outside the range where recall was measured (``--allow-unmeasured``); else ``passed``."""
    if problems:
        return "failed"
    if any(not detectors.get(what) for what in DETECTED):
        return "not_anonymized"
    if unmeasured:
        return "unmeasured"
    return "passed"


def frame_problem(width: Any, height: Any) -> str | None:
    """Frames of ``width`` x ``height`` whose short side is outside ``MEASURED_SHORT_SIDE``, in words; else None."""
    low, high = MEASURED_SHORT_SIDE
    if _number(width) and _number(height) and low <= min(width, height) <= high:
        return None
    return f"frames of {width}x{height} px are outside the measured sizes ({low} to {high} px on their short side)"


def sar_problem(sar: Fraction) -> str | None:
    """A sample aspect ratio outside :data:`MEASURED_SAR`, in words; else None."""
    text = f"{sar.numerator}:{sar.denominator}"
    if text in MEASURED_SAR:
        return None
    return f"a sample aspect ratio of {text} is outside the measured ones ({', '.join(MEASURED_SAR)})"


def frames_at(seconds: float, fps: float) -> int:
    """``seconds`` between looks as a whole number of frames at ``fps``: the nearest (Python's ``round``), at least
    1; 0 s is every frame. A preset's schedule and the measured one are both turned into frames by this."""
    return max(1, round(seconds * fps)) if seconds > 0 else 1


def turn_frames(turn_s: float, fps: float, stride: int) -> int:
    """Frames between two sweeps of the turned frames: ``turn_s`` at ``fps`` (:func:`frames_at`) as a whole number of
    looks for faces, every ``stride`` frames (a sweep is made at such a look), at least one."""
    return max(stride, stride * round(frames_at(turn_s, fps) / stride))


def schedule_problems(settings: dict[str, Any], fps: Any = None) -> list[str]:
    """The ways ``settings`` (a report's: ``look_s``, ``full_s``, ``plate_s``, ``dilate_s``, ``max_side`` and, at
    ``fps``, ``stride``, ``full_every``, ``plate_every``; those absent are not checked) lie outside
    ``MEASURED_SCHEDULE``, each in words. With a frame rate the looks are compared in frames
    (:func:`frames_at`: a preset's 0.5 s at 15 fps is 8 frames, and so is the measured 0.5 s), and their seconds
    within half a frame of the measured ones (``--full-every 15`` at 29.97 fps is 0.5005 s; reports round seconds to
    4 decimals, hence 1e-4 more); else in seconds."""
    out = []
    rate = fps if _number(fps) and fps > 0 else None
    for name, frames_key, option in (("look_s", "stride", "--stride"), ("full_s", "full_every", "--full-every"),
                                     ("plate_s", "plate_every", "--plate-every")):
        measured, frames, value = MEASURED_SCHEDULE[name], settings.get(frames_key), settings.get(name)
        if name == "full_s" and frames == 0:
            continue  # never at full size: an unmeasured option of its own (--full-every 0)
        if rate and frames is not None and not _number(frames):
            out.append(f"{option}: {frames!r} is not a number of frames ({frames_key})")
        elif rate and frames is not None and frames > frames_at(measured, rate):
            out.append(f"{option}: a look every {frames} frames at {rate:g} fps is sparser than the measured "
                       f"{measured} s ({frames_at(measured, rate)} frames)")
        elif value is not None and not (_number(value) and 0 <= value <= measured + (0.5 / rate + 1e-4 if rate else 0)):
            out.append(f"{option}: a look every {value} s is sparser than the measured {measured} s")
    dilate = settings.get("dilate_s")
    if dilate is not None and not (_number(dilate) and dilate >= MEASURED_SCHEDULE["dilate_s"]):
        out.append(f"--dilate {dilate} is below the measured {MEASURED_SCHEDULE['dilate_s']}")
    side = settings.get("max_side", "absent")
    if side not in (None, "absent") and not (_number(side) and side >= MEASURED_SCHEDULE["max_side"]):
        out.append(f"--max-side {side} is below the measured {MEASURED_SCHEDULE['max_side']}")
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def hidden_samples(index: int, mask: Any, taken: list[dict[str, Any]], fps: float) -> None:
    """Add frame ``index``'s hidden regions to ``taken`` (up to ``SAMPLES`` frames, a second apart): per
    region of ``mask``, the largest square inside it, as ``[x1, y1, x2, y2]``."""
    if len(taken) >= SAMPLES or (taken and index - taken[-1]["frame"] < fps) or not mask.any():
        return
    cv2 = require("cv2", "anonymize", "opencv-python")
    count, labels = cv2.connectedComponents(mask.astype(np.uint8))
    # the frame's edge bounds a region as its outside does: a square stays inside the frame
    edged = cv2.copyMakeBorder(mask.astype(np.uint8), 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    depth = cv2.distanceTransform(edged, cv2.DIST_L2, 3)[1:-1, 1:-1]
    boxes = []
    for label in range(1, count):
        inside = np.where(labels == label, depth, 0)
        y, x = np.unravel_index(int(inside.argmax()), inside.shape)
        half = int(inside[y, x] * 0.7) - 1  # a square inscribed in the circle of that radius
        if half >= 4:
            boxes.append([int(x) - half, int(y) - half, int(x) + half + 1, int(y) + half + 1])
    if boxes:
        taken.append({"frame": int(index), "boxes": boxes})


def beside(report: Path, named: Any) -> Path | None:
    """The file ``named`` beside ``report`` when ``named`` is a bare file name (as a report names its video and its
    sheet: never a folder); else None."""
    return report.with_name(named) if isinstance(named, str) and Path(named).name == named else None


def sheet_beside(report: Path, stated: dict[str, Any], **where: Any) -> tuple[Path, str]:
    """The contact sheet a report states (``stated``: its ``contact_sheet``), beside the report, and its SHA-256; one
    line naming the report (and ``where``: record) and field when the sheet is missing or is not the one the report
    states (replaced since the anonymizer drew it: a person's tick is of the sheet they saw)."""
    named = stated.get("path")
    sheet = beside(report, named)
    if sheet is None or not sheet.is_file():
        raise InputError(f"the contact sheet the report names ({named}) is not beside it", file=report,
                         field="$.contact_sheet.path", **where)
    digest = sha256_file(sheet)
    if stated.get("sha256") not in (None, digest):
        raise InputError(f"the contact sheet {named} is not the one the anonymizer drew (sha256 {digest[:12]}, the "
                         f"report states {str(stated['sha256'])[:12]}): anonymize the video again", file=report,
                         field="$.contact_sheet.sha256", **where)
    return sheet, digest


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def report_problem(report_path: str | Path, video_path: str | Path) -> str | None:
    """Why ``video_path`` may not be published under ``report_path``; None when it may."""
    report_path, video_path = Path(report_path), Path(video_path)
    if not report_path.is_file():
        return f"anonymization report {report_path} not found"
    try:
        report: Any = read_json(report_path)
    except InputError as exc:
        return str(exc)
    if not isinstance(report, dict) or report.get("format") != REPORT_FORMAT:
        return f"{report_path} is not a streamcue anonymization report (format {REPORT_FORMAT})"
    if report.get("status") != "passed":
        why = ""
        if report.get("status") == "unmeasured":
            stated = report.get("unmeasured")
            listed = "; ".join(map(str, stated)) if isinstance(stated, list) else repr(stated)
            why = f" (settings outside the range where recall was measured: {listed})"
        return f"{report_path}: anonymization status is {report.get('status')!r}, not 'passed'{why}"
    if report.get("unmeasured"):
        return f"{report_path}: settings outside the range where recall was measured (unmeasured)"
    shape = next((key for key in _SECTIONS if key in report and not isinstance(report[key], dict)), None)
    if shape is not None:
        return f"{report_path}: not a streamcue anonymization report: {shape} is not an object ({shape})"
    if not isinstance(report.get("canary"), dict) or report["canary"].get("passed") is not True:
        return f"{report_path}: the detector's canary is not stated or did not pass (canary)"
    problem = _evidence_problem(report) or _plate_search_problem(report)
    if problem:
        return f"{report_path}: {problem}"
    if not video_path.is_file():
        return f"video file {video_path} not found"
    expected, found = (report.get("output") or {}).get("sha256"), sha256_file(video_path)
    if expected != found:
        raw = found == (report.get("input") or {}).get("sha256")
        return (f"{report_path}: {video_path} is not the video the report states: its SHA-256 is {found[:12]}, "
                f"the report's $.output.sha256 {str(expected)[:12]} "
                + ("(it is the unblurred input the report was made from: $.input.sha256; publish the anonymizer's "
                   "output)" if raw else "(changed after anonymization, or another video's report?)"))
    problem = _schedule_problem(report)
    if problem is None:
        from streamcue.video import probe

        info = probe(video_path)  # once: the size check and the blur check read the same video
        problem = (_frame_problem(report, info) or _audio_problem(report, info) or _aspect_problem(report, video_path)
                   or _measured_problem(report) or seal_problem(report) or _blur_problem(report, video_path, info))
    return f"{report_path}: {problem}" if problem else None


#: The sections of a report that are objects (one that is not is refused before any is read; a missing one is named
#: by the check that needs it).
_SECTIONS = ("canary", "input", "orientation", "output", "looks", "detectors", "options", "settings", "detections")


#: Every top-level field the anonymizer writes (``anonymize_video``; its test holds the two lists equal): a report
#: without one was edited (a field and its seal removed together) or made by another version.
REPORT_FIELDS = ("format", "status", "problems", "missing_detectors", "unmeasured", "canary", "input", "orientation",
                 "output", "frames_processed", "frames_detected", "looks", "detectors", "options", "settings",
                 "detections", "hidden_share_mean", "hidden_samples", "wall_s", "fps", "ffmpeg", "streamcue_version",
                 "contact_sheet", SEAL)


#: The field a line of :func:`report_problem` or :func:`seal_problem` ends with, in brackets: ``(detections)``.
_ENDING_FIELD = re.compile(r"\(([A-Za-z_][\w.]*)\)$")


def problem_field(problem: str) -> str | None:
    """The report field ``problem`` (a line of :func:`report_problem` or :func:`seal_problem`) ends with in
    brackets, as a JSON path (``$.output.audio``); None when it ends with none."""
    found = _ENDING_FIELD.search(problem)
    return f"$.{found[1]}" if found else None


def seal_problem(report: dict[str, Any]) -> str | None:
    """Why ``report`` is not as the anonymizer wrote it, in words ending with the field: a field of
    :data:`REPORT_FIELDS` missing, no seal, or a field not as sealed (:func:`streamcue.seal.unsealed_field`)."""
    missing = next((name for name in REPORT_FIELDS if name not in report), None)
    if missing is not None and missing != SEAL:
        return f"it holds no {missing}, which the anonymizer writes: anonymize the video again ({missing})"
    name = unsealed_field(report)
    if name == SEAL:
        return (f"the report holds no {SEAL} (made before reports were sealed, or not by streamcue anonymize): "
                f"anonymize the video again ({SEAL})")
    if name is not None:
        return (f"edited after the run: this field is not the one the anonymizer wrote (its SHA-256 differs from "
                f"{SEAL}'s): anonymize the video again ({name})")
    return None


def _aspect_problem(report: dict[str, Any], video_path: Path) -> str | None:
    """A report that does not state its input's sample aspect ratio (made before anamorphic video was decoded as
    shown: its faces were looked at squeezed), states one outside :data:`MEASURED_SAR`, or a published video whose
    pixels are not square (the output is written as shown)."""
    from streamcue.video import sample_aspect

    stated = (report.get("input") or {}).get("sample_aspect_ratio")
    if stated is None:
        return ("the report states no input.sample_aspect_ratio (made before anamorphic video was looked at as "
                "shown): anonymize the video again (unmeasured)")
    if stated not in MEASURED_SAR:
        return f"a sample aspect ratio of {stated} is outside the measured ones (input.sample_aspect_ratio)"
    sar = sample_aspect(video_path)
    if sar != 1:
        return f"the video's pixels are not square (sample aspect ratio {sar.numerator}:{sar.denominator})"
    return None


def _plate_search_problem(report: dict[str, Any]) -> str | None:
    """The plate cascade's search of a report made before it looked at each plate-like area on both polarities and
    at the area's angle (issue 45: a plate of a fifth of a 1080p frame was left readable under ``passed``), or
    before it was measured on :data:`MEASURED_PLATE_WIDTHS` (it found no plate of 2 % of the width): unmeasured."""
    plate = (report.get("detectors") or {}).get("plate")
    if not isinstance(plate, dict) or plate.get("name") != "haar-plate":
        return None
    settings = plate.get("settings") if isinstance(plate.get("settings"), dict) else {}
    if "looks" not in settings:
        return (f"its plate search predates the one measured on plates of {MEASURED_PLATE_WIDTHS} "
                "(detectors.plate.settings has no looks): anonymize the video again (unmeasured)")
    if settings.get("measured_widths") != MEASURED_PLATE_WIDTHS:
        return (f"its plate search was measured on plates of {settings.get('measured_widths')!r}, not "
                f"{MEASURED_PLATE_WIDTHS} (detectors.plate.settings.measured_widths): anonymize the video again "
                "(unmeasured)")
    return None


_ABSENT = object()


def _field(report: Any, path: str) -> Any:
    """The value at ``path`` (keys joined by dots) of ``report``; :data:`_ABSENT` where a key is missing."""
    for key in path.split("."):
        if not isinstance(report, dict) or key not in report:
            return _ABSENT
        report = report[key]
    return report


def _is(expected: Any) -> Any:
    """``value`` equals ``expected`` (a tuple as the JSON list the report holds); a test of :data:`_MEASURED_FIELDS`."""
    want = list(expected) if isinstance(expected, tuple) else expected
    return lambda value, report: type(value) is type(want) and value == want


def _stored_as_shown(value: Any, report: dict[str, Any]) -> bool:
    """``input.stored_size`` is the frame that ``input.sample_aspect_ratio`` shows at ``input.width`` x ``height``."""
    from streamcue.video import parse_ratio, shown_size

    source = report["input"]
    try:
        ratio = parse_ratio(source.get("sample_aspect_ratio"))
    except ValueError:
        return False
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int and v > 0 for v in value)):
        return False
    return list(shown_size(value[0], value[1], ratio)) == [source.get("width"), source.get("height")]


def _rate(report: dict[str, Any]) -> tuple[float, int] | None:
    """The report's frame rate and looks for faces in frames (``settings.stride``, 1 when unstated), or None."""
    fps, stride = _field(report, "input.fps"), _field(report, "settings.stride")
    if not (_number(fps) and fps > 0):
        return None  # refused by _schedule_problem: no frame rate
    return fps, stride if isinstance(stride, int) and stride >= 1 else 1


def _always(report: dict[str, Any]) -> bool:
    return True


def _faces(report: dict[str, Any]) -> bool:
    """A face detector ran (a report of plates alone states nothing of how faces were found)."""
    return _field(report, "detectors.face") not in (None, _ABSENT)


def _centerface(report: dict[str, Any]) -> bool:
    return _field(report, "detectors.face.name") == "centerface"


def _two_sizes(report: dict[str, Any]) -> bool:
    """CenterFace looking at ``max_side`` and at full size: small faces are followed at full size between."""
    return _centerface(report) and _field(report, "settings.max_side") is not None


def _at_most(limit: float) -> Any:
    return lambda value, report: _number(value) and 0 <= value <= limit


def _at_least(limit: float) -> Any:
    return lambda value, report: _number(value) and value >= limit


def _sweeps_often(value: Any, report: dict[str, Any]) -> bool:
    """``settings.turn_every``: no more frames than the measured ``turn_s`` gives at the report's rate and stride."""
    return isinstance(value, int) and 1 <= value <= turn_frames(MEASURED_SCHEDULE["turn_s"], *_rate(report))


def _holds_turns(value: Any, report: dict[str, Any]) -> bool:
    """``settings.turn_hold``: a turn that found a face is held at least the measured ``bridge_s`` in frames."""
    return isinstance(value, int) and value >= round(MEASURED_SCHEDULE["bridge_s"] * _rate(report)[0])


_M = MEASURED_SCHEDULE

#: Every field a ``passed`` report states that decides recall, and what it must hold: (field, whether it applies to
#: the report, its test, the measured value in words). A report that lacks one was made before it was stated.
_MEASURED_FIELDS: tuple[tuple[str, Any, Any, str], ...] = (
    ("problems", _always, _is([]), "no problems"),
    ("input.rotation_deg", _always, lambda v, r: type(v) is int and v in (0, 90, 180, 270),
     "rotation metadata of 0, 90, 180 or 270 degrees"),
    ("input.stored_size", _always, _stored_as_shown,
     "a stored frame that input.sample_aspect_ratio shows at input.width x input.height"),
    *((f"orientation.{key}", _always, _is(value), repr(list(value) if isinstance(value, tuple) else value))
      for key, value in MEASURED_ORIENTATION.items()),
    ("looks.schedule", _always, _is(_M["looks"]), f"every look the {_M['looks']} gives"),
    ("settings.looks", _always, _is(_M["looks"]), f"every look the {_M['looks']} gives"),
    ("settings.turns_deg", _always, _is(_M["turns_deg"]), f"the frame also turned {list(_M['turns_deg'])} degrees"),
    ("settings.turned_plates", _always, _is(_M["turned_plates"]), f"plates on a turned frame {_M['turned_plates']}"),
    ("settings.turned_faces", _faces, _is(MEASURED_TURNED_FACES), f"a turned frame's faces: {MEASURED_TURNED_FACES}"),
    ("settings.follow_scale", _faces, _is(MEASURED_FOLLOW_SCALE),
     f"a followed face's speed in lengths of {MEASURED_FOLLOW_SCALE}"),
    ("settings.turn_s", _always, _at_most(_M["turn_s"]), f"the turns swept at least every {_M['turn_s']} s"),
    ("settings.turn_every", _rate, _sweeps_often, f"the turns swept at least every {_M['turn_s']} s at input.fps"),
    ("settings.turn_hold", _rate, _holds_turns, f"a turn that found a face held {_M['bridge_s']} s at input.fps"),
    ("options.bridge_s", _always, _at_least(_M["bridge_s"]), f"boxes carried across misses for {_M['bridge_s']} s"),
    ("settings.follow_px", _two_sizes, _at_least(_M["follow_px"]),
     f"faces under {_M['follow_px']} px followed at full size"),
    ("settings.full_every", _two_sizes, lambda v, r: isinstance(v, int) and v >= 1,
     "small faces looked for at full size"),
    ("settings.pad", _always, _at_least(MEASURED["pad"]), f"face boxes padded {MEASURED['pad']} or more"),
    ("detectors.face.settings.threshold", _centerface, _at_most(MEASURED["face_threshold"]),
     f"a face threshold of {MEASURED['face_threshold']} or less"),
    ("detectors.face.settings.track_threshold", _centerface, _at_most(MEASURED["track_threshold"]),
     f"a track threshold of {MEASURED['track_threshold']} or less"),
    ("detectors.face.settings.runtime", _centerface, lambda v, r: v in MEASURED_RUNTIMES,
     f"CenterFace run by {' or '.join(MEASURED_RUNTIMES)}"),
    ("detectors.face.settings.short_side_share", _centerface, _is(_M["short_side_share"]),
     f"{_M['short_side_share']} of the look's size kept on the frame's short side"),
)


def _measured_problem(report: dict[str, Any]) -> str | None:
    """The first field of :data:`_MEASURED_FIELDS` that the report lacks or that does not hold the measured value."""
    for path, applies, holds, words in _MEASURED_FIELDS:
        if not applies(report):
            continue
        value = _field(report, path)
        if value is _ABSENT:
            return (f"it states no {path}, so it was made before that was stated: anonymize the video again with "
                    f"this version (unmeasured) ({path})")
        if not holds(value, report):
            return f"it states {value!r} where recall was measured with {words} (unmeasured) ({path})"
    return None


def _frame_problem(report: dict[str, Any], info: Any) -> str | None:
    """Frames outside the measured sizes, as ``info`` (the published video's :class:`streamcue.video.VideoInfo`)
    gives them, whose size the report must state (the output keeps the input's size, as shown)."""
    source = report.get("input") or {}
    stated = (source.get("width"), source.get("height"))
    if stated != (info.width, info.height):
        return (f"the video's frames are {info.width}x{info.height} px, the report states {stated[0]!r}x{stated[1]!r} "
                "(input.width, input.height)")
    frames, fps = (report.get("output") or {}).get("frames"), source.get("fps")
    if not (_number(fps) and abs(fps - info.fps) <= 0.01):
        return f"the video's frame rate is {info.fps:g} fps, the report states {fps!r} (input.fps)"
    if info.duration_s and not (isinstance(frames, int) and abs(frames - info.duration_s * info.fps) <= 1.5):
        return (f"the video holds about {round(info.duration_s * info.fps)} frames, the report states {frames!r} "
                "(output.frames)")
    problem = frame_problem(info.width, info.height)
    return f"{problem} (input.width, input.height)" if problem else None


def _audio_problem(report: dict[str, Any], info: Any) -> str | None:
    """A published video with an audio track its report says was dropped (``output.audio``: the anonymizer keeps
    audio only with --keep-audio, and says so): a voice or a name spoken was put back after it."""
    stated = (report.get("output") or {}).get("audio")
    if info.has_audio and stated != "kept":
        return f"the video has an audio track, the report states its audio {stated!r} (output.audio)"
    return None


def _schedule_problem(report: dict[str, Any]) -> str | None:
    """A schedule outside the measured one, or fewer frames looked at than it looks at, or output = input."""
    output, source = report.get("output") or {}, report.get("input") or {}
    if not isinstance(output, dict) or not isinstance(source, dict) or output.get("sha256") == source.get("sha256"):
        return "the output's bytes are the input's (output.sha256 = input.sha256): nothing was hidden"
    settings = report.get("settings")
    if not isinstance(settings, dict) or any(k not in settings for k in ("look_s", "full_s", "plate_s", "dilate_s")):
        return "the report states no detection schedule (settings.look_s, full_s, plate_s, dilate_s)"
    fps, frames, looked = source.get("fps"), output.get("frames"), report.get("frames_detected")
    if not _number(fps) or fps <= 0 or not isinstance(looked, int):
        return "the report states no frame rate (input.fps) or no count of frames looked at (frames_detected)"
    outside = schedule_problems(settings, fps)
    if outside:
        return f"a schedule outside the range where recall was measured: {'; '.join(outside)} (settings)"
    needed = math.ceil(frames / frames_at(MEASURED_SCHEDULE["look_s"], fps))
    if looked < needed:
        return (f"{looked} of {frames} frames looked at, fewer than the measured schedule's {needed} "
                "(frames_detected)")
    return None


def _blur_problem(report: dict[str, Any], video_path: Path, info: Any) -> str | None:
    """Detections listed, but the sampled hidden regions of ``video_path`` are not blurred (or none sampled)."""
    found = sum(sum(v for v in report["detections"][what]["per_frame"] if _number(v) and v > 0) for what in DETECTED)
    samples = report.get("hidden_samples")
    if not found:
        return None
    if not isinstance(samples, list) or not samples:
        return f"{found} detections listed but no hidden region sampled (hidden_samples)"
    wanted = {s["frame"]: s["boxes"] for s in samples if isinstance(s, dict) and isinstance(s.get("frame"), int)
              and isinstance(s.get("boxes"), list) and s["boxes"]
              and all(isinstance(b, list) and len(b) == 4 and all(type(v) is int for v in b) for b in s["boxes"])}
    if len(wanted) != len(samples):
        return "a hidden_samples entry without a frame number and boxes of 4 whole numbers (hidden_samples)"
    from streamcue.video import read_frames

    cv2 = require("cv2", "anonymize", "opencv-python")
    seen = set()
    for index, frame in enumerate(read_frames(video_path, info)):
        if index in wanted:
            seen.add(index)
            grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            for x1, y1, x2, y2 in wanted[index]:
                if min(x2 - x1, y2 - y1) < JUDGED_SIDE:
                    continue
                region = grey[max(0, y1):max(0, y2), max(0, x1):max(0, x2)]
                sharp = float(cv2.Laplacian(region, cv2.CV_64F).var()) if region.size >= 16 else math.inf
                if not sharp <= BLURRED_MAX:
                    return (f"frame {index} is not blurred where the report says it hid something "
                            f"(box {[x1, y1, x2, y2]}: Laplacian variance {sharp:.0f} > {BLURRED_MAX}; hidden_samples)")
        if len(seen) == len(wanted):
            return None
    return f"hidden_samples name frames {sorted(set(wanted) - seen)} past the video's end (hidden_samples)"


def _evidence_problem(report: dict[str, Any]) -> str | None:
    """What a passing report lacks to prove the video was looked at: detectors, versions, detections."""
    detectors = report.get("detectors") if isinstance(report.get("detectors"), dict) else {}
    detections = report.get("detections") if isinstance(report.get("detections"), dict) else {}
    frames = (report.get("output") or {}).get("frames")
    if not isinstance(frames, int) or frames < 1:
        return "no frame count in the report's output (output.frames)"
    for what in DETECTED:
        det = detectors.get(what)
        if not isinstance(det, dict) or not det.get("name") or not det.get("version"):
            return f"the report names no {what} detector with its version (detectors.{what})"
        log = (detections.get(what) or {}).get("per_frame") if isinstance(detections.get(what), dict) else None
        if not isinstance(log, list) or len(log) != frames:
            return f"the report's {what} detection log does not cover its {frames} frames (detections.{what}.per_frame)"
    return None
