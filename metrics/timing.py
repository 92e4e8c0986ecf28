"""Proactive timing: which emission answers which gold trigger, under each published matching rule.

A proactive item has gold triggers ``g_k`` (k = 1..M; a time ``t_k``, optionally an interval ``[s_k, e_k]``
around it (default ``[t_k, t_k]``), the time ``q_k`` the question was asked (default ``t_k``) and a text) and
the model's emissions ``p_i = (t_i, text_i)``, i = 1..N, in time order. A rule returns the matched pairs
``(k, i)``, the hit triggers (TP), the false emissions (FP) and the missed triggers (FN = M - TP). The rules
(:data:`RULES`; ``streamcue evaluate METRIC --timing-rule NAME`` re-scores a run under one):

``window`` (StreamingBench, ``count.py``): only the last emission ``p_N`` is read; ``g_k`` is hit when
    ``|t_N - t_k| <= w`` (w = 2 s); FP = 1 when ``p_N`` hits nothing, else 0.
``anticipation-latency`` (ESTP-Bench B.3): ``p_i`` is a valid match of ``g_k`` when
    ``s_k - a <= t_i <= e_k + l`` (a = 1 s, l = 2 s); every valid pair counts (one emission may match several
    triggers); ``g_k`` is hit when it has a valid match; FP = ``max(0, N - TP)``.
``first-unused`` (PhoStream, ``evaluate_sample``): triggers in order; ``g_k`` takes the first emission not taken
    before with ``q_k <= t_i <= t_k + w`` (w = 2 s) whose text is the gold text or not a placeholder, skipping
    one at ``t_i = q_k`` when the trigger skips acknowledgements. Its category: ``no-response`` when none is
    found (the response is ``(t_k, "")``); else ``early`` if ``t_r < t_k``; else ``no-response`` if the text is
    a placeholder (and not the gold text); else ``late`` if
    ``t_r > end_k`` (``end_k = t_k`` when ``q_k = t_k``, else ``t_k + w``); else ``on-time``. TP = on-time
    triggers; FP = emissions in no on-time pair whose text is not a placeholder.
``nearest-one-to-one`` (OmniPro, ``match_emits_to_gt``): among all pairs with ``|t_i - t_k| <= tau``
    (tau = 3 s), repeatedly take the one with the smallest ``|t_i - t_k|`` (ties: smaller i, then smaller k)
    whose emission and trigger are both still free. TP = pairs, FP = N - TP.
``window-maximum`` (LiveCook v2's mistake matching): pairs allowed where ``|t_i - t_k| <= w`` (w = 15 s); of the
    matchings with the most pairs, one with the least total ``|t_i - t_k|`` (:func:`window_matching`). TP =
    pairs, FP = N - TP.
``text-bipartite`` (ProAssist: a minimum-weight bipartite matching on text similarity): pairs allowed where
    ``|t_i - t_k| <= w`` (w = 5 s here); of the matchings with the most pairs, one with the least total cost
    ``1 - sim(text_k, text_i)``, sim = SQuAD token F1 (:func:`streamcue.metrics.text.token_f1`; ProAssist uses
    sentence-embedding cosine, which a caller may pass as ``similarity``). TP = pairs, FP = N - TP.
    :func:`greedy_pairs` also serves LiveCook v1, whose ties go to the earlier truth time, then the earlier
    prediction.

Figures, pooled over items (micro, as OmniPro's ``aggregate``): ``time_precision = TP / (TP + FP)``,
``time_recall = TP / (TP + FN)``, ``time_f1 = 2PR / (P + R)`` (each 0 when its denominator is 0), and apart
from them ``content_accuracy = correct pairs / pairs`` over the matched pairs whose content can be judged (None
when there is none); a pair's content is correct when the normalised gold text
(:func:`~streamcue.metrics.text.normalize_answer`) is a run of whole words of the normalised emission. No
joint figure: a benchmark that defines one computes it in its own module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.metrics.text import normalize_answer, token_f1

__all__ = ["against_metric", "Trigger", "Emission", "Matching", "Rule", "RULES", "TimingSpec", "TimingItem", "within",
           "near",
           "window_last", "anticipation_latency", "first_unused", "nearest_one_to_one", "greedy_pairs",
           "maximum_matching", "window_matching", "window_maximum", "text_bipartite", "emissions_of", "match",
           "content_correct", "figures", "rescore"]


@dataclass(frozen=True)
class Trigger:
    """A gold trigger: its time, interval (default ``[t_s, t_s]``), question time (default ``t_s``) and text."""

    t_s: float
    text: str = ""
    start_s: float | None = None
    end_s: float | None = None
    asked_s: float | None = None
    skip_ack: bool = False

    @property
    def start(self) -> float:
        return self.t_s if self.start_s is None else self.start_s

    @property
    def end(self) -> float:
        return self.t_s if self.end_s is None else self.end_s

    @property
    def asked(self) -> float:
        return self.t_s if self.asked_s is None else self.asked_s


@dataclass(frozen=True)
class Emission:
    t_s: float
    text: str = ""


@dataclass(frozen=True)
class Matching:
    """A rule's verdict on one item: pairs ``(trigger k, emission i)``, hit triggers, FP, and categories."""

    pairs: tuple[tuple[int, int], ...]
    hits: tuple[bool, ...]
    fp: int
    categories: tuple[str, ...] = ()
    responses: tuple[tuple[float, str], ...] = ()  # first-unused: each trigger's response (time, text)

    @property
    def tp(self) -> int:
        return sum(self.hits)

    @property
    def fn(self) -> int:
        return len(self.hits) - self.tp


