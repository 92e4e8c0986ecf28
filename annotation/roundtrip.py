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
import random
import statistics
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from streamcue.annotation import client as ls
from streamcue.annotation.convert import DEFAULT_FPS, LABEL_KINDS, Where, prediction, task_data
from streamcue.annotation.order import review_order
from streamcue.annotation.signing import SigningKey, load_key
from streamcue.annotation.verify import SEAL, SIGNED_BY_PULL, Outcome, latest_per_annotator, verify
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.extras import require
from streamcue.io import iter_jsonl, write_jsonl
from streamcue.paths import resolve_uri
from streamcue.progress import track
from streamcue.schemas import ID_FIELDS, check, check_file, check_records, load_durations
from streamcue.version import __version__

__all__ = ["BATCH", "LOCAL_FILES", "served_root", "served_folder", "Selection", "PushResult", "push", "PullResult",
           "pull", "status", "check_tolerance"]


BATCH = 250


def _kind(kind: str) -> str:
    if kind not in LABEL_KINDS:
        from streamcue.fields import unknown_name

        raise unknown_name("record kind", kind, LABEL_KINDS)
    return kind


LOCAL_FILES = "/data/local-files/?d="


def _video_url(video: dict[str, Any] | None, record_id: str, videos: Path, videos_root: Path | None,
               document_root: Path | None) -> str:
    """The URL the page loads the record's video from, refused (one line naming the video) when Label
    Studio could not serve it: the page would spin for ever. Label Studio serves http(s) URLs as they are
    and files under its local-files document root as ``/data/local-files/?d=<path under the root>``;
    a video's relative path (the only other uri a videos.jsonl holds) needs ``--video-root`` (a folder
    under that root) and the file there."""
    if video is None:
        raise InputError(f"record {record_id}: its video is not in {videos.name}, so the page has no video to "
                         "show", file=videos)
    uri, where = video.get("uri") or "", {"file": videos, "record": f"video_id={video.get('video_id')}",
                                          "field": "uri"}
    if uri.startswith(("http://", "https://")):
        return uri
    if videos_root is None:
        raise InputError(f"{uri!r} is a file path and no --video-root was given: Label Studio could not serve "
                         "the video (pass --video-root, a folder under its local-files document root)", **where)
    path = resolve_uri(videos_root, uri, **where).resolve()
    if not path.is_file():
        raise InputError(f"no video file {path} under --video-root {videos_root}", **where)
    return LOCAL_FILES + quote(str(path.relative_to(document_root)))


def served_root(document_root: Path | None) -> Path | None:
    """The server's local-files document root: ``--document-root``, else ``$LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT``
    (resolved; None when neither is set)."""
    env_root = os.environ.get("LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT")
    document_root = document_root or (Path(env_root) if env_root else None)
    return document_root.resolve() if document_root is not None else None


def served_folder(folder: Path, document_root: Path | None, option: str) -> Path:
    """``folder`` (resolved) when Label Studio can serve files from it: a subfolder of its local-files
    ``document_root``; otherwise one line naming ``option``."""
    folder = folder.resolve()
    if document_root is None:
        raise ConfigError(f"{option} needs the server's local-files document root: pass --document-root "
                          "or set LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT (as on the server)")
    if folder == document_root or document_root not in folder.parents:
        raise ConfigError(f"{option} {folder} must be a subfolder of the document root {document_root}")
    return folder


