"""``streamcue replay``: play records of any kind to a model with a benchmark's protocol; predictions and a report.

The strategy flags (``--poll-hz``, ``--every-s``, ``--mistake-hints``, ...) are built from the
options each strategy declares (:data:`streamcue.loaders.strategies.STRATEGIES`); nothing here
knows one strategy from another. ``replay-benchmark`` is a deprecated alias for one release.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.cli.options import LLMModel, NoCache, VisionBaseURL, VisionStructured
from streamcue.loaders.strategies import STRATEGIES

__all__ = ["STRATEGY_FLAGS", "replay_command", "replay_benchmark_command", "with_options", "protocol_options"]


def _strategy_flags() -> dict[str, list[tuple[str, Any]]]:
    """``{cli flag: [(strategy name, Option)]}`` from the strategies' declarations."""
    flags: dict[str, list[tuple[str, Any]]] = {}
    for name, cls in STRATEGIES.items():
        for option in cls.options:
            flags.setdefault(option.cli_flag, []).append((name, option))
    return flags


STRATEGY_FLAGS = _strategy_flags()
PROMPT_SET_HELP = ("ovo-bench, streamingbench: official (default: the benchmark's own prompt templates, sent alone "
                   "as plain text; the raw answer is read by the official rule) or streamcue (streamcue's prompts, "
                   "JSON answers).")
CONTEXT_HELP = ("streamingbench: all (default: every frame up to the question, as the released code) or last-60s "
                "(the public leaderboard; the window when --window-s is not given).")


