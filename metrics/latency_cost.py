"""The latency cost of a model: the same run under the free clock and under a live or fixed one
(``streamcue compare RUN_FREE RUN_LIVE --clock``; docs/clock.md).

:func:`clock_order` takes two runs that differ in their clock (``protocol.clock``: ``free`` in one, ``live`` or
``fixed:S`` in the other) and in nothing else (the model included), and puts the free run first, so that every row's
paired difference (:func:`streamcue.metrics.compare.compare_runs`) is

    latency cost = score of the live (or fixed) run - score of the free run

with its paired interval over the videos both played: what answering late costs that model under the benchmark's
own timing rules (negative: it loses points). Any other difference, two free runs or two clocked runs is refused in
one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError

__all__ = ["clock_order", "clock_of"]

_SETTING = "protocol.clock"


def clock_of(results: Mapping[str, Any]) -> str:
    """A run's clock (``free`` for a run recorded before the clock existed)."""
    return str((results.get("protocol") or {}).get("clock") or "free")


def clock_order(a: Mapping[str, Any], b: Mapping[str, Any], run_a: Path, run_b: Path, differ: list[str],
                scored: str) -> tuple[bool, dict[str, Any]]:
    """Whether the two runs come clocked first (then the caller swaps them), and the ``clock`` entry of the result:
    ``{"measures", "free", "clocked", "scored", "latency"}`` (``latency``: each run's clock report, results.json
    ``replay.clock``). ``differ`` lists every setting on which the runs differ, the model included
    (``setting: A vs B``); ``scored`` says what figures are compared. A pair that does not measure a latency cost is
    a :class:`ConfigError` naming why."""
    other = [line for line in differ if not line.startswith(_SETTING + ":")]
    if other:
        raise ConfigError(f"--clock: runs {run_a} and {run_b} differ in {'; '.join(other)}: a latency cost is "
                          f"measured on two runs of one model that differ only in {_SETTING}, so the difference of "
                          "their scores is what the model's latency costs and nothing else")
    clock_a, clock_b = clock_of(a), clock_of(b)
    if (clock_a == "free") == (clock_b == "free"):
        said = "both runs are" if clock_a == "free" else "neither run is"
        raise ConfigError(f"--clock: {said} free ({run_a}: {clock_a}; {run_b}: {clock_b}): a latency cost is measured "
                          "between a run under the free clock and one under live or fixed:S")
    swap = clock_a != "free"
    free, clocked = (b, a) if swap else (a, b)
    entry = {"measures": "latency cost = score of the live (or fixed) run (B) - score of the free run (A)",
             "free": clock_of(free), "clocked": clock_of(clocked), "scored": scored,
             "latency": {"free": (free.get("replay") or {}).get("clock"),
                         "clocked": (clocked.get("replay") or {}).get("clock")}}
    return swap, entry
