"""The run folder's page (``report.html``): one self-contained HTML file, inline SVG, no script, no network.

What it shows, top to bottom: how the run was made (benchmark and its version, protocol, model and
endpoint, frames, generation, versions, counts, ``n_played`` of ``n_benchmark``); the group and
per-task tables as horizontal bars with their 95 % bootstrap intervals (whiskers) and numbers; for
the streaming kinds (interval_qa, guidance, dense_caption, active_item), a timeline per video: one
lane per record, the gold answer windows (green bands; a probe time is a thin mark) against the
times the model spoke (blue ticks; hover for the text). At most :data:`MAX_VIDEOS` timelines; the page
says how many were left out.

The markup is the Jinja2 template ``templates/report.html`` (autoescaped); this module computes what it
shows (the numbers, the SVG geometry).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render_page", "MAX_VIDEOS"]

MAX_VIDEOS = 40
_STREAMING = ("interval_qa", "guidance", "dense_caption", "active_item")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _bars(rows: Mapping[str, Mapping[str, Any]], title: str) -> dict[str, Any] | None:
    """Horizontal bars in [0, 1] with whiskers for the interval and the numbers beside."""
    if not rows:
        return None
    label_w, bar_w, row_h, num_w = 230, 520, 24, 300
    width, height = label_w + bar_w + num_w, row_h * len(rows) + 34
    ticks = [{"x": f"{label_w + tick * bar_w:.1f}", "label": f"{tick:g}"} for tick in (0, 0.25, 0.5, 0.75, 1.0)]
    out = []
    for i, (name, row) in enumerate(rows.items()):
        y = 6 + i * row_h
        est, low, high = row.get("estimate"), row.get("low"), row.get("high")
        whisker = None
        if low is not None and high is not None:
            mid = y + row_h / 2 - 1
            whisker = tuple(f"{v:.1f}" for v in (label_w + float(low) * bar_w, label_w + float(high) * bar_w, mid,
                                                 mid - 5, mid + 5))
        out.append({"name": name, "y": y, "est": _fmt(est), "whisker": whisker,
                    "bar": None if est is None else f"{max(0.0, min(1.0, float(est))) * bar_w:.1f}",
                    "text": f"{_fmt(est)}  [{_fmt(low)}, {_fmt(high)}]  n={row.get('n', '?')}, "
                            f"{row.get('videos', '?')} videos{' (few)' if row.get('few_videos') else ''}"})
    return {"title": title, "width": width, "height": height, "label_w": label_w, "bar_w": bar_w, "row_h": row_h,
            "ticks": ticks, "rows": out}


def _timeline(video: str, samples: Sequence[Mapping[str, Any]], duration: float | None) -> dict[str, Any]:
    """One video: a lane per record, gold windows as bands, the model's speech as ticks."""
    times = [t for s in samples for w in s.get("gold_windows", []) for t in w[:2] if isinstance(t, (int, float))]
    times += [p[0] for s in samples for p in s.get("spoke", []) if p and isinstance(p[0], (int, float))]
    times += [s["ask_time_s"] for s in samples if isinstance(s.get("ask_time_s"), (int, float))]
    end = max([duration or 0.0, *times, 1.0]) * 1.02
    label_w, plot_w, lane_h = 170, 820, 22

    def x(t: float) -> float:
        return label_w + max(0.0, min(t, end)) / end * plot_w

    step, ticks, t = _step(end), [], 0.0
    while t <= end:
        ticks.append({"x": f"{x(t):.1f}", "label": f"{t:g}"})
        t += step
    return {"video": video, "width": label_w + plot_w + 10, "height": lane_h * len(samples) + 30,
            "label_w": label_w, "plot_w": plot_w, "ticks": ticks,
            "lanes": [_lane(sample, 4 + i * lane_h, x) for i, sample in enumerate(samples)]}


