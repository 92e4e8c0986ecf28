"""A run folder: the records played, the model's predictions, the score with intervals, per-question samples, a page.

:func:`streamcue.metrics.run_config.run` (``streamcue run BENCHMARK RECORDS --out RUN``) selects records
(:func:`streamcue.loaders.replay_config.prepare`), replays them, then calls :func:`finish_run`, which writes,
beside the replay's ``predictions.jsonl`` and ``replay_report.json``:

* ``played/<kind>.jsonl`` (+ ``videos.jsonl``): the ground truth restricted to the records played.
  A partial run (``--limit``, ``--ids``, ``--split``) is scored over these alone, for every metric
  alike, and ``n_played`` stands beside ``n_benchmark`` (ESTP-F1 and LiveCook would otherwise count
  the unplayed records as zeros, OVO-Bench and StreamingBench would leave them out);
* ``results.json`` (``schemas/results.schema.json``): how the run was made and its figures, the
  per-task and group tables with 95 % intervals by a cluster bootstrap over videos
  (:mod:`streamcue.metrics.bootstrap`) and the metric's own report;
* ``samples.jsonl`` (``schemas/sample.schema.json``): one line per record played;
* ``report.html`` (:mod:`streamcue.metrics.page`): a self-contained page.

Field by field: docs/runs.md. The demo writes a run folder the same way (offline baseline).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.metrics.bootstrap import BootstrapSettings, Statistic, Totals, cluster_bootstrap, ratio
from streamcue.schemas.discovery import ID_FIELDS

__all__ = ["STREAMING_KINDS", "RESULTS_VERSION", "Selection", "finish_run", "units_of",
           "statistics_for", "tables", "write_played", "read_samples", "read_results", "check_results",
           "prompt_versions", "now"]

RESULTS_VERSION = "1.0"
#: Kinds whose page shows a timeline per video: gold answer windows against when the model spoke.
STREAMING_KINDS = ("interval_qa", "guidance", "dense_caption", "active_item")
#: The id fields of the played kinds, in the order a prediction's id is looked up.
_RECORD_IDS = tuple(dict.fromkeys(ID_FIELDS[k] for k in ("mc_question", "active_item", "interval_qa", "dense_caption",
                                                          "guidance", "open_question")))


def now() -> str:
    """UTC time, ISO 8601 to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


# ------------------------------------------------------------------------------------------ selecting records

@dataclass
class Selection:
    """The records a run plays: ``{kind: rows}`` in file order, their videos, and what the benchmark holds."""

    records: dict[str, list[dict[str, Any]]]
    videos: list[dict[str, Any]]
    files: dict[str, Path]
    videos_file: Path | None
    n_benchmark: int
    sha256: dict[str, str] = field(default_factory=dict)

    @property
    def n_played(self) -> int:
        return sum(len(rows) for rows in self.records.values())


# ------------------------------------------------------------------------------------------ units and statistics

def _task(record: Mapping[str, Any]) -> str:
    return str(record.get("task") or record.get("task_type") or "all")


def units_of(metric: str, report: Mapping[str, Any], gt: Mapping[str, Mapping[str, Any]]
             ) -> dict[str, list[tuple[str, float, float]]]:
    """Per scored record id: its units ``(key, num, den)`` (:mod:`streamcue.metrics.bootstrap`).

    The keys are the rows of the task table; every row's estimate ``sum num / sum den`` equals the
    metric's own figure (OVO-Bench pools a forward task's probes; StreamingBench proactive items give
    an answer unit and a ``time`` unit; LiveCook, scored per video, gives IC-Acc and the mistake
    precision and recall counts).
    """
    out: dict[str, list[tuple[str, float, float]]] = {}
    for rid, item in report.get("per_item", {}).items():
        record = gt.get(rid, {})
        if metric == "ovo-bench":
            out[rid] = [(item["task"], float(item["correct"]), float(item["scored"]))] if item["scored"] else []
        elif metric == "streamingbench":
            if "correct" in item:
                out[rid] = [(item["task"], float(item["correct"]), 1.0)]
            else:
                out[rid] = [(item["task"], float(item["answer_correct"]), 1.0),
                            (f"{item['task']} (time)", float(item["time_correct"]), 1.0)]
        elif metric == "estp-f1":
            out[rid] = [(_task(record), float(item["f1"]), 1.0)]
        elif metric == "vsas":
            out[rid] = [(_task(record), float(item["accuracy"]), 1.0)]
        elif metric == "livecook":
            out[rid] = [("IC-Acc", float(item["ic_acc"]) * item["successes"], float(item["successes"])),
                        ("mistake precision", float(item["tp"]), float(item["predicted_mistakes"])),
                        ("mistake recall", float(item["tp"]), float(item["true_mistakes"]))]
        elif metric == "streambench":
            out[rid] = [(str(item.get("task") or "all"), float(bool(item.get("yes"))), 1.0)]
        else:
            out[rid] = []
    return out


