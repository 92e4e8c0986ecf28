"""Pulled verification into the full build (``annotate pull --build B --out O``).

The build ``B`` (a builder's output folder) is never edited: a new folder ``O`` is written with
every file of ``B`` (``videos.jsonl``, the other kinds, any subfolder: hard links where the file
system allows, copies otherwise), the kind's records file with each pulled record in place of the
build's record of the same id, and

* ``build_report.json``: ``B``'s report plus one entry in its ``annotation`` list per pull (project,
  kind, rule, states, how records were decided, the ids replaced);
* ``agreement.json``: per kind, the agreement between annotators (:mod:`~streamcue.annotation.agreement`);
* ``samples.json``: per kind, the spot-check samples the tasks were pushed in (``push --sample``).

A record nobody annotated is carried byte for byte (its line is copied, not re-serialised). A record
annotated in Label Studio must still be the one in ``B`` (the task holds the record as pushed), or one
an earlier pull of the same project merged into ``B`` (its ``build_report.json`` lists it): a build
changed otherwise since the push is refused for that record, so that no verification lands on a
record the annotators never saw. ``O`` is written in a temporary folder beside it and renamed when complete.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from pathlib import Path
from typing import Any

from streamcue.annotation.agreement import AGREEMENT_FILE
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.io import atomic_write, dumps_record, iter_jsonl, read_json, write_json
from streamcue.schemas import ID_FIELDS, check_file
from streamcue.staging import staged_folder

__all__ = ["SAMPLES_FILE", "merge_into_build", "side_files"]

#: Spot-check samples beside the pulled records (see :func:`streamcue.annotation.roundtrip.samples`).
SAMPLES_FILE = "samples.json"
_REPORT = "build_report.json"


def side_files(out: Path, folder: bool) -> tuple[Path, Path]:
    """Where the agreement and samples files of a pull go: in the build folder, or beside a pulled file
    (``verified/guidance.jsonl`` -> ``verified/guidance.agreement.json``, ``verified/guidance.samples.json``)."""
    if folder:
        return out / AGREEMENT_FILE, out / SAMPLES_FILE
    return out.with_name(f"{out.stem}.agreement.json"), out.with_name(f"{out.stem}.samples.json")


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _raw_lines(path: Path) -> list[str]:
    """The lines of a JSONL file as written, for records carried byte for byte."""
    with open(path, encoding="utf-8") as fh:
        return fh.read().splitlines(keepends=True)


def _kept(raw: list[str], line: int) -> str:
    """Line ``line`` (1-based) as written, ending in a newline."""
    return raw[line - 1] if raw[line - 1].endswith("\n") else raw[line - 1] + "\n"


def _rebase_report_paths(videos: Path, build: Path, out: Path) -> None:
    """A video's anonymization report named by a relative path is relative to the build folder: written again
    relative to ``out``, so that it still names the same report from a folder at another place or depth. Lines
    without one are kept byte for byte; the file (a hard link to the build's) is replaced, never written through."""
    raw = _raw_lines(videos)
    lines, changed = [], False
    for line, record in iter_jsonl(videos):
        named = (record.get("anonymization") or {}).get("report")
        if not named or Path(named).is_absolute():
            lines.append(_kept(raw, line))
            continue
        rebased = os.path.relpath(os.path.normpath(os.path.join(os.path.abspath(build), named)), os.path.abspath(out))
        changed |= rebased != named
        record["anonymization"]["report"] = rebased
        lines.append(dumps_record(record) + "\n")
    if changed:
        videos.unlink()
        with atomic_write(videos) as fh:
            fh.writelines(lines)


def merge_into_build(build: Path, out: Path, summary: Any, *, project: str, rule: dict[str, Any]) -> dict[str, Any]:
    """Write ``out`` (see the module docstring); returns the build report entry of this pull.

    ``summary`` is :class:`~streamcue.annotation.roundtrip.PullResult` (its ``pushed`` maps each pulled
    record's id to the record as its task holds it: what the annotators saw).
    """
    from streamcue.dataset_builders.output import FILE_NAMES

    kind = summary.kind
    records_file = build / FILE_NAMES[kind]
    if not (build / FILE_NAMES["video"]).is_file():
        raise InputError("--build needs a builder's output folder, with its videos.jsonl", file=build / "videos.jsonl")
    if not records_file.is_file():
        raise InputError(f"the build has no {kind} records for project {project!r}", file=records_file)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out} already exists: a pull into the build writes a new folder")
    id_field = ID_FIELDS[kind]
    pulled = {o.record[id_field]: o for o in summary.outcomes}
    lines: list[str] = []
    replaced: list[str] = []
    seen: set[str] = set()
    raw = _raw_lines(records_file)
    # records an earlier pull of this project merged into the build (a second pull updates them)
    previous = read_json(build / _REPORT) if (build / _REPORT).is_file() else {}
    earlier = {rid for e in previous.get("annotation", []) if e.get("project") == project and e.get("kind") == kind
               for rid in e.get("replaced", [])}
    for line, record in iter_jsonl(records_file):
        rid = record[id_field]
        seen.add(rid)
        outcome = pulled.get(rid)
        if outcome is None or outcome.state == "untouched":
            lines.append(_kept(raw, line))
            continue
        if record != summary.pushed[rid] and rid not in earlier:
            raise InputError(f"the record changed in the build since it was pushed to project {project!r}; its "
                             "annotations are about the pushed version: push it again to a new project",
                             file=records_file, line=line, record=f"{id_field}={rid}")
        lines.append(dumps_record(outcome.record) + "\n")
        replaced.append(rid)
    missing = sorted(set(pulled) - seen)
    if missing:
        raise InputError(f"project {project!r} holds record(s) the build does not: {', '.join(missing[:5])}",
                         file=records_file, field=id_field)

    entry = {"kind": kind, "project": project, "pulled_at": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "from_build": str(build), "rule": rule, "records_in_project": summary.records,
        "states": dict(sorted(summary.states.items())), "decided_by": dict(sorted(summary.decided_by.items())),
        "replaced": replaced, "files": {"agreement": AGREEMENT_FILE, "samples": SAMPLES_FILE}}
    out.parent.mkdir(parents=True, exist_ok=True)
    with staged_folder(out) as tmp:
        shutil.copytree(build, tmp, dirs_exist_ok=True, copy_function=_link_or_copy, symlinks=True)
        target = tmp / FILE_NAMES[kind]
        target.unlink()
        with atomic_write(target) as fh:
            fh.writelines(lines)
        _rebase_report_paths(tmp / FILE_NAMES["video"], build, out)
        report = check_file(target, kind, videos=tmp / FILE_NAMES["video"])
        if not report.ok:
            raise RecordValidationError(report.violations)
        for name, figures in ((_REPORT, None), (AGREEMENT_FILE, summary.agreement), (SAMPLES_FILE, summary.samples)):
            path = tmp / name
            if path.is_file():  # a hard link to the build's file: replace it, never write through it
                data = read_json(path)
                path.unlink()
            else:
                data = {} if name != _REPORT else {"builder": None}
            if name == _REPORT:
                data["annotation"] = [*data.get("annotation", []), entry]
            else:
                data[kind] = figures
            write_json(path, data)
    return entry

