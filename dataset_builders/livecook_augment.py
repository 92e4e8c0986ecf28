"""Ego4D GoalStep -> LiveCook training augmentations (App. D): instruction completions and counterfactual mistakes.

Both are training data, never benchmark records. Steps pass the Ego4D builder's cleaning rules
first (:mod:`streamcue.dataset_builders.estp_gen.clean`: at least 10 s, not irrelevant, narration
coverage when narrations are given).

1. **Instruction completion** (one ``guidance`` record per video, success feedback only): every
   kept step becomes a plan step; the LLM rewrites the step descriptions of a video into
   instructions (one request per video); the instruction is given at the step's start and a
   success acknowledgement at its end; a finish event closes the record.
2. **Counterfactual mistakes** (``counterfactual_mistake`` records): for every kept step with
   substeps the LLM names the verb and noun of each substep and picks the critical one (the
   short action that decides the step; Ego4D FHO's critical frames are not public here, so the
   GoalStep substeps stand in for them and ``critical.chosen_from`` says so). Two versions
   follow, each changing exactly one slot: another noun that the LLM found in this video's
   substeps, and another verb seen anywhere in the file, chosen by a generator seeded with
   ``(seed, record id)``. The counterfactual instruction is given at the step's start; the
   person performs the original action, so mistake feedback follows at the critical
   sub-action's end (GoalStep annotates no point of no return).
3. ``jitter_s`` > 0 shifts every instruction time (:mod:`streamcue.dataset_builders.jitter`).

Every LLM answer goes through the shared client's cache: a re-run makes no new call and a
killed build resumes with the same output.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.dataset_builders.ego4d import Config as Ego4dConfig
from streamcue.dataset_builders.ego4d import load_videos, video_record
from streamcue.dataset_builders.ego4d_sources import GoalVideo, Step, load_narrations
from streamcue.dataset_builders.estp_gen.clean import CleanConfig, clean_video
from streamcue.dataset_builders.guidance_plan import FINISH_TEXT
from streamcue.dataset_builders.jitter import jitter_counterfactual, jitter_guidance
from streamcue.errors import ConfigError
from streamcue.prologue import input_path
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.progress import track
from streamcue.prompts import Prompt, load_prompt
from streamcue.schemas import SCHEMA_VERSION
from streamcue.shared_options import (LLMBaseURL, LLMConcurrency, LLMModel, LLMRetries, LLMStructured, LLMTimeout,
                                      NoCache)

__all__ = ["Config", "AugmentFigures", "build", "normalise_noun", "COMPLETION_PROMPT", "CRITICAL_PROMPT"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("guidance", "counterfactual_mistake", "video")
SUMMARY = ("LiveCook training data from Ego4D GoalStep: success-only guidance and "
           "counterfactual mistakes")
#: The report it fills instead of the BuildReport: its ``to_dict()`` becomes the build report's details.
FIGURES = "AugmentFigures"

BUILDER = "livecook-augment"
BUILDER_VERSION = "1.0"
COMPLETION_PROMPT = ("streamcue.dataset_builders", "instruction_completion.v1")
CRITICAL_PROMPT = ("streamcue.dataset_builders", "critical_subaction.v1")
FHO_NOTE = (
    "critical sub-action chosen by the LLM among the step's GoalStep substeps: "
    "Ego4D FHO (critical frames, points of no return) is not public here"
)
_ARTICLES = re.compile(r"^(the|a|an|some|his|her|their|my|your)\s+", re.I)


@dataclass(frozen=True)
class Config:
    """Options of the LiveCook augmentation builder.

    ``jitter_s``: shift instruction times by up to +-this many seconds (0: off; LiveCook uses 30).
    ``seed``: seeds the jitter and the choice of counterfactual nouns and verbs.
    """

    goalstep: Path = input_path("--goalstep")
    llm: LLMSettings
    narrations: Path | None = input_path("--narrations", default=None)
    use_cache: bool = True
    clean: CleanConfig = CleanConfig()
    jitter_s: float = 0.0
    seed: int = 0
    counterfactuals: bool = True
    video_uri: str = Ego4dConfig.video_uri
    videos: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.jitter_s >= 0 or self.jitter_s == float("inf"):
            raise ConfigError(f"jitter must be a finite number of seconds >= 0, got {self.jitter_s}")


@dataclass
class AugmentFigures:
    videos: int = 0
    kept_steps: int = 0
    dropped_steps: list[dict] = field(default_factory=list)
    completion_records: int = 0
    counterfactuals: Counter = field(default_factory=Counter)
    steps_without_substeps: int = 0
    skipped_counterfactuals: list[dict] = field(default_factory=list)
    jitter: dict | None = None
    llm: dict | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "videos": self.videos,
            "kept_steps": self.kept_steps,
            "dropped_steps": self.dropped_steps,
            "completion_records": self.completion_records,
            "counterfactuals": dict(sorted(self.counterfactuals.items())),
            "steps_without_substeps": self.steps_without_substeps,
            "skipped_counterfactuals": self.skipped_counterfactuals,
            "jitter": self.jitter,
            "llm": self.llm,
        }


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def normalise_noun(noun: str) -> str:
    """``" The  Frying pan. "`` -> ``"frying pan"``."""
    return _ARTICLES.sub("", " ".join(noun.lower().split()).strip(" .,;:!?\"'"))


def _normalise_verb(verb: str) -> str:
    return " ".join(verb.lower().split()).strip(" .,;:!?\"'")


def _lines(steps: Sequence[Step]) -> str:
    return "\n".join(f"[{i}] {s.description}" for i, s in enumerate(steps))


def _completion_request(video: GoalVideo, steps: Sequence[Step], prompt: Prompt) -> Request:
    n = len(steps)
    schema = {
        "type": "object",
        "required": ["instructions"],
        "additionalProperties": False,
        "properties": {
            "instructions": {"type": "array", "minItems": n, "maxItems": n, "items": {"type": "string", "minLength": 1}}
        },
    }
    content = prompt.render(goal=video.goal_description, steps=_lines(steps))
    return Request(({"role": "user", "content": content},), schema, prompt.version, "instruction_completion")


def _critical_request(video: GoalVideo, step: Step, prompt: Prompt) -> Request:
    n = len(step.substeps)
    action = {
        "type": "object",
        "required": ["verb", "noun"],
        "additionalProperties": False,
        "properties": {"verb": {"type": "string", "minLength": 1}, "noun": {"type": "string", "minLength": 1}},
    }
    schema = {
        "type": "object",
        "required": ["actions", "critical"],
        "additionalProperties": False,
        "properties": {
            "actions": {"type": "array", "minItems": n, "maxItems": n, "items": action},
            "critical": {"type": "integer", "minimum": 0, "maximum": n - 1},
        },
    }
    content = prompt.render(goal=video.goal_description, step=step.description, substeps=_lines(step.substeps))
    return Request(({"role": "user", "content": content},), schema, prompt.version, "critical_subaction")


def _provenance(stage: str, source: str, model: str, prompt: Prompt, notes: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "builder": BUILDER,
        "version": BUILDER_VERSION,
        "source": source,
        "stage": stage,
        "model": model,
        "prompt_hash": prompt.sha256[:16],
        "notes": notes,
        **extra,
    }


def completion_record(
    video: GoalVideo,
    steps: Sequence[Step],
    instructions: Sequence[str],
    *,
    source: str,
    model: str,
    prompt: Prompt,
    dropped: list[dict],
) -> dict[str, Any]:
    """The success-only guidance record of one video (module docstring, 1)."""
    texts = [_sentence(t) for t in instructions]
    plan = [
        {
            "index": i,
            "text": text,
            "step_ids": [s.index],
            "actions": [{"step_id": s.index, "description": s.description, "start_s": s.start_s, "end_s": s.end_s}],
        }
        for i, (s, text) in enumerate(zip(steps, texts))
    ]
    keyed = []
    for i, (s, text) in enumerate(zip(steps, texts)):
        ack = f"Well done, that step is complete: {text[:1].lower()}{text[1:]}"
        keyed.append(((s.start_s, i, 0), _event(s.start_s, "instruction", text, [s.index], i)))
        keyed.append(((s.end_s, i, 1), _event(s.end_s, "success", ack, [s.index], i)))
    end = max(s.end_s for s in steps)
    keyed.append(((end, len(steps), 2), _event(end, "finish", FINISH_TEXT, [], None)))
    notes = [
        "success feedback only (LiveCook App. D): each kept step is instructed at its start and acknowledged "
        "at its end; the LLM rewrote the step descriptions as instructions",
        *video.notes,
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "video_id": video.video_uid,
        "activity": video.goal_description or "unknown",
        "activity_id": video.goal_category or None,
        "plan": plan,
        "events": [ev for _, ev in sorted(keyed, key=lambda pair: pair[0])],
        "provenance": _provenance("instruction_completion", source, model, prompt, notes, excluded=dropped),
        "verification": {"status": "unverified", "annotators": [], "checks": 0},
    }


def _event(t: float, type_: str, text: str, step_ids: list, plan_index: int | None) -> dict[str, Any]:
    return {
        "t_s": t,
        "type": type_,
        "text": text,
        "plan_index": plan_index,
        "step_ids": step_ids,
        "mistake_category": None,
        "time_source": "annotation",
    }


def _action(verb: str, noun: str) -> dict[str, str]:
    return {"verb": verb, "noun": noun, "text": _sentence(f"{verb} the {noun}")}


def counterfactual_records(
    video: GoalVideo,
    step: Step,
    answer: dict,
    video_nouns: set[str],
    all_verbs: set[str],
    *,
    seed: int,
    source: str,
    model: str,
    prompt: Prompt,
    skipped: list[dict],
) -> list[dict[str, Any]]:
    """The noun and verb counterfactuals of one step (module docstring, 2); what cannot be made goes to ``skipped``."""
    j = answer["critical"]
    sub = step.substeps[j]
    verb, noun = _normalise_verb(answer["actions"][j]["verb"]), normalise_noun(answer["actions"][j]["noun"])
    where = {"video_id": video.video_uid, "step": step.index, "substep": sub.index}
    if not verb or not noun:
        skipped.append({**where, "reason": f"the LLM gave no usable verb/noun ({verb!r}, {noun!r})"})
        return []
    original = _action(verb, noun)
    records = []
    for slot, pool in (("noun", video_nouns), ("verb", all_verbs)):
        # another noun, not a plural of the same one ("hand" for "hands")
        candidates = sorted(c for c in pool if c.rstrip("s") != original[slot].rstrip("s"))
        cf_id = f"{video.video_uid}:{step.index}:{sub.index}:{slot}"
        if not candidates:
            skipped.append({**where, "slot": slot, "reason": f"no other {slot} to swap in"})
            continue
        other = random.Random(f"{seed}:{cf_id}").choice(candidates)
        cf = _action(other, noun) if slot == "verb" else _action(verb, other)
        records.append(
            {
                "schema_version": SCHEMA_VERSION,
                "cf_id": cf_id,
                "video_id": video.video_uid,
                "source": {
                    "dataset": "ego4d_goalstep",
                    "video_uid": video.video_uid,
                    "step_index": step.index,
                    "step_description": step.description,
                    "substep_index": sub.index,
                    "substep_description": sub.description,
                },
                "critical": {"start_s": sub.start_s, "end_s": sub.end_s, "chosen_from": "goalstep_substeps"},
                "original": original,
                "counterfactual": cf,
                "changed_slot": slot,
                "instruction": {"t_s": step.start_s, "text": cf["text"]},
                "mistake": {
                    "t_s": sub.end_s,
                    "time_source": "substep_end",
                    "text": f"Wait, the instruction was to {cf['verb']} the {cf['noun']}, "
                    f"but you {original['verb']} the {original['noun']}.",
                },
                "provenance": _provenance(
                    "counterfactual_mistake",
                    source,
                    model,
                    prompt,
                    [
                        FHO_NOTE,
                        f"{slot} chosen with seed {seed} among {len(candidates)} candidates "
                        f"({'nouns of this video' if slot == 'noun' else 'verbs of the file'})",
                    ],
                ),
                "verification": {"status": "unverified", "annotators": [], "checks": 0},
            }
        )
    return records


def _answers(llm: LLMClient, requests: Sequence[Request], what: str) -> list[Any]:
    batch = max(1, 8 * llm.settings.max_concurrency)
    answers: list[Any] = []
    for start in track(range(0, len(requests), batch), what, total=-(-len(requests) // batch)):
        answers.extend(llm.complete_many(requests[start : start + batch]))
    return answers


def build(config: Config, report: AugmentFigures | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("guidance" | "counterfactual_mistake" | "video", record)``; fill ``report``."""
    report = report if report is not None else AugmentFigures()
    videos = load_videos(config.goalstep, config.videos)
    narrations = load_narrations(config.narrations) if config.narrations else {}
    source = Path(config.goalstep).name
    kept: dict[str, list[Step]] = {}
    for video in videos:
        points = narrations.get(video.video_uid) if config.narrations else None
        cleaned = clean_video(video, points, config.clean)
        report.dropped_steps.extend(cleaned.dropped)
        kept[video.video_uid] = cleaned.kept
    report.videos = len(videos)
    report.kept_steps = sum(map(len, kept.values()))
    llm = LLMClient(config.llm, use_cache=config.use_cache)
    completion, critical = load_prompt(*COMPLETION_PROMPT), load_prompt(*CRITICAL_PROMPT)
    usable = [v for v in videos if kept[v.video_uid]]
    instructions = _answers(
        llm, [_completion_request(v, kept[v.video_uid], completion) for v in usable], "instruction completions (videos)"
    )
    with_subs = [(v, s) for v in usable for s in kept[v.video_uid] if s.substeps] if config.counterfactuals else []
    report.steps_without_substeps = sum(1 for v in usable for s in kept[v.video_uid] if not s.substeps)
    parsed = _answers(llm, [_critical_request(v, s, critical) for v, s in with_subs], "critical sub-actions (steps)")
    nouns: dict[str, set[str]] = {}
    verbs: set[str] = set()
    for (video, _), answer in zip(with_subs, parsed):
        nouns.setdefault(video.video_uid, set()).update(
            filter(None, (normalise_noun(a["noun"]) for a in answer["actions"]))
        )
        verbs.update(filter(None, (_normalise_verb(a["verb"]) for a in answer["actions"])))
    by_video: dict[str, list[tuple[Step, dict]]] = {}
    for (video, step), answer in zip(with_subs, parsed):
        by_video.setdefault(video.video_uid, []).append((step, answer))
    model = config.llm.model
    for video, texts in zip(usable, instructions):
        dropped = [d for d in report.dropped_steps if d["video_id"] == video.video_uid]
        record = completion_record(
            video,
            kept[video.video_uid],
            texts["instructions"],
            source=source,
            model=model,
            prompt=completion,
            dropped=dropped,
        )
        report.completion_records += 1
        yield "guidance", jitter_guidance(record, config.jitter_s, config.seed)
        for step, answer in by_video.get(video.video_uid, []):
            for cf in counterfactual_records(
                video,
                step,
                answer,
                nouns.get(video.video_uid, set()),
                verbs,
                seed=config.seed,
                source=source,
                model=model,
                prompt=critical,
                skipped=report.skipped_counterfactuals,
            ):
                report.counterfactuals[cf["changed_slot"]] += 1
                yield "counterfactual_mistake", jitter_counterfactual(cf, config.jitter_s, config.seed)
        yield "video", video_record(video, config.video_uri)
    report.jitter = {"k_s": config.jitter_s, "seed": config.seed} if config.jitter_s else None
    report.llm = {"model": llm.settings.model, **llm.usage.to_dict()}


