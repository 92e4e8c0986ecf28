"""Readers for Ego4D GoalStep, Ego4D narrations and caption files, with their quirks handled.

GoalStep (val): ``{videos: [{video_uid, start_time, end_time, goal_category, goal_description,
segments: [step {start_time, end_time, step_category, step_description, is_relevant,
is_continued, is_procedural, segments: [substep ...]}]}]}``. Quirks, each deliberate:

* the test split has only ``step_segments`` (descriptions and counts, no times): refused with
  a clear error, since no interval can be built from it;
* a step without ``is_relevant`` / ``is_continued`` / ``is_procedural`` (one in val): read as
  ``unsure`` / False / None and noted;
* substeps that extend past their parent step (261 in val): clamped to the parent's span and
  noted (the parent is the annotators' outer boundary);
* ``grp-`` video ids are groups of videos concatenated on one timeline: kept as one video
  whose times are on the concatenated timeline, with the member ids (from
  ``goalstep_video_groups.tsv`` when it lies beside the file) recorded;
* a step ending after the video's ``end_time`` raises the video's end to it (noted);
* a step with end < start is an error naming the file, video and step.

Narrations (``narration.json``): ``{video_uid: {narration_pass_1: {narrations: [{timestamp_sec,
narration_text, ...}]}}}``; passes are merged, points sorted by time, ``#C C`` / ``#unsure``
markers removed.

Captions (JSONL): ``{video_id, start_s, end_s, kind: narration | event | scene, text}``; an
unknown video id or end < start is an error naming the file and line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import InputError
from streamcue.fields import items, mapping
from streamcue.fields import seconds as _num
from streamcue.io import iter_jsonl, read_json
from streamcue.schemas.taxonomy import SPLIT_ALIASES

__all__ = ["Step", "GoalVideo", "Narration", "Caption", "load_goalstep", "load_narrations", "load_captions"]

RELEVANCE = ("essential", "optional", "irrelevant", "unsure")
CAPTION_KINDS = ("narration", "event", "scene")


@dataclass(frozen=True)
class Step:
    index: int
    start_s: float
    end_s: float
    category: str
    description: str
    relevance: str
    substeps: tuple[Step, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass
class GoalVideo:
    video_uid: str
    start_s: float
    end_s: float
    goal_category: str
    goal_description: str
    steps: list[Step]
    members: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    split: str = "validation"


@dataclass(frozen=True)
class Narration:
    t_s: float
    text: str


@dataclass(frozen=True)
class Caption:
    start_s: float
    end_s: float
    kind: str
    text: str


def _text(obj: Mapping[str, Any], key: str, file: Path, record: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise InputError("missing or not text", file=file, record=record, field=where + key)
    return value.strip()


def _groups(path: Path) -> list[list[str]]:
    """Member lists of concatenated videos, from ``goalstep_video_groups.tsv`` beside ``path``."""
    tsv = path.with_name("goalstep_video_groups.tsv")
    if not tsv.is_file():
        return []
    groups = []
    for line in tsv.read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        try:
            members = ast.literal_eval(parts[1]) if len(parts) == 2 else None
        except (ValueError, SyntaxError):
            members = None
        if isinstance(members, list):
            groups.append([str(m) for m in members])
    return groups


def _step(raw: Mapping[str, Any], index: int, file: Path, vid: str, where: str, notes: list[str],
          parent: Step | None = None) -> Step:
    mapping(raw, file, vid, where)
    start, end = _num(raw, "start_time", file, vid, where), _num(raw, "end_time", file, vid, where)
    if end < start:
        raise InputError(f"end_time {round(end, 6)} is before start_time {round(start, 6)}", file=file, record=vid,
                         field=where + "end_time")
    missing = [k for k in ("is_relevant", "is_continued", "is_procedural") if k not in raw]
    if missing:
        notes.append(f"{where.rstrip('.')} lacks {', '.join(missing)}: read as relevance 'unsure'")
    relevance = raw.get("is_relevant", "unsure")
    if relevance not in RELEVANCE:
        raise InputError(f"unknown relevance {relevance!r}", file=file, record=vid, field=where + "is_relevant")
    if parent is not None and (start < parent.start_s or end > parent.end_s):
        notes.append(f"{where.rstrip('.')} [{start:.2f}, {end:.2f}] clamped to its parent step "
                     f"[{parent.start_s:.2f}, {parent.end_s:.2f}]")
        start, end = max(start, parent.start_s), min(end, parent.end_s)
        end = max(start, end)
    description = _text(raw, "step_description", file, vid, where)
    step = Step(index, start, end, raw.get("step_category", ""), description, relevance)
    if parent is None:
        subs = tuple(_step(sub, j, file, vid, f"{where}segments[{j}].", notes, step)
                     for j, sub in enumerate(items(raw, "segments", file, vid, where, optional=True)))
        step = Step(index, start, end, step.category, description, relevance, subs)
    return step


def load_goalstep(path: str | Path) -> list[GoalVideo]:
    """Every video of a GoalStep annotation file, steps sorted by start time."""
    path = Path(path)
    data = read_json(path)
    videos = data.get("videos") if isinstance(data, dict) else None
    if not isinstance(videos, list):
        raise InputError("expected an object with a 'videos' list (Ego4D GoalStep annotations)", file=path)
    if not videos:
        raise InputError("the 'videos' list is empty: nothing to build", file=path, field="videos")
    if all(isinstance(v, dict) and "segments" not in v and "step_segments" in v for v in videos):
        raise InputError("this GoalStep file has only step_segments without times (the test split): "
                         "interval questions need timed steps, use the val file", file=path)
    groups = _groups(path)
    split = SPLIT_ALIASES.get(str(data.get("split", "val")).lower(), "validation")
    out = []
    seen = set()
    for i, raw in enumerate(videos):
        vid = raw.get("video_uid") if isinstance(raw, dict) else None
        if not isinstance(vid, str) or not vid:
            raise InputError("missing video_uid", file=path, record=f"videos[{i}]", field="video_uid")
        if vid in seen:
            raise InputError("duplicate video_uid", file=path, record=vid, field="video_uid")
        seen.add(vid)
        notes: list[str] = []
        start, end = _num(raw, "start_time", path, vid, ""), _num(raw, "end_time", path, vid, "")
        if end < start:
            raise InputError(f"end_time {end} is before start_time {start}", file=path, record=vid, field="end_time")
        steps = [_step(s, j, path, vid, f"segments[{j}].", notes)
                 for j, s in enumerate(items(raw, "segments", path, vid, "", optional=True))]
        steps.sort(key=lambda s: (s.start_s, -s.end_s, s.index))
        last = max((st.end_s for st in steps), default=end)
        if last > end:
            notes.append(f"a step ends at {last:.3f} s, after the video's end_time {end:.3f} s: end raised to it")
            end = last
        video = GoalVideo(vid, start, end, raw.get("goal_category", ""), _text(raw, "goal_description", path, vid, ""),
                          steps, notes=notes, split=split)
        if vid.startswith("grp-"):
            video.notes.append("grp- video: several Ego4D videos concatenated on one timeline")
            # a grp- id is "grp-" + the id of one of its member videos
            video.members = next((members for members in groups if vid[4:] in members), [])
        out.append(video)
    return out


_MARKERS = re.compile(r"#\s*(C|O|unsure|Unsure|summary)\b\s*", re.I)


def clean_narration(text: str) -> str:
    """``"#C C picks up a cup #unsure"`` -> ``"C picks up a cup"``."""
    return " ".join(_MARKERS.sub(" ", text).split())


def load_narrations(path: str | Path) -> dict[str, list[Narration]]:
    """Narration points per video (all passes merged, sorted by time)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("expected an object {video_uid: {narration_pass_1: ...}}", file=path)
    out: dict[str, list[Narration]] = {}
    for vid, passes in data.items():
        if not isinstance(passes, dict):
            raise InputError("expected an object of narration passes", file=path, record=vid)
        points = []
        for name, content in passes.items():
            if not name.startswith("narration_pass") or not isinstance(content, dict):
                continue
            for j, n in enumerate(items(content, "narrations", path, vid, f"{name}.", optional=True)):
                where = f"{name}.narrations[{j}]."
                t = _num(n, "timestamp_sec", path, vid, where)
                if t < 0:
                    raise InputError(f"negative time {t}", file=path, record=vid, field=where + "timestamp_sec")
                points.append(Narration(t, clean_narration(_text(n, "narration_text", path, vid, where))))
        out[vid] = sorted(points, key=lambda p: (p.t_s, p.text))
    return out


def load_captions(path: str | Path, known_videos: set[str]) -> dict[str, list[Caption]]:
    """Captions per video, sorted by start; an unknown video id is an error."""
    path = Path(path)
    out: dict[str, list[Caption]] = {}
    for line, rec in iter_jsonl(path):
        vid = rec.get("video_id")
        if not isinstance(vid, str):
            raise InputError("missing video_id", file=path, line=line, field="video_id")
        if vid not in known_videos:
            raise InputError("unknown video id (not in the GoalStep file)", file=path, line=line, record=vid,
                             field="video_id")
        start, end = _num(rec, "start_s", path, vid, ""), _num(rec, "end_s", path, vid, "")
        if end < start:
            raise InputError(f"end_s {end} is before start_s {start}", file=path, line=line, record=vid, field="end_s")
        kind = rec.get("kind", "event")
        if kind not in CAPTION_KINDS:
            raise InputError(f"kind must be one of {CAPTION_KINDS}", file=path, line=line, record=vid, field="kind")
        out.setdefault(vid, []).append(Caption(start, end, kind, _text(rec, "text", path, vid, "")))
    for caps in out.values():
        caps.sort(key=lambda c: (c.start_s, c.end_s, c.text))
    return out