def _replay(
    records: Annotated[Path, typer.Argument(
        help="A record file (interval_qa, dense_caption, guidance, mc_question, active_item, ...) or a build folder.")],
    out: Annotated[Path, typer.Option(help="Output folder: predictions.jsonl and replay_report.json.")],
    strategy: Annotated[Optional[str], typer.Option(
        help=f"When the model is called: {', '.join(STRATEGIES)} (default: the benchmark's own).")] = None,
    memory: Annotated[str, typer.Option(
        help="Which frames a call sees: SW, U, SW+U, window (the last --window-s seconds) or OASIS (event "
             "memory; needs the embed extra).")] = "SW+U",
    k: Annotated[int, typer.Option(help="Frames per call (OASIS: its short window is min(k, 8)).")] = 16,
    fps: Annotated[float, typer.Option(help="Frames per second sampled from the video.")] = 1.0,
    window_s: Annotated[Optional[float], typer.Option(
        help="Show only the frames of the last N seconds (now - N < t <= now: 60 frames for 60 s at 1 fps).")] = None,
    history: Annotated[Optional[str], typer.Option(
        help="Earlier turns of multi-turn questions show the gold answers (gold) or the model's own (own); "
             "default: the benchmark's (StreamingBench gold, as its code; ESTP-Bench own).")] = None,
    turns: Annotated[Optional[str], typer.Option(hidden=True, help="Old name of --history.")] = None,
    benchmark: Annotated[Optional[str], typer.Option(
        help="The benchmark whose protocol plays the records (default: the records' benchmark field, or the "
             "only one that plays their kind).")] = None,
    kind: Annotated[Optional[str], typer.Option(help="Record kind (default: told from the file).")] = None,
    prompt_set: Annotated[Optional[str], typer.Option(help=PROMPT_SET_HELP)] = None,
    context: Annotated[Optional[str], typer.Option(help=CONTEXT_HELP)] = None,
    videos: Annotated[Optional[Path], typer.Option(
        help="videos.jsonl with the durations and uris (default: the one beside RECORDS).")] = None,
    video_root: Annotated[Optional[Path], typer.Option(
        help="Folder the videos' uri fields are relative to; without it frames carry only their times.")] = None,
    videos_root: Annotated[Optional[Path], typer.Option(hidden=True, help="Old name of --video-root.")] = None,
    span: Annotated[str, typer.Option(
        help="interval_qa: clip (the record's clip, else query time to 5 s after the last answer) or "
             "video.")] = "clip",
    timing: Annotated[str, typer.Option(
        help="synchronous (the model answers before the next frame) or asynchronous (VSAS-Bench: a slow "
             "model sees fewer frames and answers late).")] = "synchronous",
    protocol: Annotated[Optional[str], typer.Option(hidden=True, help="Old name of --timing.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Play only the first N records in total.")] = None,
    no_video: Annotated[bool, typer.Option(
        "--no-video", help="Play without videos (a blind run: the model sees only frame times); needed when "
                           "no --video-root is given to a strategy that calls a model.")] = False,
    concurrency: Annotated[int, typer.Option(
        help="Records played at once (threads; a multi-turn group is one); predictions stay in input order.")] = 1,
    transport: Annotated[str, typer.Option(
        help="How frames reach the model: frames (JPEG images) or video_url (the clip itself, for servers such as "
             "vLLM that decode video; with its frame count).")] = "frames",
    frame_side: Annotated[Optional[int], typer.Option(
        help="Frames at most this many pixels on their longest side (aspect kept; 0: full size).")] = 448,
    frame_pixels: Annotated[Optional[int], typer.Option(
        help="Per-frame pixel budget: frames scaled down to at most this many pixels (width x height), aspect "
             "kept.")] = None,
    jpeg_quality: Annotated[int, typer.Option(help="JPEG quality of the frames sent (1-100).")] = 85,
    frame_label: Annotated[str, typer.Option(
        help="Text before each frame: seconds ('Frame at 12.0 s'), clock ('Frame at 00:00:12') or none.")] = "seconds",
    video_url: Annotated[str, typer.Option(
        help="With --transport video_url: send the clip as a data URL (data) or a file:// path (file; the "
             "server must read this machine's files).")] = "data",
    temperature: Annotated[Optional[float], typer.Option(
        help="Sampling temperature sent to the endpoint (part of the cache key; default 0).")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(
        help="Most tokens per answer sent to the endpoint (part of the cache key; default 1024).")] = None,
    llm_retries: Annotated[int, typer.Option(
        help="Retries of a call answered HTTP 408/409/429/5xx or not answered, with exponential backoff; "
             "counted in the report.")] = 4,
    llm_base_url: VisionBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: VisionStructured = "json_schema",
    no_cache: NoCache = False,
    **strategy_options: Any,
) -> None:
    """Replay records to a vision model with a benchmark's protocol, a strategy and a memory; write its predictions.

    Every valid answer is cached: a re-run, or a run resumed after a kill, repeats no call. The
    predictions follow the *_prediction schema of each record's kind, ready for
    `streamcue evaluate`; samples.jsonl has one line per call (what was sent, the raw and parsed
    answer, latency, cache hit, retries). An unparseable answer is a recorded wrong answer, counted
    and listed in the report. See docs/replay.md.

    Example (ESTP-Bench polling at 1 Hz, then scoring):

        streamcue replay out/ego4d/interval_qa.jsonl --out runs/poll --strategy polling --poll-hz 1 \\
            --video-root /data/ego4d --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct

        streamcue evaluate estp-f1 --gt out/ego4d/interval_qa.jsonl --pred runs/poll/predictions.jsonl

    Example (OVO-Bench with its official prompts, the default: each question's official text sent alone,
    the plain answer scored by the official rule; 8 requests at once, frames of at most 200,704 pixels):

        streamcue replay out/ovo --out runs/ovo --video-root /data/ovo --concurrency 8 \
            --frame-pixels 200704 --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct

    Example (StreamingBench as on its leaderboard, the last 60 s; or streamcue's JSON prompts):

        streamcue replay out/sb --out runs/sb --context last-60s --video-root /data/sb ...
        streamcue replay out/sb --out runs/sb-json --prompt-set streamcue --video-root /data/sb ...
    """
    run_replay(records=records, out=out, strategy=strategy, memory=memory, k=k, fps=fps, window_s=window_s,
               history=history or turns, benchmark=benchmark, kind=kind, videos=videos,
               video_root=video_root or videos_root, span=span, timing=protocol or timing, limit=limit,
               llm_base_url=llm_base_url, llm_model=llm_model, llm_structured=llm_structured, no_cache=no_cache,
               strategy_options=strategy_options, no_video=no_video, concurrency=concurrency, transport=transport,
               frame_side=frame_side, frame_pixels=frame_pixels, jpeg_quality=jpeg_quality, frame_label=frame_label,
               video_url=video_url, temperature=temperature, max_tokens=max_tokens, llm_retries=llm_retries,
               prompt_set=prompt_set, context=context)