def within(t: float, low: float, high: float) -> bool:
    """``low <= t <= high``: the interval test (anticipation-latency, first-unused)."""
    return low <= t <= high


def near(t: float, gold_s: float, window_s: float) -> bool:
    """``|t - gold_s| <= window_s``: the gap test (window, nearest-one-to-one, text-bipartite), as the scorers
    compute it (a difference, not ``gold_s - w <= t <= gold_s + w``, whose rounding can differ)."""
    return abs(t - gold_s) <= window_s


def window_last(triggers: Sequence[Trigger], emissions: Sequence[Emission], window_s: float) -> Matching:
    """``window``: the last emission against each trigger time, ``|t_N - t_k| <= window_s``."""
    if not emissions:
        return Matching((), tuple(False for _ in triggers), 0)
    last = len(emissions) - 1
    t = emissions[last].t_s
    hits = tuple(near(t, g.t_s, window_s) for g in triggers)
    return Matching(tuple((k, last) for k, hit in enumerate(hits) if hit), hits, 0 if any(hits) else 1)


def anticipation_latency(triggers: Sequence[Trigger], emissions: Sequence[Emission], anticipation_s: float,
                         latency_s: float) -> Matching:
    """``anticipation-latency``: every pair with ``s_k - a <= t_i <= e_k + l``; FP = ``max(0, N - TP)``."""
    pairs = tuple((k, i) for k, g in enumerate(triggers) for i, p in enumerate(emissions)
                  if within(p.t_s, g.start - anticipation_s, g.end + latency_s))
    hits = tuple(any(k == a for a, _ in pairs) for k in range(len(triggers)))
    return Matching(pairs, hits, max(0, len(emissions) - sum(hits)))


def _placeholder(text: str, placeholders: frozenset[str]) -> bool:
    return text.strip().lower() in placeholders


def _first_free(g: Trigger, emissions: Sequence[Emission], used: set[int], window_s: float,
                placeholders: frozenset[str]) -> int | None:
    for i, p in enumerate(emissions):
        if i in used or not within(p.t_s, g.asked, g.t_s + window_s) or (g.skip_ack and p.t_s == g.asked):
            continue
        if p.text == g.text or not _placeholder(p.text, placeholders):
            return i
    return None


def _category(g: Trigger, t_r: float, text: str, window_s: float, placeholders: frozenset[str]) -> str:
    if t_r < g.t_s:
        return "early"
    if text != g.text and _placeholder(text, placeholders):
        return "no-response"
    return "late" if t_r > (g.t_s if g.asked == g.t_s else g.t_s + window_s) else "on-time"


def first_unused(triggers: Sequence[Trigger], emissions: Sequence[Emission], window_s: float,
                 placeholders: Sequence[str] = ()) -> Matching:
    """``first-unused``: each trigger in order takes the first free emission in ``[q_k, t_k + w]``; categories."""
    marks = frozenset(p.strip().lower() for p in placeholders)
    used: set[int] = set()
    taken, categories, responses = [], [], []
    for g in triggers:
        i = _first_free(g, emissions, used, window_s, marks)
        t_r, text = (g.t_s, "") if i is None else (emissions[i].t_s, emissions[i].text)
        if i is not None:
            used.add(i)
        taken.append(i)
        categories.append("no-response" if i is None else _category(g, t_r, text, window_s, marks))
        responses.append((t_r, text))
    pairs = tuple((k, i) for k, (i, c) in enumerate(zip(taken, categories)) if i is not None and c == "on-time")
    paired = {i for _, i in pairs}
    fp = sum(1 for i, p in enumerate(emissions) if i not in paired and not _placeholder(p.text, marks))
    return Matching(pairs, tuple(c == "on-time" for c in categories), fp, tuple(categories), tuple(responses))


