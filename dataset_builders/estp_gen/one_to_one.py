"""Stage 3, one-to-one generation (ESTP-Bench appendix B.5, step 3).

Key segments are captions of moments with egocentric events (turning around, walking or
stepping into a place, entering, opening a door, picking up, putting down) or where the scene
caption changes; for each one the LLM writes a question, the visual cue and the answer, and
chooses a caption-driven task type. The answer interval is the key caption's span; the question
is asked ``query_lead_s`` before it (not before the video's start).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.dataset_builders.ego4d_sources import Caption, GoalVideo
from streamcue.dataset_builders.estp_gen.records import evenly_spaced, make_qa
from streamcue.llm import LLMClient, Request
from streamcue.prompts import load_prompt

__all__ = ["GenerateConfig", "key_segments", "one_to_one"]

CAPTION_TASK_TYPES = ("OR", "AP", "TRU", "OL", "OSC", "EOL", "EOSC", "OFR", "IFR")
EGO_EVENT = re.compile(r"\b(turns? around|walks? (in)?to|steps? into|enters?|opens? the door|looks? around|"
                       r"picks? up|puts? down|leaves?)\b", re.I)
PROMPT = ("streamcue.dataset_builders.estp_gen", "one_to_one.v1")
SCHEMA = {
    "type": "object",
    "required": ["task_type", "question", "visual_cue", "answer"],
    "properties": {
        "task_type": {"type": "string", "enum": list(CAPTION_TASK_TYPES)},
        "question": {"type": "string", "minLength": 1},
        "visual_cue": {"type": "string", "minLength": 1},
        "answer": {"type": "string", "minLength": 1},
    },
}


@dataclass(frozen=True)
class GenerateConfig:
    max_key_segments: int = 8
    context_s: float = 30.0
    query_lead_s: float = 10.0


def key_segments(captions: Sequence[Caption], limit: int) -> list[int]:
    """Indices of key captions: egocentric events, and scene captions that differ from the previous scene."""
    keys, last_scene = [], None
    for i, cap in enumerate(captions):
        if cap.kind == "scene":
            if last_scene is not None and cap.text != last_scene:
                keys.append(i)
            last_scene = cap.text
        elif EGO_EVENT.search(cap.text):
            keys.append(i)
    return evenly_spaced(keys, limit)


def _context(captions: Sequence[Caption], key: int, context_s: float) -> str:
    centre = captions[key]
    lines = []
    for i, cap in enumerate(captions):
        if cap.end_s >= centre.start_s - context_s and cap.start_s <= centre.end_s + context_s:
            mark = ">>" if i == key else "  "
            lines.append(f"{mark} [{cap.start_s:.1f}-{cap.end_s:.1f}] ({cap.kind}) {cap.text}")
    return "\n".join(lines)


def one_to_one(video: GoalVideo, captions: Sequence[Caption], llm: LLMClient, config: GenerateConfig,
               source: str) -> list[dict[str, Any]]:
    prompt = load_prompt(*PROMPT)
    keys = key_segments(captions, config.max_key_segments)
    requests = [Request(({"role": "user", "content": prompt.render(goal=video.goal_description,
                                                                  captions=_context(captions, k, config.context_s))},),
                        SCHEMA, prompt.version, "one_to_one") for k in keys]
    records = []
    for n, (k, answer) in enumerate(zip(keys, llm.complete_many(requests))):
        cap = captions[k]
        records.append(make_qa(
            f"{video.video_uid}:GEN:{n}", video.video_uid, answer["task_type"], answer["question"],
            max(video.start_s, cap.start_s - config.query_lead_s),
            [{"start_s": cap.start_s, "end_s": cap.end_s, "text": answer["answer"]}],
            stage="one_to_one", source=source, model=llm.settings.model, prompt_hash=prompt.sha256[:16],
            visual_cue=answer["visual_cue"]))
    return records