def _mean_of_present(keys: Sequence[str]) -> Statistic:
    """The mean of the ratios of the keys present (OVO-Bench's group average: the mean of its tasks' accuracies
    present; in a resample, the tasks drawn). None when none is present."""
    def statistic(totals: Totals) -> float | None:
        values = [totals[k][0] / totals[k][1] for k in keys if totals[k][1]]
        return sum(values) / len(values) if values else None
    return statistic


def _pooled(keys: Sequence[str]) -> Statistic:
    return lambda totals: ratio(totals, *keys)


def _f1(totals: Totals) -> float | None:
    tp, predicted = totals["mistake precision"]
    _, true = totals["mistake recall"]
    return 2 * tp / (predicted + true) if predicted + true else None


def statistics_for(metric: str, keys: Sequence[str]) -> tuple[dict[str, tuple[tuple[str, ...], Statistic]],
                                                              dict[str, tuple[tuple[str, ...], Statistic]]]:
    """``(task rows, group rows)``: each ``name -> (keys whose units it counts as n, statistic)``, for the keys
    present."""
    task_rows = {k: ((k,), _pooled([k])) for k in keys}
    groups: dict[str, tuple[tuple[str, ...], Statistic]] = {}
    if metric == "ovo-bench":
        from streamcue.metrics.ovo_bench import GROUP_TASKS

        task_rows = {k: ((k,), _pooled([k])) for names in GROUP_TASKS.values() for k in names if k in keys}
        present = {}
        for group, names in GROUP_TASKS.items():
            mine = tuple(k for k in names if k in keys)
            if mine:
                present[group] = mine
                groups[group] = (mine, _mean_of_present(mine))
        statistics = [_mean_of_present(mine) for mine in present.values()]

        def total(totals: Totals) -> float | None:  # the mean of the group averages present
            values = [v for v in (s(totals) for s in statistics) if v is not None]
            return sum(values) / len(values) if values else None
        if present:
            groups["total"] = (tuple(k for mine in present.values() for k in mine), total)
    elif metric == "streamingbench":
        choice = tuple(k for k in keys if not k.endswith(" (time)") and f"{k} (time)" not in keys)
        proactive = tuple(k for k in keys if f"{k} (time)" in keys)
        if choice:
            groups["accuracy"] = (choice, _pooled(choice))
        if proactive:
            groups["proactive answer"] = (proactive, _pooled(proactive))
            timed = tuple(f"{k} (time)" for k in proactive)
            groups["proactive time"] = (timed, _pooled(timed))
    elif metric == "livecook":
        if "mistake precision" in keys:
            groups["mistake F1"] = (("mistake precision",), _f1)  # n and videos counted once (it reads recall too)
    elif keys:
        groups["mean"] = (tuple(keys), _pooled(keys))
    return task_rows, groups


def tables(metric: str, video_units: Sequence[tuple[str, str, float, float]],
           settings: BootstrapSettings) -> tuple[dict[str, Any], bool]:
    """``{"task": {row: interval}, "group": {row: interval}}`` (each with ``n`` units and ``videos`` of its keys)."""
    keys = list(dict.fromkeys(u[1] for u in video_units))
    task_rows, group_rows = statistics_for(metric, keys)
    out: dict[str, Any] = {}
    exact = True
    for table, rows in (("task", task_rows), ("group", group_rows)):
        results, exact = cluster_bootstrap(video_units, {name: stat for name, (_, stat) in rows.items()}, settings)
        for name, (read, _) in rows.items():
            mine = [u for u in video_units if u[1] in read]
            results[name].update(n=len(mine), videos=len({u[0] for u in mine}))
        out[table] = results
    return out, exact


# ------------------------------------------------------------------------------------------ samples

#: Kinds whose prediction is one answer (``response``) to one question.
ASKED_ONCE = ("mc_question", "open_question")


