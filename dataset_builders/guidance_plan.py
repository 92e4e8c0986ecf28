"""LiveCook's rules that turn timed actions into a plan and a guidance event timeline.

Seed: LiveCook, Sec. 3 (built on CaptainCook4D). The rules, exactly as implemented here:

1. Actions are sorted by start time ascending, then end time descending (so that of two
   actions starting together the longer one comes first and can contain the other).
2. Grouping: walking that order, an action whose interval lies inside the *first* action of
   the current group (``first.start <= a.start and a.end <= first.end``) joins that group
   (parallel actions form one plan step); any other action starts a new group.
3. Instruction times: group 0 is instructed at its first action's start; group i > 0 when
   every action of group i-1 has ended, i.e. at ``max(end)`` over group i-1. (An action that
   overlaps the previous group without being contained is still instructed at that time;
   this is the paper's rule and is kept on purpose.)
4. Each action gets a success acknowledgement at its end time unless it has at least one
   counted mistake; each counted mistake gives one mistake event at the action's end time
   (``time_source = "step_end_default"``: the source has no mistake timestamps).
5. A finish event follows at the latest end time of all actions.

Events that share a timestamp are ordered mistake, success, instruction, finish, then by
action order, so feedback on the previous step comes before the next instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streamcue.schemas.taxonomy import EVENT_TYPES

FINISH_TEXT = "You have finished all the steps."

__all__ = ["Action", "Mistake", "group_actions", "schedule_events", "FINISH_TEXT"]


@dataclass(frozen=True)
class Mistake:
    category: str
    text: str


@dataclass(frozen=True)
class Action:
    """One performed action (a CaptainCook4D step occurrence)."""

    step_id: int | str
    start_s: float
    end_s: float
    instruction: str
    success_text: str
    mistakes: tuple[Mistake, ...] = field(default=())
    position: int = 0  # position in the source list, a stable tie-breaker


def sort_actions(actions: Sequence[Action]) -> list[Action]:
    """Start time ascending, end time descending, then source position."""
    return sorted(actions, key=lambda a: (a.start_s, -a.end_s, a.position))


def group_actions(actions: Sequence[Action]) -> list[list[Action]]:
    """Group actions into plan steps (rules 1-2 of the module docstring)."""
    groups: list[list[Action]] = []
    for action in sort_actions(actions):
        if groups:
            first = groups[-1][0]
            if first.start_s <= action.start_s and action.end_s <= first.end_s:
                groups[-1].append(action)
                continue
        groups.append([action])
    return groups


def instruction_times(groups: Sequence[Sequence[Action]]) -> list[float]:
    """When each group is instructed (rule 3)."""
    return [group[0].start_s if i == 0 else max(a.end_s for a in groups[i - 1]) for i, group in enumerate(groups)]


def _event(t: float, type_: str, text: str, step_ids: list, plan_index: int | None,
           category: str | None = None, time_source: str = "annotation") -> dict[str, Any]:
    return {"t_s": t, "type": type_, "text": text, "plan_index": plan_index, "step_ids": step_ids,
            "mistake_category": category, "time_source": time_source}


def schedule_events(groups: Sequence[Sequence[Action]], instruction_texts: Sequence[str]) -> list[dict[str, Any]]:
    """The guidance events of a grouped plan (rules 3-5), sorted."""
    keyed: list[tuple[tuple, dict[str, Any]]] = []
    rank = {t: i for i, t in enumerate(EVENT_TYPES)}
    order = 0
    for index, (group, t, text) in enumerate(zip(groups, instruction_times(groups), instruction_texts)):
        step_ids = _unique([a.step_id for a in group])
        keyed.append(((t, rank["instruction"], order), _event(t, "instruction", text, step_ids, index)))
        for action in group:
            order += 1
            if action.mistakes:
                for mistake in action.mistakes:
                    keyed.append(((action.end_s, rank["mistake"], order),
                                  _event(action.end_s, "mistake", mistake.text, [action.step_id], index,
                                         mistake.category, "step_end_default")))
            else:
                keyed.append(((action.end_s, rank["success"], order),
                              _event(action.end_s, "success", action.success_text, [action.step_id], index)))
    end = max(a.end_s for group in groups for a in group)
    keyed.append(((end, rank["finish"], order + 1), _event(end, "finish", FINISH_TEXT, [], None)))
    keyed.sort(key=lambda pair: pair[0])
    return [event for _, event in keyed]


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))
