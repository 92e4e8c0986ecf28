"""Ego4D (GoalStep, narrations, captions) -> ESTP-Bench style ``interval_qa`` records and ``video`` records.

Stages (see :mod:`streamcue.dataset_builders.estp_gen`): clean, templates (AR, NAR, TU, TRC),
and, when captions and an LLM endpoint are given, one-to-one generation, one-to-many retrieval
expansion and many-to-many grouping. Every LLM answer goes through the shared LLM client's
persistent cache, so a re-run makes no new calls and a killed build resumes where it stopped,
producing the same records as an uninterrupted run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue.dataset_builders.ego4d_sources import GoalVideo, load_captions, load_goalstep, load_narrations
from streamcue.dataset_builders.estp_gen.clean import CleanConfig, clean_video
from streamcue.dataset_builders.estp_gen.many_to_many import many_to_many
from streamcue.dataset_builders.estp_gen.one_to_many import ExpandConfig, one_to_many
from streamcue.dataset_builders.estp_gen.one_to_one import GenerateConfig, one_to_one
from streamcue.dataset_builders.estp_gen.templates import TemplateConfig, template_questions
from streamcue.dataset_builders.output import BuildReport
from streamcue.errors import ConfigError
from streamcue.prologue import check_numbers, input_path
from streamcue.llm import LLMClient, LLMSettings
from streamcue.progress import track
from streamcue.schemas import SCHEMA_VERSION
from streamcue.shared_options import (LLMBaseURL, LLMConcurrency, LLMModel, LLMRetries, LLMStructured, LLMTimeout,
                                      NoCache)

__all__ = ["Config", "build", "example_config", "load_videos", "video_record"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("interval_qa", "video")
SUMMARY = "interval_qa proactive questions (ESTP-Gen) from Ego4D GoalStep and narrations"

VIDEO_LICENSE = "Ego4D license (videos are not redistributed; GoalStep annotations MIT)"


@dataclass(frozen=True)
class Config:
    """Options of the Ego4D builder.

    ``llm``: settings of the OpenAI-compatible endpoint for stages 3-5 (None: template stages only).
    ``embedding_model``: sentence-transformers folder for retrieval (None: the packaged MiniLM).
    """

    goalstep: Path = input_path("--goalstep")
    narrations: Path | None = input_path("--narrations", default=None)
    captions: Path | None = input_path("--captions", default=None)
    llm: LLMSettings | None = None
    use_cache: bool = True
    clean: CleanConfig = CleanConfig()
    templates: TemplateConfig = TemplateConfig()
    generate: GenerateConfig = GenerateConfig()
    expand: ExpandConfig = ExpandConfig()
    embedding_model: str | None = input_path("--embedding-model", folder=True, default=None)
    video_uri: str = "ego4d/v2/full_scale/{video_uid}.mp4"
    videos: tuple[str, ...] = ()  # empty: all


@dataclass
class _Figures:
    """What the build did (the build report's details): kept and dropped clips, counts, skipped stages."""

    videos: int = 0
    usable_videos: int = 0
    dropped_clips: list[dict] = field(default_factory=list)
    unusable_videos: list[str] = field(default_factory=list)
    source_notes: dict[str, list[str]] = field(default_factory=dict)
    by_task_type: Counter = field(default_factory=Counter)
    by_stage: Counter = field(default_factory=Counter)
    invalid_groups: int = 0
    llm_skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"videos": self.videos, "usable_videos": self.usable_videos, "dropped_clips": self.dropped_clips,
                "unusable_videos": self.unusable_videos, "source_notes": self.source_notes,
                "by_task_type": dict(sorted(self.by_task_type.items())), "by_stage": dict(self.by_stage),
                "invalid_groups": self.invalid_groups, "llm_skipped": self.llm_skipped}


def load_videos(goalstep: Path, wanted: tuple[str, ...] = ()) -> list[GoalVideo]:
    """The GoalStep videos of a file, only the ``wanted`` ids when given (an unknown id is an error)."""
    videos = load_goalstep(goalstep)
    if wanted:
        unknown = set(wanted) - {v.video_uid for v in videos}
        if unknown:
            raise ConfigError(f"video ids not in {goalstep}: {sorted(unknown)}")
        videos = [v for v in videos if v.video_uid in wanted]
    return videos


def video_record(video: GoalVideo, video_uri: str) -> dict[str, Any]:
    """The ``video`` record of a GoalStep video (not redistributed: the URI names Ego4D's file)."""
    return {
        "schema_version": SCHEMA_VERSION, "video_id": video.video_uid, "source": "ego4d",
        "duration_s": video.end_s, "fps": None, "width": None, "height": None, "license": VIDEO_LICENSE,
        "uri": video_uri.format(video_uid=video.video_uid), "split": video.split,
        "anonymization": {"status": "not_required", "report": None},
    }


