"""Temporal jitter of instruction times for training exports (LiveCook App. D, K = 30 s).

Each instruction's time is shifted by ``u * K`` with ``u`` uniform in [-1, 1], drawn from a
generator seeded by ``(seed, record id, plan step)``: the same seed gives the same shifts
whatever the order or subset of records. The shifted time is clamped to
``[0, first feedback of that step - 1 ms]`` so that an instruction never follows its own feedback;
the instruction's ``time_source`` becomes ``jittered`` and ``provenance.jitter`` records
``{k_s, seed}``. Benchmark records are never jittered: this is for training data only.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any

from streamcue.errors import ConfigError
from streamcue.schemas.taxonomy import EVENT_TYPES

__all__ = ["jitter_guidance", "jitter_counterfactual", "shift"]

_RANK = {t: i for i, t in enumerate(EVENT_TYPES)}


def _ms(t_s: float) -> float:
    """Rounded down to the millisecond (never past the bound it was clamped to)."""
    return math.floor(t_s * 1000) / 1000


def shift(t_s: float, k_s: float, seed: int, *key: object) -> float:
    """``t_s`` plus a seeded uniform shift in [-k_s, k_s] (not clamped)."""
    if not k_s >= 0:
        raise ConfigError(f"jitter must be a number of seconds >= 0, got {k_s}")
    rng = random.Random(":".join(map(str, (seed, *key))))
    return t_s + rng.uniform(-k_s, k_s)


def jitter_guidance(record: dict[str, Any], k_s: float, seed: int) -> dict[str, Any]:
    """A copy of a guidance record with every instruction time jittered (module docstring)."""
    out = copy.deepcopy(record)
    if k_s == 0:
        return out
    feedback: dict[int, float] = {}
    for ev in out["events"]:
        if ev["type"] in ("success", "mistake"):
            feedback[ev["plan_index"]] = min(feedback.get(ev["plan_index"], ev["t_s"]), ev["t_s"])
    for ev in out["events"]:
        if ev["type"] == "instruction":
            # 1 ms before its own first feedback, so that a tie cannot sort the feedback first
            latest = max(0.0, feedback.get(ev["plan_index"], ev["t_s"]) - 0.001)
            ev["t_s"] = _ms(min(max(0.0, shift(ev["t_s"], k_s, seed, out["video_id"], ev["plan_index"])), latest))
            ev["time_source"] = "jittered"
    order = {id(ev): i for i, ev in enumerate(out["events"])}
    out["events"].sort(key=lambda ev: (ev["t_s"], _RANK[ev["type"]], order[id(ev)]))
    out["provenance"]["jitter"] = {"k_s": k_s, "seed": seed}
    return out


def jitter_counterfactual(record: dict[str, Any], k_s: float, seed: int) -> dict[str, Any]:
    """A copy of a counterfactual_mistake record with its instruction time jittered."""
    out = copy.deepcopy(record)
    if k_s == 0:
        return out
    t = shift(out["instruction"]["t_s"], k_s, seed, out["cf_id"])
    out["instruction"]["t_s"] = _ms(min(max(0.0, t), out["mistake"]["t_s"]))
    out["provenance"]["jitter"] = {"k_s": k_s, "seed": seed}
    return out
