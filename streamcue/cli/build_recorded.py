"""``streamcue build recorded``: dense captions, proactive questions and guidance for recorded, anonymized videos."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.cli.options import VisionBaseURL, VisionModel, VisionStructured

__all__ = ["build_recorded"]


def build_recorded(
    video_root: Annotated[Path, typer.Option("--video-root", help="Folder of recorded videos (the tasks "
                                                                            "file names files relative to it).")],
    tasks: Annotated[Path, typer.Option(help="Tasks file, YAML or JSONL: task_id, video, task_type "
                                             "(present|cumulative|future), category, prompt; optional: split, "
                                             "license, video_id, activity, steps (the task plan).")],
    out: Annotated[Path, typer.Option(help="Output folder: dense_caption.jsonl, videos.jsonl, build_report.json, "
                                           "videos/ (blurred copies and reports); interval_qa.jsonl with "
                                           "--interval-qa, guidance.jsonl with --guidance.")],
    llm_base_url: VisionBaseURL = None,
    llm_model: VisionModel = None,
    llm_structured: VisionStructured = "json_schema",
    llm_concurrency: Annotated[int, typer.Option(help="Videos captioned at once unless --concurrency is "
                                                      "given.")] = 4,
    concurrency: Annotated[Optional[int], typer.Option(min=1, help="Videos processed at once (anonymized, then "
                                                                   "captioned: each video's tasks and seconds in "
                                                                   "order). Default: --llm-concurrency.")] = None,
    k: Annotated[int, typer.Option(help="Frames of memory per request (SW+U: k/2 recent + k/2 older).")] = 42,
    frame_side: Annotated[int, typer.Option(help="Longest side of the frames sent to the model, in pixels.")] = 448,
    anonymized: Annotated[bool, typer.Option("--anonymized", help="The videos are already blurred: each needs a "
                                                                  "passing NAME.anonymization.json beside "
                                                                  "it.")] = False,
    license: Annotated[str, typer.Option(help="Licence of the videos, unless a task names one.")] = "CC BY 4.0",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    interval_qa: Annotated[bool, typer.Option("--interval-qa", help="Also make proactive multi-interval questions "
                                                                    "from each video's captions (ESTP-Gen "
                                                                    "one-to-one, one-to-many, many-to-many).")] = False,
    embedding_model: Annotated[Optional[Path], typer.Option(help="Sentence-transformers folder for the retrieval "
                                                                 "of --interval-qa and --mistake-summaries "
                                                                 "(default: the packaged all-MiniLM-L6-v2).")] = None,
    guidance: Annotated[bool, typer.Option("--guidance", help="Also make step guidance with mistake feedback for "
                                                              "every video whose task has steps: from "
                                                              "--step-marks, else drafted by the LLM from the "
                                                              "captions.")] = False,
    step_marks: Annotated[Optional[Path], typer.Option(help="Annotators' step marks for --guidance (JSONL, "
                                                            "one line per video; docs/building.md).")] = None,
    mistake_summaries: Annotated[bool, typer.Option("--mistake-summaries", help="With --guidance: mistake summaries "
                                                                              "for the validation and "
                                                                              "test plans, retrieved from the "
                                                                              "train split's mistakes.")] = False,
    summary_k: Annotated[int, typer.Option(help="Neighbours per instruction for --mistake-summaries.")] = 5,
    jitter_s: Annotated[float, typer.Option(help="Train-split guidance: shift each instruction by a seeded "
                                                 "uniform amount in [-K, K] seconds (30 as published; 0: off).")] = 0.0,
    jitter_seed: Annotated[int, typer.Option(help="Seed of --jitter-s.")] = 0,
) -> None:
    """Per-second dense captions (VSAS-Bench style) for recorded videos, from anonymized copies only.

    Each video is blurred first (faces and licence plates, see `streamcue anonymize`), then
    sampled at 1 fps; a vision model writes the caption of every second from the task prompt,
    its SW+U frame memory and its previous caption. With --interval-qa, ESTP-Gen's caption stages
    turn the captions into proactive questions; with --guidance, each video's task plan and its
    step marks (annotators' or an LLM draft) become LiveCook guidance. Answers are cached: a killed
    build, or a re-run with more record kinds, repeats no call.

    Example:

        streamcue build recorded --video-root recordings/ --tasks tasks.yaml --out out/recorded \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct --interval-qa --guidance
    """
    from streamcue.dataset_builders import get_builder, recorded, run_builder
    from streamcue.llm import LLMSettings

    settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                   max_concurrency=llm_concurrency)
    config = recorded.Config(videos=video_root, tasks=tasks, out=out, llm=settings, k=k, frame_side=frame_side,
                             anonymized=anonymized, license=license, use_cache=not no_cache,
                             concurrency=concurrency, interval_qa=interval_qa, guidance=guidance,
                             step_marks=step_marks, mistake_summaries=mistake_summaries, summary_k=summary_k,
                             jitter_s=jitter_s, jitter_seed=jitter_seed,
                             embedding_model=str(embedding_model) if embedding_model else None)
    result, report = run_builder(get_builder("recorded"), config, out)
    u = report.llm
    console.out.print(f"{result.counts.get('dense_caption', 0)} dense-caption tasks, {report.details['captions']} "
                      f"captions "
                      f"on {len(report.details['videos'])} anonymized videos"
                      + "".join(f", {result.counts.get(kind, 0)} {kind}" for kind in
                                ("interval_qa", "guidance", "mistake_summary") if result.counts.get(kind))
                      + f" -> {out}")
    console.out.print(f"LLM {u['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
                      f"{u['invalid_answers']} invalid answers retried, {u['prompt_tokens']} prompt tokens")
    console.out.print(f"to release: streamcue release build --records {out} "
                      f"--video-root {video_root if anonymized else out / 'videos'} ...")