def greedy_pairs(candidates: Iterable[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """Candidates ending in ``(trigger k, emission i)``, taken in sorted order: a pair is kept when both are still
    free. Returns the kept ``(k, i)`` in the order taken."""
    used_k: set[int] = set()
    used_i: set[int] = set()
    pairs = []
    for *_, k, i in sorted(candidates):
        if k not in used_k and i not in used_i:
            used_k.add(k)
            used_i.add(i)
            pairs.append((k, i))
    return pairs


def nearest_one_to_one(triggers: Sequence[Trigger], emissions: Sequence[Emission], tolerance_s: float) -> Matching:
    """``nearest-one-to-one``: greedy on the globally smallest ``|t_i - t_k| <= tolerance_s`` (ties: i, then k)."""
    pairs = greedy_pairs((abs(p.t_s - g.t_s), i, k, k, i) for i, p in enumerate(emissions)
                         for k, g in enumerate(triggers) if near(p.t_s, g.t_s, tolerance_s))
    matched = {k for k, _ in pairs}
    hits = tuple(k in matched for k in range(len(triggers)))
    return Matching(tuple(sorted(pairs)), hits, len(emissions) - len(pairs))


def emissions_of(prediction: Mapping[str, Any] | None, drop: Sequence[str] = ()) -> tuple[Emission, ...]:
    """A prediction's model responses (``role`` user left out) in time order, without texts in ``drop``
    (compared stripped and lower-cased)."""
    marks = frozenset(d.strip().lower() for d in drop)
    said = [Emission(float(r["t_s"]), r.get("text") or "") for r in (prediction or {}).get("responses", [])
            if r.get("role", "assistant") != "user"]
    return tuple(sorted((e for e in said if not _placeholder(e.text, marks)), key=lambda e: e.t_s))


def maximum_matching(allowed: Any, cost: Any, bound: float | None = None) -> list[tuple[int, int]]:
    """Of the one-to-one matchings of rows to columns using allowed cells only, one with the most pairs and, among
    those, the least total cost (costs in ``[0, bound]``; ``bound`` defaults to the largest allowed cost): an
    assignment (``scipy.optimize.linear_sum_assignment``) where an allowed cell costs ``cost - big`` with
    ``big = (min(rows, columns) + 1) * (bound + 1)``, so one more pair outweighs any costs, and any other cell
    costs 0 and is dropped. Returns sorted ``(row, column)`` pairs.

    >>> maximum_matching([[True, False], [True, True]], [[0.0, 0.0], [0.0, 9.0]])  # two pairs beat one cheap pair
    [(0, 0), (1, 1)]
    """
    import numpy as np

    inside = np.asarray(allowed, dtype=bool)
    if inside.size == 0 or not inside.any():
        return []
    from scipy.optimize import linear_sum_assignment

    costs = np.asarray(cost, dtype=float)
    big = (min(inside.shape) + 1) * ((float(costs[inside].max()) if bound is None else bound) + 1.0)
    rows, cols = linear_sum_assignment(np.where(inside, costs - big, 0.0))
    return sorted((int(i), int(j)) for i, j in zip(rows, cols) if inside[i, j])


def window_matching(truth_s: Sequence[float], pred_s: Sequence[float], window_s: float) -> list[tuple[int, int]]:
    """A maximum one-to-one matching of truth and predicted times with ``|t_pred - t_gt| <= window_s``: of all
    matchings with the most pairs, one with the smallest total time offset (:func:`maximum_matching` with the
    offsets as costs, bounded by the window). Returns sorted ``(truth position, prediction position)`` pairs.

    >>> window_matching([10.0, 30.0], [22.0, 40.0], 15.0)  # greedy closest-first finds one pair
    [(0, 0), (1, 1)]
    """
    import numpy as np

    offsets = np.abs(np.asarray(pred_s, dtype=float)[None, :] - np.asarray(truth_s, dtype=float)[:, None])
    return maximum_matching(offsets <= window_s, offsets, bound=window_s) if len(truth_s) and len(pred_s) else []


def window_maximum(triggers: Sequence[Trigger], emissions: Sequence[Emission], window_s: float) -> Matching:
    """``window-maximum``: :func:`window_matching` of the trigger and emission times."""
    pairs = tuple(window_matching([g.t_s for g in triggers], [p.t_s for p in emissions], window_s))
    matched = {k for k, _ in pairs}
    return Matching(pairs, tuple(k in matched for k in range(len(triggers))), len(emissions) - len(pairs))


def text_bipartite(triggers: Sequence[Trigger], emissions: Sequence[Emission], window_s: float,
                   similarity: Callable[[str, str], float] = token_f1) -> Matching:
    """``text-bipartite``: :func:`maximum_matching` on cost ``1 - similarity`` within ``|t_i - t_k| <= w``."""
    allowed = [[near(p.t_s, g.t_s, window_s) for p in emissions] for g in triggers]
    cost = [[1.0 - similarity(g.text, p.text) for p in emissions] for g in triggers]
    pairs = tuple(maximum_matching(allowed, cost, bound=1.0)) if emissions else ()
    hits = tuple(any(k == a for a, _ in pairs) for k in range(len(triggers)))
    return Matching(pairs, hits, len(emissions) - len(pairs))


@dataclass(frozen=True)
class Rule:
    """One published matching rule: its function, its parameters as published, what it does (its source: the
    module docstring)."""

    name: str
    function: Callable[..., Matching]
    params: Mapping[str, Any]
    summary: str


#: The rule table: ``--timing-rule`` choices, in the order of the module docstring.
RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("window", window_last, {"window_s": 2.0}, "the last emission within +/-2 s of the gold time"),
    Rule("anticipation-latency", anticipation_latency, {"anticipation_s": 1.0, "latency_s": 2.0},
         "every emission from 1 s before the gold interval to 2 s after it"),
    Rule("first-unused", first_unused, {"window_s": 2.0, "placeholders": ()},
         "the first unused response in [question time, gold time + 2 s]; early / no-response / late / on-time"),
    Rule("nearest-one-to-one", nearest_one_to_one, {"tolerance_s": 3.0},
         "greedy one-to-one on the smallest gap within +/-3 s"),
    Rule("window-maximum", window_maximum, {"window_s": 15.0},
         "maximum one-to-one matching within +/-15 s, least total time gap"),
    Rule("text-bipartite", text_bipartite, {"window_s": 5.0},
         "maximum bipartite matching within +/-5 s, least total 1 - token F1"),
)}


