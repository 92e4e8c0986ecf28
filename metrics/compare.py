"""Paired comparison of two run folders: per task and group, ``B - A`` with a 95 % interval over shared videos.

**Settings side by side.** :func:`side_by_side` flattens what decides a run's answers (``protocol``,
``frames``, ``generation``, ``prompts``, the model, the benchmark version, the metric config and the judge
that scored the answers) into ``{setting: (A, B)}``. How a run went rather than what it asked (``concurrency``,
``cache``, the frame counts, and ``frames.sound``, which labels what the records played needed under the setting
``frames.audio``) is left out, and so are the kinds only one run played (a partial run is still the same
protocol). Each run's results.json is first read by :func:`streamcue.metrics.bench_readers.read_results`, the one
reader of a run's results (the page's and ``export``'s too): checked against its own seal (every field as the run
wrote it), its schema and the predictions and played files it scored, so an edited setting is refused, not
believed. The two runs must agree on every setting but the model, and must be of one benchmark version and
metric config; otherwise :func:`compare_runs` refuses with one line naming each difference
(``frames.window_s: none vs 60``), unless ``allow_different`` (then the result lists them, ``differences``). The
model is its name, ``--model-revision`` and the server's entry (:data:`MODEL_SETTINGS`): where they differ, the
result names how (``models``), so two checkpoints under one name are not "m vs m". Throughputs (``wall_s``, the
real-time factor) of runs at different concurrency are said not comparable (``efficiency_note``). Two
runs of different benchmarks, or sharing no record, are refused always.

**Checked against itself.** Each run's ``samples.jsonl`` is checked before use
(:func:`streamcue.metrics.run.check_run`, through :func:`~streamcue.metrics.run.read_run`, as the page's is):
its ids are unique, every unit ``(key, num, den)`` is a share (``0 <= num <= den``, finite), every
sample's ``score`` is the run's own ``report.per_item`` entry and its units the metric's units of that entry,
and the tables recomputed from the
units by the metric's own rows (:meth:`~streamcue.metrics.registry.Metric.rows_of`) give the
estimates, ``n`` and ``videos`` of ``results.json``; a run that fails is refused, named.

**Paired.** Only records both runs scored count (their ``units``), and only videos both played are
resampled, together (:func:`streamcue.metrics.bootstrap.paired_bootstrap`): the interval of a
difference is much narrower than the two runs' own intervals suggest, because a hard video is hard
for both models. The efficiency of both runs (results.json ``efficiency``) stands beside.

**Leak** (``leak=True``, ``streamcue compare --leak``). A benchmark's protocol may declare options whose values
read the gold (an answer or its time) to decide when or what to ask (``leaky_options``, e.g. a schedule that
asks at the gold answer time). :func:`leak_order` takes two runs of one model that differ in such options only,
one run under a gold-reading value and one under none, and puts the gold-blind run first, so that every row's
paired difference is

    leak = score of the gold-reading run - score of the gold-blind run

with its interval. Any other difference (the model included; ``frames.audio`` too: runs that send different
inputs do not measure a leak), both or neither run reading the gold, or a benchmark that declares no such option is
refused in one line naming it; ``allow_different`` does not apply. The result says what figures were compared
(``leak.scored``; ``score_only`` when a metric that takes a judge scored without one, so that a leak in what is
said, not when, cannot show) and how many paired records the two runs scored differently
(``records_scored_differently``): a leak of 0 in figures that cannot move is not a finding of no leak.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.metrics.bootstrap import BootstrapSettings, paired_tables
from streamcue.metrics.registry import get_metric
from streamcue.metrics.run import read_run, sample_units

__all__ = ["compare_runs", "differences", "leak_order", "side_by_side", "scored", "score_only", "model_differences",
           "MODEL_SETTINGS", "throughput_note", "THROUGHPUTS"]

#: The parts of results.json that decide a run's answers, compared setting by setting.
SECTIONS = ("protocol", "frames", "generation", "prompts")
#: How a run went, not what it asked: listed by neither. ``frames.sound`` labels what the records played needed
#: (video-only: some need sound and ``frames.audio`` sent none): it follows from ``frames.audio``, the setting, and
#: the selection, and only records both runs played are paired.
NOT_SETTINGS = {"generation.concurrency", "generation.cache", "frames.frames_total", "frames.frames_seen",
                "frames.without_pixels", "frames.sound"}


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}.{key}").items()}
    return {prefix: value}


def _played(results: Mapping[str, Any]) -> set[str]:
    return set((results.get("protocol") or {}).get("kinds") or {}) | set(results.get("prompts") or {})


def side_by_side(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{setting: (A's value, B's value)}``: the model, the benchmark version, the metric config and every leaf of
    ``protocol``, ``frames``, ``generation`` and ``prompts`` (a kind's settings only where both runs played it)."""
    def of(results: Mapping[str, Any]) -> dict[str, Any]:
        out = {**_model_settings(results),
               "benchmark version": results["benchmark"].get("version"),
               "metric config": results["metric"].get("config_version"), "metric judge": _judge(results),
               **_flat({k: v for k, v in (results["metric"].get("config") or {}).items()}, "metric config")}
        for section in SECTIONS:
            out.update(_flat(results.get(section), section))
        out.setdefault("protocol.clock", "free")  # a run recorded before --clock existed played the free clock
        return out

    only_one = _played(a) ^ _played(b)
    flat_a, flat_b = of(a), of(b)
    keys = [k for k in dict.fromkeys([*flat_a, *flat_b]) if k not in NOT_SETTINGS
            and not any(f".{kind}." in f"{k}." for kind in only_one)]
    return {k: (flat_a.get(k), flat_b.get(k)) for k in keys}


