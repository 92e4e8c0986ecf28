"""OVO-Bench and StreamingBench scoring from files: ground truth from the builders, predictions in
streamcue's prediction schemas or in each benchmark's own output format.

>>> report = evaluate_benchmark("ovo-bench", "out/ovo", "results/GPT", pred_format="ovo-results")  # doctest: +SKIP
>>> report["overall"]["total"]                                                                    # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.output import FILE_NAMES
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.io import iter_jsonl, read_json
from streamcue.metrics import ovo_bench, streamingbench_score
from streamcue.metrics.registry import METRICS
from streamcue.metrics.scoring import _report
from streamcue.schemas import check_records

__all__ = ["record_files", "read_ground_truth", "evaluate_benchmark", "PRED_FORMATS", "run_ovo_bench",
           "run_streamingbench"]

#: Prediction formats each benchmark reads (streamcue's records, and those its registry line names).
PRED_FORMATS = {name: ("streamcue", *METRICS[name].other_pred_formats) for name in ("ovo-bench", "streamingbench")}
_KINDS = ("mc_question", "active_item")
#: What a missing prediction counts as under each rule (the report and its warning say it).
MISSING_SCORED_AS = {"official": "left out, as the official scorer does", "strict": "wrong"}


def _letter(index: int) -> str:
    return chr(65 + index)


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


def _read_predictions(path: Path, gt: Mapping[str, dict[str, Any]]) -> tuple[dict[str, dict], list[str]]:
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


def evaluate_benchmark(benchmark: str, gt_path: str | Path, pred_path: str | Path, config: Any, *,
                       pred_format: str = "streamcue", model: str | None = None) -> dict[str, Any]:
    """Score ``pred_path`` against the builder's ``gt_path``; the report has the shape of the other metrics."""
    if pred_format not in PRED_FORMATS[benchmark]:
        raise ConfigError(f"unknown --pred-format {pred_format!r} for {benchmark}; use one of "
                          f"{', '.join(PRED_FORMATS[benchmark])}")
    gt = read_ground_truth(gt_path, benchmark)
    pred_path = Path(pred_path)
    if benchmark == "ovo-bench":
        return _evaluate_ovo(gt, pred_path, config, pred_format)
    return streamingbench_score.evaluate(gt, pred_path, config, pred_format, model,
                                         lambda: _read_predictions(pred_path, gt), _report)


def _ovo_truth_entry(record: dict[str, Any], rid: str) -> ovo_bench.Entry:
    if "probes" in record:
        return ovo_bench.Entry(rid, record["task"], probes=[(p["expected"], None) for p in record["probes"]])
    return ovo_bench.Entry(rid, record["task"], letter=_letter(record["answer"]), n_options=len(record["options"]))


def _evaluate_ovo(gt: dict[str, dict[str, Any]], pred_path: Path, config: Any, pred_format: str) -> dict[str, Any]:
    rules = config.rules
    extra: dict[str, Any] = {"rules": rules, "pred_format": pred_format}
    if pred_format == "ovo-results":
        entries, duplicates, mismatches = _ovo_results(pred_path, gt)
        extra["ground_truth_mismatches"] = mismatches
    else:
        preds, duplicates = _read_predictions(pred_path, gt)
        entries = []
        for rid, pred in preds.items():
            entry = _ovo_truth_entry(gt[rid], rid)
            if entry.probes:
                by_probe = {r["probe"]: r.get("text") for r in pred.get("responses", []) if "probe" in r}
                entry.probes = [(expected, by_probe.get(i)) for i, (expected, _) in enumerate(entry.probes)]
            else:
                entry.response = pred.get("response")
            entries.append(entry)
    seen = {e.item_id for e in entries}
    missing = sorted(set(gt) - seen)
    if rules == "strict":
        first: dict[str, ovo_bench.Entry] = {}
        for entry in entries:
            first.setdefault(entry.item_id, entry)
        entries = [first.get(rid) or _ovo_truth_entry(record, rid) for rid, record in gt.items()]
    overall, groups, per_item = ovo_bench.aggregate(entries, rules)
    extra["duplicates"] = sorted(set(duplicates))
    extra["official_figures"] = ovo_bench.official_figures(overall, groups["task"])
    report = _report("ovo-bench", config, None, overall, groups, per_item, missing)
    report.update(extra, missing_scored_as=MISSING_SCORED_AS[rules])
    return report