def _with_strategy_flags(func: Any) -> Any:
    """``func`` with one typer option per declared strategy flag (its parameters are read from the signature)."""
    signature = inspect.signature(func, eval_str=True)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for flag, declared in STRATEGY_FLAGS.items():
        types = {option.type for _, option in declared}
        kind_ = types.pop() if len(types) == 1 else str
        text = "; ".join(f"{name}: {option.help}" + (f" (default {option.default})" if option.default is not None
                                                     else "") for name, option in declared)
        params.append(inspect.Parameter(
            flag[2:].replace("-", "_"), inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[Optional[kind_], typer.Option(flag, help=text)]))

    def command(**kwargs: Any) -> None:
        base = {p.name: kwargs.pop(p.name) for p in signature.parameters.values()
                if p.kind is not inspect.Parameter.VAR_KEYWORD}
        func(**base, **kwargs)

    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__doc__ = func.__doc__
    command.__name__ = "replay_command"
    return command


replay_command = _with_strategy_flags(_replay)

PLAYABLE_KEYS = (("plan", "guidance"), ("qa_id", "interval_qa"), ("task_id", "dense_caption"),
                 ("question_id", "mc_question"), ("item_id", "active_item"))


def _record_files(records: Path, kind: str | None) -> list[tuple[str, Path]]:
    """``(kind, file)`` of a build folder (every playable kind file in it) or of one record file."""
    from streamcue.errors import InputError
    from streamcue.io import iter_jsonl
    from streamcue.loaders.protocols import PROTOCOLS
    from streamcue.schemas import ID_FIELDS

    playable = list(dict.fromkeys(k for p in PROTOCOLS.values() for k in p.kinds))
    if records.is_dir():
        found = [(k, records / f"{k}.jsonl") for k in playable if (records / f"{k}.jsonl").is_file()]
        if kind is not None:
            found = [(k, f) for k, f in found if k == kind]
        if not found:
            raise InputError(f"no record file to replay in the folder ({', '.join(f'{k}.jsonl' for k in playable)})",
                             file=records)
        return found
    if not records.is_file():
        raise InputError("no such records file", file=records)
    if kind is not None:
        return [(kind, records)]
    if records.stem in playable:
        return [(records.stem, records)]
    first = next(iter(iter_jsonl(records)), (None, None))[1]
    if not isinstance(first, dict):
        raise InputError("no records in the file", file=records)
    keys = PLAYABLE_KEYS + tuple((ID_FIELDS[k], k) for k in playable if k not in dict(PLAYABLE_KEYS).values())
    for key, found in keys:
        if key in first:
            return [(found, records)]
    raise InputError(f"cannot tell the record kind (no {', '.join(k for k, _ in keys)}); pass --kind", file=records,
                     line=1)