#: The settings that say which model answered: they may differ between two runs compared (the models compared).
MODEL_SETTINGS = ("model", "model revision", "model entry")


def _model_settings(results: Mapping[str, Any]) -> dict[str, Any]:
    """The model's name, its ``--model-revision`` and the SHA-256 of the server's entry for it (results.json
    ``model``): two checkpoints served under one name are told apart by these."""
    model = results.get("model") or {}
    return {"model": model.get("name"), "model revision": model.get("revision"),
            "model entry": model.get("entry_sha256")}


def model_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """How the two runs' models differ (:data:`MODEL_SETTINGS`), with both values: what ``compare`` names as the
    models compared."""
    return [f"{key}: {_shown(va)} vs {_shown(vb)}" for key, (va, vb) in side_by_side(a, b).items()
            if key in MODEL_SETTINGS and va != vb]


def _judge(results: Mapping[str, Any]) -> str | None:
    """The judge that scored the run's answers (results.json ``report.judge.judge``), None: scored without one."""
    judge = (results.get("report") or {}).get("judge")
    return judge.get("judge") if isinstance(judge, Mapping) else None


def score_only(results: Mapping[str, Any]) -> bool:
    """Whether a metric that takes an answer judge scored the run without one (its score-only figures)."""
    return _judge(results) is None and get_metric(results["metric"]["name"]).uses_judge


def scored(results: Mapping[str, Any]) -> str:
    """What a run's figures are: the metric, its config, and its judge, or "score-only" (:func:`score_only`) with the
    metric's own notes on what that leaves out."""
    metric, judge = results["metric"], _judge(results)
    what = f"{metric['name']} {metric.get('config_version')}"
    if judge is not None:
        return f"{what}, judged by {judge}"
    if not score_only(results):
        return what
    notes = " ".join((results.get("report") or {}).get("notes") or [])
    return f"{what}, score-only figures (no judge){f': {notes}' if notes else ''}"


