"""Confidence intervals by a cluster bootstrap over videos, for one run and for the paired difference of two.

Questions of one video are not independent (the same scene, the same decoding, often the same
answer pattern), so resampling questions understates the uncertainty; lmms-eval 0.6 reports
clustered standard errors that can be 3x the naive ones (Miller, 2024, "Adding Error Bars to
Evals", arXiv:2411.00640, Sec. 2.3). Here the resampled unit is the video (Davison & Hinkley,
1997, *Bootstrap Methods and their Application*, Sec. 3.8; Field & Welsh, 2007, "Bootstrapping
clustered data", JRSS B 69(3)).

**Units.** Every scored question contributes units ``(video, key, num, den)``: a multiple-choice
question ``(video, task, correct, 1)``, an OVO-Bench forward item ``(video, task, correct probes,
probes)``. Per video ``c`` and key ``k`` the sums ``N[c, k]`` and ``D[c, k]`` are kept.

**Resample.** Draw ``V`` videos with replacement from the ``V`` videos played (a video drawn twice
counts twice): a multiplicity vector ``m`` (``sum m = V``). The totals of the resample are
``N*[k] = sum_c m[c] N[c, k]`` and ``D*[k] = sum_c m[c] D[c, k]``; a statistic is any function of
these totals (a task's accuracy ``N*[k] / D*[k]``, OVO-Bench's group average of task accuracies, a
pooled F1 ``2 tp / (predicted + true)``). A statistic that is undefined in a resample (its task not
drawn) is left out of that resample; ``resamples`` says how many counted.

**Interval.** The percentile interval at level ``1 - a`` (default 95 %): ``low`` is the smallest
resampled value whose cumulative weight reaches ``a / 2``, ``high`` the smallest reaching
``1 - a / 2`` (the inverse of the empirical distribution function, Hyndman & Fan type 1). ``se`` is
the standard deviation of the resampled values. ``estimate`` is the statistic on the data itself.

**Exact or Monte Carlo.** With few videos (``V ** V <= resamples``) every one of the ``V ** V``
ordered draws is enumerated with weight ``V ** -V`` (the exact bootstrap distribution: no seed,
no noise); otherwise ``resamples`` draws from ``numpy.random.default_rng(seed)`` (seed 0 by
default, recorded). Properties the tests check: the estimate lies in ``[low, high]`` when every
resample is defined, and the interval has zero width when every video gives the same totals.

**Paired.** :func:`paired_bootstrap` draws the videos both runs played once per resample and
evaluates the statistic on both runs' totals, so the difference ``B - A`` keeps the correlation
between the runs (the same videos are easy or hard for both).

Worked case (the golden test): video a has two correct answers, video b one wrong answer. The four
equally likely draws (aa, ab, ba, bb) give accuracies 1, 2/3, 2/3, 0: estimate 2/3, interval
[0, 1], se = sqrt(19) / 12 = 0.363.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.errors import ConfigError

__all__ = ["Unit", "Totals", "Statistic", "Row", "Rows", "UnitsOf", "RowsOf", "BootstrapSettings", "MIN_VIDEOS",
           "MAX_RESAMPLES", "cluster_bootstrap", "paired_bootstrap", "ratio", "pooled", "mean_of_present",
           "record_units",
           "pooled_rows", "tables", "paired_tables"]

#: One scored unit: ``(video, key, num, den)``.
Unit = tuple[str, str, float, float]


class Totals(Mapping[str, tuple[float, float]]):
    """``key -> (num, den)`` over the videos of one (re)sample; an absent key is ``(0, 0)``."""

    def __init__(self, keys: Sequence[str], num: Sequence[float], den: Sequence[float]) -> None:
        self._index = {k: i for i, k in enumerate(keys)}
        self._num, self._den = num, den

    def __getitem__(self, key: str) -> tuple[float, float]:
        i = self._index.get(key)
        return (0.0, 0.0) if i is None else (float(self._num[i]), float(self._den[i]))

    def __iter__(self) -> Any:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


#: A statistic: the totals of a (re)sample -> a number, or None where it is undefined.
Statistic = Callable[[Totals], "float | None"]
#: One reported figure: the keys whose units it counts (its ``n`` and ``videos``) and its statistic.
Row = tuple[tuple[str, ...], Statistic]
#: Reported figures by row name.
Rows = dict[str, Row]
#: What a metric declares (:class:`~streamcue.metrics.registry.Metric` ``units``): one record's per-item score and
#: its ground-truth record -> the record's units ``[(key, num, den)]``, each a share: ``0 <= num <= den``.
UnitsOf = Callable[[Mapping[str, Any], Mapping[str, Any]], "list[tuple[str, float, float]]"]
#: What a metric declares (``rows``): the keys present and the metric's config (as results.json holds it) ->
#: ``(task rows, group rows)``, every figure it reports.
RowsOf = Callable[[Sequence[str], Mapping[str, Any]], "tuple[Rows, Rows]"]
#: A row whose interval rests on fewer videos than this is flagged (``few_videos``): with 1 or 2 videos the
#: bootstrap distribution has 1 to 4 distinct draws and the interval collapses towards a point.
MIN_VIDEOS = 5
#: The most bootstrap resamples (``--resamples``; more is refused, never left to hang): at 100,000 the Monte Carlo
#: error of a percentile is already far below the width of the interval itself.
MAX_RESAMPLES = 100_000


def ratio(totals: Totals, *keys: str) -> float | None:
    """``sum num / sum den`` over ``keys`` (None when the denominator is 0)."""
    num = sum(totals[k][0] for k in keys)
    den = sum(totals[k][1] for k in keys)
    return num / den if den else None


def pooled(keys: Sequence[str]) -> Statistic:
    """The pooled ratio of ``keys``: ``sum num / sum den`` (:func:`ratio`)."""
    keys = tuple(keys)
    return lambda totals: ratio(totals, *keys)


def mean_of_present(keys: Sequence[str]) -> Statistic:
    """The mean of the ratios ``num / den`` of the keys present (den > 0), in the order given; None when none is
    (in a resample: the keys drawn)."""
    keys = tuple(keys)

    def statistic(totals: Totals) -> float | None:
        values = [totals[k][0] / totals[k][1] for k in keys if totals[k][1]]
        return sum(values) / len(values) if values else None
    return statistic


def record_units(num: str, den: str | None = None) -> UnitsOf:
    """The units of a metric that scores each record once: ``(task, item[num], item[den] or 1)``; the task is the
    item's ``task``, else the record's ``task`` or ``task_type``, else ``all``. A missing or null ``num`` counts 0;
    a record whose ``den`` is 0 gives no unit."""
    def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
        task = str(item.get("task") or record.get("task") or record.get("task_type") or "all")
        weight = 1.0 if den is None else float(item.get(den) or 0)
        return [(task, float(item.get(num) or 0), weight)] if weight else []
    return units


def pooled_rows(group: str = "mean") -> RowsOf:
    """The rows of a metric that averages records: each key a task row (its pooled ratio) and one group row
    ``group`` pooling every key."""
    def rows(keys: Sequence[str], config: Mapping[str, Any]) -> tuple[Rows, Rows]:
        task = {k: ((k,), pooled((k,))) for k in keys}
        return task, ({group: (tuple(keys), pooled(keys))} if keys else {})
    return rows


@dataclass(frozen=True)
class BootstrapSettings:
    """How the intervals are made; recorded in results.json (``bootstrap``)."""

    resamples: int = 2000
    seed: int = 0
    level: float = 0.95

    def __post_init__(self) -> None:
        if isinstance(self.resamples, bool) or not 1 <= self.resamples <= MAX_RESAMPLES:
            raise ConfigError(f"resamples must be 1 to {MAX_RESAMPLES:,}, not {self.resamples}")
        if isinstance(self.seed, bool) or not 0 <= self.seed < 2 ** 63:
            raise ConfigError(f"the bootstrap seed must be 0 to 2**63 - 1, not {self.seed}")
        if not 0 < self.level < 1:
            raise ConfigError(f"the interval level must lie in (0, 1), not {self.level}")

    def to_dict(self, exact: bool) -> dict[str, Any]:
        return {"unit": "video", "method": "cluster bootstrap, percentile interval", "resamples": self.resamples,
                "seed": self.seed, "level": self.level, "exact": exact, "min_videos": MIN_VIDEOS,
                "reference": "Davison & Hinkley 1997 Sec. 3.8; Miller 2024 arXiv:2411.00640"}


def _matrix(units: Iterable[Unit], videos: Sequence[str], keys: Sequence[str]) -> tuple[Any, Any]:
    import numpy as np

    vi = {v: i for i, v in enumerate(videos)}
    ki = {k: i for i, k in enumerate(keys)}
    num = np.zeros((len(videos), len(keys)))
    den = np.zeros((len(videos), len(keys)))
    for video, key, n, d in units:
        num[vi[video], ki[key]] += n
        den[vi[video], ki[key]] += d
    return num, den


def _draws(n_videos: int, settings: BootstrapSettings) -> tuple[Any, Any, bool]:
    """``(multiplicities (R x V), weights (R), exact)``."""
    import numpy as np

    if n_videos == 0:
        return np.zeros((0, 0)), np.zeros(0), True
    if n_videos ** n_videos <= settings.resamples:
        draws = np.array(list(itertools.product(range(n_videos), repeat=n_videos)))
        mult = np.stack([np.bincount(row, minlength=n_videos) for row in draws]).astype(float)
        return mult, np.full(len(mult), 1.0 / len(mult)), True
    rng = np.random.default_rng(settings.seed)
    mult = rng.multinomial(n_videos, [1.0 / n_videos] * n_videos, size=settings.resamples).astype(float)
    return mult, np.full(settings.resamples, 1.0 / settings.resamples), False


def _interval(values: list[float], weights: list[float], level: float) -> tuple[float, float, float]:
    """``(low, high, se)`` of a weighted sample: inverse empirical CDF (type 1) at (1 -+ level) / 2."""
    order = sorted(range(len(values)), key=values.__getitem__)
    total = sum(weights)
    alpha = 1.0 - level

    def quantile(p: float) -> float:
        acc = 0.0
        for i in order:
            acc += weights[i] / total
            if acc >= p - 1e-12:
                return values[i]
        return values[order[-1]]

    mean_ = sum(v * w for v, w in zip(values, weights)) / total
    var = sum(w * (v - mean_) ** 2 for v, w in zip(values, weights)) / total
    return quantile(alpha / 2), quantile(1 - alpha / 2), math.sqrt(max(var, 0.0))


def _summarise(estimate: float | None, values: list[float], weights: list[float], level: float,
               n_units: int, n_videos: int) -> dict[str, Any]:
    out: dict[str, Any] = {"estimate": estimate, "low": None, "high": None, "se": None, "n": n_units,
                           "videos": n_videos, "resamples": len(values)}
    if estimate is not None and values:
        low, high, se = _interval(values, weights, level)
        out.update(low=low, high=high, se=se)
    return out


def cluster_bootstrap(units: Sequence[Unit], statistics: Mapping[str, Statistic],
                      settings: BootstrapSettings = BootstrapSettings()) -> tuple[dict[str, dict[str, Any]], bool]:
    """Each statistic with its interval over videos: ``({name: {estimate, low, high, se, n, videos,
    resamples}}, exact)``; ``n`` is the number of units in total, ``videos`` the number of videos."""
    videos = list(dict.fromkeys(u[0] for u in units))
    keys = list(dict.fromkeys(u[1] for u in units))
    num, den = _matrix(units, videos, keys)
    mult, weights, exact = _draws(len(videos), settings)
    point = Totals(keys, num.sum(axis=0), den.sum(axis=0))
    boot_num, boot_den = mult @ num, mult @ den
    out = {}
    for name, statistic in statistics.items():
        values, kept = [], []
        for r in range(len(mult)):
            value = statistic(Totals(keys, boot_num[r], boot_den[r]))
            if value is not None:
                values.append(float(value))
                kept.append(float(weights[r]))
        out[name] = _summarise(statistic(point), values, kept, settings.level, len(units), len(videos))
    return out, exact


def paired_bootstrap(units_a: Sequence[Unit], units_b: Sequence[Unit], statistics: Mapping[str, Statistic],
                     settings: BootstrapSettings = BootstrapSettings()) -> tuple[dict[str, dict[str, Any]], bool]:
    """``B - A`` of each statistic with its interval, over the videos both runs played (drawn together).

    Each entry also gives ``a`` and ``b``, the two runs' estimates on those videos.
    """
    both = set(u[0] for u in units_a) & set(u[0] for u in units_b)
    units_a = [u for u in units_a if u[0] in both]
    units_b = [u for u in units_b if u[0] in both]
    videos = list(dict.fromkeys(u[0] for u in [*units_a, *units_b]))
    keys = list(dict.fromkeys(u[1] for u in [*units_a, *units_b]))
    num_a, den_a = _matrix(units_a, videos, keys)
    num_b, den_b = _matrix(units_b, videos, keys)
    mult, weights, exact = _draws(len(videos), settings)

    def diff(statistic: Statistic, na: Any, da: Any, nb: Any, db: Any) -> tuple[float | None, float | None,
                                                                                float | None]:
        a, b = statistic(Totals(keys, na, da)), statistic(Totals(keys, nb, db))
        return (None if a is None or b is None else b - a), a, b

    ba_num, ba_den, bb_num, bb_den = mult @ num_a, mult @ den_a, mult @ num_b, mult @ den_b
    out = {}
    for name, statistic in statistics.items():
        estimate, a, b = diff(statistic, num_a.sum(axis=0), den_a.sum(axis=0), num_b.sum(axis=0), den_b.sum(axis=0))
        values, kept = [], []
        for r in range(len(mult)):
            value = diff(statistic, ba_num[r], ba_den[r], bb_num[r], bb_den[r])[0]
            if value is not None:
                values.append(value)
                kept.append(float(weights[r]))
        out[name] = {**_summarise(estimate, values, kept, settings.level, len(units_a), len(videos)), "a": a, "b": b}
    return out, exact


def _count(results: dict[str, dict[str, Any]], rows: Rows, units: Sequence[Unit]) -> None:
    """Each row's ``n`` and ``videos`` (of its own keys) and ``few_videos`` (fewer than :data:`MIN_VIDEOS`)."""
    for name, (keys, _) in rows.items():
        mine = [u for u in units if u[1] in keys]
        videos = len({u[0] for u in mine})
        results[name].update(n=len(mine), videos=videos, few_videos=videos < MIN_VIDEOS)


