"""Ground truth and predictions of the multiple-choice benchmarks (OVO-Bench, StreamingBench), read and checked.

A builder's folder holds ``mc_question.jsonl`` and ``active_item.jsonl``; predictions are
``mc_question_prediction`` and ``active_item_prediction`` records (both kinds may share one file).
Each benchmark's scoring (:mod:`~streamcue.metrics.ovo_bench`, :mod:`~streamcue.metrics.streamingbench`)
reads them here and its own output formats itself.

A run folder's results.json is read here too, once for every reader (``compare``, the page, ``export``, a finished
``run``): :func:`read_results` checks its seal, its schema and the files it scored; :func:`read_run` gives a run's
played records and predictions to an export.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.output import FILE_NAMES
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.io import iter_jsonl, read_json
from streamcue.metrics.registry import METRICS
from streamcue.schemas import check_records
from streamcue.seal import SEAL, seal, unsealed_field

__all__ = ["record_files", "read_ground_truth", "read_predictions", "check_pred_format", "letter", "Problems",
           "PROBLEMS", "RunPlayed", "check_scored_files", "check_results", "read_run", "read_results", "exporter",
           "export_name", "seal_results", "check_sealed"]

_KINDS = ("mc_question", "active_item")


def letter(index: int) -> str:
    """The option letter of a 0-based index: 0 -> ``A``."""
    return chr(65 + index)


#: Problems the scorers find in predictions: ``name -> (what it is, what happens to the answer, its field)``.
#: Each is counted and named in the report (``problems``) and on the terminal; under ``rules=strict``
#: those marked as errors stop the scoring (one line naming the file, the first record and the field).
PROBLEMS = {
    "responses_without_probe": ("forward responses without the probe field", "ignored: the probe counts as "
                                "unanswered", "responses[].probe"),
    "probe_out_of_range": ("probe index out of range", "ignored", "responses[].probe"),
    "probe_answered_twice": ("probes answered more than once", "the last answer kept", "responses[].probe"),
    "wrong_kind": ("predictions of the wrong kind for their id", "scored as unanswered", "response"),
    "object_answers": ("answers given as objects", "no rule reads them: scored as unanswered", "response"),
    "non_text_answers": ("answers given as numbers or true/false, not text", "read as their text (3 as '3')",
                         "response"),
    "no_predictions": ("prediction files with no answer", "nothing scored", ""),
    "duplicates": ("ids answered more than once", "", "id"),
    "ground_truth_mismatches": ("gold answers that differ from the records'", "", "ground_truth"),
}


class Problems:
    """What is wrong with a prediction file, by kind of problem (:data:`PROBLEMS`), with the ids concerned."""

    def __init__(self, file: str | Path) -> None:
        self.file = file
        self.found: dict[str, list[str]] = {}
        self.notes: dict[str, str] = {}
        self.warn_only: set[str] = set()

    def add(self, name: str, rid: str) -> None:
        ids = self.found.setdefault(name, [])
        if rid not in ids:
            ids.append(rid)

    def named(self, name: str, ids: list[str], note: str, *, error: bool = True) -> None:
        """Record ``ids`` under ``name`` with what happened to them (``note``); ``error=False``: never an error."""
        for rid in ids:
            self.add(name, rid)
        if ids:
            self.notes[name] = note
        if not error:
            self.warn_only.add(name)

    def line(self, name: str) -> str:
        what, done, _ = PROBLEMS[name]
        ids = self.found[name]
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        how = self.notes.get(name) or done
        return f"{len(ids)} {what}{f' ({how})' if how else ''}: {shown}"

    def report(self) -> dict[str, Any]:
        """``problems`` ({name: {count, ids, what}}) and ``warnings`` (one line each) for the report."""
        found = {name: ids for name, ids in self.found.items() if ids}
        return {"problems": {name: {"count": len(ids), "ids": ids, "what": PROBLEMS[name][0]}
                             for name, ids in found.items()},
                "warnings": [self.line(name) for name in found]}

    def raise_if_strict(self, rules: str) -> None:
        """Under ``rules=strict`` the first problem that is an error stops the scoring (one line)."""
        if rules != "strict":
            return
        for name, ids in self.found.items():
            if ids and name not in self.warn_only:
                raise InputError(f"rules=strict: {self.line(name)}", file=self.file, record=ids[0],
                                 field=PROBLEMS[name][2] or None)


def check_pred_format(metric: str, pred_format: str, formats: tuple[str, ...] = ()) -> None:
    """Refuse a prediction format that ``metric`` does not read (streamcue's, those its registry line names and
    ``formats``, those its module reads)."""
    known = tuple(dict.fromkeys(("streamcue", *METRICS[metric].other_pred_formats, *formats)))
    if pred_format not in known:
        raise ConfigError(f"unknown --pred-format {pred_format!r} for {metric}; use one of {', '.join(known)}")


def record_files(path: str | Path) -> list[tuple[str, Path]]:
    """``(kind, file)`` of a builder's folder (mc_question.jsonl, active_item.jsonl) or of one record file."""
    path = Path(path)
    if path.is_dir():
        files = [(k, path / FILE_NAMES[k]) for k in _KINDS if (path / FILE_NAMES[k]).is_file()]
        if not files:
            raise InputError(f"no {' or '.join(FILE_NAMES[k] for k in _KINDS)} in the folder", file=path)
        return files
    first = next(iter_jsonl(path), (None, {}))[1]
    return [("active_item" if "item_id" in first else "mc_question", path)]