def _given_options(strategy: str, kind: str, given: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The strategy's options: given on the command line, else the protocol's default, else the declared default."""
    from streamcue.errors import ConfigError

    declared = {option.cli_flag: option for option in STRATEGIES[strategy].options}
    for flag, value in given.items():
        if value is not None and flag not in declared:
            users = [name for name, _ in STRATEGY_FLAGS[flag]]
            raise ConfigError(f"{flag} is for --strategy {' or '.join(users)}, not {strategy} ({kind})")
    options = {}
    for flag, option in declared.items():
        value = given.get(flag)
        if value is None:
            value = defaults.get(option.name, option.default)
        elif option.load is not None:
            value = option.load(value)
        options[option.name] = value
    return options


def with_options(protocol: Any, prompt_set: str | None, context: str | None) -> Any:
    """``protocol`` with ``--prompt-set`` / ``--context`` (refused, one line, by a protocol that has no such option)."""
    import inspect as inspect_

    from streamcue.errors import ConfigError

    given = {name: value for name, value in (("prompt_set", prompt_set), ("context", context)) if value is not None}
    if not given:
        return protocol
    accepts = inspect_.signature(protocol.with_options).parameters if hasattr(protocol, "with_options") else {}
    for name in given:
        if name not in accepts:
            users = "ovo-bench or streamingbench" if name == "prompt_set" else "streamingbench"
            raise ConfigError(f"--{name.replace('_', '-')} is for {users} records, not {protocol.name}")
    return protocol.with_options(**given)


def protocol_options(protocol: Any) -> dict[str, Any]:
    """What replay_report.json and results.json record of a protocol's options: its prompt set, the versions of
    its prompt files (``name@sha12``) and, for StreamingBench, its context."""
    from streamcue.prompts import load_prompt

    if not hasattr(protocol, "prompt_set"):
        return {}
    out: dict[str, Any] = {"prompt_set": protocol.prompt_set,
                           "prompt_versions": [load_prompt("streamcue.loaders", name).version
                                               for name in protocol.prompts]}
    if hasattr(protocol, "context"):
        out["context"] = protocol.context
    return out


def run_replay(*, records: Path, out: Path, strategy: str | None, memory: str, k: int, fps: float,
               window_s: float | None, history: str | None, benchmark: str | None, kind: str | None,
               videos: Path | None, video_root: Path | None, span: str, timing: str, limit: int | None,
               llm_base_url: str | None, llm_model: str | None, llm_structured: str, no_cache: bool,
               strategy_options: dict[str, Any], no_video: bool = False, concurrency: int = 1,
               transport: str = "frames", frame_side: int | None = 448, frame_pixels: int | None = None,
               jpeg_quality: int = 85, frame_label: str = "seconds", video_url: str = "data",
               temperature: float | None = None, max_tokens: int | None = None, llm_retries: int = 4,
               prompt_set: str | None = None,
               context: str | None = None) -> dict[str, Any]:
    """The replay command's work, shared by ``replay`` and its deprecated alias; returns the report, with the
    per-call samples under ``samples`` (also written to ``OUT/samples.jsonl``)."""
    import math

    from streamcue.loaders.strategies.base import Transport

    from streamcue.errors import ConfigError, InputError
    from streamcue.io import read_jsonl, write_json, write_jsonl
    from streamcue.llm import LLMSettings
    from streamcue.loaders.engine import HISTORIES, SPANS, play
    from streamcue.loaders.frames import FrameSource
    from streamcue.loaders.load import video_path
    from streamcue.loaders.memory import MEMORIES, make_memory
    from streamcue.loaders.protocols import protocol_for
    from streamcue.loaders.strategies import applicable, make_strategy
    from streamcue.paths import check_out_folder, check_outputs
    from streamcue.schemas import validate, validate_file

    given = {flag: strategy_options.get(flag[2:].replace("-", "_")) for flag in STRATEGY_FLAGS}
    if strategy is not None and strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if memory not in MEMORIES:
        raise ConfigError(f"unknown memory {memory!r}; known: {', '.join(MEMORIES)}")
    if not (math.isfinite(fps) and 0 < fps <= 60):
        raise ConfigError(f"--fps must be a positive number of frames per second, at most 60, got {fps}")
    if k < 1 or (limit is not None and limit < 1):
        raise ConfigError("--k and --limit must be at least 1")
    if history is not None and history not in HISTORIES:
        raise ConfigError(f"--history must be gold (the gold answers) or own (the model's), got {history!r}")
    if span not in SPANS:
        raise ConfigError(f"--span must be clip or video, got {span!r}")
    if timing not in ("synchronous", "asynchronous"):
        raise ConfigError(f"--timing must be synchronous or asynchronous, got {timing!r}")
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    if frame_side is not None and frame_side < 0 or frame_pixels is not None and frame_pixels < 4:
        raise ConfigError("--frame-side must be >= 0 (0: full size) and --frame-pixels at least 4")
    if not 1 <= jpeg_quality <= 100:
        raise ConfigError(f"--jpeg-quality must be in 1-100, got {jpeg_quality}")
    if llm_retries < 0:
        raise ConfigError(f"--llm-retries must be >= 0, got {llm_retries}")
    if no_video and video_root is not None:
        raise ConfigError("--no-video and --video-root contradict each other: give one")
    sending = Transport(mode=transport, label=frame_label, video_url_form=video_url)
    if sending.mode == "video_url" and video_root is None:
        raise ConfigError("--transport video_url sends the clip itself: it needs --video-root")
    files = _record_files(records, kind)
    folder = records if records.is_dir() else records.parent
    videos = videos or folder / "videos.jsonl"
    hint_files = [Path(v) for flag, v in given.items() if v is not None and STRATEGY_FLAGS[flag][0][1].type is Path]
    inputs = [f for _, f in files] + ([videos] if videos.is_file() else []) + hint_files
    if records.is_dir():
        inputs.append(records)
    check_out_folder(out)
    check_outputs([(out / "predictions.jsonl", "predictions"), (out / "replay_report.json", "report"),
                   (out / "samples.jsonl", "samples")], inputs, inside_inputs=True)

    # read and validate every input before any call
    plays = []
    left = limit
    for file_kind, path in files:
        validate_file(path, file_kind, videos=videos if videos.is_file() else None)
        rows = read_jsonl(path)
        rows = rows[:left] if left is not None else rows
        if left is not None:
            left -= len(rows)
        if not rows:
            continue
        protocol = with_options(protocol_for(file_kind, rows[0], benchmark), prompt_set, context)
        others = {r.get("benchmark") for r in rows} - {None, protocol.name}
        if others:
            raise InputError(f"records of several benchmarks ({protocol.name}, {', '.join(sorted(others))}) in one "
                             "file; replay one benchmark at a time", file=path)
        name = strategy or protocol.default_strategy[file_kind]
        if not STRATEGIES[name].applies_to(file_kind, protocol.name):
            raise ConfigError(f"strategy {name} plays {' or '.join(STRATEGIES[name].applies)} records, not "
                              f"{file_kind} records of {protocol.name}; for those use "
                              f"{' or '.join(applicable(file_kind, protocol.name))}")
        options = _given_options(name, file_kind, given, dict(protocol.defaults.get(name, {})))
        plays.append((file_kind, path, rows, protocol, name, options))
    if not plays:
        raise InputError("no records in the file", file=records)
    stream = any(p[3].mode[p[0]] == "stream" for p in plays)
    if (stream or video_root is not None) and not videos.is_file():
        raise InputError("no videos.jsonl with the durations and uris (pass --videos)", file=videos)
    by_id = {v["video_id"]: v for v in read_jsonl(videos)} if videos.is_file() else {}
    durations = {vid: v["duration_s"] for vid, v in by_id.items()}
    frames = None
    if video_root is not None:
        paths = {}
        for vid in dict.fromkeys(r["video_id"] for p in plays for r in p[2]):
            if vid not in by_id:
                raise InputError("unknown video (not in videos.jsonl)", file=videos, record=f"video_id={vid}")
            paths[vid] = video_path(by_id[vid], video_root)
            if not paths[vid].is_file():
                raise InputError(f"video file missing under the video root: {by_id[vid]['uri']}", file=videos,
                                 record=f"video_id={vid}", field="$.uri")
        frames = FrameSource(paths, fps=fps, side=frame_side or None, quality=jpeg_quality, pixels=frame_pixels,
                             keep=1)

    needs_endpoint = memory == "OASIS" or any(STRATEGIES[p[4]].needs_endpoint for p in plays)
    settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                   temperature=temperature, max_tokens=max_tokens, max_retries=llm_retries,
                                   max_concurrency=max(4, concurrency)) \
        if needs_endpoint else None
    policy = make_memory(memory, k=k, window_s=window_s, settings=settings, use_cache=not no_cache)
    models = [make_strategy(name, settings, file_kind, protocol=protocol.name, use_cache=not no_cache, **options)
              for file_kind, _, _, protocol, name, options in plays]  # every option checked before any call
    if needs_endpoint and frames is None and not no_video:
        raise ConfigError("no --video-root: the model would see no frames, only their times; pass --video-root "
                          "DIR, or --no-video for a blind run (labelled blind in the report)")
    predictions: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    kinds: dict[str, Any] = {}
    card: dict[str, Any] | None = None
    try:
        for (file_kind, path, rows, protocol, name, options), model in zip(plays, models):
            window = window_s if window_s is not None else getattr(protocol, "window_s", None)
            played, summary = play(rows, file_kind, strategy=model, protocol=protocol, memory=policy, k=k, fps=fps,
                                   window_s=window, history=history, span=span, durations=durations,
                                   frames=frames, timing=timing, concurrency=concurrency, transport=sending)
            for prediction in played:
                validate(prediction, f"{file_kind}_prediction")
            predictions += played
            samples += summary.pop("samples")
            if card is None and hasattr(model, "client"):
                card = model.client.model_card()
            reported = {option.name for option in STRATEGIES[name].options if option.report}
            kinds[file_kind] = {
                "records": path.name, "benchmark": protocol.name, **protocol_options(protocol), "window_s": window,
                "played": len(rows), "strategy": name,
                "options": {key: value for key, value in options.items() if key in reported},
                "replay": {"steps" if key == "calls" else key: value for key, value in summary.items()},
                "endpoint": model.report() if hasattr(model, "report") else {}}
    finally:
        if frames is not None:
            frames.close()
    blind = needs_endpoint and frames is None
    without_pixels = sum(k_["replay"].get("frames_without_pixels", 0) for k_ in kinds.values())
    unparseable = [u for k_ in kinds.values() for u in k_["replay"].get("unparseable_records", [])]
    report = {"records": records.name, "memory": memory, "k": k, "fps": fps, "window_s": window_s,
              "history": history or {p[0]: p[3].history for p in plays}, "span": span, "timing": timing,
              "limit": limit, "concurrency": concurrency, "blind": blind,
              "frames": {"transport": sending.mode, "label": sending.label, "fps": fps, "k": k,
                         "side": frame_side or None, "pixels": frame_pixels, "jpeg_quality": jpeg_quality,
                         **({"video_url": sending.video_url_form} if sending.mode == "video_url" else {}),
                         "without_pixels": without_pixels},
              **({"llm": {"model": settings.model, "endpoint": settings.endpoint, "model_card": card,
                          "structured": settings.structured, "temperature": settings.temperature,
                          "max_tokens": settings.max_tokens, "retries": settings.max_retries,
                          "timeout_s": settings.timeout_s}} if settings is not None else {}),
              "calls": len(samples), "cache_hits": sum(1 for s_ in samples if s_["cached"]),
              "retries": sum(s_["retries"] for s_ in samples), "unparseable": len(unparseable),
              "unparseable_records": unparseable,
              "kinds": kinds, "endpoint": _total(kind_report["endpoint"] for kind_report in kinds.values()),
              **({"memory_calls": policy.report()} if hasattr(policy, "report") else {}),
              **({"videos_decoded": dict(frames.decoded)} if frames is not None else {})}
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "predictions.jsonl", predictions)
    write_jsonl(out / "samples.jsonl", samples)
    write_json(out / "replay_report.json", report)
    endpoint = report["endpoint"]
    if blind:
        console.err.print("warning: blind run (--no-video): the model saw no frames, only their times",
                          markup=False)
    if without_pixels:
        console.err.print(f"warning: {without_pixels} frames were sent without pixels (past the end of a shorter "
                          "video: only their time labels); counted in the report (frames.without_pixels)",
                          markup=False)
    if unparseable:
        where = f"{settings.model} at {settings.endpoint}" if settings is not None else "the model"
        ids = ", ".join(dict.fromkeys(str(u["record_id"]) for u in unparseable))
        console.err.print(f"warning: {len(unparseable)} unparseable answers from {where}, recorded as wrong "
                          f"answers (listed in replay_report.json): {ids[:300]}", markup=False)
    console.out.print(f"{len(predictions)} predictions ({', '.join(f'{len(p[2])} {p[0]}' for p in plays)}) "
                      f"written to {out / 'predictions.jsonl'}", markup=False)
    if endpoint:
        console.out.print(f"{endpoint.get('endpoint_calls', 0)} endpoint calls, {endpoint.get('cache_hits', 0)} cache "
                          f"hits, {endpoint.get('retries', 0)} retries, {endpoint.get('prompt_tokens', 0)} prompt "
                          f"tokens, mean latency {endpoint.get('latency_mean_s', 0.0):.3f} s", markup=False)
    for key in ("malformed_lines", "out_of_range_lines"):
        if endpoint.get(key):
            console.out.print(f"{endpoint[key]} {key.replace('_', ' ')} in the model's answers (counted, skipped)",
                              markup=False)
    return {**report, "samples": samples}


def _total(reports: Any) -> dict[str, Any]:
    """The endpoint reports of several strategies added up (counts summed, latency: mean of means, max)."""
    reports = [r for r in reports if r]
    if len(reports) == 1:
        return reports[0]
    total: dict[str, Any] = {}
    for r in reports:
        for key, value in r.items():
            if key == "latency_max_s":
                total[key] = max(total.get(key, 0.0), value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    if reports:
        total["latency_mean_s"] = sum(r.get("latency_mean_s", 0.0) for r in reports) / len(reports)
        total["strategy"] = "+".join(str(r.get("strategy", "")) for r in reports)
    return total


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
    limit: Annotated[Optional[int], typer.Option(help="Play only the first N records in total.")] = None,
    no_video: Annotated[bool, typer.Option("--no-video", help="Play without videos (a blind run).")] = False,
    llm_base_url: VisionBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: VisionStructured = "json_schema",
    no_cache: NoCache = False,
) -> None:
    """Deprecated (one release): `streamcue replay` plays OVO-Bench and StreamingBench records with their protocols.

    Runs `streamcue replay RECORDS --out OUT --k 8 --prompt-set streamcue ...` (this command's defaults, kept).
    """
    flags = [f"--window-s {window_s:g}" if window_s is not None else "", f"--history {history}", f"--k {k}",
             "--prompt-set streamcue",
             f"--memory {memory}" if memory != "SW+U" else "", f"--fps {fps:g}" if fps != 1.0 else "",
             f"--video-root {video_root}" if video_root else "", f"--limit {limit}" if limit else "",
             "--no-video" if no_video else ""]
    played = [records] if records.is_file() else [f for f in records.glob("*.jsonl") if f.stem != "videos"]
    if not any(f.stem in ("mc_question", "active_item") for f in played) or \
            any(f.stem not in ("mc_question", "active_item") for f in played if records.is_file()):
        from streamcue.errors import ConfigError

        raise ConfigError(f"{records}: replay-benchmark plays OVO-Bench and StreamingBench records (mc_question.jsonl, "
                          "active_item.jsonl); other records play with streamcue replay")
    print(f"streamcue replay-benchmark is deprecated and goes in the next release; run instead: streamcue replay "
          f"{records} --out {out} {' '.join(f for f in flags if f)}", file=sys.stderr)
    run_replay(records=records, out=out, strategy=None, memory=memory, k=k, fps=fps, window_s=window_s,
               history=history, benchmark=None, kind=None, videos=None, video_root=video_root, span="clip",
               timing="synchronous", limit=limit, llm_base_url=llm_base_url, llm_model=llm_model,
               llm_structured=llm_structured, no_cache=no_cache, strategy_options={}, no_video=no_video,
               prompt_set="streamcue")
