"""Playing a prepared replay (:class:`streamcue.loaders.replay_config.Plan`): frames, memory, strategies, the
engine, then predictions.jsonl, samples.jsonl and replay_report.json. Field by field: docs/replay.md."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue import console
from streamcue.errors import ConfigError, InputError

__all__ = ["Played", "write_replay", "play_plan", "play_all", "write_outputs"]


def write_replay(config: Any, out: str | Path) -> dict[str, Any]:
    """Play ``config`` (a :class:`~streamcue.loaders.replay_config.ReplayConfig`) into ``out``: predictions.jsonl,
    samples.jsonl, replay_report.json; returns the report, with the per-call samples under ``samples``."""
    from streamcue.io import read_json, read_jsonl
    from streamcue.loaders.replay_config import check_out, prepare

    out = Path(out)
    if check_out(out, config, []):  # this replay, finished: nothing to do, nothing replaced
        console.out.print(f"{out} holds this replay, finished (the same settings): nothing to do", markup=False)
        samples = read_jsonl(out / "samples.jsonl") if (out / "samples.jsonl").is_file() else []
        return {**read_json(out / "replay_report.json"), "samples": samples}
    return play_plan(prepare(config), out)


def play_plan(plan: Any, out: Path, *, scored: bool = False) -> dict[str, Any]:
    """Play a prepared plan (:func:`streamcue.loaders.replay_config.prepare`) and write its three files into ``out``.
    ``scored``: a run scores the replay next and warns of unparseable answers itself, counted by record as its
    results.json and samples count them (one count, not two)."""
    return write_outputs(plan, play_all(plan), out, scored=scored)


@dataclass
class Played:
    """What a plan's plays gave: predictions, per-call samples, the per-kind reports and what the report needs."""

    predictions: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    kinds: dict[str, Any] = field(default_factory=dict)
    settings: Any = None
    card: dict[str, Any] | None = None
    policy: Any = None
    decoded: dict[str, Any] | None = None
    blind: bool = False
    durations_read: dict[str, float] = field(default_factory=dict)  # read from the files: the records gave none
    #: Each endpoint's calls, failures and drains (a pool's: :meth:`streamcue.llm_pool.LLMPool.endpoints_report`).
    pool: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Seconds the plays took, wall clock.
    wall_s: float = 0.0
    config: Any = None


def _frames(plan: Any) -> Any:
    """The frame source of the plan's videos (None without a video root), every file checked first."""
    from streamcue.loaders.frames import FrameSource
    from streamcue.loaders.load import video_path

    c, where = plan.config, plan.source.origin
    if plan.video_root is None:
        if c.transport == "video_url":
            raise ConfigError("--transport video_url sends the clip itself: it needs --video-root")
        if c.audio != "none":
            raise ConfigError(f"--audio {c.audio} sends the videos' sound: it needs --video-root")
        return None
    paths = {}
    for vid in dict.fromkeys(r["video_id"] for rows in plan.chosen.values() for r in rows):
        if vid not in plan.source.videos:
            raise InputError("unknown video (not among the source's videos)", file=where, record=f"video_id={vid}")
        paths[vid] = video_path(plan.source.videos[vid], plan.video_root)
        if not paths[vid].is_file():
            raise InputError(f"video file missing under the video root: {plan.source.videos[vid]['uri']}", file=where,
                             record=f"video_id={vid}", field="$.uri")
    frames = FrameSource(paths, **frame_settings(c))
    if c.audio != "none" and not any(frames.has_audio(vid) for vid in paths):
        raise InputError(f"--audio {c.audio}: no video played has an audio stream", file=where)
    return frames


def frame_settings(c: Any) -> dict[str, Any]:
    """How the frames of a replay are read (:class:`~streamcue.loaders.frames.FrameSource`'s options but the paths)."""
    return {"fps": c.fps, "side": c.frame_side or None, "quality": c.jpeg_quality, "pixels": c.frame_pixels,
            "keep": 1, "audio": c.audio}


def _read_durations(plan: Any, frames: Any) -> dict[str, float]:
    """The lengths ffmpeg reads from the files under the video root, for the videos whose records give no
    ``duration_s`` (a source that gives none)."""
    from streamcue.video import probe

    known = plan.source.videos
    return {vid: length for vid, path in (frames.paths if frames is not None else {}).items()
            if known.get(vid, {}).get("duration_s") is None and (length := probe(path).duration_s)}