def _lane(sample: Mapping[str, Any], y: int, x: Any) -> dict[str, Any]:
    """One record's lane of a timeline at height ``y``; ``x`` maps seconds to the plot."""
    gold = [{"x": f"{x(start):.1f}", "w": f"{max(x(stop) - x(start), 2.0):.1f}", "start": f"{start:g}",
             "stop": f"{stop:g}", "text": str(text)[:200]}
            for start, stop, text in (w[:3] for w in sample.get("gold_windows", []) if len(w) >= 3)]
    ask = sample.get("ask_time_s")
    spoke = [{"x": f"{x(said[0]):.1f}", "t": f"{said[0]:g}", "text": str(said[1] if len(said) > 1 else "")[:200]}
             for said in sample.get("spoke", []) if said and isinstance(said[0], (int, float))]
    return {"y": y, "id": str(sample.get("id")), "task": str(sample.get("task")), "gold": gold, "spoke": spoke,
            "ask": {"x": f"{x(ask):.1f}", "t": f"{ask:g}"} if isinstance(ask, (int, float)) else None,
            "calls": clocked_calls(sample, x)}


def clocked_calls(sample: Mapping[str, Any], x: Any) -> list[dict[str, Any]]:
    """The calls of a record played under a live or fixed clock (docs/clock.md): each from when it was asked
    (``issued_s``) to when its answer arrived (``arrived_s``); none under the free clock."""
    calls = [c for c in sample.get("calls") or [] if isinstance(c, Mapping)
             and isinstance(c.get("issued_s"), (int, float)) and isinstance(c.get("arrived_s"), (int, float))]
    return [{"x": f"{x(c['issued_s']):.1f}", "x2": f"{max(x(c['arrived_s']), x(c['issued_s']) + 1.0):.1f}",
             "issued": f"{c['issued_s']:g}", "arrived": f"{c['arrived_s']:g}"} for c in calls]


def _step(end: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600):
        if end / step <= 12:
            return float(step)
    return 7200.0


def _flat(value: Any) -> Any:
    """``{a: x, b: y}`` as ``a: x, b: y``."""
    return ", ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, Mapping) else value


def _efficiency(eff: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the run cost (results.json ``efficiency``); a figure the engine did not record reads n/a."""
    if not eff:
        return []

    def spread(name: str) -> str:
        return ", ".join(f"{q} {_fmt(eff.get(f'{name}_{q}_s'))} s" for q in ("mean", "p50", "p90", "max"))

    rtf = eff.get("real_time_factor")
    return [
        ("calls", f"{_fmt(eff.get('calls'))} ({_fmt(eff.get('endpoint_calls'))} made, the rest from the cache)"),
        ("latency per call", spread("latency")),
        ("time to first token", spread("ttft") if eff.get("ttft_p50_s") is not None
         else "n/a (no answer was streamed: a server that sends one JSON body, or every answer from the cache)"),
        ("tokens in / out", f"{_fmt(eff.get('tokens_in'), 0)} / {_fmt(eff.get('tokens_out'), 0)} "
                            f"({_fmt(eff.get('tokens_in_per_call'), 1)} / {_fmt(eff.get('tokens_out_per_call'), 1)} "
                            "per call)"),
        ("frames / bytes sent", f"{_fmt(eff.get('frames_sent'), 0)} / {_fmt(eff.get('bytes_sent'), 0)}"),
        ("real-time factor", f"{_fmt(rtf, 2)} ({eff.get('real_time_basis') or 'wall time over the video time'}"
                             f"{'; below 1: kept up with the video' if rtf is not None else ''})")]


def _protocol(protocol: Mapping[str, Any]) -> str | None:
    """The protocol's name and its settings (``span``, ``timing`` and the protocol's own options, e.g. a schedule)."""
    settings = [f"{k}={v}" for k, v in protocol.items()
                if k not in ("name", "history", "kinds", "prompt_versions") and isinstance(v, (str, int, float))
                and (k, v) != ("clock", "free")]  # the default clock goes unsaid, a live or fixed one is named
    return f"{protocol.get('name')} ({', '.join(settings)})" if settings else protocol.get("name")


def _made(results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The rows of "How this run was made"."""
    bench, model, protocol = results["benchmark"], results["model"], results.get("protocol", {})
    frames, generation = results.get("frames", {}), results.get("generation", {})
    rows = [("benchmark records", bench.get("records")), ("split", bench.get("split") or "all"),
            ("protocol", _protocol(protocol)),
            ("strategies", ", ".join(f"{k}: {v.get('strategy')}" for k, v in
                                     (protocol.get("kinds") or {}).items()) or None),
            ("history", _flat(protocol.get("history"))), ("model", model.get("name")),
            ("endpoint", model.get("endpoint")),
            ("frames", ", ".join(f"{k}={v}" for k, v in frames.items() if v is not None) or None),
            ("generation", ", ".join(f"{k}={v}" for k, v in generation.items() if v is not None) or None),
            ("prompts", "; ".join(f"{k}: {', '.join(v)}" for k, v in results.get("prompts", {}).items()) or None),
            ("metric config", results["metric"]["config_version"]),
            ("streamcue", results["streamcue_version"]), ("command", results.get("command")),
            *_clock_row(results)]
    return [(k, _fmt(v)) for k, v in rows]


