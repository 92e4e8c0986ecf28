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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.fields import unknown_name

__all__ = ["METRICS", "MetricInfo", "evaluate"]


@dataclass(frozen=True)
class MetricInfo:
    record_kind: str
    config: str
    higher_is_better: bool
    uses_judge: bool
    summary: str
    default_judge: str = "token-f1"


#: name -> what it scores.
METRICS: dict[str, MetricInfo] = {
    "estp-f1": MetricInfo("interval_qa", "estp_f1", True, True, "ESTP-Bench answer + timing F1 (appendix B.3)"),
    "vsas": MetricInfo("dense_caption", "vsas", True, True, "VSAS-Bench accuracy and consistency (Sec. 3.3)"),
    "livecook": MetricInfo("guidance", "livecook", True, False, "LiveCook IC-Acc, mistake P/R/F1, ROUGE-L, BERTScore"),
    "reasoning": MetricInfo("reasoning_trace", "reasoning", True, True, "MiRA rubric of reasoning traces (AVP B.1)",
                            default_judge="mira"),
    "ovo-bench": MetricInfo("mc_question", "ovo_bench", True, False,
                            "OVO-Bench accuracy per task and group, official or strict rules (Sec. 4.1)"),
    "streamingbench": MetricInfo("mc_question", "streamingbench", True, False,
                                 "StreamingBench accuracy per task type; proactive time and answer accuracy"),
}


def metric_info(name: str) -> MetricInfo:
    if name not in METRICS:
        raise unknown_name("metric", name, METRICS)
    return METRICS[name]


def evaluate(metric: str, gt: str | Path, pred: str | Path, *, judge: str | None = None, config_version: int | None = None,
             judge_options: dict[str, Any] | None = None, use_cache: bool = True, bertscore: bool = True,
             bertscore_model: str | None = None, pred_format: str = "streamcue", model: str | None = None,
             **params: Any) -> dict[str, Any]:
    """Score the predictions in ``pred`` against the ground truth in ``gt``; returns the report dict.

    ``params`` override parameters of the metric's versioned config (recorded in the report).
    ``pred_format`` and ``model`` (ovo-bench, streamingbench) read a benchmark's own output format.
    """
    from streamcue.metrics.configs import load_config
    from streamcue.metrics.scoring import evaluate_estp, evaluate_livecook, evaluate_vsas, read_pairs
    from streamcue.metrics.judges import JudgeRunner, make_judge

    info = metric_info(metric)
    judge = judge or info.default_judge
    config = load_config(info.config, config_version, **params)
    if metric == "reasoning":
        return _evaluate_reasoning(gt, pred, judge, config, judge_options or {}, use_cache)
    if metric in ("ovo-bench", "streamingbench"):
        from streamcue.metrics.bench_scoring import evaluate_benchmark

        return evaluate_benchmark(metric, gt, pred, config, pred_format=pred_format, model=model)
    if pred_format != "streamcue":
        from streamcue.errors import ConfigError

        raise ConfigError(f"--pred-format {pred_format} is for ovo-bench and streamingbench; "
                          f"{metric} reads streamcue predictions")
    gt_records, preds = read_pairs(gt, pred, info.record_kind)
    if metric == "livecook":
        return evaluate_livecook(gt_records, preds, config, bertscore=bertscore, bertscore_model=bertscore_model)
    runner = JudgeRunner(make_judge(judge, **(judge_options or {})), use_cache=use_cache)
    if metric == "estp-f1":
        return evaluate_estp(gt_records, preds, runner, config)
    return evaluate_vsas(gt_records, preds, runner, config)


def _evaluate_reasoning(gt: str | Path, pred: str | Path, judge: str, config: Any, judge_options: dict[str, Any],
                        use_cache: bool) -> dict[str, Any]:
    from streamcue.errors import ConfigError
    from streamcue.metrics.judges import JudgeRunner
    from streamcue.metrics.mira import MiraJudge, read_reasoning, score_reasoning
    from streamcue.metrics.scoring import _report

    if judge != "mira":
        raise ConfigError(f"reasoning traces are scored by the mira judge (an LLM rubric), not {judge!r}")
    gt_records, preds = read_reasoning(gt, pred)
    options = {k: v for k, v in judge_options.items() if v is not None and k in ("model", "base_url")}
    runner = JudgeRunner(MiraJudge.from_options(scale_max=config.scale_max, **options), use_cache=use_cache)
    overall, groups, per_item = score_reasoning(gt_records, preds, runner, config)
    return _report("reasoning", config, runner, overall, groups, per_item, sorted(set(gt_records) - set(preds)))
