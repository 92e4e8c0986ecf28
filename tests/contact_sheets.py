"""Anonymized videos with their contact sheets, served to the session's Label Studio, and a person's verdict on a
sheet submitted through Label Studio's API: the anonymization check (annotation/anonymization_check.py)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

from streamcue.annotation.anonymization_check import HIDDEN, READABLE

__all__ = ["HIDDEN", "READABLE", "anonymized_folder", "served_videos", "own_bytes", "check_tasks", "verdict"]


@functools.cache
def anonymized_folder() -> Path:
    """A 1 s 1280x720 10 fps clip blurred by the real anonymizer, made once per test process: ``v1.mp4``,
    ``v1.anonymization.json`` and ``v1.contact.jpg`` as ``streamcue anonymize`` writes them."""
    from streamcue.anonymize.pipeline import AnonymizeConfig, anonymize_video
    from streamcue.anonymize.synthetic import write_clip

    folder = Path(tempfile.mkdtemp(prefix="streamcue-test-recorded-"))
    write_clip(folder / "v1.mp4", width=1280, height=720, fps=10, seconds=1)
    report = anonymize_video(folder / "v1.mp4", folder / "out", AnonymizeConfig())
    assert report["status"] == "passed", report
    return folder / "out"


def served_videos(folder: str, names: tuple[str, ...] = ("v1",)) -> Path:
    """The anonymizer's output for each of ``names`` in ``folder`` under the connected server's local-files
    root, as ``streamcue anonymize`` writes a folder of videos: the blurred clip, its contact sheet, and its report
    naming them. Each video has its own bytes, as videos of a real folder do (:func:`own_bytes`): a rejection holds
    for a video's bytes on the whole server, so two test videos sharing bytes would share their checks."""
    from streamcue.seal import seal

    source = anonymized_folder()
    out = Path(os.environ["LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT"]) / folder
    out.mkdir(parents=True)
    report = json.loads((source / "v1.anonymization.json").read_text())
    for name in names:
        video = own_bytes(source / "v1.mp4", out / f"{name}.mp4", f"{folder}/{name}")
        shutil.copyfile(source / "v1.contact.jpg", out / f"{name}.contact.jpg")
        named = {**report, "output": {**report["output"], "path": f"{name}.mp4", "sha256": video},
                 "contact_sheet": {**report["contact_sheet"], "path": f"{name}.contact.jpg"}}
        # another video's report, as the anonymizer would have written it (sealed)
        (out / f"{name}.anonymization.json").write_text(json.dumps(seal(named), indent=2) + "\n")
    return out


def own_bytes(source: Path, out: Path, tag: str) -> str:
    """``source`` (an MP4) copied to ``out`` with an MP4 ``free`` box holding ``tag`` at its end (a box players
    skip; the frames are the same): a video of its own bytes without encoding it again. Returns its SHA-256."""
    from streamcue.anonymize.report import sha256_file

    text = tag.encode()
    out.write_bytes(source.read_bytes() + (8 + len(text)).to_bytes(4, "big") + b"free" + text)
    return sha256_file(out)


def check_tasks(project: str) -> dict[str, dict]:
    """The check project's tasks (as Label Studio exports them) by video name."""
    from streamcue.annotation import client as ls

    server = ls.connect()
    found, _ = ls.project_for(server, project)
    return {t["data"]["video"]: t for t in ls.export_tasks(server, found.id)}


def verdict(server, task: int, user: int, choice: str, note: str | None = None) -> None:
    """``user`` submits ``choice`` (and what they saw, ``note``) on a sheet, as the page submits it."""
    import httpx

    result = [{"id": "verdict1", "from_name": "verdict", "to_name": "sheet", "type": "choices",
               "value": {"choices": [choice]}}]
    if note is not None:
        result.append({"id": "missed1", "from_name": "missed", "to_name": "sheet", "type": "textarea",
                       "value": {"text": [note]}})
    r = httpx.post(f"{server.url}/api/tasks/{task}/annotations/", headers={"Authorization": f"Token {server.token}"},
                   json={"result": result, "completed_by": user})
    r.raise_for_status()
