"""The one exception tree of streamcue.

::

    StreamcueError                  root: every expected problem; the CLI prints it on one line
    +-- InputError                  a file or record cannot be read or makes no sense
    |   +-- RecordValidationError   records violate their schema (carries every violation)
    +-- ConfigError                 an option or setting is wrong or unknown
    +-- MissingExtraError           an optional dependency is not installed
    +-- ServiceError                a server (LLM endpoint, Label Studio, Hub) failed or is unreachable

Library code raises these and never exits; ``streamcue.cli`` alone maps them to exit codes (and prints each
violation of a :class:`RecordValidationError` of separate refusals on its own line). A gate that checks many files
or videos checks them all before refusing (:func:`check_every`), so one run names every one it refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from streamcue.redact import redact

__all__ = [
    "StreamcueError",
    "InputError",
    "RecordValidationError",
    "Violation",
    "ConfigError",
    "MissingExtraError",
    "ServiceError",
    "violations_of",
    "check_every",
]

_T = TypeVar("_T")
_R = TypeVar("_R")


class StreamcueError(Exception):
    """Root of every error streamcue raises on purpose; its message passes :func:`streamcue.redact.redact`
    (no key, URL credential, token or Authorization value)."""

    exit_code = 1

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(redact(str(message)), *args)


def _where(file: str | Path | None, line: int | None, record: str | None, field: str | None) -> str:
    parts = []
    if file is not None:
        parts.append(f"{file}:{line}" if line is not None else str(file))
    if record:
        parts.append(f"record {record}")
    if field:
        parts.append(f"field {field}")
    return ", ".join(parts)


class InputError(StreamcueError):
    """A file or record is malformed or inconsistent.

    The message names the file, the line (for JSONL), the record id and the field.
    """

    exit_code = 2

    def __init__(self, message: str, *, file: str | Path | None = None, line: int | None = None,
                 record: str | None = None, field: str | None = None) -> None:
        self.file, self.line, self.record, self.field = file, line, record, field
        self.message = message
        where = _where(file, line, record, field)
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class Violation:
    """One schema or semantic violation of one record."""

    message: str
    path: str = "$"
    file: str | None = None
    line: int | None = None
    record: str | None = None

    def __str__(self) -> str:
        where = _where(self.file, self.line, self.record, None)
        return f"{where + ': ' if where else ''}{self.path}: {self.message}"


class RecordValidationError(InputError):
    """Records violate their schema; ``violations`` holds every one of them. Its message is the first violation and
    how many more (``streamcue validate`` lists a file's); with ``one_line_each`` (separate refusals, such as every
    video a gate refuses: :func:`check_every`) the CLI prints every violation on its own line."""

    def __init__(self, violations: list[Violation], *, one_line_each: bool = False) -> None:
        self.violations = list(violations)
        self.one_line_each = one_line_each
        first = self.violations[0]
        more = len(self.violations) - 1
        StreamcueError.__init__(self, str(first) + (f" (and {more} more violation{'s' * (more > 1)})" if more else ""))
        self.file, self.line, self.record, self.field = first.file, first.line, first.record, first.path


class ConfigError(StreamcueError):
    """A wrong or unknown option, setting or name."""

    exit_code = 2


class MissingExtraError(StreamcueError):
    """An optional dependency is missing; the message names the extra to install."""

    exit_code = 3


class ServiceError(StreamcueError):
    """A server failed or could not be reached."""

    exit_code = 4


def violations_of(exc: InputError) -> list[Violation]:
    """``exc`` as the violations it names: its own (a :class:`RecordValidationError`), or one naming its file, line,
    record and field."""
    if isinstance(exc, RecordValidationError):
        return exc.violations
    return [Violation(exc.message, exc.field or "$", file=None if exc.file is None else str(exc.file), line=exc.line,
                      record=exc.record)]


def check_every(items: Iterable[_T], check: Callable[[_T], _R]) -> list[_R]:
    """``check(item)`` of every item, in order: an item it refuses (an :class:`InputError`) does not stop the others;
    then every refusal, each as its violations (:func:`violations_of`), is raised together as one
    :class:`RecordValidationError` that the CLI prints one line per violation. Returns the results when none is
    refused. Any other error stops at once."""
    results, refused = [], []
    for item in items:
        try:
            results.append(check(item))
        except InputError as exc:
            refused.extend(violations_of(exc))
    if refused:
        raise RecordValidationError(refused, one_line_each=True)
    return results