def read_ground_truth(path: str | Path, benchmark: str) -> dict[str, dict[str, Any]]:
    """``{id: record}`` of a builder's folder or one record file (see :func:`record_files`).

    Records are validated; records of another benchmark are an error.
    """
    files = record_files(path)
    records: dict[str, dict[str, Any]] = {}
    for kind, file in files:
        lines = list(iter_jsonl(file))
        report = check_records(lines, kind, file=str(file))
        if not report.ok:
            raise RecordValidationError(report.violations)
        for line, rec in lines:
            if rec["benchmark"] != benchmark:
                raise InputError(f"this is an {rec['benchmark']!r} record; this scorer is for {benchmark}",
                                 file=file, line=line,
                                 field="benchmark")
            records[rec["question_id" if kind == "mc_question" else "item_id"]] = rec
    if not records:
        raise InputError("no records: nothing to score", file=path)
    return records


def read_predictions(path: Path, gt: Mapping[str, dict[str, Any]]) -> tuple[dict[str, dict], list[str]]:
    """streamcue prediction JSONL (both kinds may share one file): ``{id: prediction}``, duplicate ids."""
    preds: dict[str, dict] = {}
    duplicates: list[str] = []
    for line, rec in iter_jsonl(path):
        kind = "active_item_prediction" if "item_id" in rec else "mc_question_prediction"
        report = check_records([(line, rec)], kind, file=str(path))
        if not report.ok:
            raise RecordValidationError(report.violations)
        rid = rec.get("item_id", rec.get("question_id"))
        if rid not in gt:
            raise InputError("unknown id (not in the ground truth)", file=path, line=line, record=rid)
        if rid in preds:
            duplicates.append(rid)
            continue
        preds[rid] = rec
    return preds, duplicates


# ------------------------------------------------------------------------------------------ run folders out

@dataclass(frozen=True)
class RunPlayed:
    """What a run folder (``streamcue run --out``, docs/runs.md) holds for an export: its ``results.json``, the
    records it played by id (``played/<kind>.jsonl``), its predictions by id and the played videos by id."""

    results: dict[str, Any]
    records: dict[str, dict[str, Any]]
    predictions: dict[str, dict[str, Any]]
    videos: dict[str, dict[str, Any]]


def seal_results(results: Mapping[str, Any]) -> dict[str, Any]:
    """``results`` as results.json will hold it (redacted as every written file is, :mod:`streamcue.redact`) with
    :data:`SEAL` (:func:`streamcue.seal.seal`). Every reader checks it (:func:`check_sealed`), so a setting edited
    after the run (a schedule, a window, a model name) is refused, not believed."""
    from streamcue.redact import redact

    return seal(json.loads(redact(json.dumps({k: v for k, v in results.items() if k != SEAL}, ensure_ascii=False,
                                             indent=2))))


def check_sealed(path: Path, results: Mapping[str, Any]) -> None:
    """Refuse, one line naming the field, a results.json (at ``path``) whose fields are not those the run wrote:
    a field added, removed or changed since :func:`seal_results`, or no :data:`SEAL` at all."""
    name = unsealed_field(results)
    if name == SEAL:
        raise InputError(f"no {SEAL}: not a results.json that streamcue run wrote (or edited after the run)",
                         file=path, field=SEAL)
    if name is not None:
        raise InputError(f"edited after the run: this field is not the one the run wrote (its SHA-256 differs "
                         f"from {SEAL}'s); run again into a new folder", file=path, field=name)


