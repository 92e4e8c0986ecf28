"""The run folder's page (``report.html``): one self-contained HTML file, inline SVG, no script, no network.

What it shows, top to bottom: how the run was made (benchmark and its version, protocol, model and
endpoint, frames, generation, versions, counts, ``n_played`` of ``n_benchmark``); the group and
per-task tables as horizontal bars with their 95 % bootstrap intervals (whiskers) and numbers; for
the streaming kinds (interval_qa, guidance, dense_caption, active_item), a timeline per video: one
lane per record, the gold answer windows (green bands; a probe time is a thin mark) against the
times the model spoke (blue ticks; hover for the text). At most :data:`MAX_VIDEOS` timelines; the page
says how many were left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["render_page", "MAX_VIDEOS"]

MAX_VIDEOS = 40
_STREAMING = ("interval_qa", "guidance", "dense_caption", "active_item")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1b1f24;
padding:0 16px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.sub{color:#57606a;margin:0 0 16px}
table.kv{border-collapse:collapse;font-size:13px} table.kv td{padding:3px 12px 3px 0;vertical-align:top}
table.kv td:first-child{color:#57606a;white-space:nowrap}
.counts{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.count{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:110px}
.count b{display:block;font-size:20px} .count span{color:#57606a;font-size:12px}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;font-size:13px}
svg text{font-family:inherit} .legend{font-size:12px;color:#57606a}
code{background:#f6f8fa;padding:1px 4px;border-radius:4px;font-size:12px}
"""


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _bars(rows: Mapping[str, Mapping[str, Any]], title: str) -> str:
    """Horizontal bars in [0, 1] with whiskers for the interval and the numbers beside."""
    rows = {k: v for k, v in rows.items()}
    if not rows:
        return ""
    label_w, bar_w, row_h, num_w = 230, 520, 24, 300
    width, height = label_w + bar_w + num_w, row_h * len(rows) + 34
    parts = [f'<svg role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * bar_w
        parts.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 24}" stroke="#eaeef2"/>'
                     f'<text x="{x:.1f}" y="{height - 8}" font-size="11" text-anchor="middle" fill="#57606a">'
                     f'{tick:g}</text>')
    for i, (name, row) in enumerate(rows.items()):
        y = 6 + i * row_h
        est, low, high = row.get("estimate"), row.get("low"), row.get("high")
        parts.append(f'<text x="{label_w - 8}" y="{y + 14}" font-size="12" text-anchor="end">'
                     f'{escape(name[:34])}</text>')
        if est is not None:
            w = max(0.0, min(1.0, float(est))) * bar_w
            parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" fill="#54aeff" '
                         f'rx="2"><title>{escape(name)}: {_fmt(est)}</title></rect>')
        if low is not None and high is not None:
            x1, x2 = label_w + float(low) * bar_w, label_w + float(high) * bar_w
            mid = y + row_h / 2 - 1
            parts.append(f'<line x1="{x1:.1f}" y1="{mid:.1f}" x2="{x2:.1f}" y2="{mid:.1f}" stroke="#1b1f24" '
                         f'stroke-width="1.5"/><line x1="{x1:.1f}" y1="{mid - 5:.1f}" x2="{x1:.1f}" '
                         f'y2="{mid + 5:.1f}" stroke="#1b1f24" stroke-width="1.5"/><line x1="{x2:.1f}" '
                         f'y1="{mid - 5:.1f}" x2="{x2:.1f}" y2="{mid + 5:.1f}" stroke="#1b1f24" stroke-width="1.5"/>')
        text = (f"{_fmt(est)}  [{_fmt(low)}, {_fmt(high)}]  n={row.get('n', '?')}, "
                f"{row.get('videos', '?')} videos{' (few)' if row.get('few_videos') else ''}")
        parts.append(f'<text x="{label_w + bar_w + 10}" y="{y + 14}" font-size="12" fill="#1b1f24">'
                     f'{escape(text)}</text>')
    parts.append("</svg>")
    return f"<h2>{escape(title)}</h2>" + "".join(parts)