def tables(units: Sequence[Unit], rows: tuple[Rows, Rows],
           settings: BootstrapSettings = BootstrapSettings()) -> tuple[dict[str, Any], bool]:
    """``({"task": {row: interval}, "group": {row: interval}}, exact)`` of one run's units and a metric's rows
    (:func:`cluster_bootstrap`; each row with ``n``, ``videos`` and ``few_videos``)."""
    out: dict[str, Any] = {}
    exact = True
    for table, mine in zip(("task", "group"), rows):
        results, exact = cluster_bootstrap(units, {name: stat for name, (_, stat) in mine.items()}, settings)
        _count(results, mine, units)
        out[table] = results
    return out, exact


def paired_tables(units_a: Sequence[Unit], units_b: Sequence[Unit], rows: tuple[Rows, Rows],
                  settings: BootstrapSettings = BootstrapSettings()) -> tuple[dict[str, Any], bool]:
    """The same tables for ``B - A`` (:func:`paired_bootstrap`); ``n`` and ``videos`` count A's units."""
    out: dict[str, Any] = {}
    exact = True
    for table, mine in zip(("task", "group"), rows):
        results, exact = paired_bootstrap(units_a, units_b, {name: stat for name, (_, stat) in mine.items()},
                                          settings)
        _count(results, mine, units_a)
        out[table] = results
    return out, exact
