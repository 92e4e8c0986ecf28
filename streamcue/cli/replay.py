"""``streamcue replay`` and ``streamcue replay-benchmark``: play records to a model, write predictions and a report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.cli.options import LLMModel, NoCache, VisionBaseURL, VisionStructured

__all__ = ["KIND_KEYS", "MEMORIES", "DEFAULT_EVERY", "replay_command", "replay_benchmark_command"]


KIND_KEYS = (("plan", "guidance"), ("qa_id", "interval_qa"), ("task_id", "dense_caption"))
MEMORIES = ("SW", "U", "SW+U", "OASIS")
DEFAULT_EVERY = {"periodic": 30.0, "turn-loop": 5.0, "self-check": 1.0}


def _kind(first: dict[str, Any], records: Path) -> str:
    from streamcue.errors import InputError

    for key, kind in KIND_KEYS:
        if key in first:
            return kind
    raise InputError("cannot tell the record kind (no qa_id, task_id or plan); pass --kind", file=records, line=1)


def replay_command(
    records: Annotated[Path, typer.Argument(help="JSONL records: interval_qa, dense_caption or guidance.")],
    out: Annotated[Path, typer.Option(help="Output folder: predictions.jsonl and replay_report.json.")],
    strategy: Annotated[str, typer.Option(
        help="periodic, single-call, polling, response-in-last, turn-loop or self-check.")] = "polling",
    kind: Annotated[Optional[str], typer.Option(help="Record kind (default: told from the first record).")] = None,
    videos: Annotated[Optional[Path], typer.Option(
        help="videos.jsonl with the durations (default: the one beside RECORDS).")] = None,
    video_root: Annotated[Optional[Path], typer.Option(
        help="Folder the videos' uri fields are relative to; without it frames carry only their times.")] = None,
    fps: Annotated[float, typer.Option(help="Frames per second sampled from the video.")] = 1.0,
    poll_hz: Annotated[float, typer.Option(
        help="polling: polls per second (ESTP-Bench: 0.175; StreamingBench: 1).")] = 0.175,
    every_s: Annotated[Optional[float], typer.Option(
        help="turn-loop (5), self-check (1), periodic (30): seconds between steps.")] = None,
    memory: Annotated[str, typer.Option(
        help="Memory policy: SW, U, SW+U or OASIS (event memory; needs the embed extra).")] = "SW+U",
    k: Annotated[int, typer.Option(help="Frames per call (OASIS: its short window is min(k, 8)).")] = 16,
    window_s: Annotated[Optional[float], typer.Option(help="Show only the frames of the last N seconds.")] = None,
    span: Annotated[str, typer.Option(
        help="interval_qa: clip (the record's clip, else query time to 5 s after the last answer) or "
             "video.")] = "clip",
    turns: Annotated[str, typer.Option(
        help="Earlier turns of multi-turn questions: own (the model's answers) or gold.")] = "own",
    protocol: Annotated[str, typer.Option(help="synchronous or asynchronous (VSAS-Bench).")] = "synchronous",
    mistake_hints: Annotated[Optional[Path], typer.Option(
        help="turn-loop: LiveCook's typical mistakes per instruction, shown with the mistake question: the "
             "mistake_summaries.jsonl of `build livecook-summaries`, or a JSON object {instruction text: hint}.")]
        = None,
    limit: Annotated[Optional[int], typer.Option(help="Play only the first N records.")] = None,
    llm_base_url: VisionBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: VisionStructured = "json_schema",
    no_cache: NoCache = False,
) -> None:
    """Replay records to a vision model with one of the papers' strategies and write its predictions.

    Every call is cached: a re-run, or a run resumed after a kill, repeats no call. The
    predictions follow the *_prediction schema of the records' kind, ready for
    `streamcue evaluate`.

    Example (ESTP-Bench polling at 1 Hz, then scoring):

        streamcue replay out/ego4d/interval_qa.jsonl --out runs/poll --strategy polling --poll-hz 1 \\
            --video-root /data/ego4d --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct

        streamcue evaluate estp-f1 --gt out/ego4d/interval_qa.jsonl --pred runs/poll/predictions.jsonl
    """
    from streamcue.errors import ConfigError, InputError
    from streamcue.io import read_jsonl, write_json, write_jsonl
    from streamcue.llm import LLMSettings
    from streamcue.loaders.replay_records import replay_records
    from streamcue.loaders.strategies import STRATEGIES, make_strategy
    from streamcue.schemas import load_durations, validate, validate_file

    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if memory not in MEMORIES:
        raise ConfigError(f"unknown memory {memory!r}; known: {', '.join(MEMORIES)}")
    if not 0 < fps <= 60:
        raise ConfigError(f"--fps must be a positive number of frames per second, at most 60, got {fps}")
    if k < 1 or (limit is not None and limit < 1):
        raise ConfigError("--k and --limit must be at least 1")
    if not records.is_file():
        raise InputError("no such records file", file=records)
    rows = read_jsonl(records)
    if not rows:
        raise InputError("no records in the file", file=records)
    kind = kind or _kind(rows[0], records)
    videos = videos or records.with_name("videos.jsonl")
    if not videos.is_file():
        raise InputError("no videos.jsonl with the durations (pass --videos)", file=videos)
    validate_file(records, kind, videos=videos)
    durations = load_durations(videos)
    out.mkdir(parents=True, exist_ok=True)
    predictions_path = out / "predictions.jsonl"
    if predictions_path.resolve() in (records.resolve(), videos.resolve()):
        raise ConfigError(f"--out {out} would overwrite the input {predictions_path.name}")

    settings = None
    if strategy != "periodic" or memory == "OASIS":
        settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured)
    options: dict[str, Any] = {}
    if strategy == "polling":
        options["hz"] = poll_hz
    if strategy in DEFAULT_EVERY:
        options["every_s"] = every_s if every_s is not None else DEFAULT_EVERY[strategy]
    if strategy != "periodic":
        options["use_cache"] = not no_cache
    if mistake_hints is not None:
        if strategy != "turn-loop":
            raise ConfigError("--mistake-hints is for --strategy turn-loop")
        options["hints"] = _hints(mistake_hints)
    model = make_strategy(strategy, settings, kind, **options)
    policy: Any = memory
    if memory == "OASIS":
        from streamcue.loaders.strategies.oasis import OasisMemory

        policy = OasisMemory(settings, short_k=min(k, 8), use_cache=not no_cache)

    frames_for = None
    if video_root is not None:
        frames_for = _frames_for(video_root, videos, fps)
    selected = rows[:limit] if limit else rows
    predictions, report = replay_records(model, selected, kind, durations, fps=fps, span=span, turns=turns,
                                         frames_for=frames_for, k=k, policy=policy, protocol=protocol,
                                         window_s=window_s)
    prediction_kind = f"{kind}_prediction"
    for prediction in predictions:
        validate(prediction, prediction_kind)
    write_jsonl(predictions_path, predictions)
    report = {"records": records.name, "kind": kind, "strategy": strategy, "memory": memory, "fps": fps,
              "options": {key: value for key, value in options.items() if key not in ("use_cache", "hints")},
              **({"mistake_hints": mistake_hints.name} if mistake_hints else {}),
              "replay": {"steps" if key == "calls" else key: value for key, value in report.items()},
              "endpoint": model.report() if hasattr(model, "report") else _usage(model),
              **({"memory_calls": policy.report()} if memory == "OASIS" else {})}
    write_json(out / "replay_report.json", report)
    endpoint = report["endpoint"]
    console.out.print(f"{len(predictions)} {prediction_kind} written to {predictions_path}", markup=False)
    if endpoint:
        console.out.print(f"{endpoint.get('endpoint_calls', 0)} endpoint calls, {endpoint.get('cache_hits', 0)} cache "
                          f"hits, {endpoint.get('prompt_tokens', 0)} prompt tokens, mean latency "
                          f"{endpoint.get('latency_mean_s', 0.0):.3f} s", markup=False)
    for key in ("malformed_lines", "out_of_range_lines"):
        if endpoint.get(key):
            console.out.print(f"{endpoint[key]} {key.replace('_', ' ')} in the model's answers (counted, skipped)",
                              markup=False)


def _hints(path: Path) -> dict[Any, str]:
    from streamcue.errors import InputError
    from streamcue.io import read_json, read_jsonl
    from streamcue.schemas import validate_file

    if not path.is_file():
        raise InputError("no such mistake-hints file", file=path)
    if path.suffix == ".jsonl":
        validate_file(path, "mistake_summary")
        return {(r["video_id"], r["plan_index"]): r["summary"] for r in read_jsonl(path)}
    hints = read_json(path)
    if not isinstance(hints, dict) or not all(isinstance(v, str) for v in hints.values()):
        raise InputError("mistake hints must be a JSON object of instruction text -> hint text", file=path)
    return hints


def _usage(model: Any) -> dict[str, Any]:
    client = getattr(model, "client", None)
    if client is None:
        return {}
    u = client.usage
    return {"endpoint_calls": u.calls, "cache_hits": u.cache_hits, "invalid_answers": u.invalid_answers,
            "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}


def _frames_for(video_root: Path, videos: Path, fps: float) -> Any:
    """``video_id -> frame_image`` decoding each video once, from its uri under the root."""
    from streamcue.errors import InputError
    from streamcue.io import read_jsonl
    from streamcue.loaders.frames import VideoFrames
    from streamcue.loaders.load import video_path

    by_id = {v["video_id"]: v for v in read_jsonl(videos)}
    decoded: dict[str, Any] = {}

    def frames_for(video_id: str) -> Any:
        if video_id not in decoded:
            path = video_path(by_id[video_id], video_root)
            if not path.is_file():
                raise InputError(f"video file missing under the video root: {by_id[video_id]['uri']}",
                                 record=f"video_id={video_id}", field="$.uri")
            decoded.clear()  # one decoded video in memory at a time
            decoded[video_id] = VideoFrames(path, fps=fps)
        return decoded[video_id]

    return frames_for


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
    from streamcue.metrics.bench_readers import record_files

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