def _settings(plan: Any) -> Any:
    from streamcue.llm import LLMSettings
    from streamcue.loaders.strategies import STRATEGIES

    c = plan.config
    if not (c.memory == "OASIS" or any(STRATEGIES[p[3]].needs_endpoint for p in plan.plays)):
        return None
    return LLMSettings.resolve(base_url=c.llm_base_url, model=c.llm_model, structured=c.llm_structured,
                               temperature=c.temperature, max_tokens=c.max_tokens, max_retries=c.llm_retries,
                               timeout_s=c.llm_timeout, model_revision=c.model_revision,
                               max_concurrency=max(4, c.concurrency))


def play_all(plan: Any) -> Played:
    """Every play of ``plan`` through the engine, every option checked before the first call."""
    from streamcue.loaders.engine import play
    from streamcue.loaders.memory import make_memory
    from streamcue.loaders.strategies import make_strategy
    from streamcue.loaders.strategies.base import Transport

    c = plan.config
    stream = any(p[2].mode[p[0]] == "stream" for p in plan.plays)
    if stream and not plan.source.videos:
        raise InputError("no videos with the durations and uris (pass --videos)", file=plan.source.origin)
    settings = _settings(plan)
    policy = make_memory(c.memory, k=c.k, window_s=c.window_s, settings=settings, use_cache=not c.no_cache)
    models = [make_strategy(name, settings, kind, protocol=protocol.name, use_cache=not c.no_cache, **options)
              for kind, _, protocol, name, options in plan.plays]
    frames = _frames(plan)
    if settings is not None and frames is None and not c.no_video:
        raise ConfigError("no --video-root: the model would see no frames, only their times; pass --video-root "
                          "DIR, or --no-video for a blind run (labelled blind in the report)")
    sending = Transport(mode=c.transport, label=c.frame_label, video_url_form=c.video_url, audio=c.audio)
    read = _read_durations(plan, frames)
    durations = {**{vid: v.get("duration_s") for vid, v in plan.source.videos.items()}, **read}
    done = Played(settings=settings, policy=policy, blind=settings is not None and frames is None,
                  durations_read=read, config=c)
    started = time.perf_counter()
    ray = _ray(c)
    try:
        for (kind, rows, protocol, name, options), model in zip(plan.plays, models):
            window = c.window_s if c.window_s is not None else getattr(protocol, "window_s", None)
            how = {"k": c.k, "fps": c.fps, "window_s": window, "history": c.history, "span": c.span,
                   "durations": durations, "timing": c.timing, "concurrency": c.concurrency, "transport": sending,
                   "run_clock": c.clock}
            if ray is not None:
                model, predictions, summary = _play_remote(done, ray, frames, (kind, rows, protocol, name, options),
                                                           how, settings)
            else:
                predictions, summary = play(rows, kind, strategy=model, protocol=protocol, memory=policy,
                                            frames=frames, **how)
            _keep(done, plan, kind, rows, protocol, name, options, model, window, predictions, summary)
    finally:
        if ray is not None and ray[1]:
            ray[0].shutdown()
        done.wall_s = time.perf_counter() - started
        if frames is not None:
            done.decoded = done.decoded if ray is not None else dict(frames.decoded)
            frames.close()
    return done


def _ray(c: Any) -> tuple[Any, bool] | None:
    """Ray, joined or started for ``--ray`` (:mod:`streamcue.loaders.ray_workers`), and whether it was started here;
    None without ``--ray``."""
    if c.ray is None:
        return None
    from streamcue.loaders.ray_workers import start_ray

    return start_ray(c.ray, c.workers)


