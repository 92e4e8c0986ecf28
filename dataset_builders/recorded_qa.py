"""Recorded videos' dense captions -> proactive multi-interval questions (``interval_qa``, ESTP-Gen stages 3-5).

The caption stages of ESTP-Gen (:mod:`streamcue.dataset_builders.estp_gen`: one-to-one, retrieval
one-to-many, many-to-many) run unchanged on the per-second captions of a recorded video; the cleaning and
template stages need GoalStep's steps and narrations, which recordings do not have.

* Which captions: each video's first task of type ``present`` in the tasks file (it describes what is
  visible now), else its first task; ``provenance.notes`` names it.
* Caption spans: a run of consecutive seconds with the same caption is one span ``[first second, last
  second + 1)`` (cut at the video's end) of kind ``scene``, so a key moment of stage 3 is every second
  where the caption changes.
* The wearer's activity (the ``goal`` the stages show the model) is the task's ``activity``, else its
  ``category``.

Every answer goes through the build's LLM client and its cache, so a re-run makes no new call and a killed
build resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streamcue.dataset_builders.ego4d_sources import Caption, GoalVideo
from streamcue.dataset_builders.estp_gen.many_to_many import many_to_many
from streamcue.dataset_builders.estp_gen.one_to_many import ExpandConfig, one_to_many
from streamcue.dataset_builders.estp_gen.one_to_one import GenerateConfig, one_to_one
from streamcue.llm import LLMClient

__all__ = ["QAConfig", "caption_spans", "question_task", "questions"]

BUILDER = "streamcue.recorded"


@dataclass(frozen=True)
class QAConfig:
    """Options of the ESTP-Gen stages on recorded captions."""

    generate: GenerateConfig = field(default_factory=GenerateConfig)
    expand: ExpandConfig = field(default_factory=ExpandConfig)


def caption_spans(captions: Sequence[dict[str, Any]], duration_s: float) -> list[Caption]:
    """Per-second captions (``{t_s, text}``, 1 fps) -> spans of unchanged text, kind ``scene``, none past
    the video's end."""
    spans: list[Caption] = []
    for caption in captions:
        start, text = float(caption["t_s"]), caption["text"]
        end = max(start, min(start + 1.0, duration_s))
        if spans and spans[-1].text == text and spans[-1].end_s >= start:
            spans[-1] = Caption(spans[-1].start_s, end, "scene", text)
        else:
            spans.append(Caption(start, end, "scene", text))
    return spans


def question_task(tasks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The task whose captions a video's questions come from: its first ``present`` task, else its first."""
    return next((t for t in tasks if t["task_type"] == "present"), tasks[0])


def questions(video_id: str, task: dict[str, Any], captions: Sequence[dict[str, Any]], duration_s: float,
              llm: LLMClient, embedder: Any, config: QAConfig, source: str) -> tuple[list[dict[str, Any]], int]:
    """The ``interval_qa`` records of one video from its task's captions, and how many proposed groups
    were invalid (stage 5 drops them)."""
    spans = caption_spans(captions, duration_s)
    video = GoalVideo(video_id, 0.0, duration_s, task["category"],
                      task.get("activity") or task["category"], [])
    generated = one_to_one(video, spans, llm, config.generate, source)
    generated = one_to_many(generated, spans, llm, embedder, config.expand)
    grouped, invalid = many_to_many(video_id, video.goal_description, generated, llm, source)
    note = f"ESTP-Gen stages 3-5 on the captions of task {task['task_id']} (one span per run of equal captions)"
    records = generated + grouped
    for record in records:
        record["provenance"].update(builder=BUILDER, notes=[*record["provenance"]["notes"], note])
    return records, invalid