def _shown(value: Any) -> str:
    text = "none" if value is None else str(value)
    return text if len(text) <= 50 else text[:47] + "..."


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Every setting but the model on which the two runs differ, with both values: what makes their figures
    incomparable."""
    return [f"{key}: {_shown(va)} vs {_shown(vb)}" for key, (va, vb) in side_by_side(a, b).items()
            if key not in MODEL_SETTINGS and va != vb]


def _reads_gold(results: Mapping[str, Any], leaky: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The run's settings that read the gold: ``protocol.<option>: <value>``."""
    protocol = results.get("protocol") or {}
    return [f"protocol.{option}: {protocol.get(option)}" for option, values in leaky.items()
            if protocol.get(option) in values]


def leak_order(a: Mapping[str, Any], b: Mapping[str, Any], run_a: Path, run_b: Path) -> tuple[bool, dict[str, Any]]:
    """Whether the two runs come gold-reading first (then the caller swaps them), and the ``leak`` entry of the
    result: ``{"measures", "gold_reading": [setting: value, ...], "gold_blind": [...]}``; a pair that does not
    measure a leak (module docstring) is a :class:`ConfigError` naming why."""
    from streamcue.loaders.protocols import PROTOCOLS

    benchmark = a["benchmark"]["name"]
    leaky = PROTOCOLS[benchmark].leaky_options if benchmark in PROTOCOLS else {}
    if not leaky:
        raise ConfigError(f"--leak: benchmark {benchmark} declares no option that reads the gold (leaky_options of "
                          "its protocol): there is no leak to measure")
    other = [line for line in differences(a, b) if line.split(": ", 1)[0].rpartition(".")[2] not in leaky
             or not line.startswith("protocol.")]
    other[:0] = model_differences(a, b)
    if other:
        raise ConfigError(f"--leak: runs {run_a} and {run_b} differ in {'; '.join(other)}: a leak is measured on two "
                          f"runs of one model that differ only in {', '.join(f'protocol.{o}' for o in leaky)}; "
                          "any other difference changes what the model is sent, how it answers or how it is scored, "
                          "so the difference of their scores would not be the leak alone")
    gold_a, gold_b = _reads_gold(a, leaky), _reads_gold(b, leaky)
    if bool(gold_a) == bool(gold_b):
        said = "both runs read" if gold_a else "neither run reads"
        reading = "; ".join(f"protocol.{option}: {' or '.join(values)}" for option, values in leaky.items())
        raise ConfigError(f"--leak: {said} the gold ({run_a}: {'; '.join(gold_a) or 'none'}; {run_b}: "
                          f"{'; '.join(gold_b) or 'none'}): a leak is measured between a run under a gold-reading "
                          f"setting ({reading}) and a run under none")
    blind = b if gold_a else a
    entry = {"measures": "leak = score of the gold-reading run (B) - score of the gold-blind run (A)",
             "gold_reading": gold_a or gold_b,
             "gold_blind": [f"protocol.{o}: {(blind.get('protocol') or {}).get(o)}" for o in leaky],
             "scored": scored(a), "score_only": score_only(a)}
    return bool(gold_a), entry


#: The efficiency figures that are throughputs: they depend on how many calls were in flight.
THROUGHPUTS = ("wall_s", "real_time_factor")


