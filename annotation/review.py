"""``annotate review``: the reviewer's starting point for every disputed task.

For a task whose annotators disagree (``pull``'s ``disagreement`` state), Label Studio gets a
prediction (model version :data:`MODEL_VERSION`) holding the annotators' regions: every region of
the first annotator, plus the regions only the other one kept or added. Each region they disagree on
carries the mark :data:`DISPUTED` followed by what differs (``event e1 (mistake at 10s): t_s 7s (ann1) vs
10s (ann2), more than 1s apart``) as a field of the prediction's region, its ``meta`` (Label Studio's region
meta, shown with the region), never in its text: the text is the record's, and ``pull`` refuses an answer
whose text carries the mark anywhere (:func:`streamcue.annotation.convert.apply`), naming the task and
region, instead of dropping or keeping it. The task's data gets ``review_disagreements`` (how many differences,
a Data Manager column to filter on) and ``review_note`` (all of them, including whole-task ones such as
a rejection or an edited question). Running it again replaces the task's earlier review prediction.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from streamcue.annotation import client as ls
from streamcue.annotation.convert import DEFAULT_FPS, DISPUTED, Where, apply
from streamcue.annotation.verify import Difference, differences, latest_per_annotator
from streamcue.extras import require

__all__ = ["MODEL_VERSION", "ReviewResult", "review", "review_annotators", "starting_point"]

#: The model version of the reviewer's starting point (the prediction's tab in the page).
MODEL_VERSION = "streamcue-review"


@dataclass
class ReviewResult:
    project: str
    tasks: dict[str, int] = field(default_factory=dict)   # record id -> differences marked
    notes: dict[str, str] = field(default_factory=dict)   # record id -> review_note


def _rows(result: list[dict[str, Any]], rid: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(r) for r in result if r.get("id") == rid]


def _mark(rows: list[dict[str, Any]], rid: str, why: list[str]) -> None:
    """Mark region ``rid`` disputed: ``DISPUTED`` + the differences in the ``meta`` of each of its rows (a field of
    the prediction, not the region's text)."""
    for row in rows:
        if row.get("id") == rid:
            row["meta"] = {"text": [DISPUTED + "; ".join(why)]}


def starting_point(kind: str, first: list[dict[str, Any]], second: list[dict[str, Any]],
                   found: list[Difference]) -> list[dict[str, Any]]:
    """The reviewer's starting point from two annotations' results (``first``, ``second``) and their
    differences (:func:`~streamcue.annotation.verify.differences`, first vs second): every region of the
    first, the regions only the second has, each disputed region marked."""
    keep = ("id", "from_name", "to_name", "type", "value")
    rows = [{k: copy.deepcopy(r[k]) for k in keep if k in r} for r in first]
    marks: dict[str, list[str]] = {}
    for diff in found:
        in_first, in_second = diff.regions
        if in_first is None and in_second is not None and in_second not in marks:
            rows += [{k: r[k] for k in keep if k in r} for r in _rows(second, in_second)]
        if in_first or in_second:
            marks.setdefault(in_first or in_second, []).append(diff.text)
    for rid, why in marks.items():
        _mark(rows, rid, why)
    return rows


def _disputed(task: dict[str, Any], kind: str, names: dict[Any, str], project: str, tolerance_s: float,
              reviewers: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[Difference]] | None:
    """The starting point and the differences of one task, or None when it is not disputed (or decided)."""
    record = json.loads(task["data"]["record_json"])
    fps = float(task["data"].get("fps") or DEFAULT_FPS)
    done = latest_per_annotator(task.get("annotations") or [])
    if any(names.get(a.get("completed_by")) in reviewers for a in done):
        return None  # a reviewer already decided it
    checks = [(names.get(a.get("completed_by"), f"user:{a.get('completed_by')}"), a) for a in done]
    applied = [apply(record, kind, fps, a.get("result") or [], Where(project, task["id"], a["id"],
                                                                     task["data"].get("record_id", "")))
               for _, a in checks]
    for (name, annotation), other in zip(checks[1:], applied[1:]):
        found = differences(kind, applied[0], other, tolerance_s, (checks[0][0], name), record)
        if found:
            return starting_point(kind, checks[0][1].get("result") or [], annotation.get("result") or [],
                                  found), found
    return None


def review(project: str, *, url: str | None = None, tolerance_s: float = 1.0,
           reviewers: tuple[str, ...] = ()) -> ReviewResult:
    """Give every disputed task of ``project`` the reviewer's starting point (tasks a reviewer in
    ``reviewers`` already annotated are left alone); returns what was marked per record."""
    from streamcue.annotation.roundtrip import check_tolerance

    tolerance_s = check_tolerance(tolerance_s)
    server = ls.connect(url)
    proj, kind = ls.records_project(server, project)
    names = ls.user_names(server)
    interface = require("label_studio_sdk.label_interface", "annotation", "label-studio-sdk").LabelInterface(
        ls.label_config(kind))
    out = ReviewResult(project)
    for task in ls.export_tasks(server, proj.id):
        disputed = _disputed(task, kind, names, project, tolerance_s, reviewers)
        if disputed is None:
            continue
        rows, found = disputed
        errors = interface.validate_prediction({"result": rows}, return_errors=True)
        if errors:
            raise Where(project, task["id"], None, task["data"].get("record_id", "")).error(
                f"the reviewer's starting point does not fit the labeling config: {errors[0]}")
        for old in server.call("listing predictions", server.client.predictions.list, task=task["id"]):
            if old.model_version == MODEL_VERSION:
                server.call("replacing the review prediction", server.client.predictions.delete, old.id)
        server.call("adding the review prediction", server.client.predictions.create, task=task["id"],
                    result=rows, model_version=MODEL_VERSION)
        note = "; ".join(d.text for d in found)
        server.call("marking the task for review", server.client.tasks.update, task["id"],
                    data={**task["data"], "review_disagreements": len(found), "review_note": note})
        out.tasks[task["data"]["record_id"]] = len(found)
        out.notes[task["data"]["record_id"]] = note
    return out


def review_annotators(project: str, *, url: str | None = None) -> tuple[str, ...]:
    """The people of ``project`` who submitted an annotation started from the reviewer's starting point (its
    ``parent_prediction``, which Label Studio sets on an annotation made from a prediction, is a
    :data:`MODEL_VERSION` prediction): its reviewers, as ``annotate pull --reviewer`` names them, so that
    ``stats agreement`` without ``--reviewer`` compares the annotators the card's figures compare."""
    server = ls.connect(url)
    proj, _ = ls.project_for(server, project)
    names = ls.user_names(server)
    found: set[str] = set()
    for task in ls.export_tasks(server, proj.id):
        started = {a.get("parent_prediction"): a.get("completed_by") for a in task.get("annotations") or []
                   if a.get("parent_prediction") is not None}
        if not started:
            continue
        reviews = {p.id for p in server.call("listing predictions", server.client.predictions.list, task=task["id"])
                   if p.model_version == MODEL_VERSION}
        found |= {names.get(who, str(who)) for parent, who in started.items() if parent in reviews}
    return tuple(sorted(found))