@dataclass
class Selection:
    """Which records of the file ``push`` sends (all when empty), applied in this order: ``ids``, then
    ``split`` (the record's video's split), then a uniform random ``sample`` of ``sample`` records drawn
    with ``seed`` (kept in file order), then ``--order``, then the first ``limit``."""

    ids: tuple[str, ...] = ()
    split: str | None = None
    sample: int | None = None
    seed: int = 0
    limit: int | None = None

    def check(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be at least 1, not {self.limit}")
        if self.sample is not None and self.sample < 1:
            raise ConfigError(f"--sample must be at least 1, not {self.sample}")
        if self.sample is not None and self.limit is not None:
            raise ConfigError("--sample and --limit together: a sample is already the number of records to push")
        if self.split is not None and self.split not in ("train", "validation", "test"):
            raise ConfigError(f"--split must be train, validation or test, not {self.split!r}")


#: Task data fields that record a spot-check sample (Data Manager columns; ``pull`` reads them back).
SAMPLE_FIELDS = ("sample_seed", "sample_size", "sample_population", "sample_split")


def select(todo: list[tuple[int, dict[str, Any]]], kind: str, selection: Selection, video_of: dict[str, Any],
           records_path: Path) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, Any] | None]:
    """The records :class:`Selection` keeps (before ``--order`` and ``--limit``), and the sample's fields."""
    id_field = ID_FIELDS[kind]
    if selection.ids:
        present = {r[id_field] for _, r in todo}
        missing = [i for i in selection.ids if i not in present]
        if missing:
            raise InputError(f"--ids names record(s) the file does not hold: {', '.join(missing[:5])}",
                             file=records_path, field=id_field)
        wanted = set(selection.ids)
        todo = [(line, r) for line, r in todo if r[id_field] in wanted]
    if selection.split is not None:
        if not video_of:
            raise ConfigError("--split needs the records' videos.jsonl (beside the records, or --videos)")
        todo = [(line, r) for line, r in todo if (video_of.get(r["video_id"]) or {}).get("split") == selection.split]
        if not todo:
            raise InputError(f"no record in the {selection.split} split", file=records_path)
    sample = None
    if selection.sample is not None:
        if selection.sample > len(todo):
            raise ConfigError(f"--sample {selection.sample} is more than the {len(todo)} record(s) to sample from")
        chosen = set(random.Random(selection.seed).sample(range(len(todo)), selection.sample))
        sample = {"sample_seed": selection.seed, "sample_size": selection.sample, "sample_population": len(todo),
                  "sample_split": selection.split or "all"}
        todo = [pair for i, pair in enumerate(todo) if i in chosen]
    return todo, sample


@dataclass
class PushResult:
    project: str
    project_id: int
    imported: int
    skipped: int
    guideline: str = ""
    required: int = 2
    required_before: int | None = None   # the project's overlap before this push changed it
    sample: dict[str, Any] | None = None


