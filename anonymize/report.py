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
(:mod:`streamcue.anonymize.canary`). Paths in a report are file names only, never a local folder.

A recorded video may be published only when its report exists, says ``passed``, names both
detectors with their versions, holds a detection log for every frame, and names the SHA-256
of exactly the file being published.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from streamcue.errors import InputError
from streamcue.io import read_json

REPORT_FORMAT = "streamcue.anonymization/1"
DETECTED = ("face", "plate")

__all__ = ["REPORT_FORMAT", "sha256_file", "anonymization_status", "report_problem"]


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
            listed = "; ".join(map(str, report.get("unmeasured") or []))
            why = f" (settings outside the range where recall was measured: {listed})"
        return f"{report_path}: anonymization status is {report.get('status')!r}, not 'passed'{why}"
    if report.get("unmeasured"):
        return f"{report_path}: settings outside the range where recall was measured (unmeasured)"
    canary = report.get("canary")
    if canary is not None and not (isinstance(canary, dict) and canary.get("passed") is True):
        return f"{report_path}: the detector's canary did not pass (canary)"
    problem = _evidence_problem(report)
    if problem:
        return f"{report_path}: {problem}"
    if not video_path.is_file():
        return f"video file {video_path} not found"
    expected = (report.get("output") or {}).get("sha256")
    if expected != sha256_file(video_path):
        return f"{video_path} does not match the SHA-256 in {report_path} (changed after anonymization?)"
    return None


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