def _keep_unparseable(predictions: Sequence[dict[str, Any]], calls: Mapping[str, Sequence[Mapping[str, Any]]]) -> int:
    """An asked question whose answer could not be read (``response`` null, the engine's call holds the raw text)
    gets that raw text as its response, so the metric scores it (wrong, unless the official rule finds the right
    answer in it) instead of leaving it out; returns how many. Nothing silent: issue 23."""
    kept = 0
    for prediction in predictions:
        rid = prediction.get("question_id")
        if rid is None or prediction.get("response") is not None:
            continue
        raw = [c.get("raw") for c in calls.get(str(rid), []) if isinstance(c.get("raw"), str)]
        if raw:
            prediction["response"] = raw[-1]
            kept += 1
    return kept


def _parse(kind: str, record: Mapping[str, Any], prediction: Mapping[str, Any] | None,
           benchmark: str = "") -> tuple[Any, Any, bool, bool]:
    """``(raw answer, parsed answer, answered, parseable)`` of one record's prediction; a StreamingBench choice is
    read as its official counter reads it (the answer's first character), any other by ``choice_letter``."""
    from streamcue.metrics.choice_rules import choice_letter, first_element, stated_number, stated_yes_no

    if prediction is None:
        return None, None, False, False
    if kind == "open_question":
        raw = prediction.get("response")
        answered = isinstance(raw, str) and bool(raw.strip())
        return raw, raw if answered else None, answered, answered
    if kind == "mc_question":
        raw = prediction.get("response")
        answered = raw not in (None, "", [])
        n = len(record.get("options", []))
        if benchmark == "streamingbench":
            parsed = first_element(raw) if answered else None
            return raw, parsed, answered, parsed in [chr(65 + i) for i in range(n)]
        parsed = choice_letter(raw, n) if answered else None
        return raw, parsed, answered, parsed is not None
    responses = prediction.get("responses", prediction.get("events", []))
    said = [r for r in responses if r.get("role", "assistant") == "assistant"]
    if kind == "active_item" and "probes" in record and "target" not in record:
        parse = stated_number if record.get("task") == "REC" else stated_yes_no
        parsed = [parse(r.get("text")) for r in said]
        return said, parsed, bool(said), bool(said) and all(p is not None for p in parsed)
    return said, [[r.get("t_s"), r.get("text")] for r in said], bool(said), True


def _gold_windows(kind: str, record: Mapping[str, Any], window_s: float = 2.0) -> list[list[Any]]:
    """``[[start_s, end_s, label]]``: when a right answer could be given (the page's timeline)."""
    if kind == "interval_qa":
        return [[a["start_s"], a["end_s"], a.get("text", "")] for a in record.get("answers", [])]
    if kind == "dense_caption":
        return [[c["t_s"], c["t_s"] + 1.0, c.get("text", "")] for c in record.get("captions", [])]
    if kind == "guidance":
        return [[e["t_s"] - window_s, e["t_s"] + window_s, f"{e.get('type')}: {e.get('text', '')}"]
                for e in record.get("events", [])]
    if kind == "active_item":
        if record.get("target"):
            t = record["target"]
            return [[t["t_s"] - window_s, t["t_s"] + window_s, t.get("text", "")]]
        if record.get("spans"):
            return [[s["start_s"], s["end_s"], s.get("text") or ""] for s in record["spans"]]
        return [[p["t_s"], p["t_s"], f"expected {p['expected']}"] for p in record.get("probes", [])]
    return []


#: What each per-call field of the engine means (samples.jsonl ``calls``; docs/runs.md).
CALL_FIELDS = ("t_s", "frames", "transport", "prompt_version", "raw", "parsed", "latency_s", "cached", "retries")


