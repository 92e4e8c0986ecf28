"""The anonymization check: a person looks at each anonymized video's contact sheet in Label Studio and ticks
"all faces and plates hidden" or rejects it with "something readable" (issue 45), before a release may publish it.

``push`` makes one task per anonymizer report (``NAME.anonymization.json`` with its ``NAME.contact.jpg``; the
labeling config ``annotation/configs/anonymization.v1.xml``, the guideline ``anonymization.guideline.v2.md``), the
sheet served through Label Studio's local files as videos are. ``pull`` turns each task into a check (``CHECKS_FILE``)::

    {"format": "streamcue.anonymization_checks/1", "project": ..., "required": 1, "checks": [{
        "video": "v1.mp4", "video_sha256": ..., "report": "v1.anonymization.json", "report_sha256": ...,
        "contact_sheet": "v1.contact.jpg", "contact_sheet_sha256": ..., "state": "ticked",
        "checked_by": ["ann1@example.org"], "notes": [], "guideline": "anonymization.v2",
        "label_studio": {"task": 7, "annotations": [12], "at": "..."}, "signature": {"key": ..., "ed25519": ...}}]}

The rule: skipped annotations are ignored and a person's latest annotation counts; one person choosing
"something readable" rejects the video (``rejected``, their note kept), whatever the others chose; ``required``
distinct people choosing "all faces and plates hidden" and nobody else tick it (``ticked``); otherwise it is
``pending``. A check names the SHA-256 of the video's bytes, of its report and of the sheet shown (which the report
states, ``contact_sheet.sha256``) as they were pushed, so a video anonymized again, or a sheet replaced, needs a new
check (:func:`video_check`); a re-push of a video supersedes its older task (deleted when nobody annotated it, else
marked ``superseded``: its check says so and never ticks, while its rejection holds), and the check is signed
with the maintainer's key (as ``annotate pull`` signs verified records), so a check written or edited by hand does
not count.

A rejection holds for the video's bytes wherever it was made on the server (:func:`rejections`): ``pull`` also reads
every other check project the token sees (a project whose labeling config carries streamcue's anonymization marker,
one export each, only those with annotations) and any task of the project itself made on the same video bytes, and a
check whose video SHA-256 someone found readable there is ``rejected``, its notes naming the project and task
(``rejected_elsewhere``), so a tick in a second project never publishes bytes rejected in a first; ``push`` names,
one line per video, a video already rejected so. The file names people by
their Label Studio e-mail, like a pulled record: it stays with the maintainer, and a release publishes
pseudonyms only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from streamcue.annotation import client as ls
from streamcue.annotation.convert import Where
from streamcue.annotation.roundtrip import BATCH, LOCAL_FILES, served_folder, served_root
from streamcue.annotation.signing import SigningKey, canonical, load_key
from streamcue.annotation.verify import latest_per_annotator
from streamcue.anonymize.contact_sheet import sheet_problem
from streamcue.anonymize.report import beside, problem_field, report_problem, seal_problem, sha256_file, sheet_beside
from streamcue.errors import ConfigError, InputError, check_every
from streamcue.io import read_json
from streamcue.progress import track

__all__ = ["KIND", "CHECKS_FILE", "FORMAT", "HIDDEN", "READABLE", "Sheet", "sheets", "Pushed", "push", "pull",
           "rejections", "read_checks", "video_check"]

#: The labeling config and guideline's name (``annotation/configs/anonymization.v1.xml``).
KIND = "anonymization"
#: Where ``pull`` writes by default beside the records and where ``release build`` looks (``RECORDS/...``).
CHECKS_FILE = "anonymization_checks.json"
FORMAT = "streamcue.anonymization_checks/1"
#: The two choices of the page: ticked, and rejected.
HIDDEN = "all faces and plates hidden"
READABLE = "something readable"
_REPORT_SUFFIX = ".anonymization.json"


@dataclass(frozen=True)
class Sheet:
    """One anonymized video as the check sees it: its report, its contact sheet, and the bytes they name."""

    report: Path
    sheet: Path
    video: str
    video_sha256: str
    report_sha256: str
    sheet_sha256: str
    frames: int


def sheets(reports: Path) -> list[Sheet]:
    """Every report of ``reports`` (the anonymizer's output folder, or one report file) with its contact sheet.
    Every report is checked before any is refused: one that is not ``passed``, has no sheet, a video a release would
    refuse under it, or a sheet that does not show that video's frames is a violation naming the report (and the
    field), all of them raised together as one :class:`~streamcue.errors.RecordValidationError`
    (:func:`~streamcue.errors.check_every`)."""
    files = sorted(reports.glob(f"*{_REPORT_SUFFIX}")) if reports.is_dir() else [reports]
    if not files or not files[0].is_file() or not files[0].name.endswith(_REPORT_SUFFIX):
        raise InputError(f"no anonymization report (NAME{_REPORT_SUFFIX}, written by streamcue anonymize beside "
                         "NAME.mp4): pass one, or the folder of them", file=reports)
    return check_every(track(files, "comparing contact sheets with their videos", total=len(files)), _sheet)


def _sheet(path: Path) -> Sheet:
    report = read_json(path)
    output = report.get("output") if isinstance(report, dict) else None
    if not isinstance(output, dict) or not isinstance(output.get("sha256"), str):
        raise InputError("not an anonymization report (no output.sha256)", file=path)
    if report.get("status") != "passed":
        raise InputError(f"status {report.get('status')!r}: a release refuses this video whatever a person sees "
                         "on its sheet; anonymize it again", file=path, field="$.status")
    edited = seal_problem(report)  # a person is shown only what the anonymizer wrote
    if edited:
        raise InputError(edited, file=path, field=problem_field(edited))
    stated = report.get("contact_sheet")
    named = stated.get("path") if isinstance(stated, dict) else None
    if not isinstance(named, str) or Path(named).name != named:
        raise InputError("no contact sheet (a report made before sheets were drawn): anonymize the video again",
                         file=path, field="$.contact_sheet.path")
    sheet, digest = sheet_beside(path, stated)
    _drawn_from_video(path, report, sheet)
    return Sheet(path, sheet, str(output.get("path")), output["sha256"], sha256_file(path), digest,
                 len(stated["frames"]))


def _drawn_from_video(path: Path, report: dict[str, Any], sheet: Path) -> None:
    """One line naming the report unless the video it names is beside it and a release would publish it under
    the report (:func:`~streamcue.anonymize.report.report_problem`: its bytes, the blur, every measured field), and
    the sheet shows that video's frames (:func:`~streamcue.anonymize.contact_sheet.sheet_problem`): what a person
    ticks is what is published."""
    named = report["output"].get("path")
    video = beside(path, named)
    if video is None or not video.is_file():
        raise InputError(f"the video the report names ({named}) is not beside it: the contact sheet is compared with "
                         "its frames before a person is shown it", file=path, field="$.output.path")
    problem = report_problem(path, video)
    if problem:
        raise InputError(problem.removeprefix(f"{path}: "), file=path, field=problem_field(problem))
    encoder = report["settings"].get("encoder")
    problem = sheet_problem(sheet, video, report["contact_sheet"], report["input"]["fps"],
                            encoder.get("crf") if isinstance(encoder, dict) else None)
    if problem:
        raise InputError(problem, file=path, field="$.contact_sheet")


def _task(sheet: Sheet, document_root: Path) -> dict[str, Any]:
    url = LOCAL_FILES + quote(str(sheet.sheet.resolve().relative_to(document_root)))
    about = (f"{sheet.frames} frames of {sheet.video} spread from its first to its last, each with its time; every "
             "hidden region outlined in red (video sha256 " + sheet.video_sha256[:12] + ")")
    return {"data": {"sheet": url, "video": sheet.video, "about": about, "video_sha256": sheet.video_sha256,
                     "report": sheet.report.name, "report_sha256": sheet.report_sha256,
                     "contact_sheet": sheet.sheet.name, "contact_sheet_sha256": sheet.sheet_sha256}}


@dataclass
class Pushed:
    project: str
    project_id: int
    imported: int
    skipped: int
    guideline: str
    required: int
    #: Tasks of the videos pushed that were made on other bytes: deleted, or marked superseded when annotated.
    superseded: int = 0
    #: Videos pushed whose bytes someone already found readable (this project or another): their notes, naming
    #: where (:func:`rejections`); pull keeps them rejected whatever is chosen on the new task.
    rejected: dict[str, list[str]] = field(default_factory=dict)


def push(reports: Path, project: str, *, url: str | None = None, document_root: Path | None = None,
         required: int | None = None) -> Pushed:
    """Create (or reuse) the check project and import one task per report of ``reports`` whose bytes (video and
    report) have no task yet; ``reports`` must lie under the server's local-files document root. Each task goes to
    ``required`` people (None: the project's number, 1 for a new project)."""
    if required is not None and required < 1:
        raise ConfigError("--required must be at least 1")
    found = sheets(reports)
    document_root = served_root(document_root)
    folder = served_folder(reports if reports.is_dir() else reports.parent, document_root, "--reports")
    server = ls.connect(url)
    created = ls.find_project(server, project) is None
    proj, _ = ls.project_for(server, project, KIND, create=True)
    ls.ensure_local_storage(server, proj.id, folder)
    existing = ls.export_tasks(server, proj.id)
    guideline, required, _ = ls.configure(server, proj, KIND, annotated=any(t.get("annotations") for t in existing),
                                          checks=required if required is not None or not created else 1,
                                          created=created)
    present = {_bytes(t.get("data") or {}) for t in existing}
    tasks = [t for t in (_task(s, document_root) for s in found) if _bytes(t["data"]) not in present]
    for start in range(0, len(tasks), BATCH):
        server.call("importing tasks", server.client.projects.import_tasks, proj.id, request=tasks[start:start + BATCH])
    superseded = _supersede(server, existing, tasks)
    found_rejected = rejections(server, {s.video_sha256 for s in found}, ls.user_names(server), (proj, existing))
    rejected = {s.video: [r["note"] for r in found_rejected[s.video_sha256]] for s in found
                if s.video_sha256 in found_rejected}
    return Pushed(project, proj.id, len(tasks), len(found) - len(tasks), guideline, required, superseded, rejected)


def _bytes(data: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What a task was made on: the SHA-256 of the video, of its report and of the sheet shown."""
    return data.get("video_sha256"), data.get("report_sha256"), data.get("contact_sheet_sha256")


def _supersede(server: ls.Server, existing: list[dict[str, Any]], pushed: list[dict[str, Any]]) -> int:
    """The tasks of ``existing`` for a video just pushed on other bytes (anonymized again, or a new sheet) leave the
    check: deleted when nobody annotated them, else marked ``superseded`` (shown on the page; ``pull`` counts no
    tick of theirs, while a rejection of the same video bytes still holds). Their sheet's URL serves the new sheet
    by now, so a tick there would be of a sheet the task does not name. Returns how many."""
    videos = {t["data"]["video"] for t in pushed}
    old = [t for t in existing if (t.get("data") or {}).get("video") in videos and not t["data"].get("superseded")]
    for task in old:
        if not task.get("annotations"):
            server.call("deleting a superseded task", server.client.tasks.delete, task["id"])
            continue
        data = {**task["data"], "superseded": True,
                "about": "SUPERSEDED by a newer contact sheet of this video: do not check this task. "
                         + str(task["data"].get("about", ""))}
        server.call("marking a task superseded", server.client.tasks.update, task["id"], data=data)
    return len(old)


def _verdict(result: list[dict[str, Any]], where: Where) -> tuple[str, str]:
    """An annotation's choice and note; one line naming the task and annotation when it holds no choice."""
    choices = [c for row in result if row.get("from_name") == "verdict"
               for c in ((row.get("value") or {}).get("choices") or [])]
    if len(choices) != 1 or choices[0] not in (HIDDEN, READABLE):
        raise where.error(f"no single choice of {HIDDEN!r} or {READABLE!r} (got {choices})")
    note = " ".join(t for row in result if row.get("from_name") == "missed"
                    for t in ((row.get("value") or {}).get("text") or []) if isinstance(t, str)).strip()
    return choices[0], note


def _check(task: dict[str, Any], project: str, names: dict[Any, str], required: int,
           guideline: str | None) -> dict[str, Any]:
    """A task's check (the rule in the module docstring), unsigned."""
    data = task.get("data") or {}
    fields = ("video", "video_sha256", "report", "report_sha256", "contact_sheet", "contact_sheet_sha256")
    if not all(isinstance(data.get(k), str) for k in fields):
        raise InputError(f"task {task.get('id')} holds no contact sheet of streamcue (was it imported by hand?)",
                         file=f"Label Studio project {project!r}")
    counted = latest_per_annotator(task.get("annotations") or [])
    verdicts = {}
    for annotation in counted:
        where = Where(project, task["id"], annotation.get("id"), f"video={data['video']}")
        name = names.get(annotation.get("completed_by"), f"user:{annotation.get('completed_by')}")
        verdicts[name] = _verdict(annotation.get("result") or [], where)
    readable = sorted(n for n, (choice, _) in verdicts.items() if choice == READABLE)
    hidden = sorted(n for n, (choice, _) in verdicts.items() if choice == HIDDEN)
    state = "rejected" if readable else "ticked" if len(hidden) >= required else "pending"
    times = [str(a.get("updated_at") or a.get("created_at")) for a in counted if a.get("updated_at")
             or a.get("created_at")]
    return {**{k: data[k] for k in fields}, **({"superseded": True} if data.get("superseded") else {}),
            "state": state, "checked_by": sorted(verdicts), "required": required,
            "notes": [f"{READABLE}: {verdicts[n][1] or '(no note)'}" for n in readable], "guideline": guideline,
            "label_studio": {"task": task["id"], "annotations": [a["id"] for a in counted],
                             **({"at": max(times)} if times else {})}}


def rejections(server: ls.Server, shas: set[str], names: dict[Any, str], own: tuple[Any, list[dict[str, Any]]]
               ) -> dict[str, list[dict[str, Any]]]:
    """Every rejection of the video bytes ``shas`` (SHA-256s) on the server, by the rule of the module docstring (a
    person's latest annotation counts; one "something readable" rejects; a superseded task's too): in the project at
    hand (``own``: it and its tasks as exported, not exported again) and in every other check project the token sees
    (:func:`~streamcue.annotation.client.projects_of_kind`: one listing, then one export per project with
    annotations). Returns per SHA-256 where each was made: ``project``, ``project_id``, ``task``, ``video``,
    ``checked_by`` (who checked that task) and ``note`` (one line naming the project and task, with their notes).
    A task of those bytes whose annotation holds no choice is one line naming its project, task and annotation."""
    found: dict[str, list[dict[str, Any]]] = {}
    if not shas:
        return found
    project, tasks = own
    seen = [(project, tasks)] + [(p, ls.export_tasks(server, p.id)) for p in ls.projects_of_kind(server, KIND)
                                 if p.id != project.id and p.total_annotations_number != 0]
    for proj, exported in seen:
        for task in exported:
            if (task.get("data") or {}).get("video_sha256") in shas and task.get("annotations"):
                check = _check(task, proj.title, names, 1, None)
                if check["state"] == "rejected":
                    found.setdefault(check["video_sha256"], []).append(_where(check, proj, proj is project))
    return found


def _where(check: dict[str, Any], project: Any, own: bool) -> dict[str, Any]:
    """A rejection found by :func:`rejections`, named by its project and task."""
    task = check["label_studio"]["task"]
    where = (f"in this project (task {task}, {check['video']}" if own
             else f"in check project {project.title!r} (id {project.id}, task {task}, {check['video']}")
    where += ", superseded)" if check.get("superseded") else ")"
    notes = "; ".join(n.removeprefix(f"{READABLE}: ") for n in check["notes"])
    return {"project": project.title, "project_id": project.id, "task": task, "video": check["video"],
            "checked_by": list(check["checked_by"]), "note": f"{READABLE} {where}: {notes}"}


def _held(check: dict[str, Any], found: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``check`` rejected when its video's bytes were found readable on another task (:func:`rejections`)."""
    other = [r for r in found.get(check["video_sha256"], []) if r["task"] != check["label_studio"]["task"]]
    if not other:
        return check
    return {**check, "state": "rejected", "notes": check["notes"] + [r["note"] for r in other],
            "rejected_elsewhere": [{k: v for k, v in r.items() if k != "note"} for r in other]}


def _signed(check: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    return {**check, "signature": {"key": key.fingerprint, "ed25519": key.sign_bytes(canonical(check))}}


def pull(project: str, *, url: str | None = None, required: int | None = None,
         key: SigningKey | str | Path | None = None) -> dict[str, Any]:
    """Every task of the check project as a check (the rule in the module docstring), each signed with ``key``
    (a :class:`SigningKey`, the private key file, or None: ``$STREAMCUE_SIGNING_KEY``); the document to write to
    :data:`CHECKS_FILE`. ``required``: people who must tick a video (None: the project's number per task)."""
    if required is not None and required < 1:
        raise ConfigError("--required must be at least 1")
    key = key if isinstance(key, SigningKey) else load_key(key)
    if key.private is None:
        raise ConfigError(f"the signing key {key.fingerprint} is a public key: the checks are signed with the "
                          "private key file (--key or $STREAMCUE_SIGNING_KEY)")
    server = ls.connect(url)
    proj, _ = ls.project_for(server, project, KIND)
    required = required if required is not None else (proj.maximum_annotations or 1)
    names = ls.user_names(server)
    guideline = ls.guideline_version(proj.expert_instruction)
    tasks = ls.export_tasks(server, proj.id)
    checks = [_check(task, project, names, required, guideline) for task in tasks]
    found = rejections(server, {c["video_sha256"] for c in checks}, names, (proj, tasks))
    return {"format": FORMAT, "project": project, "required": required,
            "checks": [_signed(_held(check, found), key) for check in checks]}


def read_checks(path: Path) -> list[dict[str, Any]]:
    """The checks of a file ``pull`` wrote; one line naming the file when it is not one."""
    data = read_json(path)
    if (not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("checks"), list)
            or not all(isinstance(c, dict) for c in data["checks"])):
        raise InputError(f"not an anonymization checks file ({FORMAT}, written by streamcue annotate anonymization "
                         "pull)", file=path)
    return data["checks"]


def _holds(check: dict[str, Any], key: SigningKey) -> bool:
    signature = check.get("signature")
    return (isinstance(signature, dict) and signature.get("key") == key.fingerprint
            and isinstance(signature.get("ed25519"), str)
            and key.holds(canonical({k: v for k, v in check.items() if k != "signature"}), signature["ed25519"]))


def video_check(checks: list[dict[str, Any]], video: str, video_sha256: str, report_sha256: str,
                key: SigningKey, sheet_sha256: str | None = None) -> tuple[str, dict[str, Any] | None, str]:
    """The check of one video's exact bytes: ``(state, check, why)``, state ``ticked`` (with the check) or why not:
    ``unsigned`` (a check of these bytes whose signature does not hold under ``key``), ``rejected`` (someone saw
    something readable in this video's bytes, under this report or another, superseded or not: it wins over a
    tick), ``pending``, ``stale`` (checks of a video of that name on other bytes: anonymized again since; or, with
    ``sheet_sha256``, a tick of another contact sheet than the one beside the report now) or ``missing``. A tick
    binds the video's bytes, its report's and the sheet's; a superseded check (its task replaced by a newer push
    of the video) never ticks."""
    same = [c for c in checks if c.get("video_sha256") == video_sha256 and c.get("report_sha256") == report_sha256]
    if any(not _holds(c, key) for c in same):
        return "unsigned", None, (f"a check of its bytes is not signed with key {key.fingerprint} (written or edited "
                                  "by hand): pull the checks again with streamcue annotate anonymization pull")
    # a rejection holds for the video's bytes whatever report sits beside them: a report put back, or written
    # again by a re-run on the same input, never turns what a person saw readable into a tick
    rejected = [c for c in checks if c.get("state") == "rejected" and c.get("video_sha256") == video_sha256
                and (c.get("report_sha256") == report_sha256 or c.get("video") == video)]
    if rejected:
        return "rejected", None, (f"{'; '.join(rejected[0].get('notes') or [READABLE])}: anonymize it again and "
                                  "check the new contact sheet")
    same = [c for c in same if not c.get("superseded")]
    ticked = [c for c in same if c.get("state") == "ticked"]
    if sheet_sha256 is not None and ticked and all(c.get("contact_sheet_sha256") != sheet_sha256 for c in ticked):
        was = str(ticked[0].get("contact_sheet_sha256"))[:12]
        return "stale", None, (f"ticked on another contact sheet (the check's contact_sheet_sha256 {was}; the sheet "
                               f"beside its report now {sheet_sha256[:12]}): push and check the sheet as it is")
    if ticked:
        return "ticked", ticked[0], ""
    if same:
        return "pending", None, "nobody has ticked its contact sheet yet in Label Studio (pull again once they have)"
    other = [c for c in checks if c.get("video") == video]
    if other:
        return "stale", None, (f"checked on other bytes (the check's video_sha256 "
                               f"{str(other[-1].get('video_sha256'))[:12]} and report_sha256 "
                               f"{str(other[-1].get('report_sha256'))[:12]}; now the report's $.output.sha256 "
                               f"{video_sha256[:12]} and the report's own {report_sha256[:12]}): the video or its "
                               "report is not the one checked "
                               "(anonymized again, or a report put back or edited); push what is there and check "
                               "its contact sheet")
    return "missing", None, ("no check of its contact sheet (streamcue annotate anonymization push, then pull)")
