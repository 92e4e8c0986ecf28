"""OVO-Bench accuracy (Li et al., 2025, Sec. 4.1; the official ``utils/OVOBenchScore.py``).

Each backward and real-time question scores 1 or 0 (:mod:`streamcue.metrics.choice_rules`);
each forward probe scores 1 or 0 and counts once: a forward task's accuracy is the mean over
all its probes pooled, not over items. A task's accuracy is the mean over its scored entries;
a group's (backward, realtime, forward) is the mean of its tasks' accuracies; ``total`` is the
mean of the group averages present (the figure the official scorer prints at the pinned commit:
the three shipped result folders reproduce it, while a mean over all task accuracies does not,
e.g. GPT 59.38 vs 62.19).

``rules=official`` scores what the official scorer would: every entry of an OVO results folder
(a duplicated id counts each time, as there), items without a prediction left out.
``rules=strict`` scores every ground-truth item exactly once (the first entry of a duplicated
id; a missing one is wrong) and extracts the chosen letter, count or yes/no before comparing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamcue.metrics.choice_rules import ovo_choice_correct, ovo_count_correct, ovo_yes_no_correct

__all__ = ["Entry", "score_entry", "aggregate", "GROUP_TASKS"]

GROUP_TASKS = {
    "backward": ("EPM", "ASI", "HLD"),
    "realtime": ("STU", "OJR", "ATR", "ACR", "OCR", "FPD"),
    "forward": ("REC", "SSR", "CRR"),
}


@dataclass
class Entry:
    """One scored answer: a multiple-choice response, or a forward item's responses per probe."""

    item_id: str
    task: str
    letter: str | None = None                  # multiple choice: the correct letter
    n_options: int = 4
    response: Any = None
    probes: list[tuple[str, Any]] = field(default_factory=list)  # forward: (expected, response)


def score_entry(entry: Entry, rules: str) -> list[int]:
    """1/0 per scored unit: one for a question, one per probe for a forward item."""
    if entry.task in GROUP_TASKS["forward"]:
        if entry.task == "REC":
            return [int(ovo_count_correct(r, expected, rules)) for expected, r in entry.probes]
        return [int(ovo_yes_no_correct(r, expected, rules)) for expected, r in entry.probes]
    return [int(ovo_choice_correct(entry.response, entry.letter or "", entry.n_options, rules))]


def aggregate(entries: Iterable[Entry], rules: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(overall, task groups, per_item)`` over the entries (fractions, not percentages)."""
    units: dict[str, list[int]] = {}
    per_item: dict[str, Any] = {}
    for entry in entries:
        scores = score_entry(entry, rules)
        units.setdefault(entry.task, []).extend(scores)
        per_item[entry.item_id] = {"task": entry.task, "correct": sum(scores), "scored": len(scores)}
    tasks = {task: {"n": len(s), "correct": sum(s), "accuracy": sum(s) / len(s)} for task, s in units.items() if s}
    overall: dict[str, Any] = {}
    for group, names in GROUP_TASKS.items():
        accs = [tasks[t]["accuracy"] for t in names if t in tasks]
        overall[group] = sum(accs) / len(accs) if accs else None
    present = [overall[g] for g in GROUP_TASKS if overall[g] is not None]
    overall["total"] = sum(present) / len(present) if present else None
    overall["tasks"] = len(tasks)
    ordered = {t: tasks[t] for names in GROUP_TASKS.values() for t in names if t in tasks}
    return overall, {"task": ordered}, per_item


def percent(value: float | None) -> float | None:
    """As the official scorer prints it: a percentage with two decimals."""
    return None if value is None else float(f"{100 * value:.2f}")


def official_figures(overall: Mapping[str, Any], tasks: Mapping[str, Any]) -> dict[str, float | None]:
    """The figures in the form of ``official_scores.json``: per task and group averages, percent."""
    out: dict[str, float | None] = {task: percent(v["accuracy"]) for task, v in tasks.items()}
    for group in GROUP_TASKS:
        if overall[group] is not None:
            out[f"{group}_avg"] = percent(overall[group])
    out["total_avg"] = percent(overall["total"])
    return out
