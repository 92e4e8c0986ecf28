"""``streamcue build <source>``: turn source annotations into streamcue records (one command per builder).

The builders with a summary of their own have their command here (or in ``build_*.py``); every other builder
that streamcue/registry.py names gets one generated from its ``Config`` (``build_generated.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.cli.build_benchmarks import build_ovo_bench, build_streamingbench
from streamcue.cli.build_livecook import build_livecook_augment, build_livecook_summaries
from streamcue.cli.build_recorded import build_recorded
from streamcue.cli.build_generated import BuildGroup
from streamcue.cli.options import LLMBaseURL, LLMConcurrency, LLMModel, LLMStructured, NoCache

__all__ = ["build_app", "build_captaincook4d", "build_ego4d"]


build_app = typer.Typer(cls=BuildGroup, help="Turn source annotations into streamcue records.", no_args_is_help=True)



@build_app.command("captaincook4d")
def build_captaincook4d(
    annotations: Annotated[Path, typer.Option(help="CaptainCook4D annotation repository folder (annotation_json/, "
                                                   "data_splits/, metadata/).")],
    out: Annotated[Path, typer.Option(help="Output folder: guidance.jsonl, videos.jsonl and build_report.json.")],
    count_mistakes: Annotated[str, typer.Option(help="Comma-separated mistake categories that become mistake "
                                                     "events.")] =
        "technique,preparation,measurement,timing,temperature",
    recording: Annotated[Optional[list[str]], typer.Option(help="Build only these recording ids (repeatable).")] = None,
    jitter_s: Annotated[float, typer.Option(
        help="Training export: shift train-split instruction times by up to +-this many seconds "
             "(LiveCook: 30).")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of --jitter-s.")] = 0,
    warn_inconsistent: Annotated[bool, typer.Option(
        "--warn-inconsistent", help="Inconsistent sources (no error_annotations.json, a recording in two splits, "
        "repeated entries) become warnings in build_report.json instead of errors.")] = False,
) -> None:
    """Build LiveCook-style guidance records for every CaptainCook4D recording.

    Examples:

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d

        streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d-train \
            --jitter-s 30 --seed 1    # training export: train-split instructions jittered, benchmark splits untouched
    """
    from streamcue.dataset_builders import captaincook4d, get_builder, run_builder
    from streamcue.dataset_builders.summaries import print_guidance_summary

    config = captaincook4d.Config(
        annotations=annotations,
        counted_mistakes=tuple(c.strip() for c in count_mistakes.split(",") if c.strip()),
        recordings=tuple(recording or ()),
        jitter_s=jitter_s,
        jitter_seed=seed,
        warn_inconsistent=warn_inconsistent,
    )
    result, report = run_builder(get_builder("captaincook4d"), config, out)
    for warning in report.details.get("warnings", []):
        console.err.print(f"warning: {warning}", markup=False, soft_wrap=True)
    print_guidance_summary(result.files["guidance"], result.files["video"])



@build_app.command("ego4d")
def build_ego4d(
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
    from streamcue.dataset_builders import ego4d, get_builder, run_builder
    from streamcue.dataset_builders.estp_gen.clean import CleanConfig
    from streamcue.dataset_builders.summaries import print_ego4d_summary
    from streamcue.llm import LLMSettings
    from streamcue.prologue import check_numbers

    check_numbers(("--llm-concurrency", llm_concurrency, 1, None))  # refused even when no LLM stage runs
    settings = None
    if captions and not no_llm:
        settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                       max_concurrency=llm_concurrency)
    config = ego4d.Config(goalstep=goalstep, narrations=narrations, captions=captions, llm=settings,
                          use_cache=not no_cache, clean=CleanConfig(min_duration_s=min_clip_s,
                                                                    min_coverage=min_coverage),
                          videos=tuple(video or ()))
    _, report = run_builder(get_builder("ego4d"), config, out)
    print_ego4d_summary(report)



build_app.command("recorded")(build_recorded)
build_app.command("livecook-summaries")(build_livecook_summaries)
build_app.command("livecook-augment")(build_livecook_augment)
build_app.command("ovo-bench")(build_ovo_bench)
build_app.command("streamingbench")(build_streamingbench)
