"""A recorded video's task plan and step marks -> LiveCook-style ``guidance`` with mistake feedback.

The plan is the maintainer's: the ``activity`` and ``steps`` (``step_id``, ``description``, in the intended
order) of a task of the tasks file (schema ``recorded_task``; at most one task per video has steps). Step
marks say when each step was performed and which mistakes were made in it; they come from one of

* **annotators**: a marks file (JSONL, one line per video, written by ``streamcue.annotation.convert``'s
  :func:`~streamcue.annotation.convert.step_marks` from Label Studio results of the ``task_steps`` labeling
  config): ``{"video_id", "steps": [{"step_id", "start_s", "end_s", "mistakes": [{"category", "text"}]}]}``,
  a step left out was not performed;
* **an LLM draft**: the model reads the plan and the video's caption spans (of the same task) and answers,
  for every plan step, whether it was performed, its start and end second and its mistakes; the draft is
  ``unverified`` until annotators check it (``streamcue annotate``, kind ``guidance``).

Then LiveCook's rules (:mod:`streamcue.dataset_builders.guidance_plan`) group the performed steps and time
the events: instruction, success or one mistake event per mistake at the step's end (``time_source =
"step_end_default"``: marks carry no mistake moment), finish. Steps not performed are listed in
``provenance.excluded``. LLM answers go through the build's client and its cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.guidance_plan import Action, Mistake, group_actions, schedule_events
from streamcue.dataset_builders.recorded_qa import caption_spans
from streamcue.errors import InputError
from streamcue.fields import field, items, mapping, seconds, text
from streamcue.io import iter_jsonl
from streamcue.llm import LLMClient, Request
from streamcue.prompts import load_prompt
from streamcue.schemas import SCHEMA_VERSION
from streamcue.text import lower_first

__all__ = ["MISTAKE_CATEGORIES", "DRAFT_PROMPT", "read_marks", "draft_marks", "guidance_record"]

BUILDER = "streamcue.recorded"
DRAFT_PROMPT = ("streamcue.dataset_builders", "recorded_steps.v1")
#: Mistake categories a mark may name (those of the guidance schema).
MISTAKE_CATEGORIES = ("technique", "preparation", "measurement", "timing", "temperature", "order", "missing_step",
                      "other")
SLACK_S = 1.0  # a step may end up to this past the video's duration (1 fps sampling rounds it up)


def _sentence(value: str) -> str:
    value = " ".join(value.split())
    value = value[:1].upper() + value[1:]
    return value if value.endswith((".", "!", "?")) else value + "."


def read_marks(path: Path, plans: dict[str, dict[str, Any]], durations: dict[str, float]) -> dict[str, list]:
    """The step marks of a marks file per video id, checked against the plans (known video and step ids,
    each step once, 0 <= start <= end <= duration, known mistake categories)."""
    marks: dict[str, list] = {}
    for line, rec in iter_jsonl(path):
        vid = field(rec, "video_id", path, f"line {line}")
        if vid not in plans:
            raise InputError("no task of the tasks file has a plan (steps) for this video", file=path, line=line,
                             record=str(vid), field="video_id")
        if vid in marks:
            raise InputError("video marked twice", file=path, line=line, record=vid, field="video_id")
        known = {s["step_id"] for s in plans[vid]["steps"]}
        steps = []
        for i, step in enumerate(items(rec, "steps", path, vid)):
            where = f"steps[{i}]."
            mapping(step, path, vid, f"steps[{i}]")
            sid = field(step, "step_id", path, vid, where)
            if sid not in known or any(s[0] == sid for s in steps):
                raise InputError(f"step id {sid!r} is not in the plan or marked twice", file=path, line=line,
                                 record=vid, field=where + "step_id")
            start, end = seconds(step, "start_s", path, vid, where), seconds(step, "end_s", path, vid, where)
            if not 0 <= start <= end <= durations[vid] + SLACK_S:
                raise InputError(f"expected 0 <= start_s <= end_s <= the video's {durations[vid]} s, got "
                                 f"{start}, {end}", file=path, line=line, record=vid, field=where + "end_s")
            mistakes = []
            for j, m in enumerate(items(step, "mistakes", path, vid, where, optional=True)):
                at = f"{where}mistakes[{j}]."
                category = text(m, "category", path, vid, at)
                if category not in MISTAKE_CATEGORIES:
                    raise InputError(f"unknown mistake category {category!r}; known: {', '.join(MISTAKE_CATEGORIES)}",
                                     file=path, line=line, record=vid, field=at + "category")
                mistakes.append(Mistake(category, _sentence(text(m, "text", path, vid, at))))
            steps.append((sid, start, min(end, durations[vid]), tuple(mistakes)))
        marks[vid] = steps
    return marks


def _draft_schema(n: int, duration_s: float) -> dict[str, Any]:
    second = {"type": "number", "minimum": 0, "maximum": duration_s}
    mistake = {"type": "object", "required": ["category", "text"], "additionalProperties": False,
               "properties": {"category": {"type": "string", "enum": list(MISTAKE_CATEGORIES)},
                              "text": {"type": "string", "minLength": 1}}}
    step = {"type": "object", "required": ["performed", "start_s", "end_s", "mistakes"], "additionalProperties": False,
            "properties": {"performed": {"type": "boolean"}, "start_s": second, "end_s": second,
                           "mistakes": {"type": "array", "items": mistake}}}
    return {"type": "object", "required": ["steps"], "additionalProperties": False,
            "properties": {"steps": {"type": "array", "minItems": n, "maxItems": n, "items": step}}}


def draft_marks(task: dict[str, Any], captions: Sequence[dict[str, Any]], duration_s: float,
                llm: LLMClient) -> tuple[list, str]:
    """The LLM's step marks for one video from its plan and caption spans, and the prompt's hash. A step
    whose end comes before its start is read as not performed."""
    prompt = load_prompt(*DRAFT_PROMPT)
    plan = "\n".join(f"[{i}] {s['description']}" for i, s in enumerate(task["steps"]))
    spans = "\n".join(f"{c.start_s:.0f}-{c.end_s:.0f} s: {c.text}" for c in caption_spans(captions, duration_s))
    content = prompt.render(activity=task.get("activity") or task["category"], duration=f"{duration_s:g}",
                            steps=plan, captions=spans)
    answer = llm.complete(Request(({"role": "user", "content": content},),
                                  _draft_schema(len(task["steps"]), duration_s), prompt.version, "recorded_steps"))
    marks = [(s["step_id"], a["start_s"], a["end_s"],
              tuple(Mistake(m["category"], _sentence(m["text"])) for m in a["mistakes"]))
             for s, a in zip(task["steps"], answer["steps"]) if a["performed"] and a["start_s"] <= a["end_s"]]
    return marks, prompt.sha256[:16]


def _instruction(descriptions: Sequence[str]) -> str:
    texts = [_sentence(d) for d in descriptions]
    return texts[0] + "".join(f" While doing that, {lower_first(t)}" for t in texts[1:])


def guidance_record(task: dict[str, Any], video_id: str, marks: list, *, source: str, stage: str,
                    model: str | None = None, prompt_hash: str | None = None) -> dict[str, Any] | None:
    """The guidance record of one video from its plan and marks (None when no step was performed)."""
    description = {s["step_id"]: s["description"] for s in task["steps"]}
    position = {s["step_id"]: i for i, s in enumerate(task["steps"])}
    actions = [Action(sid, start, end, description[sid],
                      f"Well done, that step is complete: {lower_first(_sentence(description[sid]))}", mistakes,
                      position[sid]) for sid, start, end, mistakes in marks]
    if not actions:
        return None
    groups = group_actions(actions)
    plan = [{"index": i, "text": _instruction([a.instruction for a in group]),
             "step_ids": list(dict.fromkeys(a.step_id for a in group)),
             "actions": [{"step_id": a.step_id, "description": a.instruction, "start_s": a.start_s,
                          "end_s": a.end_s} for a in group]} for i, group in enumerate(groups)]
    done = {a.step_id for a in actions}
    return {
        "schema_version": SCHEMA_VERSION, "video_id": video_id,
        "activity": task.get("activity") or task["category"], "activity_id": None,
        "plan": plan, "events": schedule_events(groups, [step["text"] for step in plan]),
        "provenance": {"builder": BUILDER, "version": "1.0", "source": source, "stage": stage, "model": model,
                       "prompt_hash": prompt_hash, "counted_mistakes": list(MISTAKE_CATEGORIES),
                       "notes": [f"plan of task {task['task_id']}; mistakes at their step's end"],
                       "excluded": [{"step_id": s["step_id"], "description": s["description"],
                                     "reason": "step not performed"} for s in task["steps"]
                                    if s["step_id"] not in done]},
        "verification": {"status": "unverified", "annotators": [], "checks": 0},
    }
