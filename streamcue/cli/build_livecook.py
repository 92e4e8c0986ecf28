"""``streamcue build livecook-summaries`` and ``streamcue build livecook-augment`` (LiveCook's data engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.cli.options import EmbeddingModel, LLMBaseURL, LLMConcurrency, LLMModel, LLMStructured, NoCache

__all__ = ["build_livecook_summaries", "build_livecook_augment"]


def _llm_line(u: dict) -> None:
    console.out.print(
        f"LLM {u['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
        f"{u['invalid_answers']} invalid answers retried, {u['prompt_tokens']} prompt + "
        f"{u['completion_tokens']} completion tokens",
        markup=False,
    )


def build_livecook_summaries(
    out: Annotated[Path, typer.Option(help="Output folder: mistake_summaries.jsonl and build_report.json.")],
    annotations: Annotated[
        Optional[Path],
        typer.Option(
            help="CaptainCook4D annotation folder (default: ../shared/data/captaincook4d or $STREAMCUE_CAPTAINCOOK4D)."
        ),
    ] = None,
    split: Annotated[
        Optional[list[str]],
        typer.Option(help="Split whose instructions get a summary: validation or test (repeatable; default both)."),
    ] = None,
    k: Annotated[int, typer.Option(help="Training-split neighbours retrieved per instruction.")] = 5,
    embedding_model: EmbeddingModel = None,
    recording: Annotated[Optional[list[str]], typer.Option(help="Only these recording ids (repeatable).")] = None,
    llm_base_url: LLMBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: LLMStructured = "json_schema",
    llm_concurrency: LLMConcurrency = 4,
    no_cache: NoCache = False,
) -> None:
    """LiveCook mistake summaries: for each validation/test instruction, the mistakes people made on similar
    training-split instructions, summarised by an LLM (for the mistake prompt of a turn-based model).

    Retrieval uses sentence embeddings of the instruction text over the training split only. The
    build report holds the retrieval figures (same step id and category among the neighbours of
    the test actions with a counted mistake, beside the ceiling). Answers are cached: a re-run
    makes no new call and a killed build resumes.

    Example:

        streamcue build livecook-summaries --split test --out out/livecook-summaries \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-7B-Instruct
    """
    from streamcue.dataset_builders import get_builder, run_builder
    from streamcue.dataset_builders import livecook_summaries as ls
    from streamcue.llm import LLMSettings
    from streamcue.paths import default_captaincook4d

    settings = LLMSettings.resolve(
        base_url=llm_base_url, model=llm_model, structured=llm_structured, max_concurrency=llm_concurrency
    )
    splits = tuple({"val": "validation"}.get(s, s) for s in split) if split else ls.SUMMARY_SPLITS
    config = ls.Config(
        annotations=annotations or default_captaincook4d(),
        llm=settings,
        splits=splits,
        k=k,
        use_cache=not no_cache,
        embedding_model=str(embedding_model) if embedding_model else None,
        recordings=tuple(recording or ()),
    )
    result, report = run_builder(get_builder("livecook-summaries"), config, out)
    figures = report.details
    r = figures["retrieval"]
    console.out.print(
        f"{result.counts.get('mistake_summary', 0)} mistake summaries "
        f"({', '.join(f'{split} {n}' for split, n in figures['summaries'].items())}) from "
        f"{figures['index_size']} training actions with a counted mistake -> {out}",
        markup=False,
    )
    if r.get("actions_with_counted_mistake"):
        console.out.print(
            f"retrieval, k={r['k']}, over {r['actions_with_counted_mistake']} {r['measured_on']} actions "
            f"with a counted mistake: same step {r['same_step']:.1%} (ceiling {r['ceiling_same_step']:.1%}), "
            f"same step and category {r['same_step_category']:.1%} (ceiling {r['ceiling_category']:.1%}), "
            f"category recall {r['category_recall']:.1%}",
            markup=False,
        )
    _llm_line(report.llm)


def build_livecook_augment(
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
    from streamcue.dataset_builders import get_builder, run_builder
    from streamcue.dataset_builders import livecook_augment as la
    from streamcue.dataset_builders.estp_gen.clean import CleanConfig
    from streamcue.llm import LLMSettings
    from streamcue.paths import default_goalstep

    settings = LLMSettings.resolve(
        base_url=llm_base_url, model=llm_model, structured=llm_structured, max_concurrency=llm_concurrency
    )
    config = la.Config(
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
    result, report = run_builder(get_builder("livecook-augment"), config, out)
    figures = report.details
    console.out.print(
        f"{result.counts.get('guidance', 0)} instruction-completion records ({figures['kept_steps']} steps kept, "
        f"{len(figures['dropped_steps'])} dropped by the cleaning rules), "
        f"{result.counts.get('counterfactual_mistake', 0)} counterfactual mistakes "
        f"({figures['counterfactuals']}, {len(figures['skipped_counterfactuals'])} skipped) -> {out}",
        markup=False,
    )
    _llm_line(report.llm)
