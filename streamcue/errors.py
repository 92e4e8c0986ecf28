"""The one exception tree of streamcue.

::

    StreamcueError                  root: every expected problem; the CLI prints it on one line
    +-- InputError                  a file or record cannot be read or makes no sense
    |   +-- RecordValidationError   records violate their schema (carries every violation)
    +-- ConfigError                 an option or setting is wrong or unknown
    +-- MissingExtraError           an optional dependency is not installed
    +-- ServiceError                a server (LLM endpoint, Label Studio, Hub) failed or is unreachable

Library code raises these and never exits; ``streamcue.cli`` alone maps them to exit codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streamcue.redact import redact

__all__ = [
    "StreamcueError",
    "InputError",
    "RecordValidationError",
    "Violation",
    "ConfigError",
    "MissingExtraError",
    "ServiceError",
]


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
    """Records violate their schema; ``violations`` holds every one of them."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = list(violations)
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