def _timeline(video: str, samples: Sequence[Mapping[str, Any]], duration: float | None) -> str:
    """One video: a lane per record, gold windows as bands, the model's speech as ticks."""
    times = [t for s in samples for w in s.get("gold_windows", []) for t in w[:2] if isinstance(t, (int, float))]
    times += [p[0] for s in samples for p in s.get("spoke", []) if p and isinstance(p[0], (int, float))]
    times += [s["ask_time_s"] for s in samples if isinstance(s.get("ask_time_s"), (int, float))]
    end = max([duration or 0.0, *times, 1.0]) * 1.02
    label_w, plot_w, lane_h = 170, 820, 22
    width, height = label_w + plot_w + 10, lane_h * len(samples) + 30

    def x(t: float) -> float:
        return label_w + max(0.0, min(t, end)) / end * plot_w

    parts = [f'<svg role="img" aria-label="timeline of video {escape(video)}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    step = _step(end)
    t = 0.0
    while t <= end:
        parts.append(f'<line x1="{x(t):.1f}" y1="2" x2="{x(t):.1f}" y2="{height - 22}" stroke="#eaeef2"/>'
                     f'<text x="{x(t):.1f}" y="{height - 8}" font-size="10" text-anchor="middle" fill="#57606a">'
                     f'{t:g} s</text>')
        t += step
    for i, sample in enumerate(samples):
        y = 4 + i * lane_h
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" font-size="11" text-anchor="end">'
                     f'{escape(str(sample.get("id"))[:26])}<title>{escape(str(sample.get("id")))} '
                     f'({escape(str(sample.get("task")))})</title></text>'
                     f'<line x1="{label_w}" y1="{y + 9}" x2="{label_w + plot_w}" y2="{y + 9}" stroke="#d0d7de"/>')
        for start, stop, text in (w[:3] for w in sample.get("gold_windows", []) if len(w) >= 3):
            w_px = max(x(stop) - x(start), 2.0)
            parts.append(f'<rect x="{x(start):.1f}" y="{y + 2}" width="{w_px:.1f}" height="14" fill="#2da44e" '
                         f'fill-opacity="0.35" stroke="#1a7f37" stroke-width="0.8"><title>gold {start:g}-{stop:g} s: '
                         f'{escape(str(text))[:200]}</title></rect>')
        ask = sample.get("ask_time_s")
        if isinstance(ask, (int, float)):
            parts.append(f'<path d="M{x(ask):.1f},{y + 1} l-4,-0 l4,6 l4,-6 z" fill="#8250df">'
                         f'<title>asked at {ask:g} s</title></path>')
        for said in sample.get("spoke", []):
            if not said or not isinstance(said[0], (int, float)):
                continue
            parts.append(f'<line x1="{x(said[0]):.1f}" y1="{y}" x2="{x(said[0]):.1f}" y2="{y + 18}" stroke="#0969da" '
                         f'stroke-width="2"><title>model at {said[0]:g} s: '
                         f'{escape(str(said[1] if len(said) > 1 else ""))[:200]}</title></line>')
    parts.append("</svg>")
    return f"<h3 style='font-size:14px;margin:14px 0 4px'>video {escape(video)}</h3>" + "".join(parts)


def _step(end: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600):
        if end / step <= 12:
            return float(step)
    return 7200.0


def _flat(value: Any) -> Any:
    """``{a: x, b: y}`` as ``a: x, b: y``."""
    return ", ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, Mapping) else value


def _kv(rows: Sequence[tuple[str, Any]]) -> str:
    return "<table class='kv'>" + "".join(f"<tr><td>{escape(k)}</td><td>{escape(_fmt(v))}</td></tr>"
                                          for k, v in rows) + "</table>"


def _efficiency(eff: Mapping[str, Any]) -> str:
    """What the run cost (results.json ``efficiency``); a figure the engine did not record reads n/a."""
    if not eff:
        return ""

    def spread(name: str) -> str:
        return ", ".join(f"{q} {_fmt(eff.get(f'{name}_{q}_s'))} s" for q in ("mean", "p50", "p90", "max"))

    rtf = eff.get("real_time_factor")
    return "<h2>Efficiency</h2>" + _kv([
        ("calls", f"{_fmt(eff.get('calls'))} ({_fmt(eff.get('endpoint_calls'))} made, the rest from the cache)"),
        ("latency per call", spread("latency")), ("time to first token", spread("ttft")),
        ("tokens in / out", f"{_fmt(eff.get('tokens_in'), 0)} / {_fmt(eff.get('tokens_out'), 0)} "
                            f"({_fmt(eff.get('tokens_in_per_call'), 1)} / {_fmt(eff.get('tokens_out_per_call'), 1)} "
                            "per call)"),
        ("frames / bytes sent", f"{_fmt(eff.get('frames_sent'), 0)} / {_fmt(eff.get('bytes_sent'), 0)}"),
        ("real-time factor", f"{_fmt(rtf, 2)} (wall {_fmt(eff.get('wall_s'), 1)} s over {_fmt(eff.get('media_s'), 1)} "
                             f"s of video{'; below 1: kept up with the video' if rtf is not None else ''})")])