def _play_remote(done: Played, ray: tuple[Any, bool], frames: Any, play_: tuple[Any, ...], how: dict[str, Any],
                 settings: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """One play's records sharded by video into Ray tasks (:func:`streamcue.loaders.ray_workers.play_on_ray`): its
    stand-in strategy, predictions and summary, as a local play gives them; the frames decoded added to ``done``."""
    from streamcue.loaders.ray_workers import Remote, play_on_ray, shards_of, with_session
    from streamcue.paths import cache_dir

    kind, rows, protocol, name, options = play_
    c = done.config
    sources = None if frames is None else {"paths": frames.paths, **frame_settings(c)}
    shards = shards_of(rows, kind=kind, protocol=protocol, strategy=name, options=options,
                       settings=with_session(settings), memory={"name": c.memory, "k": c.k, "window_s": c.window_s},
                       frames=sources, play=how, cache_dir=str(cache_dir()), use_cache=not c.no_cache)
    model = Remote()
    predictions, summary, decoded = play_on_ray(rows, shards, ray[0], c.workers, model, protocol.record_id)
    done.decoded = {**(done.decoded or {}), **decoded}
    return model, predictions, summary


def _keep(done: Played, plan: Any, kind: str, rows: list[dict[str, Any]], protocol: Any, name: str,
          options: dict[str, Any], model: Any, window: float | None, predictions: list[dict[str, Any]],
          summary: dict[str, Any]) -> None:
    from streamcue.loaders.replay_config import protocol_options
    from streamcue.loaders.strategies import STRATEGIES
    from streamcue.schemas import validate

    for prediction in predictions:
        validate(prediction, f"{kind}_prediction")
    done.predictions += predictions
    done.samples += summary.pop("samples")
    if done.card is None and hasattr(model, "client"):
        done.card = model.client.model_card()
    for endpoint, figures in (model.client.endpoints_report() if hasattr(model, "client")
                              and hasattr(model.client, "endpoints_report") else {}).items():
        mine = done.pool.setdefault(endpoint, {})
        for key, value in figures.items():
            mine[key] = mine.get(key, 0) + value
    reported = {option.name for option in STRATEGIES[name].options if option.report}
    source = plan.source.files.get(kind)
    done.kinds[kind] = {
        "records": source.name if source is not None else f"{plan.source.origin}:{kind}", "benchmark": protocol.name,
        "need_sound": sum(1 for row in rows if protocol.needs_sound(row)),
        **protocol_options(protocol), "window_s": window, "played": len(rows), "strategy": name,
        "options": {key: value for key, value in options.items() if key in reported},
        "replay": {"steps" if key == "calls" else key: value for key, value in summary.items()},
        "endpoint": model.report() if hasattr(model, "report") else {}}


def _report(plan: Any, done: Played) -> dict[str, Any]:
    from streamcue.loaders.clock import clock_report
    from streamcue.loaders.replay_config import recorded

    c, settings = plan.config, done.settings
    without_pixels = sum(k_["replay"].get("frames_without_pixels", 0) for k_ in done.kinds.values())
    unparseable = [u for k_ in done.kinds.values() for u in k_["replay"].get("unparseable_records", [])]
    llm = {"model": settings.model, "endpoints": list(settings.endpoints), "model_card": done.card,
           "structured": settings.structured, "temperature": settings.temperature, "max_tokens": settings.max_tokens,
           "retries": settings.max_retries, "timeout_s": settings.timeout_s,
           "model_revision": settings.model_revision} if settings is not None else None
    return {"config": recorded(c), "records": Path(str(c.records)).name, "memory": c.memory, "k": c.k, "fps": c.fps,
            "window_s": c.window_s,
            "history": c.history or {p[0]: p[2].history for p in plan.plays}, "span": c.span, "timing": c.timing,
            "clock": clock_report(c.clock, done.samples, sum(k_["replay"].get("clock", {}).get("skipped_moments", 0)
                                                              for k_ in done.kinds.values())),
            "limit": c.limit, "concurrency": c.concurrency, "blind": done.blind, "wall_s": round(done.wall_s, 6),
            **({"pool": done.pool} if done.pool else {}),
            "frames": {"transport": c.transport, "label": c.frame_label, "fps": c.fps, "k": c.k,
                       "side": c.frame_side or None, "pixels": c.frame_pixels, "jpeg_quality": c.jpeg_quality,
                       **({"video_url": c.video_url} if c.transport == "video_url" else {}),
                       "without_pixels": without_pixels},
            "audio": _audio(c.audio, done.samples, sum(k_["need_sound"] for k_ in done.kinds.values())),
            **({"llm": llm} if llm is not None else {}),
            "calls": len(done.samples), "cache_hits": sum(1 for s_ in done.samples if s_["cached"]),
            "retries": sum(s_["retries"] for s_ in done.samples), "unparseable": len(unparseable),
            "unparseable_records": unparseable,
            "kinds": done.kinds, "endpoint": _total(kind_report["endpoint"] for kind_report in done.kinds.values()),
            **({"memory_calls": done.policy.report()} if hasattr(done.policy, "report") else {}),
            **({"videos_decoded": done.decoded} if done.decoded is not None else {}),
            **({"durations_read": done.durations_read} if done.durations_read else {})}


def _audio(mode: str, samples: list[dict[str, Any]], need_sound: int) -> dict[str, Any]:
    """What sound the run sent: the mode, the records played that need sound (the protocol's audio-visual
    questions: ``sound`` video-only without --audio) and the calls sent without sound (no audio stream)."""
    label = None if not need_sound else "video-only" if mode == "none" else "with sound"
    if mode == "none":
        return {"mode": mode, "need_sound": need_sound, "sound": label}
    silent = [s_ for s_ in samples if s_.get("audio") and s_["audio"].get("missing")]
    return {"mode": mode, "need_sound": need_sound, "sound": label, "calls": len(samples),
            "calls_without_audio": len(silent),
            "seconds": round(sum(s_["audio"]["seconds"] for s_ in samples if s_.get("audio")), 6),
            "records_without_audio": sorted({str(s_["record_id"]) for s_ in silent})}


def write_outputs(plan: Any, done: Played, out: Path, *, scored: bool = False) -> dict[str, Any]:
    """predictions.jsonl, samples.jsonl (the messages' text in prompts.jsonl) and replay_report.json; warnings on
    stderr; returns the report with ``samples``."""
    from streamcue.io import write_json, write_jsonl
    from streamcue.loaders.strategies.base import store_prompts

    report = _report(plan, done)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "predictions.jsonl", done.predictions)
    store_prompts(out, done.samples)
    write_jsonl(out / "samples.jsonl", done.samples)
    write_json(out / "replay_report.json", report)
    _say(plan, done, report, out, scored)
    return {**report, "samples": done.samples}