def push(kind: str, records_path: Path, project: str, *, url: str | None = None, videos: Path | None = None,
         videos_root: Path | None = None, document_root: Path | None = None, order: bool = False,
         checks: int | None = None, selection: Selection | None = None) -> PushResult:
    """Create (or reuse) the project and import one task per chosen record not already in it.

    The project shows the kind's guideline before annotating and gives each task to ``checks``
    annotators (None: the project's own number, 2 for a new project; see :func:`client.configure`).
    ``selection`` chooses the records (:class:`Selection`); a sample is written in each of its
    tasks' data (:data:`SAMPLE_FIELDS`), so ``pull`` can say what share of which split was checked.
    With ``order``, tasks are imported most-likely-wrong first (:mod:`streamcue.annotation.order`).
    """
    kind = _kind(kind)
    selection = selection or Selection()
    selection.check()
    if checks is not None and checks < 1:
        raise ConfigError("--required must be at least 1")
    report = check_file(records_path, kind, videos=videos)
    if not report.ok:
        raise RecordValidationError(report.violations)
    videos = videos or records_path.with_name("videos.jsonl")
    video_of = {v["video_id"]: v for _, v in iter_jsonl(videos)} if videos.is_file() else {}
    chosen, sample = select(list(iter_jsonl(records_path)), kind, selection, video_of, records_path)
    document_root = served_root(document_root)
    if videos_root is not None:
        videos_root = served_folder(videos_root, document_root, "--video-root")
    id_field = ID_FIELDS[kind]
    url_of = {r[id_field]: _video_url(video_of.get(r["video_id"]), r[id_field], videos, videos_root, document_root)
              for _, r in chosen}   # every video checked before anything reaches the server
    server = ls.connect(url)
    created = ls.find_project(server, project) is None
    proj, _ = ls.project_for(server, project, kind, create=True)
    if videos_root is not None:
        ls.ensure_local_storage(server, proj.id, videos_root)
    existing = ls.export_tasks(server, proj.id)
    annotated = any(t.get("annotations") for t in existing)
    guideline, required, before = ls.configure(server, proj, kind, annotated=annotated, checks=checks,
                                               created=created)
    present = {t["data"].get("record_id") for t in existing}
    interface = require("label_studio_sdk.label_interface", "annotation", "label-studio-sdk").LabelInterface(
        ls.label_config(kind))
    tasks = []
    todo = [(line, r) for line, r in chosen if r[ID_FIELDS[kind]] not in present]
    skipped = len(chosen) - len(todo)
    if order:
        line_of = {id(r): line for line, r in todo}
        todo = [(line_of[id(r)], r) for r in review_order([r for _, r in todo])]
    if selection.limit is not None:
        todo = todo[:selection.limit]
    for rank, (line, record) in enumerate(todo, start=1):
        video = video_of.get(record["video_id"])
        fps = float((video or {}).get("fps") or DEFAULT_FPS)
        rows = prediction(record, kind, fps)
        errors = interface.validate_prediction({"result": rows}, return_errors=True)
        if errors:
            raise InputError(f"cannot be shown in the labeling config: {errors[0]}", file=records_path, line=line,
                             record=f"{ID_FIELDS[kind]}={record[ID_FIELDS[kind]]}")
        data = task_data(record, kind, url_of[record[id_field]], fps)
        if video and isinstance(video.get("duration_s"), (int, float)):  # pull checks times against it
            data["video_duration_s"] = float(video["duration_s"])
        if order:
            data["review_rank"] = rank
        if sample:
            data.update(sample)
        tasks.append({"data": data, "predictions": [{"model_version": f"streamcue-{__version__}", "result": rows}]})
    for start in track(range(0, len(tasks), BATCH), "importing tasks", total=-(-len(tasks) // BATCH)):
        server.call("importing tasks", server.client.projects.import_tasks, proj.id,
                    request=tasks[start:start + BATCH])
    return PushResult(project, proj.id, len(tasks), skipped, guideline, required, before, sample)


@dataclass
class PullResult:
    records: int
    states: Counter = field(default_factory=Counter)
    changes: dict[str, list[str]] = field(default_factory=dict)
    disagreements: dict[str, str] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)
    kind: str = ""
    required: int = 2
    decided_by: Counter = field(default_factory=Counter)
    agreement: dict[str, Any] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    pushed: dict[str, dict[str, Any]] = field(default_factory=dict)   # each record as its task holds it


def check_tolerance(tolerance_s: float) -> float:
    if not (isinstance(tolerance_s, (int, float)) and math.isfinite(tolerance_s) and tolerance_s >= 0):
        raise ConfigError(f"--tolerance must be a finite number of seconds, 0 or more, not {tolerance_s}")
    return float(tolerance_s)


@dataclass
class Rule:
    """How ``pull`` decides a record: ``required`` annotators (None: the project's overlap), boundaries
    within ``tolerance_s``, ``majority`` voting (needs 3 or more), ``reviewers`` whose annotation decides."""

    required: int | None = None
    tolerance_s: float = 1.0
    majority: bool = False
    reviewers: tuple[str, ...] = ()


def _outcomes(project: str, url: str | None, rule: Rule, durations: dict[str, float] | None = None
              ) -> tuple[str, list[tuple[dict, Outcome]], dict[Any, str], int]:
    check_tolerance(rule.tolerance_s)
    if rule.required is not None and rule.required < 1:
        raise ConfigError("--required must be at least 1")
    server = ls.connect(url)
    proj, kind = ls.records_project(server, project)
    required = rule.required if rule.required is not None else (proj.maximum_annotations or 2)
    if rule.majority and required < 3:
        raise ConfigError(f"--majority needs --required 3 or more (a majority of {required} is all of them); "
                          f"the project hands each task to {proj.maximum_annotations}")
    names = ls.user_names(server)
    unknown = [r for r in rule.reviewers if r not in names.values()]
    if unknown:
        raise ConfigError(f"--reviewer {unknown[0]} is no user of Label Studio at {server.url}")
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
                         names, where, required=required, tolerance_s=rule.tolerance_s, guideline=guideline,
                         reviewers=rule.reviewers, majority=rule.majority)
        results.append((task, _checked(outcome, record, kind, task["id"], _durations(durations, data, record))))
    return kind, results, names, required