def render_page(results: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> str:
    """The page of a run: ``results`` (results.json) and ``samples`` (samples.jsonl)."""
    bench, model, counts = results["benchmark"], results["model"], results["counts"]
    boot = results["bootstrap"]
    partial = results["n_played"] < results["n_benchmark"]
    title = f"{bench.get('title') or bench['name']}: {model.get('name') or 'model'}"
    head = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head><body>")
    body = [f"<h1>{escape(title)}</h1>",
            f"<p class='sub'>streamcue run of {escape(bench['name'])} (version {escape(str(bench.get('version')))}), "
            f"metric {escape(results['metric']['name'])} ({escape(results['metric']['config_version'])}), "
            f"{escape(results['started_at'])} to {escape(results['finished_at'])}</p>"]
    if partial:
        body.append(f"<p class='warn'>Partial run: scored over the {results['n_played']} records played of the "
                    f"{results['n_benchmark']} in the benchmark{' split' if bench.get('split') else ''}; "
                    "figures are not comparable with full-benchmark figures.</p>")
    cards = [("played", f"{results['n_played']} / {results['n_benchmark']}"), ("asked", counts["asked"]),
             ("answered", counts["answered"]), ("unparseable", counts["unparseable"]),
             ("endpoint calls", counts.get("endpoint_calls", 0)), ("cache hits", counts.get("cache_hits", 0))]
    body.append("<div class='counts'>" + "".join(f"<div class='count'><b>{escape(str(v))}</b><span>{escape(k)}"
                                                  f"</span></div>" for k, v in cards) + "</div>")
    body.append(_bars(results["tables"].get("group", {}), "Groups"))
    body.append(_bars(results["tables"].get("task", {}), "Per task"))
    how = "exact enumeration" if boot["exact"] else f"{boot['resamples']} resamples"
    few = [name for table in ("group", "task") for name, row in results["tables"].get(table, {}).items()
           if row.get("few_videos")]
    if few:
        body.append(f"<p class='warn'>{len(few)} rows rest on fewer than {boot.get('min_videos', 5)} videos (marked "
                    f"few): their intervals are too narrow to trust, or a point: {escape(', '.join(few[:30]))}"
                    f"{' ...' if len(few) > 30 else ''}.</p>")
    body.append(f"<p class='legend'>Bars: the estimate; whiskers: the {boot['level']:.0%} interval of a cluster "
                f"bootstrap over videos ({how}, seed {boot['seed']}). n: the units the row "
                "counts (one per record scored, unless the metric's page says otherwise).</p>")
    body.append(_efficiency(results.get("efficiency") or {}))
    protocol = results.get("protocol", {})
    frames, generation = results.get("frames", {}), results.get("generation", {})
    body.append("<h2>How this run was made</h2>")
    body.append(_kv([("benchmark records", bench.get("records")), ("split", bench.get("split") or "all"),
                     ("protocol", protocol.get("name")),
                     ("strategies", ", ".join(f"{k}: {v.get('strategy')}" for k, v in
                                              (protocol.get("kinds") or {}).items()) or None),
                     ("history", _flat(protocol.get("history"))), ("model", model.get("name")),
                     ("endpoint", model.get("endpoint")),
                     ("frames", ", ".join(f"{k}={v}" for k, v in frames.items() if v is not None) or None),
                     ("generation", ", ".join(f"{k}={v}" for k, v in generation.items() if v is not None) or None),
                     ("prompts", "; ".join(f"{k}: {', '.join(v)}" for k, v in results.get("prompts", {}).items())
                      or None),
                     ("metric config", results["metric"]["config_version"]),
                     ("streamcue", results["streamcue_version"]), ("command", results.get("command"))]))
    if results.get("unparseable"):
        shown = ", ".join(results["unparseable"][:30])
        body.append(f"<p class='warn'>{len(results['unparseable'])} unparseable answers (scored wrong): "
                    f"{escape(shown)}{' ...' if len(results['unparseable']) > 30 else ''}</p>")
    streaming = [s for s in samples if s.get("kind") in _STREAMING]
    if streaming:
        by_video: dict[str, list[Mapping[str, Any]]] = {}
        for s in streaming:
            by_video.setdefault(str(s.get("video_id")), []).append(s)
        durations = {v.get("video_id"): v.get("duration_s") for v in results.get("videos", [])}
        body.append("<h2>Timelines: gold answer windows and when the model spoke</h2>"
                    "<p class='legend'><span style='color:#1a7f37'>&#9632;</span> gold window (a thin mark: a "
                    "probe time) &nbsp; <span style='color:#0969da'>|</span> the model spoke &nbsp; "
                    "<span style='color:#8250df'>&#9660;</span> asked. Hover for the texts.</p>")
        for video, mine in list(by_video.items())[:MAX_VIDEOS]:
            body.append(_timeline(video, mine, durations.get(video)))
        if len(by_video) > MAX_VIDEOS:
            body.append(f"<p class='legend'>{len(by_video) - MAX_VIDEOS} more videos not drawn (samples.jsonl holds "
                        "every one).</p>")
    body.append("<p class='legend'>Written by streamcue (docs/runs.md); results.json and samples.jsonl hold every "
                "figure on this page.</p>")
    return head + "".join(body) + "</body></html>\n"