def _say(plan: Any, done: Played, report: dict[str, Any], out: Path, scored: bool = False) -> None:
    settings, endpoint = done.settings, report["endpoint"]
    if done.blind:
        console.err.print("warning: blind run (--no-video): the model saw no frames, only their times", markup=False)
    if report["frames"]["without_pixels"]:
        short = [x for k_ in done.kinds.values() for x in k_["replay"].get("without_pixels_records", [])]
        ids = ", ".join(str(x["record_id"]) for x in short[:5])
        ids += f" and {len(short) - 5} more" if len(short) > 5 else ""
        console.err.print(f"warning: {report['frames']['without_pixels']} frames of {len(short)} "
                          f"record{'' if len(short) == 1 else 's'} were sent without pixels (past the end of a "
                          f"shorter video file: only their time labels): {ids}; counted in the report "
                          "(frames.without_pixels) and listed per kind (replay.without_pixels_records)", markup=False)
    if report["audio"].get("calls_without_audio"):
        audio = report["audio"]
        console.err.print(f"warning: --audio {audio['mode']}: {audio['calls_without_audio']} of {audio['calls']} calls "
                          "were sent without sound (their video has no audio stream, or the call showed no frames); "
                          "counted in the report (audio.calls_without_audio)", markup=False)
    if report["unparseable_records"] and not scored:
        where = f"{settings.model} at {', '.join(settings.endpoints)}" if settings is not None else "the model"
        ids = console.listed(list(dict.fromkeys(str(u["record_id"]) for u in report["unparseable_records"])))
        console.err.print(f"warning: {report['unparseable']} unparseable answers from {where}, recorded as wrong "
                          f"answers (listed in replay_report.json): {ids}", markup=False)
    console.out.print(f"{len(done.predictions)} predictions ({', '.join(f'{len(p[1])} {p[0]}' for p in plan.plays)}) "
                      f"written to {out / 'predictions.jsonl'}", markup=False)
    if endpoint:
        calls, hits = endpoint.get("endpoint_calls", 0), endpoint.get("cache_hits", 0)
        latency = ("no model latency (every answer from the cache)" if not calls else
                   f"mean latency {endpoint.get('latency_mean_s', 0.0):.3f} s"
                   + (" (cache hits included)" if hits else ""))
        console.out.print(f"{calls} endpoint calls, {hits} cache hits ({endpoint.get('earlier_run_hits', 0)} from an "
                          f"earlier run), {endpoint.get('retries', 0)} retries, {endpoint.get('prompt_tokens', 0)} "
                          f"prompt tokens, {latency}", markup=False)
    for key in ("malformed_lines", "out_of_range_lines"):
        if endpoint.get(key):
            console.out.print(f"{endpoint[key]} {key.replace('_', ' ')} in the model's answers (counted, skipped)",
                              markup=False)


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
