"""Metrics of the papers behind streamcue, as pure functions plus a file-level evaluator.

* ``estp-f1`` (:mod:`~streamcue.metrics.estp`): ESTP-Bench's answer + timing F1 for interval_qa.
* ``vsas`` (:mod:`~streamcue.metrics.vsas`): VSAS-Bench accuracy and consistency for dense_caption.
* ``livecook`` (:mod:`~streamcue.metrics.livecook`): LiveCook IC-Acc, mistake P/R/F1, ROUGE-L, BERTScore.
* ``reasoning`` (:mod:`~streamcue.metrics.mira`): MiRA rubric of reasoning traces (AVP B.1), judge ``mira``.

>>> from streamcue.metrics import evaluate                                    # doctest: +SKIP
>>> report = evaluate("estp-f1", "gt.jsonl", "pred.jsonl", judge="token-f1")  # doctest: +SKIP
>>> report["overall"]["f1"]                                                   # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamcue.metrics.registry import METRICS, EvalContext, Metric, get_metric

__all__ = ["METRICS", "EvalContext", "Metric", "evaluate", "get_metric"]


def evaluate(metric: str, gt: str | Path, pred: str | Path, *, judge: str | None = None,
             config_version: int | None = None,
             judge_options: dict[str, Any] | None = None, use_cache: bool = True, bertscore: bool = True,
             bertscore_model: str | None = None, pred_format: str = "streamcue", model: str | None = None,
             timing_rule: str | None = None, **params: Any) -> dict[str, Any]:
    """Score the predictions in ``pred`` against the ground truth in ``gt``; returns the report dict.

    ``params`` override parameters of the metric's versioned config (recorded in the report).
    ``pred_format`` and ``model`` (ovo-bench, streamingbench) read a benchmark's own output format.
    ``timing_rule`` re-scores a proactive metric's predictions under that rule
    (:func:`streamcue.metrics.timing.rescore`).
    """
    from streamcue.metrics.configs import load_config

    if timing_rule is not None:
        from streamcue.metrics.timing import rescore

        report = rescore(metric, gt, pred, timing_rule, config_version, **params)
        _coverage(report)
        return report

    info = get_metric(metric)
    config = load_config(info.config, config_version, **params)
    if pred_format != "streamcue" and not info.other_pred_formats:
        from streamcue.errors import ConfigError

        readers = " and ".join(name for name, m in METRICS.items() if m.other_pred_formats)
        raise ConfigError(f"--pred-format {pred_format} is for {readers}; {metric} reads streamcue predictions")
    context = EvalContext(judge=judge or info.default_judge, judge_options=dict(judge_options or {}),
                          use_cache=use_cache, bertscore=bertscore, bertscore_model=bertscore_model,
                          pred_format=pred_format, model=model)
    report = info.evaluate(gt, pred, config, context)
    _coverage(report)
    return report


def _coverage(report: dict[str, Any]) -> None:
    """A partial run says so: ``coverage`` (``n_ground_truth``, ``n_predicted``, a note) when predictions cover only
    part of the ground truth. The figures stay the metric's own (a full run's numbers never change)."""
    missing = report.get("missing_predictions") or []
    if not missing:
        return
    per_item = report.get("per_item") or {}
    n_gt = len(set(per_item) | set(missing) | set(report.get("unscored") or []))
    scored_as = report.get("missing_scored_as") or "no response (zero)"
    report["coverage"] = {
        "n_ground_truth": n_gt, "n_predicted": n_gt - len(missing),
        "note": f"predictions cover {n_gt - len(missing)} of {n_gt} ground-truth records; the {len(missing)} without "
                f"one are scored as {scored_as}; to score over what was played, pass only those records as the "
                "ground truth (streamcue run does: played/ in its run folder)"}