def build(config: Config, report: BuildReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("interval_qa", record)`` and ``("video", record)`` pairs; fill ``report``."""
    report = report if report is not None else BuildReport("ego4d")
    figures = _Figures()
    videos = load_videos(config.goalstep, config.videos)
    narrations = load_narrations(config.narrations) if config.narrations else {}
    captions = load_captions(config.captions, {v.video_uid for v in videos}) if config.captions else {}
    source = Path(config.goalstep).name
    llm = embedder = None
    if config.captions and config.llm is not None:
        llm = LLMClient(config.llm, use_cache=config.use_cache)
        from streamcue.embedding import Embedder

        embedder = Embedder(config.embedding_model)
    elif config.captions:
        figures.llm_skipped = "captions given but no LLM endpoint: stages 3-5 skipped"
    else:
        figures.llm_skipped = "no captions file: stages 3-5 (one-to-one, one-to-many, many-to-many) skipped"
    figures.videos = len(videos)
    for video in track(videos, "ego4d videos", total=len(videos)):
        if video.notes:
            figures.source_notes[video.video_uid] = video.notes
        points = narrations.get(video.video_uid) if config.narrations else None
        cleaned = clean_video(video, points, config.clean)
        figures.dropped_clips.extend(cleaned.dropped)
        records = template_questions(video, cleaned.kept, points, config.templates, source)
        video_captions = captions.get(video.video_uid, [])
        if llm is not None and video_captions:
            generated = one_to_one(video, video_captions, llm, config.generate, source)
            generated = one_to_many(generated, video_captions, llm, embedder, config.expand)
            grouped, invalid = many_to_many(video.video_uid, video.goal_description, generated, llm, source)
            figures.invalid_groups += invalid
            records += generated + grouped
        if not records:
            figures.unusable_videos.append(video.video_uid)
            continue
        figures.usable_videos += 1
        for record in records:
            if video.members:
                record["provenance"]["notes"].append(
                    f"{video.video_uid} concatenates {len(video.members)} Ego4D videos: {', '.join(video.members)}")
            figures.by_task_type[record["task_type"]] += 1
            figures.by_stage[record["provenance"]["stage"]] += 1
            yield "interval_qa", record
        yield "video", video_record(video, config.video_uri)
    report.details = figures.to_dict()
    if llm is not None:
        report.llm = {"model": llm.settings.model, **llm.usage.to_dict()}


def example_config(data_root: Path) -> Config:
    """The smallest real input, for the contract tests and a first try: one video of GoalStep's validation
    annotations under ``data_root`` (``ego4d_goalstep/``), template stages only (no model)."""
    return Config(goalstep=Path(data_root) / "ego4d_goalstep" / "data" / "goalstep_valid.json",
                  videos=("c2d06df7-5d3a-4116-9edb-f1c81a4f669b",))


def command(
    goalstep: Annotated[Path, typer.Option(help="Ego4D GoalStep annotation JSON with timed steps (the val file).")],
    out: Annotated[Path, typer.Option(help="Output folder: interval_qa.jsonl, videos.jsonl and build_report.json.")],
    narrations: Annotated[Optional[Path], typer.Option(help="Ego4D narration.json: AR questions and the coverage "
                                                            "check.")] = None,
    captions: Annotated[Optional[Path], typer.Option(help="Captions JSONL {video_id, start_s, end_s, kind, text}: "
                                                          "enables the LLM stages.")] = None,
    llm_base_url: LLMBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: LLMStructured = "json_schema",
    llm_concurrency: LLMConcurrency = 4,
    llm_timeout: LLMTimeout = None,
    llm_retries: LLMRetries = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Run only the stages that need no LLM, even with "
                                                          "captions.")] = False,
    min_clip_s: Annotated[float, typer.Option(help="Drop clips (top-level steps) shorter than this.")] = 10.0,
    min_coverage: Annotated[float, typer.Option(help="Drop clips whose narration coverage is below this (with "
                                                     "--narrations).")] = 0.3,
    video: Annotated[Optional[list[str]], typer.Option(help="Build only these video ids (repeatable).")] = None,
    no_cache: NoCache = False,
) -> None:
    """Build ESTP-Bench style proactive questions (interval_qa) from Ego4D annotations.

    Without captions only the template stages run (NAR, TU, TRC from GoalStep; AR from
    narrations). With captions and an LLM endpoint the ESTP-Gen stages run too: one-to-one
    generation, one-to-many retrieval expansion and many-to-many grouping. LLM answers are
    cached: re-running makes no new calls and a killed build resumes.

    Examples:

        streamcue build ego4d --goalstep ../shared/data/ego4d_goalstep/data/goalstep_valid.json --out out/ego4d

        streamcue build ego4d --goalstep val.json --narrations narration.json --captions captions.jsonl \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-7B-Instruct --out out/ego4d
    """
    from streamcue.dataset_builders.output import run_builder
    from streamcue.dataset_builders.registry import get_builder
    from streamcue.dataset_builders.summaries import print_ego4d_summary

    check_numbers(("--llm-concurrency", llm_concurrency, 1, None))  # refused even when no LLM stage runs
    settings = None
    if captions and not no_llm:
        settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                       max_concurrency=llm_concurrency, timeout_s=llm_timeout,
                                       max_retries=llm_retries)
    config = Config(goalstep=goalstep, narrations=narrations, captions=captions, llm=settings,
                     use_cache=not no_cache, clean=CleanConfig(min_duration_s=min_clip_s,
                                                               min_coverage=min_coverage),
                     videos=tuple(video or ()))
    _, report = run_builder(get_builder("ego4d"), config, out)
    print_ego4d_summary(report)