def throughput_note(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Why the two runs' throughputs (:data:`THROUGHPUTS`) are not comparable, None when they are: runs at
    different concurrency (results.json ``generation.concurrency``) take different wall time for the same calls."""
    ca, cb = ((r.get("generation") or {}).get("concurrency") for r in (a, b))
    if ca == cb:
        return None
    return (f"{' and '.join(THROUGHPUTS)} are throughputs at concurrency {_shown(ca)} vs {_shown(cb)}: not "
            "comparable (compare latency per call instead)")


def _scored_differently(samples_a: list[dict[str, Any]], samples_b: list[dict[str, Any]], shared: set[str]) -> int:
    """How many of the shared records the two runs scored differently (their samples' ``score``, the metric's
    per-record entry: a category, a verdict, a share), whatever the rows' figures show."""
    score_a = {s["id"]: s.get("score") for s in samples_a if s["id"] in shared}
    return sum(1 for s in samples_b if s["id"] in shared and s.get("score") != score_a[s["id"]])


def compare_runs(run_a: Path, run_b: Path, *, allow_different: bool = False, leak: bool = False,
                 settings: BootstrapSettings = BootstrapSettings(), clock: bool = False) -> dict[str, Any]:
    """``{"a", "b", "settings", "differences", "shared_records", "shared_videos", "tables": {"task", "group"},
    "bootstrap", "efficiency"}``; each table row ``{estimate (B - A), low, high, se, a, b, n, videos, few_videos}``,
    ``settings`` ``{setting: [A, B]}``, ``efficiency`` ``{figure: [A, B]}``. With ``leak``, A is the gold-blind run
    and B the gold-reading one whatever their order (:func:`leak_order`), and ``leak`` says so. With ``clock``, A is
    the free run and B the live or fixed one (:func:`streamcue.metrics.latency_cost.clock_order`): each row is the
    latency cost, and ``clock`` says so."""
    (a, samples_a), (b, samples_b) = read_run(run_a), read_run(run_b)
    if a["benchmark"]["name"] != b["benchmark"]["name"]:  # no record in common: nothing to pair, whatever is allowed
        raise ConfigError(f"runs {run_a} and {run_b} are of different benchmarks ({a['benchmark']['name']} vs "
                          f"{b['benchmark']['name']}): no record is in both")
    if leak:
        swap, leak_entry = leak_order(a, b, run_a, run_b)
        if swap:
            (run_a, a, samples_a), (run_b, b, samples_b) = (run_b, b, samples_b), (run_a, a, samples_a)
        allow_different = True  # leak_order allowed exactly the gold-reading settings
    if clock:
        from streamcue.metrics.latency_cost import clock_order

        models = side_by_side(a, b)["model"]
        differ = ([f"model: {_shown(models[0])} vs {_shown(models[1])}"] if models[0] != models[1] else []) + \
            differences(a, b)
        swap, clock_entry = clock_order(a, b, run_a, run_b, differ, scored(a))
        if swap:
            (run_a, a, samples_a), (run_b, b, samples_b) = (run_b, b, samples_b), (run_a, a, samples_a)
        allow_different = True  # clock_order allowed exactly the clock
    diff = differences(a, b)
    if diff and not allow_different:
        raise ConfigError(f"runs {run_a} and {run_b} differ in {'; '.join(diff)}: their figures are not comparable "
                          "(pass --allow-different to compare anyway)")
    shared = {s["id"] for s in samples_a} & {s["id"] for s in samples_b}
    if not shared:
        raise ConfigError(f"runs {run_a} and {run_b} share no record: nothing to pair")
    units_a, units_b = sample_units(samples_a, shared), sample_units(samples_b, shared)
    keys = list(dict.fromkeys(u[1] for u in [*units_a, *units_b]))
    rows = get_metric(a["metric"]["name"]).rows_of(keys, a["metric"].get("config") or {})
    tables, exact = paired_tables(units_a, units_b, rows, settings)
    videos = {u[0] for u in units_a} & {u[0] for u in units_b}
    eff_a, eff_b = a.get("efficiency") or {}, b.get("efficiency") or {}
    return {"a": {"folder": str(run_a), "model": a["model"], "benchmark": a["benchmark"]},
            "b": {"folder": str(run_b), "model": b["model"], "benchmark": b["benchmark"]},
            "settings": {k: list(v) for k, v in side_by_side(a, b).items()},
            "differences": diff, "models": model_differences(a, b), "shared_records": len(shared),
            "shared_videos": len(videos),
            "bootstrap": settings.to_dict(exact), "tables": tables,
            "efficiency": {k: [eff_a.get(k), eff_b.get(k)] for k in dict.fromkeys([*eff_a, *eff_b])},
            "efficiency_note": throughput_note(a, b),
            **({"leak": {**leak_entry, "records_scored_differently": _scored_differently(samples_a, samples_b, shared)}}
               if leak else {}),
            **({"clock": {**clock_entry, "records_scored_differently": _scored_differently(samples_a, samples_b,
                                                                                          shared)}} if clock else {})}
