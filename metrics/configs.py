"""Versioned, frozen metric parameters.

Every metric reads its parameters from a JSON file ``configs/<name>.v<N>.json`` and records
the file's content in every report. A change of behaviour is a new file with a new version,
never an edit of an old one (a test pins the content of each released version).

A config has one home: its class is in the metric's own module, which names it in its ``METRIC``
(``Metric(..., config_class="module:Class", config_latest=N)``, ``N`` the version used when none is asked
for), so adding a benchmark or a config version does not edit this file.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import fields
from functools import cache
from importlib import resources
from typing import Any

from streamcue.errors import ConfigError

__all__ = ["load_config", "latest_version", "check_int_at_least"]


def _class_and_latest(name: str) -> tuple[type, int]:
    """The config class of ``name`` and its latest version, as the metric that reads it declares them."""
    from streamcue.metrics.registry import METRICS

    for metric in METRICS.values():
        if metric.config == name and metric.config_class:
            module, _, cls = metric.config_class.partition(":")
            return getattr(importlib.import_module(module), cls), metric.config_latest
    known = sorted({m.config for m in METRICS.values() if m.config_class})
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