def _rule(name: str) -> Rule:
    if name not in RULES:
        raise ConfigError(f"unknown timing rule {name!r}; known: {', '.join(RULES)}")
    return RULES[name]


def match(rule: str, triggers: Sequence[Trigger], emissions: Sequence[Emission], **params: Any) -> Matching:
    """Apply the rule ``rule`` with its published parameters, ``params`` overriding them."""
    found = _rule(rule)
    return found.function(triggers, emissions, **{**found.params, **params})


def content_correct(gold: str, emitted: str) -> bool:
    """The normalised gold text is a run of whole words of the normalised emission (an empty gold text: never)."""
    want, said = normalize_answer(gold).split(), normalize_answer(emitted).split()
    return bool(want) and any(said[j:j + len(want)] == want for j in range(len(said) - len(want) + 1))


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def figures(tp: int, fp: int, fn: int, correct: int, judged: int) -> dict[str, Any]:
    """Time precision, recall and F1 from the counts, and content accuracy apart (module docstring)."""
    p, r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    return {"tp": tp, "fp": fp, "fn": fn, "time_precision": p, "time_recall": r,
            "time_f1": _ratio(2 * p * r, p + r), "content_pairs": judged,
            "content_accuracy": correct / judged if judged else None}


@dataclass(frozen=True)
class TimingItem:
    """One item as every rule reads it, and the group its benchmark reports it under."""

    triggers: tuple[Trigger, ...]
    emissions: tuple[Emission, ...]
    group: str = ""
    predicted: bool = True


@dataclass(frozen=True)
class TimingSpec:
    """What a proactive benchmark's metric module declares (``TIMING``): its own rule and parameters (from its
    config) and how its ground truth and predictions become :class:`TimingItem` s."""

    rule: str
    params: Callable[[Any], dict[str, Any]]
    items: Callable[[Path, Path, Any], dict[str, TimingItem]]
    group: str = "group"
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: The metric's own category of each item (``early``, ``no-response``, ``late``, ``on-time``) from the same files
    #: and config, where the metric categorises: re-scored under its own rule, the report says where they differ.
    categories: Callable[[Path, Path, Any], dict[str, str]] | None = None


def _score_item(rule: str, item: TimingItem, params: Mapping[str, Any]) -> dict[str, Any]:
    m = match(rule, item.triggers, item.emissions, **params)
    correct = sum(content_correct(item.triggers[k].text, item.emissions[i].text) for k, i in m.pairs)
    out = {**figures(m.tp, m.fp, m.fn, correct, len(m.pairs)), "correct": correct, "pairs": [list(p) for p in m.pairs]}
    if m.categories:
        out["categories"] = list(m.categories)
    return out


