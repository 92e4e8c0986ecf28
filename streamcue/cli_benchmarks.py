"""``streamcue build ovo-bench`` and ``streamcue build streamingbench``: the two published benchmarks as records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console

__all__ = ["build_ovo_bench", "build_streamingbench"]


def _build(name: str, config: Any, out: Path) -> None:
    from streamcue.dataset_builders import get_builder, run_builder

    result, report = run_builder(get_builder(name), config, out)
    summary = report.details
    rows = {f"{group} {task}": {"records": n}
            for group, tasks in summary["by_task"].items() for task, n in tasks.items()}
    console.out.print(console.table("records by group and task", ["records"], rows, "task"))
    quirks = ", ".join(f"{n} {name}" for name, n in summary["quirks"].items()) or "none"
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    console.out.print(f"wrote {counts} to {out} (quirks: {quirks}; see build_report.json)")


def build_ovo_bench(
    annotations: Annotated[Path, typer.Option(help="OVO-Bench's data/ovo_bench_new.json.")],
    out: Annotated[Path, typer.Option(
        help="Output folder: mc_question.jsonl, active_item.jsonl, videos.jsonl, build_report.json.")],
) -> None:
    """Convert OVO-Bench: backward and real-time questions to mc_question, forward REC/SSR/CRR to active_item.

    Videos are not copied: videos.jsonl lists each one's path relative to your OVO-Bench video
    root. The annotations are CC BY-NC-SA 4.0: convert locally, do not redistribute.

    Example:

        streamcue build ovo-bench --annotations ../shared/data/ovo_bench/ovo_bench_new.json --out out/ovo
    """
    from streamcue.dataset_builders import ovo_bench

    _build("ovo_bench", ovo_bench.Config(annotations), out)


def build_streamingbench(
    questions: Annotated[Path, typer.Option(help="StreamingBench's src/data folder with the questions_*.json files.")],
    out: Annotated[Path, typer.Option(
        help="Output folder: mc_question.jsonl, active_item.jsonl, videos.jsonl, build_report.json.")],
    subset: Annotated[Optional[list[str]], typer.Option(
        help="Convert only questions_<SUBSET>.json (repeatable), e.g. real, sqa, proactive.")] = None,
) -> None:
    """Convert StreamingBench: real, omni and SQA questions to mc_question, proactive ones to active_item.

    Every questions_*.json of the folder is converted (the _stream and _50 variants too; each
    record names its subset). Videos are not copied: videos.jsonl lists relative paths.

    Example:

        streamcue build streamingbench --questions ../shared/data/streamingbench --out out/sb
    """
    from streamcue.dataset_builders import streamingbench

    _build("streamingbench", streamingbench.Config(questions, tuple(subset or ())), out)


def replay_benchmark_command(
    records: Annotated[Path, typer.Argument(
        help="A build ovo-bench / build streamingbench folder, or one record file.")],
    out: Annotated[Path, typer.Option(help="Output folder: predictions.jsonl and replay_report.json.")],
    window_s: Annotated[Optional[float], typer.Option(
        help="Show only the frames of the last N seconds (e.g. 60).")] = None,
    history: Annotated[str, typer.Option(help="Earlier SQA turns carry the gold answers (gold, as the official code) "
                                              "or the model's own (own).")] = "gold",
    fps: Annotated[float, typer.Option(help="Frames per second sampled up to each question's time.")] = 1.0,
    k: Annotated[int, typer.Option(help="Frames per call, chosen by --memory.")] = 8,
    memory: Annotated[str, typer.Option(help="SW (last k), U (uniform) or SW+U.")] = "SW+U",
    video_root: Annotated[Optional[Path], typer.Option(help="Folder the videos' uri fields are relative to; "
                                                             "without it frames carry only their times.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Play only the first N records of each kind.")] = None,
    llm_base_url: Annotated[Optional[str], typer.Option(
        help="OpenAI-compatible base URL (or $STREAMCUE_LLM_BASE_URL).")] = None,
    llm_model: Annotated[Optional[str], typer.Option(
        help="Model name (or $STREAMCUE_LLM_MODEL); key from $STREAMCUE_LLM_API_KEY.")] = None,
    llm_structured: Annotated[str, typer.Option(
        help="Structured output: json_schema, json_object or none.")] = "json_schema",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
) -> None:
    """Replay OVO-Bench / StreamingBench records to a vision model with each benchmark's protocol.

    Questions arrive at their time and the model sees frames up to then; OVO-Bench forward
    items are asked at every probe time; StreamingBench proactive items are polled every second
    (question time + 1 s to ground-truth time + 4 s). Score the predictions with
    streamcue evaluate ovo-bench / streamingbench.

    Example:

        streamcue replay-benchmark out/ovo --out runs/ovo --window-s 60 \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B --video-root /data/ovo
    """
    from streamcue.io import read_jsonl, write_json, write_jsonl
    from streamcue.llm import LLMSettings
    from streamcue.loaders.replay_benchmarks import BenchmarkAsker, replay_benchmark
    from streamcue.metrics.bench_scoring import record_files

    rows = []
    for _, path in record_files(records):
        rows += read_jsonl(path)[:limit] if limit is not None else read_jsonl(path)
    settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured)
    frame_image = _frame_source(records, video_root, fps) if video_root else None
    predictions, report = replay_benchmark(BenchmarkAsker(settings, use_cache=not no_cache), rows, fps=fps, k=k,
                                           policy=memory, window_s=window_s, history=history,
                                           frame_image=frame_image)
    write_jsonl(out / "predictions.jsonl", predictions)
    write_json(out / "replay_report.json", report)
    console.out.print(f"{len(predictions)} predictions written to {out / 'predictions.jsonl'} "
                      f"({report['endpoint_calls']} endpoint calls, {report['cache_hits']} from cache)")


def _frame_source(records: Path, video_root: Path, fps: float):
    """``frame_image(video_id, index, t_s)`` decoding each video once, from the videos.jsonl beside the records."""
    from streamcue.errors import InputError
    from streamcue.io import read_jsonl
    from streamcue.loaders.frames import VideoFrames
    from streamcue.loaders.load import video_path

    videos_file = (records if records.is_dir() else records.parent) / "videos.jsonl"
    if not videos_file.is_file():
        raise InputError("--video-root needs the videos.jsonl the builder wrote beside the records", file=videos_file)
    uris = {v["video_id"]: v for v in read_jsonl(videos_file)}
    decoded: dict[str, VideoFrames] = {}

    def frame_image(video_id: str, index: int, t_s: float):
        if video_id not in decoded:
            decoded.clear()  # one video's frames in memory at a time
            decoded[video_id] = VideoFrames(video_path(uris[video_id], video_root), fps=fps)
        return decoded[video_id](index, t_s)

    return frame_image