def command(
    out: Annotated[
        Path,
        typer.Option(
            help="Output folder: guidance.jsonl (completions), counterfactual_mistakes.jsonl, "
            "videos.jsonl, build_report.json."
        ),
    ],
    goalstep: Annotated[
        Optional[Path],
        typer.Option(help="Ego4D GoalStep annotation JSON with timed steps (default: the val file in ../shared/data)."),
    ] = None,
    narrations: Annotated[
        Optional[Path], typer.Option(help="Ego4D narration.json: the narration-coverage cleaning rule.")
    ] = None,
    jitter_s: Annotated[
        float, typer.Option(help="Shift each instruction by up to +-this many seconds (LiveCook: 30; 0: off).")
    ] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of the jitter and of the counterfactual noun/verb choice.")] = 0,
    no_counterfactuals: Annotated[
        bool, typer.Option("--no-counterfactuals", help="Only instruction completions.")
    ] = False,
    min_clip_s: Annotated[float, typer.Option(help="Drop steps shorter than this (cleaning rule).")] = 10.0,
    video: Annotated[Optional[list[str]], typer.Option(help="Only these video ids (repeatable).")] = None,
    llm_base_url: LLMBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: LLMStructured = "json_schema",
    llm_concurrency: LLMConcurrency = 4,
    llm_timeout: LLMTimeout = None,
    llm_retries: LLMRetries = None,
    no_cache: NoCache = False,
) -> None:
    """LiveCook training augmentations from Ego4D GoalStep: instruction completions (guidance records with
    success feedback only) and counterfactual mistakes (one slot, noun or verb, of the critical sub-action
    swapped). Training data, not benchmark records.

    Examples:

        streamcue build livecook-augment --out out/livecook-augment --jitter-s 30 --seed 1 \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-7B-Instruct

        streamcue build livecook-augment --goalstep goalstep_valid.json --no-counterfactuals --out out/completions
    """
    from streamcue.dataset_builders.output import run_builder
    from streamcue.dataset_builders.registry import get_builder
    from streamcue.dataset_builders.summaries import print_llm_usage
    from streamcue.paths import default_goalstep

    settings = LLMSettings.resolve(
        base_url=llm_base_url, model=llm_model, structured=llm_structured, max_concurrency=llm_concurrency,
        timeout_s=llm_timeout, max_retries=llm_retries,
    )
    config = Config(
        goalstep=goalstep or default_goalstep(),
        llm=settings,
        narrations=narrations,
        use_cache=not no_cache,
        clean=CleanConfig(min_duration_s=min_clip_s),
        jitter_s=jitter_s,
        seed=seed,
        counterfactuals=not no_counterfactuals,
        videos=tuple(video or ()),
    )
    result, report = run_builder(get_builder(BUILDER), config, out)
    figures = report.details
    console.out.print(
        f"{result.counts.get('guidance', 0)} instruction-completion records ({figures['kept_steps']} steps kept, "
        f"{len(figures['dropped_steps'])} dropped by the cleaning rules), "
        f"{result.counts.get('counterfactual_mistake', 0)} counterfactual mistakes "
        f"({figures['counterfactuals']}, {len(figures['skipped_counterfactuals'])} skipped) -> {out}",
        markup=False,
    )
    print_llm_usage(report.llm)
