"""``annotate push | pull | status``: records to Label Studio tasks and back.

push: one task per record with the record's content as a prediction (the annotator's
starting point) and the whole record in the task data, so a pull can always rebuild it.
pull: every task back to a record of the same schema, verification filled in by the
double-check rule (:mod:`streamcue.annotation.verify`); all records are checked before the
output is written atomically, so a failed pull never leaves partial data.
"""

from __future__ import annotations

import copy
import json
import math
import os
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from streamcue.annotation import client as ls
from streamcue.annotation.convert import DEFAULT_FPS, LABEL_KINDS, Where, prediction, task_data
from streamcue.annotation.order import review_order
from streamcue.annotation.verify import Outcome, latest_per_annotator, verify
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.extras import require
from streamcue.io import iter_jsonl, write_jsonl
from streamcue.paths import resolve_uri
from streamcue.progress import track
from streamcue.schemas import ID_FIELDS, check, check_file
from streamcue.version import __version__

__all__ = ["BATCH", "PushResult", "push", "PullResult", "pull", "status"]


BATCH = 250


def _kind(kind: str) -> str:
    if kind not in LABEL_KINDS:
        from streamcue.fields import unknown_name

        raise unknown_name("record kind", kind, LABEL_KINDS)
    return kind


def _video_url(video: dict[str, Any] | None, videos_root: Path | None, document_root: Path | None) -> str:
    uri = (video or {}).get("uri", "")
    if "://" in uri or videos_root is None:
        return uri
    path = resolve_uri(videos_root, uri, record=f"video_id={(video or {}).get('video_id')}").resolve()
    return "/data/local-files/?d=" + quote(str(path.relative_to(document_root)))


@dataclass
class PushResult:
    project: str
    project_id: int
    imported: int
    skipped: int
    guideline: str = ""


