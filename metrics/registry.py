"""The metrics: every metric that ``streamcue evaluate <name>`` runs, read from the benchmark registry.

Which metrics exist is written once, in ``streamcue/registry.py``: each benchmark names its metric (in
``metrics/<benchmark module>.py``), and ``OTHER_METRICS`` names the metrics of no benchmark (``reasoning``,
in ``mira.py``). Each of those modules declares its metric, ``METRIC = Metric(...)``, and :data:`METRICS`
reads it there when an entry is used (so ``streamcue ls`` stays fast).

The contract (checked for every entry by ``tests/streamcue/test_contracts.py``): a metric

* reads ground truth of one record kind (:attr:`Metric.record_kind`; full or ``*_minimal`` records)
  and predictions of ``<kind>_prediction``;
* has a versioned, frozen config ``metrics/configs/<config>.vN.json`` (loaded by
  :func:`~streamcue.metrics.configs.load_config`, its SHA-256 pinned in ``tests/data/config_hashes.json``;
  a change of behaviour is a new version);
* declares ``higher_is_better`` and whether it needs an answer judge;
* has one entry point ``function(gt_path, pred_path, config, context) -> report`` (``"module:function"``
  in :attr:`Metric.entry`), whose report has the shape written in :mod:`streamcue.metrics.scoring`
  and is the same for the same inputs;
* owns its aggregation: :attr:`Metric.units` splits the report into per-record units ``(key, num, den)``
  and :attr:`Metric.rows` says how units aggregate into every figure it reports (task and group rows),
  as statistics of the units' totals (:mod:`streamcue.metrics.bootstrap`). A run's intervals, ``compare``
  and the page call these two and nothing else, so no shared module names a benchmark. Most metrics
  declare ``record_units(...)`` and ``pooled_rows()``; the formula of a figure is written once, in the
  metric's module.

To add a metric: write ``metrics/<benchmark module>.py`` (copy ``livecook.py``; ``estp.py`` when it
needs a judge): its pure functions, ``evaluate``, the entry point ``run`` and ``METRIC = Metric(...)``
(shared readers and the report are in :mod:`~streamcue.metrics.scoring`), its config class with
``configs/<name>.v1.json``; the benchmark's registry entry names it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.metrics.bootstrap import Rows, RowsOf, UnitsOf
from streamcue.metrics.verdict import LLMTask
from streamcue.registry import Derived, metric_modules

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
    #: ``"module:Class"`` of its frozen config dataclass, in the metric's own module (its one home; several metrics
    #: may read one config), and the version used by default.
    config_class: str = ""
    config_latest: int = 0
    #: (per-item score, ground-truth record) -> the record's units ``[(key, num, den)]``; the keys are its task rows.
    units: UnitsOf | None = None
    #: (keys present, config as results.json holds it) -> ``(task rows, group rows)``: every figure it reports.
    rows: RowsOf | None = None
    #: (raw answer, number of options) -> the option letter read from a multiple-choice answer (samples.jsonl's
    #: ``parsed_answer``), or None; default :func:`~streamcue.metrics.choice_rules.choice_letter`.
    read_choice: Callable[[Any, int], Any] | None = None
    #: Of :attr:`other_pred_formats`, those that carry the gold answers: ``streamcue evaluate`` needs no ``--gt``.
    gold_pred_formats: tuple[str, ...] = ()
    #: Of :attr:`other_pred_formats`, those that store several models' answers: ``evaluate`` needs ``--pred-model``.
    keyed_pred_formats: tuple[str, ...] = ()
    #: ``streamcue evaluate``'s options as this metric reads them: flag -> what it means here (no final full stop).
    #: The option's help lists every metric's (``--gt``: when it is not needed).
    option_help: Mapping[str, str] = field(default_factory=dict)
    #: The judges it scores with besides :attr:`default_judge` (empty: any known judge); another ``--judge`` is
    #: refused when the run is configured, before any model call.
    judges: tuple[str, ...] = ()
    #: How the generic ``llm`` judge grades this metric's triples (prompt, answer shape, verdict), or None.
    llm_task: LLMTask | None = None

    def units_of(self, report: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]]
                 ) -> dict[str, list[tuple[str, float, float]]]:
        """Per scored record id (``report["per_item"]``): its units, by :attr:`units`."""
        if self.units is None:
            raise ConfigError(f"metric {self.name!r} declares no units (Metric(units=...), metrics/registry.py): "
                              "a run cannot give its rows intervals")
        return {rid: self.units(item, records.get(rid, {})) for rid, item in report.get("per_item", {}).items()}

    def rows_of(self, keys: Sequence[str], config: Mapping[str, Any]) -> tuple[Rows, Rows]:
        """``(task rows, group rows)`` for the keys present, by :attr:`rows`."""
        if self.rows is None:
            raise ConfigError(f"metric {self.name!r} declares no rows (Metric(rows=...), metrics/registry.py)")
        return self.rows(keys, config)

    def evaluate(self, gt: str | Path, pred: str | Path, config: Any, context: EvalContext) -> dict[str, Any]:
        """Run the entry point (imported on first use, so that ``streamcue ls`` stays fast)."""
        module, _, function = self.entry.partition(":")
        return getattr(importlib.import_module(module), function)(gt, pred, config, context)


def _load(name: str, module: str) -> Metric:
    """The metric ``name`` as its module ``streamcue.metrics.<module>`` declares it (``METRIC``)."""
    path = f"{__package__}.{module}"
    metric = getattr(importlib.import_module(path), "METRIC", None)
    if not isinstance(metric, Metric) or metric.name != name:
        found = f"a metric named {metric.name!r}" if isinstance(metric, Metric) else "no METRIC = Metric(...)"
        raise ConfigError(f"metric {name!r}: {path} declares {found} (see metrics/registry.py)")
    return metric


#: name (``streamcue evaluate <name>``) -> metric: each benchmark's metric (streamcue/registry.py), then the
#: metrics of no benchmark, each as its own module declares it.
METRICS: Derived[Metric] = Derived("metric", metric_modules, _load)


def get_metric(name: str) -> Metric:
    """The registered metric called ``name``; an unknown name suggests the closest one."""
    return METRICS.get_or_suggest(name)