def _durations(durations: dict[str, float] | None, data: dict[str, Any], record: dict[str, Any]
               ) -> dict[str, float] | None:
    """The video lengths a pulled record's times are checked against: videos.jsonl's when given, else the length
    push wrote into the task (``video_duration_s``), so a time past the video's end is caught without videos.jsonl."""
    duration = data.get("video_duration_s")
    if durations is not None or not isinstance(duration, (int, float)) or "video_id" not in record:
        return durations
    return {record["video_id"]: float(duration)}


def _checked(outcome: Outcome, pushed: dict[str, Any], kind: str, task: int,
             durations: dict[str, float] | None = None) -> Outcome:
    """An annotated record that breaks its schema (a success relabelled as a mistake has no
    category) or its video's length (``durations``, as ``streamcue validate`` checks them) is reported
    for that record alone: it comes back as pushed, unverified, with a note."""
    if outcome.state not in ("verified", "rejected"):
        return outcome
    violations = check(outcome.record, kind, file=f"<task {task}>", durations=durations)
    if not violations:
        return outcome
    problem = f"{violations[0].path}: {violations[0].message}"
    record = copy.deepcopy(pushed)
    kept = [n for n in record["verification"].get("notes", []) if not n.startswith("invalid:")]
    decided = {k: v for k, v in outcome.record["verification"].items()
               if k not in ("decided_by", "reviewer", SEAL, *SIGNED_BY_PULL)}
    record["verification"] = {**decided, "status": "unverified", "notes": [*kept, f"invalid: {problem}"]}
    return Outcome(record, "invalid", outcome.annotations, [], problem, applied=outcome.applied)


def _signed(task: dict[str, Any], outcome: Outcome, key: SigningKey) -> Outcome:
    """A decided record with what decided it in its verification (``label_studio``: the task, the annotations that
    counted, the time the last of them was saved), signed with ``key``; any other outcome as it is."""
    if outcome.state not in ("verified", "rejected"):
        return outcome
    counted = latest_per_annotator(task.get("annotations") or [])
    times = [str(a.get("updated_at") or a.get("created_at")) for a in counted if a.get("updated_at") or
             a.get("created_at")]
    decided = {"task": task["id"], "annotations": [a["id"] for a in counted], **({"at": max(times)} if times else {})}
    record = {**outcome.record, "verification": {**outcome.record["verification"], "label_studio": decided}}
    return replace(outcome, record=key.sign(record))


