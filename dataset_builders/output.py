"""Write a builder's records: validated, one JSONL file per kind, each written atomically, plus its build report.

:func:`run_builder` is how every caller runs a registered builder (``streamcue build <name>``, the demo, the
contract test): it hands the builder a fresh :class:`BuildReport`, writes the records with :func:`write_outputs`,
counts them into the report and writes ``OUT/build_report.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import InputError, RecordValidationError
from streamcue.io import write_json, write_jsonl
from streamcue.paths import check_out_folder, check_outputs
from streamcue.prologue import check_config_io, declared_inputs
from streamcue.schemas import check_records
from streamcue.schemas.discovery import FILE_NAMES

#: The build report's file name, beside the records.
REPORT_NAME = "build_report.json"

__all__ = ["FILE_NAMES", "REPORT_NAME", "BuildOutput", "BuildReport", "run_builder", "write_outputs"]


@dataclass
class BuildReport:
    """What one build did, in the same shape for every builder (``build_report.json``).

    ``builder``: its registry name; ``counts``: records written per kind (filled after the build);
    ``llm``: LLM usage (model, calls, cache hits, tokens; never the key) or None when no LLM ran;
    ``details``: the builder's own figures, JSON-ready (dropped inputs and why, per-type counts, ...).
    """

    builder: str
    counts: dict[str, int] = field(default_factory=dict)
    llm: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"builder": self.builder, "counts": dict(sorted(self.counts.items())), "llm": self.llm,
                "details": self.details}


@dataclass
class BuildOutput:
    out: Path
    files: dict[str, Path] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def write_outputs(items: Iterable[tuple[str, dict[str, Any]]], out: str | Path, inputs: Sequence[Path] = (),
                  extra: Sequence[str] = ()) -> BuildOutput:
    """Collect ``(kind, record)`` pairs, validate them all, then write ``OUT/<kind file>``.

    Refused before any work: an ``out`` that is a file, an output file that is (or resolves to)
    one of ``inputs`` or lies inside an input folder (``extra`` names further files the caller
    will write in ``out``). Nothing is written unless records were built and every one is valid
    (videos first, so that record times are checked against their video's duration).
    """
    out = check_out_folder(out)
    check_outputs({out / name: name for name in (*FILE_NAMES.values(), *extra)}, list(inputs), inside_inputs=True)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, record in items:
        by_kind.setdefault(kind, []).append(record)
    if not by_kind:
        raise InputError("no records were built from these sources: nothing written", file=out)
    durations = None
    for kind in sorted(by_kind, key=lambda k: k != "video"):
        records = by_kind[kind]
        report = check_records(((None, r) for r in records), kind, file=f"<{FILE_NAMES[kind]} being built>",
                               durations=durations)
        if not report.ok:
            raise RecordValidationError(report.violations)
        if kind == "video":
            durations = {r["video_id"]: r["duration_s"] for r in records}
    result = BuildOutput(out=out)
    for kind, records in by_kind.items():
        path = out / FILE_NAMES[kind]
        result.counts[kind] = write_jsonl(path, records)
        result.files[kind] = path
    return result


def run_builder(builder: Any, config: Any, out: str | Path) -> tuple[BuildOutput, BuildReport]:
    """Run a registered builder (:class:`~streamcue.dataset_builders.registry.Builder`) on ``config`` into ``out``.

    The inputs are the ones ``config`` declares (:func:`streamcue.prologue.input_path` fields), so no
    caller can forget one: before the builder starts, ``out`` and every file written into it (records,
    report, the config's own outputs) are refused when they are, resolve to, or lie inside an input
    (:func:`streamcue.prologue.check_config_io`). Nothing is written unless every record is valid; the
    report is written last, beside the records.
    """
    out = Path(out)
    written = (*FILE_NAMES.values(), REPORT_NAME)
    check_config_io(config, out, written)
    inputs = [d.path for d in declared_inputs(config)]
    report = BuildReport(builder.name)
    result = write_outputs(builder.build(config, report), out, inputs=inputs, extra=[REPORT_NAME])
    report.counts = dict(result.counts)
    write_json(out / REPORT_NAME, report.to_dict())
    return result, report
