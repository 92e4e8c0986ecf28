"""Paired comparison of two run folders: per task and group, ``B - A`` with a 95 % interval over shared videos.

The two runs must be of the same benchmark version (the SHA-256 of the record files they were
selected from), the same protocol (name, prompt versions, strategies, history) and the same
metric config; otherwise :func:`compare_runs` refuses with one line naming what differs, unless
``allow_different`` (and then the result lists the differences, ``differences``).

Only records both runs scored count (``samples.jsonl``: their ``units``), and only videos both
played are resampled, together (:func:`streamcue.metrics.bootstrap.paired_bootstrap`): the interval
of a difference is much narrower than the two runs' own intervals suggest, because a hard video is
hard for both models.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.metrics.registry import get_metric
from streamcue.metrics.bootstrap import BootstrapSettings, paired_tables
from streamcue.metrics.run import read_results, read_samples

__all__ = ["compare_runs", "differences"]


def _same_protocol(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Same protocol name, span and timing; for every kind both played, the same strategy and options, history
    and prompt versions (a partial run that played fewer kinds is still the same protocol)."""
    pa, pb = a.get("protocol") or {}, b.get("protocol") or {}
    if any(pa.get(key) != pb.get(key) for key in ("name", "span", "timing")):
        return False

    def of(value: Any, kind: str) -> Any:
        return value.get(kind) if isinstance(value, Mapping) else value

    for kind in set(pa.get("kinds") or {}) & set(pb.get("kinds") or {}):
        if pa["kinds"][kind] != pb["kinds"][kind] or of(pa.get("history"), kind) != of(pb.get("history"), kind):
            return False
        if (a.get("prompts") or {}).get(kind) != (b.get("prompts") or {}).get(kind):
            return False
    return True


def _protocol_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Which parts of the two runs' protocols differ, named with both values (short)."""
    pa, pb = a.get("protocol") or {}, b.get("protocol") or {}
    out = [f"{key} {pa.get(key)!r} vs {pb.get(key)!r}" for key in sorted(set(pa) | set(pb))
           if key != "kinds" and pa.get(key) != pb.get(key)]
    if pa.get("kinds") != pb.get("kinds"):
        out.append("strategies or their options")
    if (a.get("prompts") or {}) != (b.get("prompts") or {}):
        out.append("prompt versions")
    return [line if len(line) < 120 else line[:117] + "..." for line in out] or ["name, strategies or history"]


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What makes two runs' figures incomparable: benchmark, benchmark version, protocol, metric config."""
    out = []
    if a["benchmark"]["name"] != b["benchmark"]["name"]:
        out.append(f"benchmark {a['benchmark']['name']} vs {b['benchmark']['name']}")
    elif a["benchmark"].get("version") != b["benchmark"].get("version"):
        out.append(f"benchmark version {a['benchmark'].get('version')} vs {b['benchmark'].get('version')} "
                   "(different record files)")
    if not _same_protocol(a, b):
        out.append("protocol (" + ", ".join(_protocol_differences(a, b)) + ")")
    if a["metric"].get("config_version") != b["metric"].get("config_version") or \
            a["metric"].get("config") != b["metric"].get("config"):
        out.append(f"metric config {a['metric'].get('config_version')} vs {b['metric'].get('config_version')}")
    return out


def _units(samples: list[dict[str, Any]], keep: set[str]) -> list[tuple[str, str, float, float]]:
    return [(str(s.get("video_id") or s["id"]), str(u[0]), float(u[1]), float(u[2]))
            for s in samples if s["id"] in keep for u in s.get("units", []) if len(u) == 3]


def compare_runs(run_a: Path, run_b: Path, *, allow_different: bool = False,
                 settings: BootstrapSettings = BootstrapSettings()) -> dict[str, Any]:
    """``{"a", "b", "differences", "shared_records", "shared_videos", "tables": {"task", "group"}, "bootstrap"}``;
    each table row ``{estimate (B - A), low, high, se, a, b, n, videos}``."""
    a, b = read_results(run_a), read_results(run_b)
    if a["benchmark"]["name"] != b["benchmark"]["name"]:  # no record in common: nothing to pair, whatever is allowed
        raise ConfigError(f"runs {run_a} and {run_b} are of different benchmarks ({a['benchmark']['name']} vs "
                          f"{b['benchmark']['name']}): no record is in both")
    diff = differences(a, b)
    if diff and not allow_different:
        raise ConfigError(f"runs {run_a} and {run_b} differ in {'; '.join(diff)}: their figures are not comparable "
                          "(pass --allow-different to compare anyway)")
    samples_a, samples_b = read_samples(run_a), read_samples(run_b)
    shared = {s["id"] for s in samples_a} & {s["id"] for s in samples_b}
    units_a, units_b = _units(samples_a, shared), _units(samples_b, shared)
    keys = list(dict.fromkeys(u[1] for u in [*units_a, *units_b]))
    rows = get_metric(a["metric"]["name"]).rows_of(keys, a["metric"].get("config") or {})
    tables, exact = paired_tables(units_a, units_b, rows, settings)
    videos = {u[0] for u in units_a} & {u[0] for u in units_b}
    return {"a": {"folder": str(run_a), "model": a["model"], "benchmark": a["benchmark"]},
            "b": {"folder": str(run_b), "model": b["model"], "benchmark": b["benchmark"]},
            "differences": diff, "shared_records": len(shared), "shared_videos": len(videos),
            "bootstrap": settings.to_dict(exact), "tables": tables}
