"""What every metric shares: read ground truth and predictions, means per group, the report, the judge runner.

Each metric module (``metrics/<benchmark>.py``) holds its pure functions, its ``evaluate`` and its
entry point ``run``. Each ``evaluate`` works in explicit phases: read and check the inputs, collect every judge
request, judge them in one batch (deduplicated, cached), compute per-item scores, then
aggregate. Reports have the same shape for every metric::

    {"metric", "config_version" (e.g. "livecook.v2", or "livecook.v2+overrides" after --param),
     "overrides" (only after --param: {parameter: value} differing from the versioned file), "config", "judge",
     "overall",
     "groups": {group name: {value: scores}}, "per_item": {id: scores}, "missing_predictions": [ids],
     "streamcue_version"}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import InputError, RecordValidationError
from streamcue.io import iter_jsonl
from streamcue.metrics.judges import JudgeRunner, make_judge
from streamcue.metrics.registry import METRICS, EvalContext
from streamcue.schemas import ID_FIELDS, KINDS, check_records
from streamcue.version import __version__

__all__ = ["read_pairs", "mean", "grouped", "make_report", "judge_runner", "config_overrides", "config_label"]


def read_pairs(gt_path: str | Path, pred_path: str | Path, kind: str) -> tuple[dict[str, dict], dict[str, dict]]:
    """Ground truth (full or minimal records of ``kind``) and predictions keyed by id, both checked.

    A prediction for an id that is not in the ground truth is an error.
    """
    id_field = ID_FIELDS[kind]
    gt_lines = list(iter_jsonl(gt_path))
    if not gt_lines:
        raise InputError("no ground-truth records: nothing to score", file=gt_path)
    full = all("schema_version" in r for _, r in gt_lines)
    gt_kind = kind if full or f"{kind}_minimal" not in KINDS else f"{kind}_minimal"
    report = check_records(gt_lines, gt_kind, file=str(gt_path))
    if not report.ok:
        raise RecordValidationError(report.violations)
    pred_lines = list(iter_jsonl(pred_path))
    report = check_records(pred_lines, f"{kind}_prediction", file=str(pred_path))
    if not report.ok:
        raise RecordValidationError(report.violations)
    gt = {r[id_field]: r for _, r in gt_lines}
    preds = {}
    for line, r in pred_lines:
        if r[id_field] not in gt:
            raise InputError(f"unknown {id_field} (not in the ground truth {gt_path})", file=pred_path, line=line,
                             record=str(r[id_field]), field=id_field)
        preds[r[id_field]] = r
    return gt, preds


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def grouped(per_item: Mapping[str, Mapping[str, float]], group_of: Mapping[str, str],
             keys: list[str]) -> dict[str, dict]:
    groups: dict[str, list[str]] = {}
    for item_id, group in group_of.items():
        groups.setdefault(group, []).append(item_id)
    return {g: {"n": len(ids), **{k: mean([per_item[i][k] for i in ids]) for k in keys}}
            for g, ids in sorted(groups.items())}


def config_overrides(metric: str, config: Any) -> dict[str, Any]:
    """The parameters of ``config`` that differ from its versioned file (``--param NAME=VALUE``), with their values."""
    from dataclasses import asdict

    from streamcue.metrics.configs import load_config

    pinned = asdict(load_config(METRICS[metric].config, config.version))
    return {name: value for name, value in asdict(config).items() if pinned.get(name) != value}


def config_label(metric: str, config: Any) -> str:
    """``livecook.v2``, or ``livecook.v2+overrides`` when a parameter was overridden (the report lists them)."""
    label = f"{METRICS[metric].config}.v{config.version}"
    return f"{label}+overrides" if config_overrides(metric, config) else label


def make_report(metric: str, config: Any, runner: JudgeRunner | None, overall: dict, groups: dict, per_item: dict,
            missing: list[str]) -> dict[str, Any]:
    """The report every metric returns. ``config_version`` says ``NAME.vN+overrides`` when a parameter was
    overridden; ``overrides`` lists them ({name: value used}), ``config`` holds every value used."""
    from dataclasses import asdict

    overrides = config_overrides(metric, config)
    return {
        "metric": metric,
        "config_version": config_label(metric, config),
        **({"overrides": overrides} if overrides else {}),
        "config": asdict(config),
        "judge": runner.report() if runner is not None else None,
        "overall": overall,
        "groups": groups,
        "per_item": per_item,
        "missing_predictions": missing,
        "streamcue_version": __version__,
    }


def judge_runner(context: EvalContext) -> JudgeRunner:
    """The answer judge of ``context`` (its cache on unless ``use_cache`` is off)."""
    return JudgeRunner(make_judge(context.judge, **context.judge_options), use_cache=context.use_cache)
