"""``streamcue build recorded``: dense captions for recorded, anonymized videos."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.cli.options import VisionBaseURL, VisionModel, VisionStructured

__all__ = ["build_recorded"]


def build_recorded(
    video_root: Annotated[Path, typer.Option("--video-root", "--videos", help="Folder of recorded videos (the tasks "
                                                                            "file names files relative to it).")],
    tasks: Annotated[Path, typer.Option(help="Tasks file, YAML or JSONL: task_id, video, task_type "
                                             "(present|cumulative|future), category, prompt; optional: split, "
                                             "license, video_id.")],
    out: Annotated[Path, typer.Option(help="Output folder: dense_caption.jsonl, videos.jsonl, build_report.json, "
                                           "videos/ (blurred copies and reports).")],
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
) -> None:
    """Per-second dense captions (VSAS-Bench style) for recorded videos, from anonymized copies only.

    Each video is blurred first (faces and licence plates, see `streamcue anonymize`), then
    sampled at 1 fps; a vision model writes the caption of every second from the task prompt,
    its SW+U frame memory and its previous caption. Answers are cached: a killed build resumes
    without repeating a call.

    Example:

        streamcue build recorded --video-root recordings/ --tasks tasks.yaml --out out/recorded \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct
    """
    from streamcue.dataset_builders import get_builder, recorded, run_builder
    from streamcue.llm import LLMSettings

    settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                   max_concurrency=llm_concurrency)
    config = recorded.Config(videos=video_root, tasks=tasks, out=out, llm=settings, k=k, frame_side=frame_side,
                             anonymized=anonymized, license=license, use_cache=not no_cache,
                             concurrency=concurrency)
    result, report = run_builder(get_builder("recorded"), config, out)
    u = report.llm
    console.out.print(f"{result.counts.get('dense_caption', 0)} dense-caption tasks, {report.details['captions']} "
                      f"captions "
                      f"on {len(report.details['videos'])} anonymized videos -> {out}")
    console.out.print(f"LLM {u['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
                      f"{u['invalid_answers']} invalid answers retried, {u['prompt_tokens']} prompt tokens")
    console.out.print(f"to release: streamcue release build --records {out} "
                      f"--video-root {video_root if anonymized else out / 'videos'} ...")


