"""The anonymization report written beside every blurred video, and the check a release makes.

A report is a JSON object; the fields a release relies on are::

    {"format": "streamcue.anonymization/1", "status": "passed" | "failed",
     "input": {"path": ..., "sha256": ...}, "output": {"path": ..., "sha256": ...}, ...}

A recorded video may be published only when its report exists, says ``passed`` and names the
SHA-256 of exactly the file being published.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from streamcue.errors import InputError
from streamcue.io import read_json

REPORT_FORMAT = "streamcue.anonymization/1"


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
        return f"{report_path}: anonymization status is {report.get('status')!r}, not 'passed'"
    if not video_path.is_file():
        return f"video file {video_path} not found"
    expected = (report.get("output") or {}).get("sha256")
    if expected != sha256_file(video_path):
        return f"{video_path} does not match the SHA-256 in {report_path} (changed after anonymization?)"
    return None
