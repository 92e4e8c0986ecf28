"""Validation of records against the JSON Schema files plus the semantic checks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
from referencing import Registry, Resource

from streamcue.errors import InputError, RecordValidationError, Violation
from streamcue.fields import unknown_name
from streamcue.finite import non_finite_path
from streamcue.io import iter_jsonl
from streamcue.paths import URI_PATTERN, uri_problem
from streamcue.schemas.discovery import ID_FIELDS
from streamcue.schemas.kinds import TABLE, names, schema_file, semantic_check, version

__all__ = ["ID_FIELDS", "KINDS", "SCHEMA_VERSION", "schema_registry", "load_schema", "check", "validate",
           "FileReport", "check_records", "check_file", "load_durations", "validate_file"]


#: Every record kind (a row of :data:`streamcue.schemas.kinds.TABLE` each).
KINDS: Sequence[str] = names("KINDS", lambda: tuple(TABLE))
SCHEMA_VERSION = "1.0"


def _check_kind(kind: str) -> None:
    if kind not in ID_FIELDS:
        raise unknown_name("record kind", kind, KINDS)


def _schema_text(name: str) -> str:
    path = schema_file(name) if name in TABLE else None
    if path is not None:
        return path.read_text(encoding="utf-8")
    return resources.files("streamcue.schemas").joinpath(f"{name}.schema.json").read_text(encoding="utf-8")


def schema_registry() -> Registry:
    """Every schema file by its ``$id``, so that ``$ref`` between files resolve."""
    return _registry(version())


@cache
def _registry(table_version: int) -> Registry:
    """(Keyed by the kinds table's version: a kind added at run time renews this and the caches below.)"""
    resources_ = [Resource.from_contents(json.loads(_schema_text(name))) for name in ("common", *TABLE)]
    return Registry().with_resources((res.id(), res) for res in resources_)


def load_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (a dict) of a record kind."""
    _check_kind(kind)
    return json.loads(_schema_text(kind))


def _validator(kind: str) -> jsonschema.protocols.Validator:
    return _validator_in(kind, version())


@cache
def _validator_in(kind: str, table_version: int) -> jsonschema.protocols.Validator:
    schema = load_schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=_registry(table_version))


def _fast_validator(kind: str) -> Any:
    return _fast_validator_in(kind, version())


@cache
def _fast_validator_in(kind: str, table_version: int) -> Any:
    """A compiled validator (jsonschema-rs, ~200x faster) that answers only "valid or not".

    Records it passes are valid; for the others the reference ``jsonschema`` validator finds
    and words every violation, so messages do not depend on the fast path.
    """
    resources = [(s["$id"], s) for s in (json.loads(_schema_text(n)) for n in ("common", *TABLE))]
    return jsonschema_rs.validator_for(load_schema(kind), registry=jsonschema_rs.Registry(resources))


def _json_path(error: jsonschema.ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _record_id(record: Any, kind: str) -> str | None:
    if isinstance(record, Mapping):
        value = record.get(ID_FIELDS[kind])
        return f"{ID_FIELDS[kind]}={value}" if value is not None else None
    return None


def check(record: Any, kind: str, *, durations: Mapping[str, float] | None = None,
          file: str | None = None, line: int | None = None) -> list[Violation]:
    """Every violation of one record: JSON Schema errors, then (if none) semantic checks.

    ``durations`` maps video_id to duration in seconds; when given, times are checked against
    the video's length and unknown video ids are reported.
    """
    _check_kind(kind)
    rid = _record_id(record, kind)
    bad_number = non_finite_path(record)
    if bad_number:  # JSON Schema validators take NaN for a number; the finite-number rule does not
        return [Violation("not a finite number (NaN or Infinity)", bad_number, file, line, rid)]
    errors = [] if _fast_validator(kind).is_valid(record) else \
        sorted(_validator(kind).iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))
    violations = [Violation(_short(e), _json_path(e), file, line, rid) for e in errors]
    semantic = semantic_check(kind) if not violations else None
    if semantic is not None:
        violations = [Violation(msg, path, file, line, rid) for path, msg in semantic(record, durations)]
    return violations


def _short(error: jsonschema.ValidationError) -> str:
    if error.validator == "pattern" and error.validator_value == URI_PATTERN:  # say why, not the regex
        return uri_problem(error.instance) or error.message
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."


def validate(record: Any, kind: str, *, durations: Mapping[str, float] | None = None) -> None:
    """Raise :class:`RecordValidationError` listing every violation of ``record``; else return None."""
    violations = check(record, kind, durations=durations)
    if violations:
        raise RecordValidationError(violations)


@dataclass
class FileReport:
    """Outcome of validating one JSONL file."""

    path: str
    kind: str
    records: int = 0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def check_records(records: Iterable[tuple[int | None, Any]], kind: str, *, file: str | None = None,
                  durations: Mapping[str, float] | None = None) -> FileReport:
    """Check ``(line, record)`` pairs, including that ids are unique across them."""
    _check_kind(kind)
    report = FileReport(path=file or "<records>", kind=kind)
    seen: dict[Any, int | None] = {}
    id_field = ID_FIELDS[kind]
    for line, record in records:
        report.records += 1
        report.violations.extend(check(record, kind, durations=durations, file=file, line=line))
        rid = record.get(id_field) if isinstance(record, Mapping) else None
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):  # a wrong id type is a schema violation
            continue
        if rid in seen:
            where = f"line {seen[rid]}" if seen[rid] is not None else "an earlier record"
            report.violations.append(Violation(f"duplicate {id_field} {rid!r} (first seen at {where})",
                                               f"$.{id_field}", file, line, f"{id_field}={rid}"))
        else:
            seen[rid] = line
    return report


def check_file(path: str | Path, kind: str, *, videos: str | Path | None = None) -> FileReport:
    """Validate a JSONL file of records of ``kind``: every violation of every line is reported.

    Lines that are not a JSON object (or hold NaN/Infinity) are violations too, and the other
    lines are still checked; an empty file is a violation. ``videos`` is a ``videos.jsonl``
    whose durations bound the times; when it is None and a ``videos.jsonl`` lies beside
    ``path`` (and ``path`` is not it), that one is used.
    """
    path = Path(path)
    durations = None
    if videos is None and kind != "video" and path.with_name("videos.jsonl").is_file():
        videos = path.with_name("videos.jsonl")
    if videos is not None:
        durations = load_durations(videos)
    malformed: list[Violation] = []

    def bad_line(error: InputError) -> None:
        malformed.append(Violation(error.message, "$", str(path), error.line, None))

    report = check_records(iter_jsonl(path, on_error=bad_line), kind, file=str(path), durations=durations)
    report.violations = sorted(report.violations + malformed, key=lambda v: v.line or 0)
    report.records += len(malformed)
    if report.records == 0:
        report.violations.append(Violation("empty file: no records", "$", str(path), None, None))
    return report


def load_durations(videos: str | Path) -> dict[str, float]:
    """``{video_id: duration_s}`` from a videos JSONL file (itself validated first); None where unknown."""
    report = check_records(iter_jsonl(videos), "video", file=str(videos))
    if not report.ok:
        raise RecordValidationError(report.violations)
    return {rec["video_id"]: None if rec["duration_s"] is None else float(rec["duration_s"])
            for _, rec in iter_jsonl(videos)}


def validate_file(path: str | Path, kind: str, *, videos: str | Path | None = None) -> FileReport:
    """Like :func:`check_file` but raise :class:`RecordValidationError` if anything is wrong."""
    report = check_file(path, kind, videos=videos)
    if not report.ok:
        raise RecordValidationError(report.violations)
    return report