def _ovo_results(folder: Path, gt: Mapping[str, dict[str, Any]]) -> tuple[list[ovo_bench.Entry], list[str], list[str]]:
    """Every entry of every JSON file of an OVO-Bench results folder, as the official score.py reads them."""
    if not folder.is_dir():
        raise InputError("expected an OVO-Bench results folder (one model's *.json files)", file=folder)
    files = sorted(p for p in folder.glob("*.json"))
    if not files:
        raise InputError("no *.json result files", file=folder)
    entries: list[ovo_bench.Entry] = []
    counts: Counter = Counter()
    mismatches: list[str] = []
    for file in files:
        data = read_json(file)
        groups = ("backward", "realtime", "forward")
        if not isinstance(data, dict) or not all(isinstance(data.get(g), list) for g in groups):
            raise InputError("expected an object with backward, realtime and forward lists", file=file)
        for group in ("backward", "realtime", "forward"):
            for n, item in enumerate(data[group]):
                entry = _ovo_result_entry(item, f"{group}[{n}]", file, gt, mismatches)
                counts[entry.item_id] += 1
                entries.append(entry)
    return entries, [rid for rid, c in counts.items() if c > 1], sorted(set(mismatches))


def _ovo_result_entry(item: Any, where: str, file: Path, gt: Mapping[str, dict[str, Any]],
                      mismatches: list[str]) -> ovo_bench.Entry:
    if not isinstance(item, dict) or "id" not in item or "task" not in item:
        raise InputError("expected an object with id and task", file=file, record=where)
    rid = f"ovo-{item['id']}"
    record = gt.get(rid)
    if record is None:
        raise InputError(f"unknown id {item['id']!r} (not in the ground truth)", file=file, record=where, field="id")
    if item["task"] != record["task"]:
        raise InputError(f"task {item['task']!r} but the ground truth says {record['task']}", file=file,
                         record=f"id={item['id']}", field="task")
    if "probes" in record:
        test_info = item.get("test_info")
        if not isinstance(test_info, list):
            raise InputError("expected a test_info list", file=file, record=f"id={item['id']}", field="test_info")
        probes = []
        for i, probe in enumerate(test_info):
            if not isinstance(probe, dict):
                raise InputError("expected an object", file=file, record=f"id={item['id']}", field=f"test_info[{i}]")
            if record["task"] == "REC":
                expected = str(probe.get("count"))
            else:
                expected = "Yes" if probe.get("type") == 1 else "No"
            if i >= len(record["probes"]) or record["probes"][i]["expected"] != expected:
                mismatches.append(rid)
            probes.append((expected, probe.get("response")))
        return ovo_bench.Entry(rid, record["task"], probes=probes)
    letter = item.get("ground_truth")
    if letter != _letter(record["answer"]):
        mismatches.append(rid)
    return ovo_bench.Entry(rid, record["task"], letter=str(letter), n_options=len(record["options"]),
                           response=item.get("response"))


def run_ovo_bench(gt: str | Path, pred: str | Path, config: Any, context: Any) -> dict[str, Any]:
    """Entry point of ``ovo-bench`` (see :mod:`streamcue.metrics.registry`)."""
    return evaluate_benchmark("ovo-bench", gt, pred, config, pred_format=context.pred_format, model=context.model)


def run_streamingbench(gt: str | Path, pred: str | Path, config: Any, context: Any) -> dict[str, Any]:
    """Entry point of ``streamingbench`` (see :mod:`streamcue.metrics.registry`)."""
    return evaluate_benchmark("streamingbench", gt, pred, config, pred_format=context.pred_format,
                              model=context.model)
