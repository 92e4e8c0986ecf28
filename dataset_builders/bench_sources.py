"""What the OVO-Bench and StreamingBench builders share: times, video ids, quirk counting, video records."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from streamcue.errors import InputError
from streamcue.finite import seconds_problem
from streamcue.paths import uri_problem
from streamcue.schemas import SCHEMA_VERSION

__all__ = ["read_video_list", "QuirkReport", "VideoIndex", "canonical", "parse_time", "video_id_of", "relative_uri",
           "video_record", "option_letter"]

_CLOCK = re.compile(r"^\s*\d+(?::\d+)*(?:\.\d+)?\s*$")
_HMS = re.compile(r"^\s*\d{1,2}:[0-5]\d:[0-5]\d(?:\.\d+)?\s*$")
_NOT_ID = re.compile(r"[^A-Za-z0-9_.\-]+")
#: Examples kept per quirk in the build report.
EXAMPLES = 5


def read_video_list(file: str | Path) -> list[Any]:
    """A source file that is a non-empty JSON list of video entries (refused otherwise, naming the file)."""
    from streamcue.io import read_json

    data = read_json(Path(file))
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of video entries, got {type(data).__name__}", file=file)
    if not data:
        raise InputError("no video entries in the list: nothing to convert", file=file)
    return data


def canonical(record: dict[str, Any], kind: str) -> dict[str, Any]:
    """The record in the schemas' canonical form: optional nullable top-level keys present (null when
    unknown), so that a release round-trips it exactly (see :mod:`streamcue.schemas.features`)."""
    return {**_nullable_defaults(kind), **record}


@cache
def _nullable_defaults(kind: str) -> dict[str, None]:
    from streamcue.schemas.features import codec

    return {name: None for name, sub in codec(kind).props.items() if not sub.required and sub.nullable}


def option_letter(index: int) -> str:
    """``0 -> "A"``, ``1 -> "B"``, ..."""
    return chr(ord("A") + index)


@dataclass
class QuirkReport:
    """Counts of every source quirk the build met and handled, with a few example ids each.

    :meth:`inconsistent` is the one rule for source data that no one can answer (a target before its
    question, an unknown task, a probe about a step the item does not have): an error naming the source
    file, record and field, or, with ``warn`` (``--warn-inconsistent``), a counted quirk and a warning line.
    """

    sources: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    by_task: dict[str, Counter] = field(default_factory=dict)
    quirks: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    #: keep inconsistent source records (counted, with a warning each) instead of stopping the build
    warn: bool = False
    warnings: list[str] = field(default_factory=list)

    def inconsistent(self, name: str, message: str, *, file: str | Path, record: str, field: str) -> None:
        """Source data no one can answer: an :class:`InputError` naming ``file``, ``record`` and ``field``;
        with :attr:`warn`, the quirk ``name`` counted and the same line kept in :attr:`warnings`."""
        if not self.warn:
            raise InputError(f"{message} (--warn-inconsistent keeps it, counted as {name})", file=file,
                             record=record, field=field)
        self.quirk(name, record)
        self.warnings.append(str(InputError(message, file=file, record=record, field=field)))

    def quirk(self, name: str, record_id: str) -> None:
        self.quirks[name] += 1
        seen = self.examples.setdefault(name, [])
        if len(seen) < EXAMPLES:
            seen.append(record_id)

    def count(self, kind: str, group: str, task: str) -> None:
        self.counts[kind] += 1
        self.by_task.setdefault(group, Counter())[task] += 1

    def to_dict(self) -> dict[str, Any]:
        return {"sources": self.sources, "records": dict(self.counts),
                "by_task": {g: dict(sorted(c.items())) for g, c in sorted(self.by_task.items())},
                "quirks": dict(sorted(self.quirks.items())), "quirk_examples": dict(sorted(self.examples.items())),
                "warnings": list(self.warnings)}


def parse_time(value: Any, file: str | Path, record: str, name: str,
               report: QuirkReport | None = None) -> float:
    """Seconds from a number or a clock string, read as the official scripts read it.

    A string's colon-separated parts are summed in base 60 from the right (so ``"00:24"`` is 24 s
    and the typo ``"00:12450"`` is 12450 s, as StreamingBench's own code reads them). ``report``
    counts ``hms_time`` for every string and ``irregular_time`` for one that is not ``H:MM:SS``.
    """
    if isinstance(value, bool):
        raise InputError(f"expected a time, got {value!r}", file=file, record=record, field=name)
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif not isinstance(value, str) or not _CLOCK.match(value):
        raise InputError(f"expected seconds or HH:MM:SS, got {value!r}", file=file, record=record, field=name)
    else:
        if report is not None:
            report.quirk("hms_time", record)
            if not _HMS.match(value):
                report.quirk("irregular_time", record)
        seconds = sum(float(part) * 60 ** i for i, part in enumerate(reversed(value.strip().split(":"))))
    problem = seconds_problem(seconds)
    if problem:  # NaN, negative, or 1e308 (no duration in these benchmarks would catch it later)
        raise InputError(problem, file=file, record=record, field=name)
    return seconds


def relative_uri(path: Any, file: str | Path, record: str, name: str) -> str:
    """A video path as a relative POSIX path (``./`` and doubled ``/`` dropped); refused, naming the source
    file, record and field, unless it is a safe video ``uri`` (:func:`streamcue.paths.uri_problem`: no
    absolute path, ``..``, scheme, drive, backslash or NUL), so that no bad path reaches the records."""
    clean = _relative(path) if isinstance(path, str) else None
    if clean is None:
        if not isinstance(path, str) or not path.strip():
            raise InputError(f"expected a video path, got {path!r}", file=file, record=record, field=name)
        raise InputError(f"video path {path!r} is not relative to a video root", file=file, record=record, field=name)
    problem = uri_problem(clean)
    if problem is None and "://" in clean:
        problem = f"video path {path!r} is a URL, not a path under a video root"
    if problem:
        raise InputError(problem, file=file, record=record, field=name)
    return clean


@lru_cache(maxsize=65536)
def _relative(path: str) -> str | None:
    pure = PurePosixPath(path.strip())
    if not path.strip() or pure.is_absolute() or ".." in pure.parts:
        return None
    return str(pure)


def video_id_of(uri: str) -> str:
    """A video id from a relative path: folders joined by ``:``, other odd characters as ``_``."""
    parts = list(PurePosixPath(uri).with_suffix("").parts)
    vid = ":".join(_NOT_ID.sub("_", p).strip("_.-") or "x" for p in parts)
    return vid if vid[:1].isalnum() else "v" + vid


class VideoIndex:
    """Video records by uri, each with a distinct id (a clash of cleaned ids gets a numbered suffix)."""

    def __init__(self, source: str, license_text: str) -> None:
        self.source, self.license = source, license_text
        self.by_uri: dict[str, dict[str, Any]] = {}
        self._ids: set[str] = set()

    def add(self, uri: str, license_text: str | None = None) -> str:
        if uri not in self.by_uri:
            base = vid = video_id_of(uri)
            n = 1
            while vid in self._ids:
                n += 1
                vid = f"{base}-{n}"
            self._ids.add(vid)
            self.by_uri[uri] = video_record(vid, uri, self.source, license_text or self.license)
        return self.by_uri[uri]["video_id"]

    def records(self) -> list[dict[str, Any]]:
        return list(self.by_uri.values())


def video_record(video_id: str, uri: str, source: str, license_text: str) -> dict[str, Any]:
    """A ``video`` record for a video that is not redistributed (its duration is not known from the annotations)."""
    return {"schema_version": SCHEMA_VERSION, "video_id": video_id, "source": source, "duration_s": None,
            "fps": None, "width": None, "height": None, "license": license_text, "uri": uri, "split": "test",
            "anonymization": {"status": "not_required", "report": None}}
