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

import dataclasses
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.metrics.bootstrap import BootstrapSettings, Unit, cluster_bootstrap, tables
from streamcue.schemas.discovery import ID_FIELDS
from streamcue.schemas.kinds import TABLE, names, ordered

__all__ = ["STREAMING_KINDS", "RESULTS_VERSION", "Selection", "finish_run", "video_units", "write_played",
           "read_samples", "read_run", "check_run", "sample_units", "write_page", "prompt_versions", "now",
           "efficiency", "EFFICIENCY", "throughput", "content_sha256", "spoke"]

RESULTS_VERSION = "1.0"
#: Kinds whose page shows a timeline per video: gold answer windows against when the model spoke.
STREAMING_KINDS = ("interval_qa", "guidance", "dense_caption", "active_item")
#: The id fields of the played kinds, in the order a prediction's id is looked up (the ``ids`` order of
#: :data:`streamcue.schemas.kinds.TABLE`).
_RECORD_IDS = names("record ids", lambda: tuple(dict.fromkeys(TABLE[k].id_field for k in ordered("ids"))))


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


def content_sha256(by_kind: Mapping[str, Sequence[Mapping[str, Any]]],
                   videos: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """results.json ``benchmark.files_sha256``: ``{file name: SHA-256}`` of the records of each kind and of the
    videos, by content, whatever the source (a build folder, a record file, a release, a Hub dataset): the SHA-256 of
    the records' canonical JSON lines (sorted keys, no spaces), the lines sorted, so a release and the build it came
    from are one benchmark version and an edited record is another."""
    from streamcue.schemas.discovery import FILE_NAMES, VIDEOS_FILE

    def digest(rows: Sequence[Mapping[str, Any]]) -> str:
        lines = sorted(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")) for row in rows)
        return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()

    out = {FILE_NAMES[kind]: digest(rows) for kind, rows in by_kind.items()}
    return {**out, VIDEOS_FILE: digest(videos)} if videos else out


# ------------------------------------------------------------------------------------------ units and statistics

def _task(record: Mapping[str, Any]) -> str:
    return str(record.get("task") or record.get("task_type") or "all")


def video_units(units: Mapping[str, Sequence[tuple[str, float, float]]],
                records: Mapping[str, Mapping[str, Any]]) -> list[Unit]:
    """The bootstrap's units ``(video, key, num, den)`` of the records' units (a record without a video is its own)."""
    return [(str(records[rid].get("video_id") or rid), key, num, den)
            for rid, items in units.items() if rid in records for key, num, den in items]


# ------------------------------------------------------------------------------------------ samples

#: Kinds whose prediction is one answer (``response``) to one question (a row's ``answer``).
ASKED_ONCE = names("ASKED_ONCE", lambda: tuple(k for k, row in TABLE.items() if row.answer))


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
           read_choice: Callable[[Any, int], Any] | None = None) -> tuple[Any, Any, bool, bool]:
    """``(raw answer, parsed answer, answered, parseable)`` of one record's prediction; a choice is read by the
    metric's ``read_choice`` (:class:`~streamcue.metrics.registry.Metric`; default ``choice_letter``)."""
    from streamcue.metrics.choice_rules import choice_letter, stated_number, stated_yes_no

    if prediction is None:
        return None, None, False, False
    answer = TABLE[kind].answer if kind in TABLE else None
    if answer == "text":
        raw = prediction.get("response")
        answered = isinstance(raw, str) and bool(raw.strip())
        return raw, raw if answered else None, answered, answered
    if answer == "choice":
        raw = prediction.get("response")
        answered = raw not in (None, "", [])
        n = len(record.get("options", []))
        parsed = (read_choice or choice_letter)(raw, n) if answered else None
        return raw, parsed, answered, parsed in [chr(65 + i) for i in range(n)]
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


def spoke(kind: str, prediction: Mapping[str, Any] | None) -> list[list[Any]]:
    """``[[t_s, text]]``: when the model spoke (the page's timeline). A polled dialogue (StreamingBench proactive:
    its first turn is the poll, asked again and again) has the model's replies to the poll left out: a "No" to "is
    it the right time?" is no speech, the answer after a yes is."""
    if not prediction:
        return []
    if kind in ASKED_ONCE:
        return [[prediction.get("t_s"), prediction.get("response")]]
    turns = prediction.get("responses", prediction.get("events", []))
    poll = next((t.get("text") for t in turns[:1] if t.get("role") == "user"), None)
    out, asked = [], None
    for turn in turns:
        if turn.get("role", "assistant") != "assistant":
            asked = turn.get("text")
        elif poll is None or asked != poll:
            out.append([turn.get("t_s"), turn.get("text")])
    return out


def _samples(benchmark: str, read_choice: Callable[[Any, int], Any] | None,
             records: Mapping[str, Sequence[Mapping[str, Any]]],
             predictions: Mapping[str, Mapping[str, Any]], report: Mapping[str, Any],
             units: Mapping[str, list[tuple[str, float, float]]], prompts: Mapping[str, Sequence[str]],
             calls: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for kind, rows in records.items():
        for record in rows:
            rid = str(record[ID_FIELDS[kind]])
            prediction = predictions.get(rid)
            raw, parsed, answered, parseable = _parse(kind, record, prediction, read_choice)
            mine = calls.get(rid, [])
            broken = sum(1 for c in mine if c.get("problem"))  # the engine could not read these answers
            out.append({
                "id": rid, "kind": kind, "benchmark": benchmark, "video_id": record.get("video_id"),
                "task": _task(record), "ask_time_s": record.get("query_time_s"),
                "prompt_versions": list(prompts.get(kind, [])), "raw_answer": raw, "parsed_answer": parsed,
                "answered": answered, "parseable": parseable and not broken, "unparseable_calls": broken,
                "score": report.get("per_item", {}).get(rid),
                "units": [list(u) for u in units.get(rid, [])],
                "gold_windows": _gold_windows(kind, record),
                "spoke": spoke(kind, prediction),
                "frames": _frames_sent(mine), "latency_s": _latency(mine), "calls": mine,
            })
    return out


# ------------------------------------------------------------------------------------------ efficiency

#: What results.json ``efficiency`` holds (docs/runs.md), in this order.
EFFICIENCY = ("calls", "endpoint_calls", "latency_mean_s", "latency_p50_s", "latency_p90_s", "latency_max_s",
              "ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_max_s", "tokens_in", "tokens_out",
              "tokens_in_per_call", "tokens_out_per_call", "frames_sent", "bytes_sent", "media_s", "wall_s",
              "real_time_factor", "real_time_basis", "concurrency")


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    return float(value) if ok else None


def _spread(values: Sequence[float], name: str) -> dict[str, float | None]:
    """``{name}_mean_s``, ``_p50_s``, ``_p90_s`` (nearest rank: the ``ceil(q n)``-th smallest) and ``_max_s``."""
    ordered = sorted(values)

    def rank(q: float) -> float | None:
        return ordered[max(math.ceil(q * len(ordered)), 1) - 1] if ordered else None
    return {f"{name}_mean_s": sum(ordered) / len(ordered) if ordered else None, f"{name}_p50_s": rank(0.5),
            f"{name}_p90_s": rank(0.9), f"{name}_max_s": ordered[-1] if ordered else None}


def _total(calls: Sequence[Mapping[str, Any]], field: str) -> int | None:
    """The sum of a per-call count (whole numbers only), None when no call records one."""
    values = [int(v) for v in (_number(c.get(field)) for c in calls) if v is not None and v.is_integer()]
    return sum(values) if values else None


def _seconds(start: Any, end: Any) -> float | None:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


def efficiency(samples: Sequence[Mapping[str, Any]], replay_report: Mapping[str, Any],
               videos: Sequence[Mapping[str, Any]], started_at: str | None, finished_at: str | None
               ) -> dict[str, Any]:
    """What the run cost, from the engine's per-call records (samples.jsonl ``calls``) and the replay report; a
    figure the engine did not record is None.

    Latency and time to first token (``ttft_s``, streamed responses only) are over the calls made, not those
    answered from the cache: mean, median and 90th percentile by nearest rank, maximum. Tokens in and out are the
    calls' ``prompt_tokens`` and ``completion_tokens`` (else the replay report's endpoint totals), per call over
    ``endpoint_calls``; ``frames_sent`` and ``bytes_sent`` are what went to the server. ``media_s`` is the video
    time played: each video's ``duration_s``, else the last time a call was made on it. ``wall_s`` is the replay's
    wall-clock time (the report's ``wall_s``, else started_at to finished_at, scoring included). The real-time
    factor counts only what the endpoint answered: ``wall_s / answered_s``, ``answered_s`` the video time of the
    videos none of whose calls came from the cache (a cached answer takes no model time); None when there is none
    (every video had a cached answer). It is a throughput at ``concurrency`` calls in flight; below 1, the run kept
    up with the video. ``real_time_basis`` says what it counted (:func:`_real_time`).
    """
    calls = [c for s in samples for c in s.get("calls") or [] if isinstance(c, Mapping)]
    made = [c for c in calls if c.get("cached") is not True]
    endpoint = replay_report.get("endpoint") if isinstance(replay_report.get("endpoint"), Mapping) else {}
    n_made = _number(endpoint.get("endpoint_calls"))
    n_made = len(made) if n_made is None else n_made
    tokens = {side: _total(made, field) if _total(made, field) is not None else _total([endpoint], field)
              for side, field in (("in", "prompt_tokens"), ("out", "completion_tokens"))}
    duration = {str(v.get("video_id")): _number(v.get("duration_s")) for v in videos}
    last: dict[str, float] = {}
    for s in samples:
        times = [t for t in (_number(c.get("t_s")) for c in s.get("calls") or [] if isinstance(c, Mapping))
                 if t is not None]
        video = str(s.get("video_id"))
        last[video] = max([last.get(video, 0.0), *times])
    media = sum(duration.get(v) or t for v, t in last.items()) or None
    wall = _number(replay_report.get("wall_s"))
    wall = wall if wall is not None else _seconds(started_at, finished_at)
    cached = {str(s.get("video_id")) for s in samples for c in s.get("calls") or []
              if isinstance(c, Mapping) and c.get("cached") is True}
    answered = {v: duration.get(v) or t for v, t in last.items() if v not in cached}
    concurrency = int(_number(replay_report.get("concurrency")) or 1)
    out: dict[str, Any] = {
        "calls": len(calls), "endpoint_calls": int(n_made),
        **_spread([v for v in (_number(c.get("latency_s")) for c in made) if v is not None], "latency"),
        **_spread([v for v in (_number(c.get("ttft_s")) for c in made) if v is not None], "ttft"),
        "tokens_in": tokens["in"], "tokens_out": tokens["out"],
        "tokens_in_per_call": tokens["in"] / n_made if tokens["in"] is not None and n_made else None,
        "tokens_out_per_call": tokens["out"] / n_made if tokens["out"] is not None and n_made else None,
        "frames_sent": _total(made, "frames_sent"), "bytes_sent": _total(made, "bytes_sent"),
        "media_s": media, "wall_s": wall, **_real_time(wall, answered, len(last), concurrency)}
    return {key: out[key] for key in EFFICIENCY}


def throughput(samples: Sequence[Mapping[str, Any]], replay_report: Mapping[str, Any],
               efficiency_: Mapping[str, Any]) -> dict[str, Any]:
    """results.json ``throughput``: what the run got through per hour of its wall time. ``videos`` played,
    ``video_hours`` (``media_s`` / 3600), ``wall_hours`` (``wall_s`` / 3600), ``calls`` (made, not from the cache),
    ``calls_per_hour`` = calls / wall_hours and ``video_hours_per_hour`` = video_hours / wall_hours (None without a
    wall time); ``endpoints``: per endpoint (as the samples name it, without credentials) its ``calls``, its
    ``calls_per_hour`` over the same wall time and, for a pool, its ``failures`` and ``drains`` (the replay
    report's ``pool``)."""
    wall, media = _number(efficiency_.get("wall_s")), _number(efficiency_.get("media_s"))
    hours = wall / 3600 if wall else None
    made = [c for s in samples for c in s.get("calls") or [] if isinstance(c, Mapping) and c.get("cached") is not True]
    per: dict[str, int] = {}
    for call in made:
        if isinstance(call.get("endpoint"), str):
            per[call["endpoint"]] = per.get(call["endpoint"], 0) + 1
    pool = replay_report.get("pool") if isinstance(replay_report.get("pool"), Mapping) else {}
    endpoints = {name: {"calls": per.get(name, 0),
                        "calls_per_hour": per.get(name, 0) / hours if hours else None,
                        **{k: v for k, v in (pool.get(name) or {}).items() if k in ("failures", "drains")}}
                 for name in dict.fromkeys([*pool, *per])}
    n = int(_number(efficiency_.get("endpoint_calls")) or 0)
    return {"videos": len({s.get("video_id") for s in samples}), "video_hours": media / 3600 if media else 0.0,
            "wall_hours": hours, "calls": n, "calls_per_hour": n / hours if hours else None,
            "video_hours_per_hour": media / 3600 / hours if media and hours else None, "endpoints": endpoints}


def _real_time(wall: float | None, answered: Mapping[str, float], n_videos: int, concurrency: int) -> dict[str, Any]:
    """``real_time_factor`` (``wall / sum(answered)``, None without an answered video or a wall time),
    ``real_time_basis`` (what it counted, in words) and ``concurrency``."""
    seconds = sum(answered.values())
    factor = wall / seconds if wall is not None and seconds else None
    if factor is None:
        basis = (f"not measured: every one of the {n_videos} videos had answers from the cache, which take no model "
                 "time" if n_videos and not answered else "not measured: no wall time or no video time")
    else:
        basis = (f"wall time over the {seconds:g} s of the {len(answered)} of {n_videos} videos answered wholly by the "
                 f"endpoint (none from the cache), at concurrency {concurrency}: a throughput")
    return {"real_time_factor": factor, "real_time_basis": basis, "concurrency": concurrency}


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


def read_run(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run folder's ``results.json`` (read and checked by :func:`~streamcue.metrics.bench_readers.read_results`:
    sealed, its schema's, its predictions and played files those it scored) and ``samples.jsonl``, checked against
    each other (:func:`check_run`): what ``compare`` and :func:`write_page` use, so neither shows a figure the run's
    own files do not give."""
    from streamcue.metrics.bench_readers import read_results

    folder = Path(folder)
    results = read_results(folder)
    samples = read_samples(folder)
    check_run(folder, results, samples)
    return results, samples


def write_page(folder: str | Path) -> Path:
    """(Re)write ``report.html`` of the run folder ``folder`` from its files, once :func:`read_run` found them in
    agreement: a folder whose samples were edited is refused, one line naming file, record and field."""
    from streamcue.io import atomic_write
    from streamcue.metrics.page import render_page

    folder = Path(folder)
    results, samples = read_run(folder)
    with atomic_write(folder / "report.html") as fh:
        fh.write(render_page(results, samples))
    return folder / "report.html"


def sample_units(samples: Sequence[Mapping[str, Any]], keep: set[str] | None = None) -> list[Unit]:
    """The bootstrap's units ``(video, key, num, den)`` of ``samples`` (those whose id is in ``keep``, if given)."""
    return [(str(s.get("video_id") or s["id"]), str(u[0]), float(u[1]), float(u[2]))
            for s in samples if keep is None or s["id"] in keep for u in s.get("units", [])]


def _bad_unit(unit: Any) -> bool:
    if not isinstance(unit, list) or len(unit) != 3 or not isinstance(unit[0], str):
        return True
    num, den = unit[1], unit[2]
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in (num, den)):
        return True
    return not 0 <= num <= den


def _figure(value: Any) -> str:
    return "none" if value is None else f"{value:.6g}"


def check_run(folder: Path, results: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> None:
    """Refuse, with one line, a run whose samples repeat an id, hold a unit out of range, or disagree with its
    own results.json: a sample's score is not its ``report.per_item`` entry, its units are not the metric's units
    of that entry, or a table row recomputed from the units differs (estimate, ``n`` or ``videos``)."""
    from streamcue.metrics.registry import get_metric

    path = folder / "samples.jsonl"
    repeated = [rid for rid, n in Counter(s["id"] for s in samples).items() if n > 1]
    if repeated:
        raise InputError(f"{len(repeated)} record ids appear more than once, e.g. {repeated[0]!r}: each record is "
                         "one sample", file=path, record=repeated[0], field="id")
    metric = get_metric(results["metric"]["name"])
    per_item = (results.get("report") or {}).get("per_item") or {}
    for s in samples:
        _check_sample(path, s, per_item, metric)
    _check_videos(folder, samples)
    units = sample_units(samples)
    rows = metric.rows_of(list(dict.fromkeys(u[1] for u in units)), results["metric"].get("config") or {})
    for table, mine in zip(("task", "group"), rows):
        point, _ = cluster_bootstrap(units, {name: stat for name, (_, stat) in mine.items()}, BootstrapSettings(1))
        saved = results["tables"].get(table, {})
        for name, (keys, _) in mine.items():
            counted = [u for u in units if u[1] in keys]
            again = (point[name]["estimate"], len(counted), len({u[0] for u in counted}))
            row = saved.get(name)
            if row is None or not _same(again, (row.get("estimate"), row.get("n"), row.get("videos"))):
                raise InputError(f"recomputed from samples.jsonl, this row is {_figure(again[0])} over {again[1]} "
                                 f"units, results.json says {_figure((row or {}).get('estimate'))} over "
                                 f"{(row or {}).get('n')}: the run's files disagree", file=folder / "results.json",
                                 record=name, field=f"tables.{table}")
        extra = set(saved) - set(mine)
        if extra:
            raise InputError("a row that samples.jsonl does not give", file=folder / "results.json",
                             record=sorted(extra)[0], field=f"tables.{table}")


def _check_videos(folder: Path, samples: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a sample whose ``video_id`` is not its played record's (``played/<kind>.jsonl``, sealed by
    results.json): the bootstrap pairs runs by video, so a renamed video left every figure of ``compare`` None."""
    from streamcue.io import iter_jsonl

    videos: dict[str, Any] = {}
    for file in sorted((folder / "played").glob("*.jsonl")):
        id_field = ID_FIELDS.get(file.stem)
        if file.stem != "video" and id_field is not None:
            videos.update((str(r.get(id_field)), r.get("video_id")) for _, r in iter_jsonl(file))
    for s in samples:
        if videos and videos.get(s["id"], s.get("video_id")) != s.get("video_id"):
            raise InputError(f"video {s.get('video_id')!r} is not its record's ({videos[s['id']]!r} in played/): "
                             "the run's files disagree", file=folder / "samples.jsonl", record=s["id"],
                             field="video_id")


def _check_sample(path: Path, sample: Mapping[str, Any], per_item: Mapping[str, Any], metric: Any) -> None:
    """One sample against results.json ``report.per_item``: its units in range, its score and units the run's own."""
    rid = sample["id"]
    bad = [u for u in sample.get("units", []) if _bad_unit(u)] if isinstance(sample.get("units"), list) else []
    if bad or not isinstance(sample.get("units"), list):
        raise InputError(f"unit {bad[0] if bad else sample.get('units')!r} is not [key, num, den] with "
                         "0 <= num <= den", file=path, record=rid, field="units")
    if rid in per_item and sample.get("score") != per_item[rid]:
        raise InputError("the sample's score is not the run's own (results.json report.per_item)", file=path,
                         record=rid, field="score")
    own = metric.units(per_item[rid], {"task": sample.get("task")}) if rid in per_item else []
    if len(own) != len(sample["units"]) or any(
            str(u[0]) != str(o[0]) or not all(math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
                                              for a, b in zip(u[1:], o[1:]))
            for u, o in zip(sample["units"], own)):
        raise InputError(f"the sample's units are not those of its score in results.json report.per_item "
                         f"({[list(o) for o in own]})", file=path, record=rid, field="units")


def _same(x: tuple[Any, ...], y: tuple[Any, ...]) -> bool:
    (ex, *rest_x), (ey, *rest_y) = x, y
    if (ex is None) != (ey is None) or rest_x != rest_y:
        return False
    return ex is None or math.isclose(ex, ey, rel_tol=1e-9, abs_tol=1e-12)


def _with_durations(selection: Selection, read: Mapping[str, float]) -> Selection:
    """The selection with the lengths the replay read from the video files where the video records gave none."""
    if not read:
        return selection
    videos = [{**v, "duration_s": read[v["video_id"]]} if v.get("duration_s") is None and v.get("video_id") in read
              else v for v in selection.videos]
    return dataclasses.replace(selection, videos=videos)


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


def _model(run: Mapping[str, Any], replay_report: Mapping[str, Any]) -> dict[str, Any]:
    """results.json ``model``: the name, the ``--model-revision`` given, and ``entry_sha256``, the SHA-256 of the
    server's entry for the model (its canonical JSON; the entry itself is ``replay.llm.model_card``): two checkpoints
    served under one name differ there. None where no model was called. ``endpoint`` is null: a run names the model
    entry, not where it was served (one endpoint or a pool; each endpoint's share is in ``throughput.endpoints``)."""
    llm = replay_report.get("llm") if isinstance(replay_report.get("llm"), Mapping) else {}
    card = llm.get("model_card")
    entry = hashlib.sha256(json.dumps(card, sort_keys=True, separators=(",", ":")).encode()).hexdigest() \
        if card is not None else None
    return {"name": run.get("model"), "endpoint": None, "revision": llm.get("model_revision"),
            "entry_sha256": entry}


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
    from streamcue.metrics import evaluate, get_metric
    from streamcue.metrics.bench_readers import check_results, seal_results
    from streamcue.metrics.page import render_page
    from streamcue.registry import get_benchmark
    from streamcue.version import __version__

    info = get_benchmark(benchmark)
    selection = _with_durations(selection, replay_report.get("durations_read") or {})
    played = write_played(out, selection)
    pred_path = out / "predictions.jsonl"
    calls = _engine_calls(replay_report)
    kept = _keep_unparseable(predictions, calls)
    if kept or not pred_path.is_file():
        write_jsonl(pred_path, predictions)
    gt = played if len(selection.records) > 1 else played / f"{next(iter(selection.records))}.jsonl"
    report = evaluate(info.metric, gt, pred_path, **dict(evaluate_options or {}))
    gt_by_id = {str(r[ID_FIELDS[k]]): r for k, rows in selection.records.items() for r in rows}
    metric = get_metric(info.metric)
    units = metric.units_of(report, gt_by_id)
    run_units = video_units(units, gt_by_id)
    table, exact = tables(run_units, metric.rows_of(list(dict.fromkeys(u[1] for u in run_units)), report["config"]),
                          bootstrap)
    by_id = {}
    for p in predictions:
        rid = next((p[f] for f in ("question_id", "item_id", "qa_id", "task_id", "video_id") if f in p), None)
        if rid is not None:
            by_id[str(rid)] = p
    samples = _samples(benchmark, metric.read_choice, selection.records, by_id, report, units, prompts or {}, calls)
    # one count everywhere (issue 46): a record whose answer the engine or the metric could not read, answered or
    # left silent by it (a format-broken model is not a silent one); the warning, the summary and samples agree
    unparseable = [s["id"] for s in samples if not s["parseable"] and (s["answered"] or s["unparseable_calls"])]
    endpoint = replay_report.get("endpoint") or {}
    results = {
        "results_version": RESULTS_VERSION,
        "benchmark": {"name": benchmark, "title": info.title, "records": str(run.get("records", "")),
                      "files_sha256": selection.sha256,
                      "version": hashlib.sha256(json.dumps(selection.sha256, sort_keys=True).encode()).hexdigest()[:16],
                      "split": run.get("split")},
        "protocol": dict(protocol or {"name": benchmark}),
        "model": _model(run, replay_report),
        "generation": dict(run.get("generation") or {}),
        "frames": {**dict(run.get("frames") or {}),
                   "without_pixels": (replay_report.get("frames") or {}).get("without_pixels", 0)},
        "prompts": {kind: list(v) for kind, v in (prompts or {}).items()},
        "metric": {"name": info.metric, "config_version": report["config_version"], "config": report["config"]},
        "streamcue_version": __version__,
        "predictions_sha256": hashlib.sha256(pred_path.read_bytes()).hexdigest(),  # what was scored: checked on reading
        "played_sha256": {file.name: hashlib.sha256(file.read_bytes()).hexdigest()
                          for file in sorted(played.glob("*.jsonl"))},  # the ground truth it was scored on: likewise
        "started_at": run.get("started_at") or now(), "finished_at": now(),
        "command": run.get("command"),
        "n_benchmark": selection.n_benchmark, "n_played": selection.n_played,
        "videos": [{"video_id": v.get("video_id"), "duration_s": v.get("duration_s")} for v in selection.videos],
        "counts": {"asked": len(samples), "answered": sum(s["answered"] for s in samples),
                   "unparseable": len(unparseable),
                   "endpoint_calls": int(endpoint.get("endpoint_calls", 0)),
                   "cache_hits": int(endpoint.get("cache_hits", 0)),
                   "earlier_run_hits": int(endpoint.get("earlier_run_hits", 0))},
        "unparseable": unparseable,
        "efficiency": {},
        "throughput": {},
        "bootstrap": bootstrap.to_dict(exact),
        "tables": table,
        "report": report,
        "replay": {key: value for key, value in replay_report.items() if key != "samples"},  # samples: samples.jsonl
    }
    results["efficiency"] = efficiency(samples, replay_report, selection.videos, results["started_at"],
                                       results["finished_at"])
    results["throughput"] = throughput(samples, replay_report, results["efficiency"])
    write_jsonl(out / "samples.jsonl", samples)
    results["samples_sha256"] = hashlib.sha256((out / "samples.jsonl").read_bytes()).hexdigest()  # the seal's too
    results = seal_results(results)
    if unparseable:
        from streamcue import console

        console.err.print(f"warning: {len(unparseable)} records with unparseable answers from {run.get('model')} "
                          "(each scored as recorded: its raw text, a no or silence; results.json unparseable, samples "
                          f"parseable false): {console.listed(unparseable)}", markup=False)
    check_results(results)
    write_json(out / "results.json", results)
    from streamcue.io import atomic_write

    with atomic_write(out / "report.html") as fh:
        fh.write(render_page(results, samples))
    return results