def _clock_row(results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Under a live or fixed clock (docs/clock.md): the answers' latency and the moments skipped."""
    clock = (results.get("replay") or {}).get("clock") or {}
    if not clock.get("answers"):
        return []
    within = ", ".join(f"{share:.0%} within {w} s" for w, share in (clock.get("within_s") or {}).items())
    return [("clock", f"{clock['setting']}: {clock['answers']} answers, mean latency {clock['latency_mean_s']:.3g} s, "
                      f"{within}; {clock['skipped_moments']} moments skipped")]


def _timelines(results: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The timelines of the streaming samples' videos (at most :data:`MAX_VIDEOS`) and how many were left out."""
    by_video: dict[str, list[Mapping[str, Any]]] = {}
    for s in samples:
        if s.get("kind") in _STREAMING:
            by_video.setdefault(str(s.get("video_id")), []).append(s)
    durations = {v.get("video_id"): v.get("duration_s") for v in results.get("videos", [])}
    drawn = [_timeline(video, mine, durations.get(video)) for video, mine in list(by_video.items())[:MAX_VIDEOS]]
    return drawn, max(0, len(by_video) - MAX_VIDEOS)


def render_page(results: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> str:
    """The page of a run: ``results`` (results.json) and ``samples`` (samples.jsonl)."""
    import jinja2

    bench, model, counts, boot = results["benchmark"], results["model"], results["counts"], results["bootstrap"]
    tables = results["tables"]
    timelines, more = _timelines(results, samples)
    env = jinja2.Environment(loader=jinja2.PackageLoader("streamcue.metrics", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("report.html").render(
        title=f"{bench.get('title') or bench['name']}: {model.get('name') or 'model'}",
        bench={"name": bench["name"], "version": str(bench.get("version")), "split": bench.get("split")},
        metric=results["metric"], started_at=results["started_at"], finished_at=results["finished_at"],
        partial=results["n_played"] < results["n_benchmark"], n_played=results["n_played"],
        n_benchmark=results["n_benchmark"],
        cards=[("played", f"{results['n_played']} / {results['n_benchmark']}"), ("asked", counts["asked"]),
               ("answered", counts["answered"]), ("unparseable", counts["unparseable"]),
               ("endpoint calls", counts.get("endpoint_calls", 0)), ("cache hits", counts.get("cache_hits", 0)),
               ("of them from an earlier run", counts.get("earlier_run_hits", 0))],
        groups=_bars(tables.get("group", {}), "Groups"), tasks=_bars(tables.get("task", {}), "Per task"),
        few=[name for table in ("group", "task") for name, row in tables.get(table, {}).items()
             if row.get("few_videos")],
        min_videos=boot.get("min_videos", 5), level=f"{boot['level']:.0%}", seed=boot["seed"],
        how="exact enumeration" if boot["exact"] else f"{boot['resamples']} resamples",
        efficiency=_efficiency(results.get("efficiency") or {}), made=_made(results),
        unparseable=results.get("unparseable") or [], timelines=timelines, more_videos=more,
        clocked=_clocked(results)) + "\n"


def _clocked(results: Mapping[str, Any]) -> str | None:
    """The run's clock when it is not the free one (docs/clock.md), else None."""
    clock = (results.get("protocol") or {}).get("clock") or "free"
    return None if clock == "free" else str(clock)