def _pooled(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    tp, fp, fn, correct, judged = (sum(i[key] for i in items) for key in ("tp", "fp", "fn", "correct",
                                                                          "content_pairs"))
    out = {"n": len(items), **figures(tp, fp, fn, correct, judged)}
    categories = [c for i in items for c in i.get("categories", [])]
    if categories:
        out.update({c: categories.count(c) for c in ("early", "no-response", "late", "on-time")})
    return out


def _spec(metric: str) -> TimingSpec:
    from streamcue.metrics.registry import get_metric

    module = importlib.import_module(get_metric(metric).entry.partition(":")[0])
    spec = getattr(module, "TIMING", None)
    if not isinstance(spec, TimingSpec):
        raise ConfigError(f"--timing-rule: metric {metric!r} declares no timing rule (TIMING in {module.__name__}); "
                          f"proactive metrics: {', '.join(_proactive_metrics())}")
    return spec


def _proactive_metrics() -> list[str]:
    from streamcue.metrics.registry import METRICS

    found = []
    for name, metric in METRICS.items():
        module = importlib.import_module(metric.entry.partition(":")[0])
        if isinstance(getattr(module, "TIMING", None), TimingSpec):
            found.append(name)
    return found


def rescore(metric: str, gt: str | Path, pred: str | Path, rule: str, config_version: int | None = None,
            **overrides: Any) -> dict[str, Any]:
    """Score a proactive run's predictions under ``rule``: the report of :mod:`streamcue.metrics.scoring`'s shape
    whose ``config_version`` ends in ``+timing=RULE`` and whose ``overrides`` hold ``timing_rule`` when it is not
    the benchmark's own; ``timing`` names the rule, its parameters and summary, and the benchmark's own rule."""
    from streamcue.metrics.configs import load_config
    from streamcue.metrics.registry import get_metric
    from streamcue.metrics.scoring import make_report

    found, spec = _rule(rule), _spec(metric)
    config = load_config(get_metric(metric).config, config_version, **overrides)
    params = dict(spec.params(config)) if rule == spec.rule else {}
    items = spec.items(Path(gt), Path(pred), config)
    per_item = {rid: _score_item(rule, item, params) for rid, item in items.items()}
    groups: dict[str, list[dict[str, Any]]] = {}
    for rid, item in items.items():
        groups.setdefault(item.group, []).append(per_item[rid])
    report = make_report(metric, config, None, _pooled(list(per_item.values())),
                         {spec.group: {g: _pooled(rows) for g, rows in sorted(groups.items())}}, per_item,
                         [rid for rid, item in items.items() if not item.predicted])
    report["config_version"] += f"+timing={rule}"
    if rule != spec.rule:
        report["overrides"] = {**report.get("overrides", {}), "timing_rule": rule}
    report["timing"] = {"rule": rule, "params": {**found.params, **params}, "summary": found.summary,
                        "own_rule": spec.rule, "content": "gold text a run of whole words of the emission"}
    report["notes"] = list(spec.notes)
    if rule == spec.rule and spec.categories is not None:
        report["timing"]["against_metric"] = against_metric(per_item, spec.categories(Path(gt), Path(pred), config))
        report["notes"].insert(0, report["timing"]["against_metric"]["said"])
    return report


def against_metric(per_item: Mapping[str, Mapping[str, Any]], own: Mapping[str, str]) -> dict[str, Any]:
    """The categories re-scored under the metric's own rule against the metric's own (``own``, by item id):
    ``{"rule": counts, "metric": counts, "differ": ids, "said": one line}``; the line names both on-time counts and
    the questions categorised differently, or says they agree."""
    names = ("early", "no-response", "late", "on-time")
    mine = {rid: (item.get("categories") or [None])[0] for rid, item in per_item.items()}
    counts = {side: {n: list(found.values()).count(n) for n in names} for side, found in (("rule", mine),
                                                                                        ("metric", own))}
    differ = sorted(rid for rid in mine if rid in own and mine[rid] != own[rid])
    if not differ:
        said = "every question has the metric's own category under its own rule"
    else:
        shown = ", ".join(f"{rid} ({own[rid]} in the metric, {mine[rid]} here)" for rid in differ[:5])
        more = " ..." if len(differ) > 5 else ""
        said = (f"on time: {counts['rule']['on-time']} here, {counts['metric']['on-time']} in the metric's own "
                f"scoring: {len(differ)} question(s) categorised differently, {shown}{more}; why: see the next note")
    return {**counts, "differ": differ, "said": said}
