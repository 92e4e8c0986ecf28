"""CaptainCook4D -> LiveCook-style ``guidance`` records and ``video`` records.

Input: the public CaptainCook4D annotation repository (``annotation_json/``,
``data_splits/``, ``metadata/``). Output: one guidance record and one video record per
recording. The plan/event rules are LiveCook's (see :mod:`streamcue.dataset_builders.guidance_plan`).

Source quirks, each handled on purpose:

* steps not performed have start and end -1: dropped, and their errors kept in
  ``provenance.excluded`` (a step with only one of the two times at -1 is an error);
* a step id can repeat within a recording (53 recordings; sometimes with a different
  description): actions are identified by their position, never by step id;
* steps listed out of time order (72 recordings): sorted by the grouping rule;
* overlapping consecutive steps (453 pairs): grouped only when contained in the group's first
  action, otherwise a new plan step;
* several error tags on one step (532 steps): one mistake event per counted tag;
* step end times up to a few ms past the metadata duration, which is rounded to 10 ms: the
  video duration is raised to the last end time (more than 1 s past it is an error).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.dataset_builders import captaincook4d_text as text
from streamcue.dataset_builders.guidance_plan import Action, Mistake, group_actions, schedule_events
from streamcue.dataset_builders.jitter import jitter_guidance
from streamcue.dataset_builders.output import BuildReport
from streamcue.errors import ConfigError, InputError
from streamcue.finite import parse_csv_number
from streamcue.prologue import input_path
from streamcue.fields import field as _field
from streamcue.fields import items as _items
from streamcue.fields import mapping as _mapping
from streamcue.fields import text as _text
from streamcue.fields import seconds as _time
from streamcue.io import read_json
from streamcue.progress import track
from streamcue.schemas import SCHEMA_VERSION
from streamcue.schemas.taxonomy import COUNTED_MISTAKES, SPLIT_ALIASES

BUILDER_VERSION = "1.0"
VIDEO_LICENSE = "CaptainCook4D terms (videos are not redistributed; annotations MIT / Apache-2.0)"
DURATION_SLACK_S = 1.0

#: CaptainCook4D error tag -> streamcue mistake category.
TAG_CATEGORIES: dict[str, str] = {
    "Preparation Error": "preparation",
    "Measurement Error": "measurement",
    "Technique Error": "technique",
    "Timing Error": "timing",
    "Temperature Error": "temperature",
    "Order Error": "order",
    "Missing Step": "missing_step",
    "Other": "other",
}

__all__ = ["Config", "build", "example_config", "TAG_CATEGORIES"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("guidance", "video")
SUMMARY = "guidance records (LiveCook protocol) from CaptainCook4D annotations"


@dataclass(frozen=True)
class Config:
    """Options of the CaptainCook4D guidance builder.

    ``annotations``: the CaptainCook4D annotation repository folder.
    ``counted_mistakes``: categories that become mistake events (LiveCook's five by default).
    ``split_file``: recordings split, relative to ``annotations``.
    """

    annotations: Path = input_path("--annotations", folder=True)
    counted_mistakes: tuple[str, ...] = COUNTED_MISTAKES
    split_file: str = "data_splits/recordings_data_split_combined.json"
    steps_file: str = "annotation_json/complete_step_annotations.json"
    errors_file: str = "annotation_json/error_annotations.json"
    metadata_file: str = "metadata/video_information.csv"
    video_uri: str = "captaincook4d/{recording_id}_360p.mp4"
    recordings: tuple[str, ...] = field(default=())  # empty: all
    #: training exports: shift train-split instruction times by up to +-jitter_s (LiveCook App. D: 30), seeded
    jitter_s: float = 0.0
    jitter_seed: int = 0
    #: Inconsistent sources (no error annotation file, a recording in two splits, a repeated key,
    #: recording or metadata row) are errors; with ``warn_inconsistent`` they are warnings in the
    #: build report and the build goes on (no mistakes; the evaluation split wins; the first entry wins).
    warn_inconsistent: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.jitter_s < float("inf"):
            raise ConfigError(f"jitter must be a finite number of seconds >= 0, got {self.jitter_s}")
        unknown = set(self.counted_mistakes) - set(TAG_CATEGORIES.values())
        if unknown:
            raise ConfigError(f"unknown mistake categories {sorted(unknown)}; known: {sorted(TAG_CATEGORIES.values())}")


class _Inconsistency:
    """Raise an inconsistency as an InputError, or (``warn``) add it to ``warnings`` and go on."""

    def __init__(self, warn: bool, warnings: list[str]) -> None:
        self.warn, self.warnings = warn, warnings

    def __call__(self, message: str, **where: Any) -> None:
        if not self.warn:
            raise InputError(f"{message} (--warn-inconsistent makes this a warning)", **where)
        self.warnings.append(str(InputError(message, **where)))


def _load_durations(path: Path, inconsistent: _Inconsistency) -> dict[str, float]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        raise InputError("file not found (CaptainCook4D metadata with recording durations)", file=path) from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"not a readable CSV file ({exc})", file=path) from None
    durations: dict[str, float] = {}
    for lineno, row in enumerate(rows, start=2):
        try:
            rid, duration = row["recording_id"], parse_csv_number(row["duration(sec)"])
        except (KeyError, TypeError, ValueError):
            raise InputError("expected columns recording_id and duration(sec) with a number (digits, one '.', "
                             f"no '_'), got {row.get('duration(sec)')!r}", file=path, line=lineno,
                             record=row.get("recording_id"), field="duration(sec)") from None
        if not math.isfinite(duration) or duration <= 0:
            raise InputError(f"duration {row['duration(sec)']!r} is not a positive finite number", file=path,
                             line=lineno, record=rid, field="duration(sec)")
        if rid in durations:
            inconsistent("recording listed twice in the metadata (the first row is kept)", file=path, line=lineno,
                         record=rid)
            continue
        durations[rid] = duration
    return durations


#: When a recording is listed in two splits (with ``warn_inconsistent``), it stays in the first of these.
_SPLIT_PRIORITY = ("test", "validation", "train")


def _load_splits(path: Path, inconsistent: _Inconsistency) -> dict[str, str]:
    data = read_json(path, on_duplicate=lambda key: inconsistent("split listed twice", file=path, field=key))
    if not isinstance(data, dict):
        raise InputError("expected an object {split: [recording ids]}", file=path)
    splits: dict[str, str] = {}
    for name, ids in data.items():
        if name not in SPLIT_ALIASES:
            raise InputError(f"unknown split {name!r}; expected train, val or test", file=path, field=name)
        if not isinstance(ids, list):
            raise InputError("expected a list of recording ids", file=path, field=name)
        for rid in map(str, ids):
            split = SPLIT_ALIASES[name]
            if rid in splits:
                if splits[rid] == split:
                    inconsistent(f"recording listed twice in split {name}", file=path, record=rid, field=name)
                    continue
                kept = min(splits[rid], split, key=_SPLIT_PRIORITY.index)
                inconsistent(f"recording is in two splits, {splits[rid]} and {split} (train/evaluation leakage); "
                             f"kept in {kept} only", file=path, record=rid, field=name)
                split = kept
            splits[rid] = split
    return splits


def _errors_by_position(recording: Mapping[str, Any], errors: Mapping[str, Any] | None, file: Path,
                        rid: str) -> list[list[dict]]:
    """The error list of every step, joined by position and checked on (step_id, start, end)."""
    steps = recording["steps"]
    if errors is None:
        return [[] for _ in steps]
    annotated = _items(errors, "step_annotations", file, rid)
    if len(annotated) != len(steps):
        raise InputError(f"{len(annotated)} error step annotations for {len(steps)} steps", file=file, record=rid,
                         field="step_annotations")
    joined = []
    for i, (step, err) in enumerate(zip(steps, annotated)):
        key = lambda s: (s.get("step_id"), s.get("start_time"), s.get("end_time"))  # noqa: E731
        _mapping(err, file, rid, f"step_annotations[{i}]")
        if key(step) != key(err):
            raise InputError(f"does not match step {i} of the step annotations", file=file, record=rid,
                             field=f"step_annotations[{i}]")
        tags = _items(err, "errors", file, rid, f"step_annotations[{i}].", optional=True)
        for j, e in enumerate(tags):
            tag = _field(e, "tag", file, rid, f"step_annotations[{i}].errors[{j}].")
            description = e.get("description")
            if description is not None and not isinstance(description, str):
                raise InputError("expected text or null", file=file, record=rid,
                                 field=f"step_annotations[{i}].errors[{j}].description")
            if not isinstance(tag, str) or tag not in TAG_CATEGORIES:
                raise InputError(f"unknown error tag {tag!r}", file=file, record=rid,
                                 field=f"step_annotations[{i}].errors[{j}].tag")
        joined.append(tags)
    return joined


def build_recording(recording: Mapping[str, Any], errors: Mapping[str, Any] | None, *, config: Config,
                    duration_s: float, split: str, steps_file: Path, errors_file: Path) -> tuple[dict, dict]:
    """One CaptainCook4D recording -> (guidance record, video record)."""
    rid = str(_field(recording, "recording_id", steps_file, "?"))
    steps = _items(recording, "steps", steps_file, rid)
    for i, step in enumerate(steps):
        _mapping(step, steps_file, rid, f"steps[{i}]")
    activity = _text(recording, "activity_name", steps_file, rid)
    step_errors = _errors_by_position(recording, errors, errors_file, rid)
    actions: list[Action] = []
    excluded: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, (step, errs) in enumerate(zip(steps, step_errors)):
        where = f"steps[{i}]."
        start, end = _time(step, "start_time", steps_file, rid, where), _time(step, "end_time", steps_file, rid, where)
        step_id = _field(step, "step_id", steps_file, rid, where)
        if isinstance(step_id, bool) or not isinstance(step_id, (int, str)):
            raise InputError(f"expected an integer or text step id, got {step_id!r}", file=steps_file, record=rid,
                             field=where + "step_id")
        description = _text(step, "description", steps_file, rid, where)
        if start == -1 and end == -1:
            excluded.extend({"step_id": step_id, "category": TAG_CATEGORIES[e["tag"]],
                             "description": e.get("description", ""),
                             "reason": "step not performed"} for e in errs)
            excluded.append({"step_id": step_id, "description": description, "reason": "step not performed (times -1)"})
            continue
        if start < 0 or end < 0:
            raise InputError(f"only one of start_time/end_time is -1 ({start}, {end})", file=steps_file, record=rid,
                             field=where + "start_time")
        if end < start:
            raise InputError(f"end_time {round(end, 6)} is before start_time {round(start, 6)}", file=steps_file,
                             record=rid, field=where + "end_time")
        mistakes = []
        for e in errs:
            category = TAG_CATEGORIES[e["tag"]]
            if category in config.counted_mistakes:
                mistakes.append(Mistake(category, text.mistake_text(category, e.get("description") or e["tag"],
                                                                    description)))
            else:
                excluded.append({"step_id": step_id, "category": category, "description": e.get("description", ""),
                                 "reason": "category not counted"})
        actions.append(Action(step_id, start, end, description, text.success_text(description), tuple(mistakes), i))
    if not actions:
        raise InputError("no performed steps (every step has times -1)", file=steps_file, record=rid, field="steps")
    last_end = max(a.end_s for a in actions)
    if last_end > duration_s + DURATION_SLACK_S:
        raise InputError(f"a step ends at {last_end} s, past the video duration {duration_s} s", file=steps_file,
                         record=rid, field="steps")
    if last_end > duration_s:
        notes.append(f"video duration raised from {duration_s} s to the last step end {last_end} s (metadata is "
                     f"rounded)")
        duration_s = last_end
    groups = group_actions(actions)
    plan = [{
        "index": i,
        "text": text.instruction_text([a.instruction for a in group]),
        "step_ids": list(dict.fromkeys(a.step_id for a in group)),
        "actions": [{"step_id": a.step_id, "description": a.instruction, "start_s": a.start_s,
                     "end_s": a.end_s} for a in group],
    } for i, group in enumerate(groups)]
    events = schedule_events(groups, [step["text"] for step in plan])
    guidance = {
        "schema_version": SCHEMA_VERSION,
        "video_id": rid,
        "activity": activity,
        "activity_id": recording.get("activity_id"),
        "plan": plan,
        "events": events,
        "provenance": {
            "builder": "captaincook4d",
            "version": BUILDER_VERSION,
            "source": "CaptainCook4D complete_step_annotations.json + error_annotations.json",
            "stage": "template",
            "model": None,
            "prompt_hash": None,
            "counted_mistakes": list(config.counted_mistakes),
            "notes": notes,
            "excluded": excluded,
        },
        "verification": {"status": "unverified", "annotators": [], "checks": 0},
    }
    video = {
        "schema_version": SCHEMA_VERSION,
        "video_id": rid,
        "source": "captaincook4d",
        "duration_s": duration_s,
        "fps": None,
        "width": None,
        "height": None,
        "license": VIDEO_LICENSE,
        "uri": config.video_uri.format(recording_id=rid),
        "split": split,
        "anonymization": {"status": "not_required", "report": None},
    }
    return guidance, video


def build(config: Config, report: BuildReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("guidance", record)`` and ``("video", record)`` for every recording; ``report`` gets the counts.

    The sources are cross-checked first: the error annotation file must exist, no recording may
    be in two splits, and no recording, key or metadata row may be repeated (errors, or with
    ``config.warn_inconsistent`` warnings in ``report.details["warnings"]``).
    """
    report = report if report is not None else BuildReport("captaincook4d")
    warnings: list[str] = []
    inconsistent = _Inconsistency(config.warn_inconsistent, warnings)
    root = Path(config.annotations)
    if not root.is_dir():
        raise InputError("not a folder (expected the CaptainCook4D annotation repository)", file=root)
    steps_file, errors_file = root / config.steps_file, root / config.errors_file
    recordings = read_json(steps_file, on_duplicate=lambda key: inconsistent(
        "recording appears twice (the first is kept)", file=steps_file, record=key))
    if not isinstance(recordings, dict):
        raise InputError("expected an object {recording_id: recording}", file=steps_file)
    error_list = None
    if errors_file.exists():
        error_list = read_json(errors_file)
    else:
        inconsistent("file not found: without it every recording would have no mistakes (the build goes on "
                     "without mistake events)", file=errors_file)
    if error_list is not None and not isinstance(error_list, list):
        raise InputError("expected a list of recordings", file=errors_file)
    errors: dict[str, Any] = {}
    for i, entry in enumerate(error_list or []):
        rid = str(_field(entry, "recording_id", errors_file, f"[{i}]"))
        if rid in errors:
            inconsistent(f"recording has a second error annotation at [{i}] (the first is kept)", file=errors_file,
                         record=rid)
            continue
        errors[rid] = entry
    durations = _load_durations(root / config.metadata_file, inconsistent)
    splits = _load_splits(root / config.split_file, inconsistent)
    wanted = list(dict.fromkeys(config.recordings)) or list(recordings)
    for rid in track(wanted, "captaincook4d recordings", total=len(wanted)):
        if rid not in recordings:
            raise InputError("unknown recording id", file=steps_file, record=rid)
        if rid not in durations:
            raise InputError("recording has no duration in the metadata", file=root / config.metadata_file, record=rid)
        if rid not in splits:
            raise InputError("recording is in no split", file=root / config.split_file, record=rid)
        if error_list is not None and rid not in errors:
            raise InputError("recording has no error annotation", file=errors_file, record=rid)
        guidance, video = build_recording(recordings[rid], errors.get(rid), config=config, duration_s=durations[rid],
                                          split=splits[rid], steps_file=steps_file, errors_file=errors_file)
        if config.jitter_s and splits[rid] == "train":
            guidance = jitter_guidance(guidance, config.jitter_s, config.jitter_seed)
        yield "guidance", guidance
        yield "video", video
    report.details = {"recordings": len(wanted), "counted_mistakes": list(config.counted_mistakes),
                      "warnings": warnings}


def example_config(data_root: Path) -> Config:
    """The smallest real input, for the contract tests and a first try: two recordings of the annotation
    repository under ``data_root`` (``captaincook4d/``)."""
    return Config(annotations=Path(data_root) / "captaincook4d", recordings=("1_7", "2_3"))


def command(
    annotations: Annotated[Path, typer.Option(help="CaptainCook4D annotation repository folder (annotation_json/, "
                                                   "data_splits/, metadata/).")],
    out: Annotated[Path, typer.Option(help="Output folder: guidance.jsonl, videos.jsonl and build_report.json.")],
    count_mistakes: Annotated[str, typer.Option(help="Comma-separated mistake categories that become mistake "
                                                     "events.")] =
        "technique,preparation,measurement,timing,temperature",
    recording: Annotated[Optional[list[str]], typer.Option(help="Build only these recording ids (repeatable).")] = None,
    jitter_s: Annotated[float, typer.Option(
        help="Training export: shift train-split instruction times by up to +-this many seconds "
             "(LiveCook: 30).")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of --jitter-s.")] = 0,
    warn_inconsistent: Annotated[bool, typer.Option(
        "--warn-inconsistent", help="Inconsistent sources (no error_annotations.json, a recording in two splits, "
        "repeated entries) become warnings in build_report.json instead of errors.")] = False,
) -> None:
    """Build LiveCook-style guidance records for every CaptainCook4D recording.

    Examples:

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d-train \
            --jitter-s 30 --seed 1    # training export: train-split instructions jittered, benchmark splits untouched
    """
    from streamcue.dataset_builders.output import run_builder
    from streamcue.dataset_builders.registry import get_builder
    from streamcue.dataset_builders.summaries import print_guidance_summary

    config = Config(
        annotations=annotations,
        counted_mistakes=tuple(c.strip() for c in count_mistakes.split(",") if c.strip()),
        recordings=tuple(recording or ()),
        jitter_s=jitter_s,
        jitter_seed=seed,
        warn_inconsistent=warn_inconsistent,
    )
    result, report = run_builder(get_builder("captaincook4d"), config, out)
    for warning in report.details.get("warnings", []):
        console.err.print(f"warning: {warning}", markup=False, soft_wrap=True)
    print_guidance_summary(result.files["guidance"], result.files["video"])
