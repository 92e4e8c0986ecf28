"""Stage 2, templates (no LLM): AR from narrations; NAR, TU and TRC from GoalStep steps.

* **AR** (action recognition): narrations are grouped by their verb phrase (``"C picks up a
  cup"`` -> ``pick up``); each verb seen ``ar_min_count``..``ar_max_count`` times gives one
  question asked at the video start, "Tell me every time I pick up something.", with one answer
  interval ``[t, t + ar_window_s]`` per narration point (overlaps merged), the answer being the
  narration in the second person.
* **NAR** (next action reasoning): for consecutive kept steps i, i+1 the question is asked at
  step i's start and the answer interval is step i+1's span with its description.
* **TU** (task understanding): one question per video asked at the first kept step, answered
  at every kept relevant step with that step's description (a multi-interval question).
* **TRC** (task relative context): consecutive essential steps cut into chains of
  ``trc_turns`` + 1; turn t of a chain is asked at step t's start and answered by step t+1: a
  contextual multi-turn group over one goal.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.dataset_builders.ego4d_sources import GoalVideo, Narration, Step
from streamcue.dataset_builders.estp_gen.records import evenly_spaced, make_qa
from streamcue.text import lower_first

__all__ = ["TemplateConfig", "verb_phrase", "second_person", "template_questions"]

_PARTICLES = {"up", "down", "out", "off", "on", "in", "into", "away", "back", "over", "around", "through"}
_ES_STEMS = ("sh", "ch", "ss", "x", "z", "o")


@dataclass(frozen=True)
class TemplateConfig:
    ar_window_s: float = 2.0
    ar_min_count: int = 2
    ar_max_count: int = 30
    ar_per_video: int = 5
    nar_per_video: int = 10
    trc_turns: int = 3


def _base_form(verb: str) -> str:
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith("es") and verb[:-2].endswith(_ES_STEMS):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith("ss"):
        return verb[:-1]
    return verb


def verb_phrase(narration: str) -> tuple[str, str] | None:
    """``"C picks up a cup"`` -> ``("pick up", "a cup")``; None when it is not about the wearer."""
    words = re.findall(r"[A-Za-z'-]+|\S", narration)
    if len(words) < 2 or words[0] != "C":
        return None
    verb = _base_form(words[1].lower())
    rest = words[2:]
    if rest and rest[0].lower() in _PARTICLES:
        verb += " " + rest[0].lower()
        rest = rest[1:]
    return verb, " ".join(rest)


def second_person(narration: str) -> str:
    """``"C picks up a cup"`` -> ``"You pick up a cup."``."""
    parsed = verb_phrase(narration)
    if parsed is None:
        return narration
    verb, rest = parsed
    text = " ".join(x for x in ("You", verb, rest.replace(" C ", " you ")) if x)
    return text if text.endswith(".") else text + "."


def _ar(video: GoalVideo, narrations: Sequence[Narration], config: TemplateConfig, source: str) -> list[dict[str, Any]]:
    by_verb: dict[str, list[Narration]] = defaultdict(list)
    for point in narrations:
        if video.start_s <= point.t_s <= video.end_s:
            parsed = verb_phrase(point.text)
            if parsed:
                by_verb[parsed[0]].append(point)
    eligible = [(v, pts) for v, pts in by_verb.items() if config.ar_min_count <= len(pts) <= config.ar_max_count]
    eligible.sort(key=lambda vp: (-len(vp[1]), vp[0]))
    records = []
    for k, (verb, points) in enumerate(eligible[: config.ar_per_video]):
        answers = [{"start_s": p.t_s, "end_s": min(p.t_s + config.ar_window_s, video.end_s),
                    "text": second_person(p.text)}
                   for p in points]
        query = max(video.start_s, min(p.t_s for p in points) - 5.0)
        records.append(make_qa(f"{video.video_uid}:AR:{k}", video.video_uid, "AR",
                               f"Tell me every time I {verb} something.",
                               query, answers, stage="template", source=source, verb=verb))
    return records


def _nar(video: GoalVideo, steps: Sequence[Step], config: TemplateConfig, source: str) -> list[dict[str, Any]]:
    pairs = evenly_spaced(list(zip(steps, steps[1:])), config.nar_per_video)
    return [make_qa(f"{video.video_uid}:NAR:{current.index}", video.video_uid, "NAR",
                    f"The step I'm on now: \"{current.description.rstrip('.')}\". "
                    "When I move on to the next step, tell me what it is.",
                    current.start_s, [{"start_s": nxt.start_s, "end_s": nxt.end_s, "text": nxt.description}],
                    stage="template", source=source)
            for current, nxt in pairs]


def _tu(video: GoalVideo, steps: Sequence[Step], source: str) -> list[dict[str, Any]]:
    relevant = [s for s in steps if s.relevance in ("essential", "optional")]
    if not relevant:
        return []
    goal = video.goal_description.rstrip(".")
    return [make_qa(f"{video.video_uid}:TU:0", video.video_uid, "TU",
                    f"My goal: {lower_first(goal)}. Each time I start a new step of it, tell me which step it is.",
                    relevant[0].start_s,
                    [{"start_s": s.start_s, "end_s": s.end_s, "text": s.description} for s in relevant],
                    stage="template", source=source)]


def _trc(video: GoalVideo, steps: Sequence[Step], config: TemplateConfig, source: str) -> list[dict[str, Any]]:
    essential = [s for s in steps if s.relevance == "essential"]
    chain = config.trc_turns + 1
    goal = lower_first(video.goal_description.rstrip("."))
    records = []
    for g, first in enumerate(range(0, len(essential) - chain + 1, chain)):
        group = essential[first:first + chain]
        group_id = f"{video.video_uid}:TRC:{g}"
        for turn, (current, nxt) in enumerate(zip(group, group[1:]), start=1):
            question = (f"I'm working toward this goal: {goal}. Keep track of my progress and tell me when I get to "
                        f"my next step."
                        if turn == 1 else "And after that one, tell me when I get to the following step.")
            records.append(make_qa(f"{group_id}:{turn}", video.video_uid, "TRC", question, current.start_s,
                                   [{"start_s": nxt.start_s, "end_s": nxt.end_s, "text": nxt.description}],
                                   stage="template", source=source, context=(group_id, turn)))
    return records


def template_questions(video: GoalVideo, steps: Sequence[Step], narrations: Sequence[Narration] | None,
                       config: TemplateConfig, source: str) -> list[dict[str, Any]]:
    """Every template question of one video, over its kept steps (stage 1's output)."""
    records = _ar(video, narrations, config, source) if narrations else []
    records += _nar(video, steps, config, source)
    records += _tu(video, steps, source)
    records += _trc(video, steps, config, source)
    return records