def pull(project: str, out: Path | None = None, *, url: str | None = None, required: int | None = None,
         tolerance_s: float = 1.0, majority: bool = False, reviewers: tuple[str, ...] = (),
         videos: Path | None = None, key: SigningKey | str | Path | None = None) -> PullResult:
    """Every task's record (verified where the rule allows), written to ``out`` (when given) all or nothing.

    Every decided (verified or rejected) record is signed with ``key`` (a :class:`SigningKey`, the private key
    file, or None: the file ``$STREAMCUE_SIGNING_KEY`` names; :mod:`streamcue.annotation.signing`), its
    verification naming the Label Studio task and annotations that decided it (:func:`_signed`).

    What is written is validated exactly as ``streamcue validate OUT`` does: the schema, the semantic
    rules and, with ``videos`` (a ``videos.jsonl``; default: the one beside ``out``, if any), every time
    against its video's length. The result also holds the agreement between annotators
    (:func:`annotator_agreement`) and the spot-check samples the tasks were pushed in (see :func:`samples`).
    """
    from streamcue.annotation.agreement import annotator_agreement

    if videos is None and out is not None and out.with_name("videos.jsonl").is_file():
        videos = out.with_name("videos.jsonl")
    durations = load_durations(videos) if videos is not None else None
    key = key if isinstance(key, SigningKey) else load_key(key)
    if key.private is None:
        raise ConfigError(f"the signing key {key.fingerprint} is a public key: annotate pull signs with the private "
                          "key file (--key or $STREAMCUE_SIGNING_KEY)")
    rule = Rule(required, tolerance_s, majority, tuple(reviewers))
    kind, results, _, required = _outcomes(project, url, rule, durations)
    results = [(task, _signed(task, outcome, key)) for task, outcome in results]
    report = check_records(((line, o.record) for line, (_, o) in enumerate(results, start=1)), kind,
                           file=str(out) if out is not None else f"Label Studio project {project!r}",
                           durations=durations)
    if not report.ok:
        raise RecordValidationError(report.violations)
    summary = PullResult(len(results), kind=kind, required=required)
    for task, outcome in results:
        rid = outcome.record[ID_FIELDS[kind]]
        summary.pushed[rid] = json.loads(task["data"]["record_json"])
        summary.states[outcome.state] += 1
        summary.outcomes.append(outcome)
        if outcome.decided_by:
            summary.decided_by[outcome.decided_by] += 1
        if outcome.changes and outcome.state in ("verified", "rejected"):
            summary.changes[rid] = outcome.changes
        if outcome.state == "invalid":
            summary.invalid[rid] = outcome.disagreement or ""
        elif outcome.disagreement and outcome.state == "disagreement":
            summary.disagreements[rid] = outcome.disagreement
    checked = [[(name, applied) for name, applied, is_reviewer in outcome.applied if not is_reviewer]
               for _, outcome in results]
    summary.agreement = {"project": project, **annotator_agreement(kind, [c for c in checked if len(c) > 1],
                                                                   rule.tolerance_s),
                         "required": required, "records": len(results),
                         "annotators": sorted({n for c in checked for n, _ in c}),
                         "reviewers": sorted({n for _, o in results for n, _, r in o.applied if r}),
                         "decided_by": dict(summary.decided_by)}
    summary.samples = samples(kind, results)
    if out is not None:
        write_jsonl(out, [outcome.record for _, outcome in results])
    return summary


def samples(kind: str, results: list[tuple[dict, Outcome]]) -> list[dict[str, Any]]:
    """The spot-check samples among the tasks (``push --sample``): per sample its split, seed, size, the
    population it was drawn from, the records drawn, and how many of them are verified, rejected, or neither."""
    groups: dict[tuple, list[Outcome]] = {}
    for task, outcome in results:
        data = task.get("data") or {}
        if all(k in data for k in SAMPLE_FIELDS):
            groups.setdefault(tuple(data[k] for k in SAMPLE_FIELDS), []).append(outcome)
    out = []
    for (seed, size, population, split), outcomes in sorted(groups.items(), key=lambda g: str(g[0])):
        status = Counter(o.record["verification"]["status"] for o in outcomes)
        scope = "every split" if split == "all" else f"the {split} split"
        out.append({"split": split, "seed": seed, "size": size, "population": population,
                    "records": [o.record[ID_FIELDS[kind]] for o in outcomes], "verified": status["verified"],
                    "rejected": status["rejected"], "unverified": status["unverified"],
                    "statement": f"{size} of {population} {kind} records of {scope} "
                                 f"drawn uniformly at random (seed {seed}) were checked in Label Studio: "
                                 f"{status['verified']} verified, {status['rejected']} rejected, "
                                 f"{status['unverified']} not (yet) decided"})
    return out


def status(project: str, *, url: str | None = None, required: int | None = None,
           tolerance_s: float = 1.0, **rule: Any) -> list[dict[str, Any]]:
    """Per task: annotators so far, agreement state and how many checks are missing."""
    return status_report(project, url=url, required=required, tolerance_s=tolerance_s, **rule)[0]


def status_report(project: str, *, url: str | None = None, required: int | None = None, tolerance_s: float = 1.0,
                  majority: bool = False, reviewers: tuple[str, ...] = ()
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`status`'s rows, and the throughput per annotator (:func:`throughput`)."""
    kind, results, names, required = _outcomes(project, url, Rule(required, tolerance_s, majority, tuple(reviewers)))
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
