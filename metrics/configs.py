"""Versioned, frozen metric parameters.

Every metric reads its parameters from a JSON file ``configs/<name>.v<N>.json`` and records
the file's content in every report. A change of behaviour is a new file with a new version,
never an edit of an old one (a test pins the content of each released version).

The classes of the first metrics are here; a new metric may keep its config class in its own
module and name it in its ``METRIC`` (``Metric(..., config_class="module:Class", config_latest=1)``),
so that adding a benchmark does not edit this file.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from typing import Any

from streamcue.errors import ConfigError

__all__ = ["EstpConfig", "VsasConfig", "LiveCookConfig", "ReasoningConfig", "OvoBenchConfig", "StreamingBenchConfig",
           "load_config", "latest_version", "check_int_at_least", "LATEST"]

#: The version ``load_config`` (and ``streamcue evaluate``) uses when none is asked for. vsas and
#: livecook moved to v2 on 2026-11-23 (a change of default behaviour: see each config's changelog).
LATEST = {"estp_f1": 1, "vsas": 2, "livecook": 2, "reasoning": 1, "ovo_bench": 2, "streamingbench": 1}


@dataclass(frozen=True)
class EstpConfig:
    """ESTP-F1 parameters: a response at t matches [s, e] when s - anticipation_s <= t <= e + latency_s."""

    version: int = 1
    anticipation_s: float = 1.0
    latency_s: float = 2.0


@dataclass(frozen=True)
class VsasConfig:
    """VSAS consistency parameters (the paper leaves these open).

    ``common``: ``substring`` (longest common substring) or ``subsequence``.
    ``clip``: clip each term to [0, 1] (``term``, v1) or only the final mean (``total``, v2: the
    paper's reading, "per-task consistency scores are clipped between 0 and 1", VSAS-Bench Sec. 3.3).
    ``denominator``: ``n`` divides the N_t - 1 terms by N_t as written; ``pairs`` by N_t - 1.
    """

    version: int = 1
    common: str = "substring"
    clip: str = "term"
    denominator: str = "n"

    def __post_init__(self) -> None:
        for name, allowed in (("common", ("substring", "subsequence")), ("clip", ("term", "total")),
                              ("denominator", ("n", "pairs"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"vsas {name} must be one of {allowed}, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class LiveCookConfig:
    """LiveCook parameters: a prediction at t matches a ground-truth event at g when |t - g| <= window_s.

    ``success_matching``: ``any`` (v1: any predicted success in the window detects a completion)
    or ``plan_step`` (v2: a success counts only for its own plan step, one completion each).
    ``mistake_matching``: ``closest_first`` (v1, greedy) or ``maximum`` (v2, a maximum
    one-to-one matching, ties by smallest total offset). See :mod:`streamcue.metrics.livecook`.
    """

    version: int = 1
    window_s: float = 15.0
    rouge_use_stemmer: bool = True
    bertscore_num_layers: int = 4
    success_matching: str = "any"
    mistake_matching: str = "closest_first"

    def __post_init__(self) -> None:
        for name, allowed in (("success_matching", ("any", "plan_step")),
                              ("mistake_matching", ("closest_first", "maximum"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"livecook {name} must be one of {allowed}, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class ReasoningConfig:
    """MiRA reasoning-trace parameters: the judge rates each axis from 1 to ``scale_max``."""

    version: int = 1
    scale_max: int = 3

    def __post_init__(self) -> None:
        check_int_at_least(self.scale_max, 2, "reasoning scale_max")


@dataclass(frozen=True)
class OvoBenchConfig:
    """OVO-Bench scoring rules: ``official`` (the leaderboard's, quirks included), ``strict`` or ``lmms-eval``
    (official, but forward probes without a response are skipped); ``total``: ``groups`` or ``tasks``.

    See :mod:`streamcue.metrics.ovo_bench` and :mod:`streamcue.metrics.choice_rules`.
    """

    version: int = 1
    rules: str = "official"
    total: str = "groups"

    def __post_init__(self) -> None:
        if self.rules not in ("official", "strict", "lmms-eval"):
            raise ConfigError(f"ovo-bench rules must be official, strict or lmms-eval, got {self.rules!r}")
        if self.total not in ("groups", "tasks"):
            raise ConfigError(f"ovo-bench total must be groups (mean of the three group averages, commit c34093f) "
                              f"or tasks (mean of the task accuracies, commit 19677d2), got {self.total!r}")


@dataclass(frozen=True)
class StreamingBenchConfig:
    """StreamingBench scoring rules and the proactive time window (count.py: 2 s either side)."""

    version: int = 1
    rules: str = "official"
    time_window_s: float = 2.0

    def __post_init__(self) -> None:
        if self.rules not in ("official", "strict"):
            raise ConfigError(f"streamingbench rules must be official or strict, got {self.rules!r}")
        if isinstance(self.time_window_s, bool) or not isinstance(self.time_window_s, (int, float)) \
                or not 0 <= self.time_window_s < float("inf"):
            raise ConfigError(f"streamingbench time_window_s must be a number >= 0, got {self.time_window_s!r}")


_CLASSES = {"estp_f1": EstpConfig, "vsas": VsasConfig, "livecook": LiveCookConfig, "reasoning": ReasoningConfig,
            "ovo_bench": OvoBenchConfig, "streamingbench": StreamingBenchConfig}


def _class_and_latest(name: str) -> tuple[type, int]:
    """The config class of ``name`` and its latest version: from this module, else from the metric registry."""
    if name in _CLASSES:
        return _CLASSES[name], LATEST[name]
    from streamcue.metrics.registry import METRICS

    for metric in METRICS.values():
        if metric.config == name and metric.config_class:
            module, _, cls = metric.config_class.partition(":")
            return getattr(importlib.import_module(module), cls), metric.config_latest
    known = [*_CLASSES, *(m.config for m in METRICS.values() if m.config_class)]
    raise ConfigError(f"unknown metric config {name!r}; known: {', '.join(known)}")


def latest_version(name: str) -> int:
    """The version of config ``name`` that ``load_config`` (and ``streamcue evaluate``) uses by default."""
    return _class_and_latest(name)[1]


@cache
def _raw(name: str, version: int) -> dict[str, Any]:
    try:
        text = resources.files("streamcue.metrics").joinpath(f"configs/{name}.v{version}.json").read_text()
    except FileNotFoundError:
        raise ConfigError(f"no configuration {name}.v{version}; known: {name}.v1..v{latest_version(name)}") from None
    return json.loads(text)


def load_config(name: str, version: int | None = None, **overrides: Any) -> Any:
    """The frozen config ``name.v<version>`` (latest by default), with explicit overrides applied.

    Overridden parameters are visible in the report, which records the full config.
    """
    cls, latest = _class_and_latest(name)
    raw = _raw(name, version or latest)
    names = {f.name for f in fields(cls)}
    unknown = set(overrides) - names
    if unknown:
        raise ConfigError(f"unknown {name} parameters {sorted(unknown)}; known: {sorted(names - {'version'})}")
    values = {k: v for k, v in raw.items() if k in names}
    types = {f.name: f.type for f in fields(cls)}
    for key, value in overrides.items():
        if value is not None:
            values[key] = _checked(name, key, types[key], value)
    return cls(**values)


def check_int_at_least(value: Any, least: int, what: str) -> None:
    """Refuse a config field that is not an integer (a boolean is not one) of at least ``least``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ConfigError(f"{what} must be an integer >= {least}, got {value!r}")


def _checked(config: str, key: str, kind: Any, value: Any) -> Any:
    """An override of the field's type: numbers finite and >= 0 (every numeric parameter is a duration,
    a count or a layer), booleans true/false; the config class checks the rest."""
    if kind in ("float", "int", float, int):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        if kind in ("int", int):
            ok = ok and isinstance(value, int)
        if not ok:
            what = "an integer" if kind in ("int", int) else "a finite number"
            raise ConfigError(f"{config} parameter {key} must be {what} >= 0, got {value!r}")
    elif kind in ("bool", bool) and not isinstance(value, bool):
        raise ConfigError(f"{config} parameter {key} must be true or false, got {value!r}")
    return value
