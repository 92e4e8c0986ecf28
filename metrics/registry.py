"""The metric registry: every metric that ``streamcue evaluate <name>`` runs, in one literal dict.

The contract (checked for every entry by ``tests/test_contracts.py``): a metric

* reads ground truth of one record kind (:attr:`Metric.record_kind`; full or ``*_minimal`` records)
  and predictions of ``<kind>_prediction``;
* has a versioned, frozen config ``metrics/configs/<config>.vN.json`` (loaded by
  :func:`~streamcue.metrics.configs.load_config`, its SHA-256 pinned in ``tests/data/config_hashes.json``;
  a change of behaviour is a new version);
* declares ``higher_is_better`` and whether it needs an answer judge;
* has one entry point ``function(gt_path, pred_path, config, context) -> report`` (``"module:function"``
  in :attr:`Metric.entry`), whose report has the shape written in :mod:`streamcue.metrics.scoring`
  and is the same for the same inputs.

To add a metric: write ``metrics/<benchmark module>.py`` (copy ``livecook.py``; ``estp.py`` when it
needs a judge): its pure functions, ``evaluate`` and the entry point ``run`` (shared readers and the
report are in :mod:`~streamcue.metrics.scoring`), its config class with ``configs/<name>.v1.json``,
then one :class:`Metric` line in :data:`METRICS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.fields import unknown_name

__all__ = ["METRICS", "EvalContext", "Metric", "get_metric"]


@dataclass(frozen=True)
class EvalContext:
    """How one evaluation runs, apart from the metric's versioned config: the judge and its cache, BERTScore.

    ``judge`` is a name of :data:`~streamcue.metrics.judges.JUDGES` (or ``mira``); ``judge_options`` are
    passed to it (None values are dropped). ``pred_format`` and ``model``: a benchmark's own prediction
    files (ovo-bench, streamingbench).
    """

    judge: str = "token-f1"
    judge_options: Mapping[str, Any] = field(default_factory=dict)
    use_cache: bool = True
    bertscore: bool = True
    bertscore_model: str | None = None
    pred_format: str = "streamcue"
    model: str | None = None


@dataclass(frozen=True)
class Metric:
    """One registered metric."""

    name: str
    record_kind: str
    config: str
    higher_is_better: bool
    uses_judge: bool
    summary: str
    entry: str
    default_judge: str = "token-f1"
    #: Prediction formats it reads besides streamcue's ``<kind>_prediction`` records.
    other_pred_formats: tuple[str, ...] = ()
    #: ``"module:Class"`` of its frozen config dataclass when it lives in the metric's own module (the first
    #: metrics' classes are in :mod:`~streamcue.metrics.configs`), and the version used by default.
    config_class: str = ""
    config_latest: int = 0

    def evaluate(self, gt: str | Path, pred: str | Path, config: Any, context: EvalContext) -> dict[str, Any]:
        """Run the entry point (imported on first use, so that ``streamcue ls`` stays fast)."""
        module, _, function = self.entry.partition(":")
        return getattr(importlib.import_module(module), function)(gt, pred, config, context)


#: name (``streamcue evaluate <name>``) -> metric. Literal on purpose: the list of metrics is read here.
METRICS: dict[str, Metric] = {
    "estp-f1": Metric("estp-f1", "interval_qa", "estp_f1", higher_is_better=True, uses_judge=True,
                      summary="ESTP-Bench answer + timing F1 (appendix B.3)",
                      entry="streamcue.metrics.estp:run"),
    "vsas": Metric("vsas", "dense_caption", "vsas", higher_is_better=True, uses_judge=True,
                   summary="VSAS-Bench accuracy and consistency (Sec. 3.3)",
                   entry="streamcue.metrics.vsas:run"),
    "livecook": Metric("livecook", "guidance", "livecook", higher_is_better=True, uses_judge=False,
                       summary="LiveCook IC-Acc, mistake P/R/F1, ROUGE-L, BERTScore",
                       entry="streamcue.metrics.livecook:run"),
    "reasoning": Metric("reasoning", "reasoning_trace", "reasoning", higher_is_better=True, uses_judge=True,
                        summary="MiRA rubric of reasoning traces (AVP B.1)",
                        entry="streamcue.metrics.mira:run_reasoning", default_judge="mira"),
    "ovo-bench": Metric("ovo-bench", "mc_question", "ovo_bench", higher_is_better=True, uses_judge=False,
                        summary="OVO-Bench accuracy per task and group, official or strict rules (Sec. 4.1)",
                        entry="streamcue.metrics.ovo_bench:run", other_pred_formats=("ovo-results",)),
    "streamingbench": Metric("streamingbench", "mc_question", "streamingbench", higher_is_better=True,
                             uses_judge=False,
                             summary="StreamingBench accuracy per task type; proactive time and answer accuracy",
                             entry="streamcue.metrics.streamingbench:run",
                             other_pred_formats=("streamingbench",)),
    "streambench": Metric("streambench", "open_question", "streambench", higher_is_better=True, uses_judge=True,
                          summary="StreamBench LLM judge: yes/no accuracy and mean 0-5 score per class",
                          entry="streamcue.metrics.streambench:run", default_judge="streambench",
                          config_class="streamcue.metrics.streambench:StreamBenchConfig", config_latest=1),
}


def get_metric(name: str) -> Metric:
    """The registered metric called ``name``; an unknown name suggests the closest one."""
    if name not in METRICS:
        raise unknown_name("metric", name, METRICS)
    return METRICS[name]
