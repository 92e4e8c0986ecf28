"""``streamcue run BENCHMARK RECORDS --out RUN``: replay and score in one command, into a run folder.

The records are selected (``--split``, ``--ids``, ``--limit``), played with the ``replay`` command's
machinery (:func:`streamcue.cli.replay.run_replay`: the same engine, protocols, strategies, cache)
and scored by the benchmark's registered metric over the records played
(:func:`streamcue.metrics.run.finish_run`). The run folder: docs/runs.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.cli.options import LLMModel, NoCache, VisionBaseURL, VisionStructured
from streamcue.cli.replay import CONTEXT_HELP, PROMPT_SET_HELP
from streamcue.registry import BENCHMARKS

__all__ = ["run_command"]


def run_command(
    benchmark: Annotated[str, typer.Argument(help=f"The benchmark: {', '.join(BENCHMARKS)}.")],
    records: Annotated[Path, typer.Argument(help="Its records: a build folder (streamcue build ...) or one record "
                                                 "file.")],
    out: Annotated[Path, typer.Option(help="The run folder: results.json, samples.jsonl, report.html, "
                                           "predictions.jsonl, replay_report.json, played/.")],
    video_root: Annotated[Optional[Path], typer.Option(
        help="Folder the videos' uri fields are relative to (or --no-video).")] = None,
    no_video: Annotated[bool, typer.Option("--no-video", help="A blind run: the model sees no frames, only their "
                                                              "times (labelled blind in results.json).")] = False,
    videos: Annotated[Optional[Path], typer.Option(
        help="videos.jsonl with durations, uris and splits (default: the one beside RECORDS).")] = None,
    split: Annotated[Optional[str], typer.Option(help="Play only the records of this split's videos (train, "
                                                      "validation, test).")] = None,
    ids: Annotated[Optional[str], typer.Option(help="Play only these record ids: comma-separated, or @FILE with one "
                                                    "id a line.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Play only the first N records (after --split and --ids); the "
                                                      "score is over what was played, n_benchmark beside it.")] = None,
    llm_base_url: VisionBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: VisionStructured = "json_schema",
    concurrency: Annotated[int, typer.Option(help="Requests in flight at most (passed to the replay engine).")] = 1,
    temperature: Annotated[float, typer.Option(help="Sampling temperature of every call (recorded).")] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="Most tokens an answer may have (recorded).")] = 1024,
    strategy: Annotated[Optional[str], typer.Option(help="When the model is called (default: the benchmark's own; "
                                                         "see streamcue replay --help).")] = None,
    memory: Annotated[str, typer.Option(help="Which frames a call sees: SW, U, SW+U, window or OASIS.")] = "SW+U",
    k: Annotated[int, typer.Option(help="Frames per call.")] = 16,
    fps: Annotated[float, typer.Option(help="Frames per second sampled from the video.")] = 1.0,
    window_s: Annotated[Optional[float], typer.Option(help="Show only the frames of the last N seconds.")] = None,
    history: Annotated[Optional[str], typer.Option(help="Earlier turns show the gold answers (gold) or the model's "
                                                        "own (own); default: the benchmark's.")] = None,
    prompt_set: Annotated[Optional[str], typer.Option(help=PROMPT_SET_HELP)] = None,
    context: Annotated[Optional[str], typer.Option(help=CONTEXT_HELP)] = None,
    judge_llm_base_url: Annotated[Optional[str], typer.Option(
        help="Benchmarks scored by an LLM judge (streambench): its OpenAI-compatible base URL (default: "
             "--llm-base-url's).")] = None,
    judge_llm_model: Annotated[Optional[str], typer.Option(
        help="The LLM judge's model (default: --llm-model's; StreamBench's paper used LLaMA-3).")] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% intervals (over videos).")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap (recorded).")] = 0,
    no_cache: NoCache = False,
) -> None:
    """Replay a benchmark's records to a model and score them: one run folder with results, samples and a page.

    OVO-Bench and StreamingBench are asked with their official prompts by default (--prompt-set official:
    each question's official text sent alone, the plain answer scored by the official rule; --prompt-set
    streamcue: streamcue's prompts with JSON answers). Every call is cached: a re-run makes no call. A
    partial run (--split, --ids, --limit) is scored over the records played, with n_played and n_benchmark
    in results.json. See docs/runs.md.

    Examples:

        streamcue run ovo-bench out/ovo --out runs/qwen-ovo --video-root /data/ovo --window-s 60 \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct --concurrency 8

        streamcue run streamingbench out/sb --out runs/sb-try --limit 20 --llm-model Qwen2.5-VL-7B-Instruct \\
            --llm-base-url http://127.0.0.1:8000/v1 --context last-60s

        streamcue compare runs/qwen-ovo runs/llava-ovo
    """
    import shlex
    import sys

    from streamcue.cli.replay import protocol_options, run_replay, with_options
    from streamcue.errors import ConfigError, mask_secrets
    from streamcue.io import read_jsonl
    from streamcue.loaders.protocols import PROTOCOLS
    from streamcue.metrics.bootstrap import BootstrapSettings
    from streamcue.metrics.run import finish_run, now, prompt_versions, select_records, write_played
    from streamcue.prologue import check_io
    from streamcue.registry import get_benchmark

    get_benchmark(benchmark)
    if benchmark not in PROTOCOLS:
        raise ConfigError(f"no replay protocol for {benchmark}; known: {', '.join(PROTOCOLS)}")
    protocol = with_options(PROTOCOLS[benchmark], prompt_set, context)  # an option it lacks: one line, exit 2
    if limit is not None and limit < 1:
        raise ConfigError("--limit must be at least 1")
    if concurrency < 1 or max_tokens < 1 or resamples < 1:
        raise ConfigError("--concurrency, --max-tokens and --resamples must be at least 1")
    if not (math.isfinite(temperature) and 0 <= temperature <= 2):
        raise ConfigError(f"--temperature must be a number in [0, 2], got {temperature}")
    wanted = _ids(ids) if ids is not None else None
    inputs = [records, *([videos] if videos else []), *([video_root] if video_root else [])]
    check_io({out / name: name for name in ("results.json", "samples.jsonl", "report.html", "played")}, inputs,
             out_folder=out)
    started = now()
    selection = select_records(records, benchmark, videos=videos, split=split, ids=wanted, limit=limit)
    fresh = not out.exists()
    write_played(out, selection)
    try:
        replay_report = run_replay(
            records=out / "played", out=out, strategy=strategy, memory=memory, k=k, fps=fps, window_s=window_s,
            history=history, benchmark=benchmark, kind=None,
            videos=out / "played" / "videos.jsonl" if selection.videos else None, video_root=video_root,
            span="clip", timing="synchronous", limit=None, llm_base_url=llm_base_url, llm_model=llm_model,
            llm_structured=llm_structured, no_cache=no_cache, strategy_options={}, no_video=no_video,
            concurrency=concurrency, temperature=temperature, max_tokens=max_tokens, prompt_set=prompt_set,
            context=context)
    except BaseException:  # a refused or failed replay leaves no run folder behind (the cache keeps the calls made)
        import shutil

        shutil.rmtree(out / "played", ignore_errors=True)
        if fresh and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    predictions = read_jsonl(out / "predictions.jsonl")
    kinds = replay_report.get("kinds", {})
    window = window_s if window_s is not None else getattr(protocol, "window_s", None)
    endpoint = replay_report.get("llm") or {}  # the settings the engine resolved; none for a strategy without one
    if getattr(protocol, "complete_prompts", False):  # official prompts: sent alone, no answer prompt around them
        prompts = {kind: protocol_options(protocol)["prompt_versions"] for kind in kinds}
    else:
        prompts = {kind: prompt_versions(protocol, [info["strategy"]], {kind: protocol.mode[kind]})
                   for kind, info in kinds.items()}
    run_info = {
        "records": str(records), "split": split, "started_at": started,
        "command": mask_secrets(shlex.join(["streamcue", *sys.argv[1:]])) if sys.argv[1:2] == ["run"] else None,
        "model": endpoint.get("model"), "endpoint": endpoint.get("endpoint"),
        "generation": {"temperature": temperature, "max_tokens": max_tokens, "concurrency": concurrency,
                       "structured": llm_structured, "cache": not no_cache},
        "frames": {"memory": memory, "k": k, "fps": fps, "window_s": window,
                   "pixels": video_root is not None, "blind": bool(replay_report.get("blind")),
                   "frames_total": sum(v.get("replay", {}).get("frames_total", 0) for v in kinds.values()),
                   "frames_seen": sum(v.get("replay", {}).get("frames_seen", 0) for v in kinds.values())},
    }
    protocol_info = {"name": benchmark, "history": replay_report.get("history"), "span": replay_report.get("span"),
                     "timing": replay_report.get("timing"), **protocol_options(protocol),
                     "kinds": {kind: {"strategy": info.get("strategy"), "options": info.get("options", {})}
                               for kind, info in kinds.items()}}
    results = finish_run(out, benchmark=benchmark, selection=selection, predictions=predictions,
                         replay_report=replay_report, run=run_info, prompts=prompts, protocol=protocol_info,
                         bootstrap=BootstrapSettings(resamples=resamples, seed=seed),
                         evaluate_options=_judge(benchmark, judge_llm_base_url or llm_base_url,
                                                 judge_llm_model or llm_model, llm_structured, not no_cache))
    print_results(results, out)


def print_results(results: dict[str, Any], out: Path) -> None:
    """The group and task tables with their intervals, the counts and where the files are."""
    for name in ("group", "task"):
        rows = {row: {"estimate": v["estimate"], "95% low": v["low"], "95% high": v["high"], "n": v["n"],
                      "videos": v["videos"]} for row, v in results["tables"][name].items()}
        if rows:
            console.out.print(console.table(f"{results['benchmark']['name']} by {name} ({results['metric']['name']}, "
                                            f"{results['metric']['config_version']})",
                                            ["estimate", "95% low", "95% high", "n", "videos"], rows, name))
    counts = results["counts"]
    console.out.print(f"played {results['n_played']} of {results['n_benchmark']} records; asked {counts['asked']}, "
                      f"answered {counts['answered']}, unparseable {counts['unparseable']} (scored wrong); "
                      f"{counts.get('endpoint_calls', 0)} endpoint calls, {counts.get('cache_hits', 0)} cache hits",
                      markup=False)
    if results["n_played"] < results["n_benchmark"]:
        console.out.print("partial run: scored over the records played only", markup=False)
    console.out.print(f"run folder {out}: results.json, samples.jsonl, report.html", markup=False)


def _judge(benchmark: str, base_url: str | None, model: str | None, structured: str,
           use_cache: bool) -> dict[str, Any]:
    """evaluate() options for a benchmark whose metric asks an LLM judge: the judge's endpoint (the model's by
    default); none for the others."""
    from streamcue.metrics import METRICS
    from streamcue.registry import get_benchmark

    metric = METRICS[get_benchmark(benchmark).metric]
    if not metric.uses_judge or metric.default_judge not in ("streambench", "mira", "llm"):
        return {"use_cache": use_cache}
    options = {"base_url": base_url, "model": model, "structured": structured}
    return {"use_cache": use_cache, "judge_options": {k: v for k, v in options.items() if v}}


def _ids(value: str) -> list[str]:
    from streamcue.errors import InputError

    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise InputError("--ids @FILE: no such file", file=path)
        items = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    else:
        items = [part.strip() for part in value.split(",")]
    items = [i for i in items if i]
    if not items:
        from streamcue.errors import ConfigError

        raise ConfigError("--ids names no record id")
    return list(dict.fromkeys(items))