def push(kind: str, records_path: Path, project: str, *, url: str | None = None, videos: Path | None = None,
         videos_root: Path | None = None, document_root: Path | None = None, order: bool = False,
         checks: int = 2) -> PushResult:
    """Create (or reuse) the project and import one task per record not already in it.

    The project shows the kind's guideline before annotating and gives each task to ``checks``
    annotators (see :func:`client.configure`).
    With ``order``, tasks are imported most-likely-wrong first (:mod:`streamcue.annotation.order`).
    """
    kind = _kind(kind)
    if checks < 1:
        raise ConfigError("--required must be at least 1")
    report = check_file(records_path, kind, videos=videos)
    if not report.ok:
        raise RecordValidationError(report.violations)
    videos = videos or records_path.with_name("videos.jsonl")
    video_of = {v["video_id"]: v for _, v in iter_jsonl(videos)} if videos.is_file() else {}
    if videos_root is not None:
        videos_root = videos_root.resolve()
        env_root = os.environ.get("LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT")
        document_root = (document_root or (Path(env_root) if env_root else None))
        if document_root is None:
            raise ConfigError("--video-root needs the server's local-files document root: pass --document-root "
                              "or set LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT (as on the server)")
        document_root = document_root.resolve()
        if videos_root == document_root or document_root not in videos_root.parents:
            raise ConfigError(f"--video-root {videos_root} must be a subfolder of the document root {document_root}")
    server = ls.connect(url)
    proj, _ = ls.project_for(server, project, kind, create=True)
    if videos_root is not None:
        ls.ensure_local_storage(server, proj.id, videos_root)
    existing = ls.export_tasks(server, proj.id)
    guideline = ls.configure(server, proj, kind, annotated=any(t.get("annotations") for t in existing), checks=checks)
    present = {t["data"].get("record_id") for t in existing}
    interface = require("label_studio_sdk.label_interface", "annotation", "label-studio-sdk").LabelInterface(
        ls.label_config(kind))
    tasks = []
    todo = [(line, r) for line, r in iter_jsonl(records_path) if r[ID_FIELDS[kind]] not in present]
    if order:
        line_of = {id(r): line for line, r in todo}
        todo = [(line_of[id(r)], r) for r in review_order([r for _, r in todo])]
    for rank, (line, record) in enumerate(todo, start=1):
        video = video_of.get(record["video_id"])
        fps = float((video or {}).get("fps") or DEFAULT_FPS)
        rows = prediction(record, kind, fps)
        errors = interface.validate_prediction({"result": rows}, return_errors=True)
        if errors:
            raise InputError(f"cannot be shown in the labeling config: {errors[0]}", file=records_path, line=line,
                             record=f"{ID_FIELDS[kind]}={record[ID_FIELDS[kind]]}")
        data = task_data(record, kind, _video_url(video, videos_root, document_root), fps)
        if order:
            data["review_rank"] = rank
        tasks.append({"data": data, "predictions": [{"model_version": f"streamcue-{__version__}", "result": rows}]})
    for start in track(range(0, len(tasks), BATCH), "importing tasks", total=-(-len(tasks) // BATCH)):
        server.call("importing tasks", server.client.projects.import_tasks, proj.id,
                    request=tasks[start:start + BATCH])
    return PushResult(project, proj.id, len(tasks), len(present), guideline)


@dataclass
class PullResult:
    records: int
    states: Counter = field(default_factory=Counter)
    changes: dict[str, list[str]] = field(default_factory=dict)
    disagreements: dict[str, str] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)


def _outcomes(project: str, url: str | None, required: int,
              tolerance_s: float) -> tuple[str, list[tuple[dict, Outcome]], dict[Any, str]]:
    if required < 1:
        raise ConfigError("--required must be at least 1")
    server = ls.connect(url)
    proj, kind = ls.project_for(server, project)
    names = ls.user_names(server)
    guideline = ls.guideline_version(proj.expert_instruction)
    interface = require("label_studio_sdk.label_interface", "annotation", "label-studio-sdk").LabelInterface(
        ls.label_config(kind))
    results = []
    for task in ls.export_tasks(server, proj.id):
        data = task.get("data") or {}
        try:
            record = json.loads(data["record_json"])
        except (KeyError, TypeError, json.JSONDecodeError):
            raise InputError(f"task {task.get('id')} holds no streamcue record (was it imported by hand?)",
                             file=f"Label Studio project {project!r}") from None
        where = Where(project, task["id"], None, f"{ID_FIELDS[kind]}={record[ID_FIELDS[kind]]}")
        for annotation in task.get("annotations") or []:
            # the server does not check results against the labeling config: we do
            errors = [] if annotation.get("was_cancelled") else interface.validate_prediction(
                {"result": annotation.get("result") or []}, return_errors=True)
            if errors:
                raise Where(project, task["id"], annotation.get("id"), where.record).error(
                    f"does not fit the labeling config: {errors[0]}")
        outcome = verify(record, kind, float(data.get("fps") or DEFAULT_FPS), task.get("annotations") or [],
                         names, where, required=required, tolerance_s=tolerance_s, guideline=guideline)
        results.append((task, _checked(outcome, record, kind, task["id"])))
    return kind, results, names


def _checked(outcome: Outcome, pushed: dict[str, Any], kind: str, task: int) -> Outcome:
    """An annotated record that breaks its schema (a success relabelled as a mistake has no
    category) is reported for that record alone: it comes back as pushed, unverified, with a note."""
    if outcome.state not in ("verified", "rejected"):
        return outcome
    violations = check(outcome.record, kind, file=f"<task {task}>")
    if not violations:
        return outcome
    problem = f"{violations[0].path}: {violations[0].message}"
    record = copy.deepcopy(pushed)
    kept = [n for n in record["verification"].get("notes", []) if not n.startswith("invalid:")]
    record["verification"] = {**outcome.record["verification"], "status": "unverified",
                              "notes": [*kept, f"invalid: {problem}"]}
    return Outcome(record, "invalid", outcome.annotations, [], problem)


def pull(project: str, out: Path, *, url: str | None = None, required: int = 2, tolerance_s: float = 1.0) -> PullResult:
    """Write every task's record (verified where the rule allows) to ``out``, all or nothing."""
    kind, results, _ = _outcomes(project, url, required, tolerance_s)
    violations = []
    for task, outcome in results:
        for v in check(outcome.record, kind, file=f"<task {task['id']}>"):
            violations.append(v)
    if violations:
        raise RecordValidationError(violations)
    summary = PullResult(len(results))
    for _, outcome in results:
        rid = outcome.record[ID_FIELDS[kind]]
        summary.states[outcome.state] += 1
        if outcome.changes and outcome.state in ("verified", "rejected"):
            summary.changes[rid] = outcome.changes
        if outcome.state == "invalid":
            summary.invalid[rid] = outcome.disagreement or ""
        elif outcome.disagreement:
            summary.disagreements[rid] = outcome.disagreement
    write_jsonl(out, [outcome.record for _, outcome in results])
    return summary


def status(project: str, *, url: str | None = None, required: int = 2,
           tolerance_s: float = 1.0) -> list[dict[str, Any]]:
    """Per task: annotators so far, agreement state and how many checks are missing."""
    return status_report(project, url=url, required=required, tolerance_s=tolerance_s)[0]


def status_report(project: str, *, url: str | None = None, required: int = 2,
                  tolerance_s: float = 1.0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`status`'s rows, and the throughput per annotator (:func:`throughput`)."""
    kind, results, names = _outcomes(project, url, required, tolerance_s)
    rows = [{"task": task["id"], "record": outcome.record[ID_FIELDS[kind]], "annotations": outcome.annotations,
             "state": outcome.state, "missing": max(0, required - outcome.annotations),
             "note": outcome.disagreement or ""} for task, outcome in results]
    return rows, throughput([task for task, _ in results], names)


def throughput(tasks: list[dict[str, Any]], names: dict[Any, str]) -> list[dict[str, Any]]:
    """Per annotator: tasks submitted (one per task however often), tasks skipped, and the time a task
    took them from Label Studio's ``lead_time`` (seconds the annotation was open in the page;
    annotations made through the API have none). Sorted by tasks, most first."""
    done: dict[Any, int] = Counter()
    skipped: dict[Any, int] = Counter()
    times: dict[Any, list[float]] = {}
    for task in tasks:
        annotations = task.get("annotations") or []
        submitted = latest_per_annotator(annotations)
        for annotation in submitted:
            user = annotation.get("completed_by")
            done[user] += 1
            lead = annotation.get("lead_time")
            if isinstance(lead, (int, float)) and math.isfinite(lead) and lead > 0:
                times.setdefault(user, []).append(float(lead))
        cancelled = {a.get("completed_by") for a in annotations if a.get("was_cancelled")}
        for user in cancelled - {a.get("completed_by") for a in submitted}:
            skipped[user] += 1
    rows = []
    for user in sorted(set(done) | set(skipped), key=lambda u: (-done[u], names.get(u, str(u)))):
        spent = times.get(user, [])
        rows.append({"annotator": names.get(user, f"user:{user}"), "tasks": done[user], "skipped": skipped[user],
                     "timed": len(spent), "median_s": statistics.median(spent) if spent else None,
                     "total_s": sum(spent) if spent else None})
    return rows