def _engine_calls(replay_report: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The replay engine's per-call samples (``samples`` of the report ``write_replay`` returns), by record id;
    unknown fields are kept, missing ones stay absent."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in replay_report.get("samples") or []:
        if not isinstance(row, dict):
            continue
        rid = row.get("record_id") or next((row[f] for f in _RECORD_IDS if row.get(f) is not None), None)
        if rid is not None:
            out.setdefault(str(rid), []).append(row)
    return out


def _frames_sent(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    frames = [f for c in calls for f in (c.get("frames") or []) if isinstance(f, dict)]
    return frames or None


def _latency(calls: Sequence[Mapping[str, Any]]) -> float | None:
    values = [c["latency_s"] for c in calls if isinstance(c.get("latency_s"), (int, float))]
    return sum(values) if values else None


def _samples(benchmark: str, records: Mapping[str, Sequence[Mapping[str, Any]]],
             predictions: Mapping[str, Mapping[str, Any]], report: Mapping[str, Any],
             units: Mapping[str, list[tuple[str, float, float]]], prompts: Mapping[str, Sequence[str]],
             calls: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for kind, rows in records.items():
        for record in rows:
            rid = str(record[ID_FIELDS[kind]])
            prediction = predictions.get(rid)
            raw, parsed, answered, parseable = _parse(kind, record, prediction, benchmark)
            mine = calls.get(rid, [])
            out.append({
                "id": rid, "kind": kind, "benchmark": benchmark, "video_id": record.get("video_id"),
                "task": _task(record), "ask_time_s": record.get("query_time_s"),
                "prompt_versions": list(prompts.get(kind, [])), "raw_answer": raw, "parsed_answer": parsed,
                "answered": answered, "parseable": parseable, "score": report.get("per_item", {}).get(rid),
                "units": [list(u) for u in units.get(rid, [])],
                "gold_windows": _gold_windows(kind, record),
                "spoke": [[r.get("t_s"), r.get("text")] for r in (prediction or {}).get(
                    "responses", (prediction or {}).get("events", [])) if r.get("role", "assistant") == "assistant"]
                if kind not in ASKED_ONCE else ([[prediction.get("t_s"), prediction.get("response")]]
                                                if prediction else []),
                "frames": _frames_sent(mine), "latency_s": _latency(mine), "calls": mine,
            })
    return out


# ------------------------------------------------------------------------------------------ versions

def prompt_versions(protocol: Any, strategies: Iterable[str], kind_modes: Mapping[str, str]) -> list[str]:
    """``name@sha256[:12]`` of every prompt file the protocol declares and the strategies name."""
    import importlib
    import re

    from streamcue.loaders.strategies import STRATEGIES
    from streamcue.loaders.strategies.base import ANSWER_FORMS
    from streamcue.prompts import load_prompt

    names = list(getattr(protocol, "prompts", ()))
    pattern = re.compile(r"^[a-z0-9_]+\.v\d+$")
    for strategy in strategies:
        cls = STRATEGIES[strategy]
        module = importlib.import_module(cls.__module__)
        for holder in (cls, module):
            names += [v for k, v in vars(holder).items() if k.isupper() and isinstance(v, str) and pattern.match(v)]
    if "ask" in kind_modes.values():
        names += [prompt for prompt, _ in ANSWER_FORMS.values()]
    out = []
    for name in dict.fromkeys(names):
        try:
            out.append(load_prompt("streamcue.loaders", name).version)
        except (OSError, ValueError, InputError, ConfigError):
            out.append(name)
    return out


# ------------------------------------------------------------------------------------------ the run folder

def _schema(name: str) -> dict[str, Any]:
    from importlib import resources

    return json.loads(resources.files("streamcue.schemas").joinpath(f"{name}.schema.json").read_text("utf-8"))


def check_results(results: Mapping[str, Any], file: Path | str | None = None) -> None:
    """``results`` against ``schemas/results.schema.json``; one line naming the field when it is not."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(_schema("results")).iter_errors(results),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in errors[0].absolute_path)
        raise InputError(f"not a streamcue results.json: {errors[0].message}", file=file, field=where)


def read_results(folder: Path) -> dict[str, Any]:
    """A run folder's ``results.json``, checked against its schema."""
    from streamcue.io import read_json

    path = folder / "results.json" if folder.is_dir() else folder
    if not path.is_file():
        raise InputError("not a run folder (no results.json; streamcue run writes one)", file=folder)
    results = read_json(path)
    check_results(results, path)
    return results


def read_samples(folder: Path) -> list[dict[str, Any]]:
    """A run folder's ``samples.jsonl``, tolerant: a line keeps whatever fields it has (later engines add some)."""
    from streamcue.io import iter_jsonl

    path = folder / "samples.jsonl"
    if not path.is_file():
        raise InputError("no samples.jsonl in the run folder", file=folder)
    rows = []
    for line, row in iter_jsonl(path):
        if not isinstance(row.get("id"), str):
            raise InputError("a sample needs its record id", file=path, line=line, field="id")
        row.setdefault("units", [])
        row.setdefault("calls", [])
        rows.append(row)
    return rows


def write_played(out: Path, selection: Selection) -> Path:
    """``out/played/<kind>.jsonl`` (+ ``videos.jsonl``): the records the run plays and is scored on; the run's
    own stale files from an earlier selection are removed."""
    from streamcue.io import write_jsonl

    played = out / "played"
    keep = {f"{kind}.jsonl" for kind in selection.records} | ({"videos.jsonl"} if selection.videos else set())
    if played.is_dir():
        for stale in played.glob("*.jsonl"):
            if stale.name not in keep:
                stale.unlink()
    for kind, rows in selection.records.items():
        write_jsonl(played / f"{kind}.jsonl", rows)
    if selection.videos:
        write_jsonl(played / "videos.jsonl", selection.videos)
    return played


def finish_run(out: Path, *, benchmark: str, selection: Selection, predictions: Sequence[Mapping[str, Any]],
               replay_report: Mapping[str, Any], run: Mapping[str, Any],
               bootstrap: BootstrapSettings = BootstrapSettings(),
               prompts: Mapping[str, Sequence[str]] | None = None, protocol: Mapping[str, Any] | None = None,
               evaluate_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Score the played records, write ``played/``, ``samples.jsonl``, ``results.json`` and ``report.html``.

    ``run`` gives what the caller knows of the run: ``model``, ``endpoint``, ``generation``, ``frames``,
    ``started_at``, ``command``. Returns results.json's content. Nothing is written under a final name
    before scoring succeeded.
    """
    from streamcue.io import write_json, write_jsonl
    from streamcue.metrics import evaluate
    from streamcue.metrics.page import render_page
    from streamcue.registry import get_benchmark
    from streamcue.version import __version__

    info = get_benchmark(benchmark)
    played = write_played(out, selection)
    pred_path = out / "predictions.jsonl"
    calls = _engine_calls(replay_report)
    kept = _keep_unparseable(predictions, calls)
    if kept or not pred_path.is_file():
        write_jsonl(pred_path, predictions)
    gt = played if len(selection.records) > 1 else played / f"{next(iter(selection.records))}.jsonl"
    report = evaluate(info.metric, gt, pred_path, **dict(evaluate_options or {}))
    gt_by_id = {str(r[ID_FIELDS[k]]): r for k, rows in selection.records.items() for r in rows}
    units = units_of(info.metric, report, gt_by_id)
    video_units = [(str(gt_by_id[rid].get("video_id", rid)), key, num, den)
                   for rid, items in units.items() if rid in gt_by_id for key, num, den in items]
    table, exact = tables(info.metric, video_units, bootstrap)
    by_id = {}
    for p in predictions:
        rid = next((p[f] for f in ("question_id", "item_id", "qa_id", "task_id", "video_id") if f in p), None)
        if rid is not None:
            by_id[str(rid)] = p
    samples = _samples(benchmark, selection.records, by_id, report, units, prompts or {}, calls)
    unparseable = [s["id"] for s in samples if s["answered"] and not s["parseable"]]
    endpoint = replay_report.get("endpoint") or {}
    results = {
        "results_version": RESULTS_VERSION,
        "benchmark": {"name": benchmark, "title": info.title, "records": str(run.get("records", "")),
                      "files_sha256": selection.sha256,
                      "version": hashlib.sha256(json.dumps(selection.sha256, sort_keys=True).encode()).hexdigest()[:16],
                      "split": run.get("split")},
        "protocol": dict(protocol or {"name": benchmark}),
        "model": {"name": run.get("model"), "endpoint": run.get("endpoint")},
        "generation": dict(run.get("generation") or {}),
        "frames": dict(run.get("frames") or {}),
        "prompts": {kind: list(v) for kind, v in (prompts or {}).items()},
        "metric": {"name": info.metric, "config_version": report["config_version"], "config": report["config"]},
        "streamcue_version": __version__,
        "started_at": run.get("started_at") or now(), "finished_at": now(),
        "command": run.get("command"),
        "n_benchmark": selection.n_benchmark, "n_played": selection.n_played,
        "videos": [{"video_id": v.get("video_id"), "duration_s": v.get("duration_s")} for v in selection.videos],
        "counts": {"asked": len(samples), "answered": sum(s["answered"] for s in samples),
                   "unparseable": len(unparseable),
                   "endpoint_calls": int(endpoint.get("endpoint_calls", 0)),
                   "cache_hits": int(endpoint.get("cache_hits", 0))},
        "unparseable": unparseable,
        "bootstrap": bootstrap.to_dict(exact),
        "tables": table,
        "report": report,
        "replay": {key: value for key, value in replay_report.items() if key != "samples"},  # samples: samples.jsonl
    }
    check_results(results)
    write_jsonl(out / "samples.jsonl", samples)
    write_json(out / "results.json", results)
    from streamcue.io import atomic_write

    with atomic_write(out / "report.html") as fh:
        fh.write(render_page(results, samples))
    return results