def check_scored_files(run: Path, results: Mapping[str, Any]) -> None:
    """Refuse, one line naming the file, a run folder whose ``predictions.jsonl`` or ``played/*.jsonl`` (the ground
    truth it was scored on) is not the file its results scored: its SHA-256 differs from results.json's
    ``predictions_sha256`` or ``played_sha256``, or a played file is missing or added. An edit after the run would
    otherwise be exported or compared as the run's."""
    path = run / "predictions.jsonl"
    want = results.get("predictions_sha256")
    if want is not None and (not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != want):
        raise InputError("not the predictions this run scored (its SHA-256 differs from results.json's "
                         "predictions_sha256): edited after the run? Run again, or score the file with evaluate",
                         file=path, field="predictions_sha256")
    _check_samples_file(run, results)
    played = results.get("played_sha256")
    if played is None:
        return
    found = {file.name: file for file in sorted((run / "played").glob("*.jsonl"))}
    for name in sorted(set(played) | set(found)):
        if name not in found or name not in played or \
                hashlib.sha256(found[name].read_bytes()).hexdigest() != played[name]:
            raise InputError("not the ground truth this run was scored on (missing, added, or its SHA-256 differs "
                             "from results.json's played_sha256): edited after the run? Run again",
                             file=run / "played" / name, field="played_sha256")


def _check_samples_file(run: Path, results: Mapping[str, Any]) -> None:
    """Refuse, one line naming it, a run folder whose ``samples.jsonl`` (what was asked, sent and answered, record by
    record: the page's timelines) is not the file the run wrote: its SHA-256 differs from results.json's
    ``samples_sha256``. A run written before that field existed has none, and its samples are checked against its
    results only (:func:`streamcue.metrics.run.check_run`)."""
    want = results.get("samples_sha256")
    path = run / "samples.jsonl"
    if want is not None and (not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != want):
        raise InputError("not the samples this run wrote (its SHA-256 differs from results.json's samples_sha256): "
                         "edited after the run? Run again", file=path, field="samples_sha256")


def check_results(results: Mapping[str, Any], file: Path | str | None = None) -> None:
    """``results`` against ``schemas/results.schema.json``; one line naming the field when it is not."""
    import jsonschema

    schema = json.loads(resources.files("streamcue.schemas").joinpath("results.schema.json").read_text("utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(results),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in errors[0].absolute_path)
        raise InputError(f"not a streamcue results.json: {errors[0].message}", file=file, field=where)


def read_results(run: str | Path) -> dict[str, Any]:
    """The results.json of the run folder ``run``, checked before any other file of it is read: sealed (every field
    as the run wrote it, :func:`check_sealed`), valid against its schema (:func:`check_results`), and its predictions
    and played files those it scored (:func:`check_scored_files`). The one reader of a run's results: ``compare``,
    the page, ``export`` and a finished ``run`` read it here. Refused, one line naming the file and the field."""
    run = Path(run)
    for name in ("results.json", "predictions.jsonl", "played"):
        if not (run / name).exists():
            raise InputError(f"not a run folder: no {name} (streamcue run --out writes one)", file=run)
    path = run / "results.json"
    results = read_json(path)
    check_sealed(path, results)
    check_results(results, path)
    check_scored_files(run, results)
    return results


def read_run(run: str | Path, results: Mapping[str, Any]) -> RunPlayed:
    """The played records, predictions and videos of the run folder ``run``, whose ``results`` :func:`read_results`
    read and checked (its files those it scored): read once, before the benchmark's exporter is chosen from them."""
    run = Path(run)
    records = {rid: rec for _, file in record_files(run / "played")
               for rid, rec in ((str(r.get("item_id", r.get("question_id"))), r) for _, r in iter_jsonl(file))}
    predictions = {str(p.get("item_id", p.get("question_id"))): p for _, p in iter_jsonl(run / "predictions.jsonl")}
    videos_file = run / "played" / "videos.jsonl"
    videos = {v["video_id"]: v for _, v in iter_jsonl(videos_file)} if videos_file.is_file() else {}
    return RunPlayed(dict(results), records, predictions, videos)


def exporter(metric: str) -> Callable[..., dict[str, Any]]:
    """The ``export(played, out, model)`` function (``played``: :func:`read_run`'s) of ``metric``'s own module (the
    module of its entry point), which writes a run in its benchmark's official output format; refused, one line, for a
    metric that has none."""
    module = importlib.import_module(METRICS[metric].entry.partition(":")[0])
    function = getattr(module, "export", None)
    if not callable(function):
        raise ConfigError(f"{metric} has no official output format to export to (metrics/<benchmark>.py defines "
                          "export(played, out, model) for the benchmarks that have one)")
    return function


def export_name(model: str | None) -> str:
    """A model name usable as a file name and a JSON key: letters, digits, ``.``, ``_`` and ``-`` kept, the rest
    ``_`` (``Qwen/Qwen2.5-VL`` -> ``Qwen_Qwen2.5-VL``); ``model`` when none is given."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", model or "").strip("._") or "model"
    return name
