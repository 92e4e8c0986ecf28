"""The replay engine: protocol x strategy x memory x frame source, one loop for every record kind.

* **protocol** (:mod:`streamcue.loaders.protocols`): per benchmark, what is asked when, which
  earlier turns are shown, how answers become ``<kind>_prediction`` records;
* **strategy** (:mod:`streamcue.loaders.strategies`): when the model is called and what it is asked;
* **memory** (:mod:`streamcue.loaders.memory`): which frames (and text) one call sees;
* **frame source** (:class:`streamcue.loaders.frames.FrameSource`): the pixels, each video decoded
  once; frames are chosen by one selector with one window rule (:mod:`streamcue.frame_memory`).

Every record is played by one loop, :func:`streamcue.loaders.replay.replay`: a stream protocol's span frame by
frame (the strategy is called at every frame, or only at the moments of the protocol's schedule,
:meth:`~streamcue.loaders.protocols.base.Protocol.moments`); an ask protocol's questions are moments of the timeline,
each asked at its time with the frames up to then (the strategy's ``answer_turn``). Records are played video by
video (a multi-turn group in turn order, so a later turn can show the model's own earlier answer); predictions come
back in the input order.

``concurrency`` plays that many records (a multi-turn group counts as one) at once in threads,
each with its own copy of the strategy (sharing its client, cache and counts); a video is decoded
once and shared, the next video is decoded in the background while calls go on. Every call is
traced: ``report["samples"]`` lists what each call sent and got (record, ask time, frames and their
sizes or the clip, transport, prompt version, raw and parsed answer, latency, cache hit, retries),
in the input order of the records; unparseable answers are counted and listed
(``unparseable_records``), frames sent without pixels while a video was given are counted
(``frames_without_pixels``).

>>> predictions, report = play(records, "interval_qa", strategy=model, durations=durations)   # doctest: +SKIP
"""

from __future__ import annotations

import copy
import statistics
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from streamcue import console
from streamcue.errors import ConfigError, InputError
from streamcue.loaders.clock import Clock, checked_clock, clock_report, streaming
from streamcue.loaders.protocols import Context, Protocol, protocol_for
from streamcue.loaders.protocols.base import on_grid
from streamcue.loaders.replay import DEFAULT_K, DEFAULT_MEMORY, Episode, as_memory, positive, replay
from streamcue.loaders.strategies.base import CallTrace, Transport, tracing
from streamcue.progress import track

__all__ = ["HISTORIES", "SPANS", "play", "summary", "sample_counts"]

HISTORIES = ("gold", "own")
SPANS = ("video", "clip")
_COUNTS = ("responses", "calls", "frames_total", "frames_seen", "frames_dropped", "frames_unprocessed",
           "frames_without_pixels", "past_end")


def _as_dict(record: Any) -> dict[str, Any]:
    return record.to_dict() if hasattr(record, "to_dict") else dict(record)


def _order(records: Sequence[dict[str, Any]]) -> list[int]:
    """Indices in play order: video by video (first appearance), a group's turns in turn order."""
    first: dict[str, int] = {}
    for i, r in enumerate(records):
        first.setdefault(r["video_id"], i)
    return sorted(range(len(records)), key=lambda i: (first[records[i]["video_id"]],
                                                      (records[i].get("context") or {}).get("turn", 0), i))


def _units(records: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Play units in play order: a multi-turn group's records together (in turn order), else one record each."""
    units: dict[Any, list[int]] = {}
    for i in _order(records):
        context = records[i].get("context") or {}
        units.setdefault(("group", context["group_id"]) if context.get("group_id") is not None else ("one", i),
                         []).append(i)
    return list(units.values())


def play(records: Iterable[Any], kind: str, *, strategy: Any, protocol: Protocol | None = None,
         memory: Any = DEFAULT_MEMORY, k: int = DEFAULT_K, fps: float = 1.0, window_s: float | None = None,
         history: str | None = None, span: str = "video", tail_s: float = 5.0,
         durations: Mapping[str, float | None] | None = None, frames: Any = None, timing: str = "synchronous",
         clock: str = "simulated", camera_buffer: int = 600, concurrency: int = 1,
         transport: Transport | None = None, run_clock: str | Clock = "free") -> tuple[list[dict[str, Any]],
                                                                                   dict[str, Any]]:
    """Predictions for every record (dicts or typed records) and a summary of the runs.

    ``strategy`` is a replay model (:func:`streamcue.loaders.strategies.make_strategy`); ``memory`` a
    policy name or memory object (:func:`streamcue.loaders.memory.make_memory`); ``history`` gold or
    own (default: the protocol's); ``durations`` maps video ids to seconds (stream protocols need
    them); ``frames(video_id)`` gives a video's ``frame_image(index, t_s)`` (else frames carry only
    their times). ``timing`` (synchronous or asynchronous), ``clock`` and ``camera_buffer`` go to
    :func:`~streamcue.loaders.replay.replay` for stream protocols. ``concurrency`` records play at once;
    ``transport`` says how frames are sent (:class:`~streamcue.loaders.strategies.base.Transport`).
    ``run_clock`` (``free``, ``live`` or ``fixed:S``, :mod:`streamcue.loaders.clock`) gives each record its own
    stream clock; the summary's ``clock`` says what it did. The summary's ``samples`` lists every call (see the
    module docstring).
    """
    transport = _checked(fps, k, concurrency, window_s, span, transport, frames)
    run_clock = checked_clock(run_clock, timing)
    rows = [_as_dict(r) for r in records]
    protocol = protocol or protocol_for(kind, rows[0] if rows else None)
    history = history or protocol.history
    if history not in HISTORIES:
        raise ConfigError(f"unknown history {history!r}; use gold (the gold answers) or own (the model's)")
    memory = as_memory(memory)
    _check_memory(memory, concurrency)
    context = Context(history=history)
    for r in rows:
        if r.get("context"):
            context.groups.setdefault(r["context"]["group_id"], []).append(r)
    setup = _Setup(kind, protocol, context, memory, k, fps, window_s, span, tail_s, durations,
                   {"timing": timing, "clock": clock, "camera_buffer": camera_buffer})
    predictions: list[dict[str, Any] | None] = [None] * len(rows)
    reports: list[dict[str, Any] | None] = [None] * len(rows)
    traces: list[CallTrace | None] = [None] * len(rows)
    units = _units(rows)
    videos = list(dict.fromkeys(rows[u[0]]["video_id"] for u in units))
    left = Counter(rows[u[0]]["video_id"] for u in units)
    lock = threading.Lock()
    stop = threading.Event()

    def run_unit(unit: list[int], model: Any) -> None:
        video_id = rows[unit[0]]["video_id"]
        held = hasattr(frames, "hold") and hasattr(frames, "release")
        if held:
            with lock:
                first = left[video_id] == sum(1 for u in units if rows[u[0]]["video_id"] == video_id)
                left[video_id] -= 1
                last = left[video_id] == 0
            if first:
                frames.hold(video_id)
        try:
            for i in unit:
                if stop.is_set():
                    return
                record = rows[i]
                pixels = frames is not None and transport.mode == "frames"
                frame_image = frames(record["video_id"]) if pixels else None
                if held and hasattr(frames, "prefetch") and i == unit[0]:  # the next video decodes while we ask
                    at = videos.index(video_id)
                    if at + 1 < len(videos):
                        frames.prefetch(videos[at + 1])
                trace = CallTrace(record_id=protocol.record_id(record), kind=kind, transport=transport,
                                  pixels_expected=frames is not None)
                if transport.mode == "video_url":
                    trace.clip = (lambda times, vid=record["video_id"]:
                                  frames.clip(vid, times, transport.video_url_form))
                if transport.audio != "none" and hasattr(frames, "sound"):
                    trace.sound = lambda s, e, vid=record["video_id"]: frames.sound(vid, s, e)
                with tracing(trace), streaming(run_clock) as stream:
                    prediction, report = _play_record(record, setup, model, frame_image)
                report["skipped_moments"] = stream.skipped if stream is not None else 0
                report["frames_without_pixels"] = trace.without_pixels
                report["without_pixels_records"] = [{"record_id": trace.record_id, "video_id": record["video_id"],
                                                     "frames": trace.without_pixels}] if trace.without_pixels else []
                predictions[i], reports[i], traces[i] = prediction, report, trace
        finally:
            if held and last:
                frames.release(video_id)

    _run_all(units, run_unit, strategy, concurrency, f"replaying {kind}", stop)
    out = _summary(reports, traces, strategy)
    out["clock"] = clock_report(run_clock, out["samples"], sum(r["skipped_moments"] for r in reports if r))
    return [p for p in predictions if p is not None], out


def _checked(fps: float, k: int, concurrency: int, window_s: float | None, span: str, transport: Transport | None,
             frames: Any) -> Transport:
    """Every setting of :func:`play` checked before any call; the transport (frames by default)."""
    positive(fps, "--fps", "frames per second")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be at least 1 frame, got {k!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
    if window_s is not None:
        positive(window_s, "the context window")
    if span not in SPANS:
        raise ConfigError(f"unknown span {span!r}; use video or clip")
    transport = transport or Transport()
    if transport.mode == "video_url" and (frames is None or not hasattr(frames, "clip")):
        raise ConfigError("--transport video_url sends the clip itself: it needs the videos (--video-root)")
    return transport


def _check_memory(memory: Any, concurrency: int) -> None:
    if concurrency > 1 and hasattr(memory, "begin"):
        raise ConfigError(f"memory {getattr(memory, 'name', type(memory).__name__)} keeps one episode at a time: "
                          "use --concurrency 1 with it")


def _run_all(units: list[list[int]], run_unit: Any, strategy: Any, concurrency: int, label: str,
             stop: threading.Event) -> None:
    """``run_unit(unit, model)`` for every unit: in order, or ``concurrency`` at once (each thread its own copy of
    the strategy); the first failure stops the run."""
    progress = iter(track(range(len(units)), label))
    if concurrency == 1:
        for unit in units:
            run_unit(unit, strategy)
            next(progress, None)
    else:
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="streamcue-replay")
        pending: set[Future[None]] = set()
        todo = list(units)
        try:
            while todo or pending:
                while todo and len(pending) < concurrency:
                    pending.add(pool.submit(run_unit, todo.pop(0), copy.copy(strategy)))
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()  # the first failure stops the run (the others are let finish their call)
                    next(progress, None)
        except BaseException:
            stop.set()
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    for _ in progress:
        pass


def sample_counts(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """What a replay's report says of its calls: the samples themselves, the unparseable ones (how many, and which
    record, time and call each was), the cache hits and the transport retries."""
    return {"samples": samples, "unparseable": sum(1 for s_ in samples if s_["problem"]),
            "unparseable_records": [{"record_id": s_["record_id"], "t_s": s_["t_s"], "call": s_["call"],
                                     "problem": s_["problem"]} for s_ in samples if s_["problem"]],
            "cache_hits": sum(1 for s_ in samples if s_["cached"]), "retries": sum(s_["retries"] for s_ in samples)}


def _summary(reports: list[dict[str, Any] | None], traces: list[CallTrace | None], strategy: Any) -> dict[str, Any]:
    out = summary([r for r in reports if r is not None])
    samples = [sample for trace in traces if trace is not None for sample in trace.samples]
    out.update(sample_counts(samples))
    if getattr(strategy, "stats", None) is not None:
        out["strategy"] = dict(strategy.stats)
    return out


@dataclass(frozen=True)
class _Setup:
    """What every record of one :func:`play` is played with."""

    kind: str
    protocol: Protocol
    context: Context
    memory: Any
    k: int
    fps: float
    window_s: float | None
    span: str
    tail_s: float
    durations: Mapping[str, float | None] | None
    timing: Mapping[str, Any]


def _play_record(record: dict[str, Any], setup: _Setup, strategy: Any,
                 frame_image: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """One record through the one loop (:func:`~streamcue.loaders.replay.replay`): a stream protocol plays its span
    with its prompts (and schedule); an ask protocol's questions are moments of the timeline, each answered there by
    the strategy's ``answer_turn``."""
    protocol, kind, fps = setup.protocol, setup.kind, setup.fps
    if protocol.mode[kind] == "stream":
        duration_s = _duration(record, setup)
        start, end = on_grid(*protocol.span(record, duration_s, setup.context, span=setup.span,
                                            tail_s=setup.tail_s), fps)
        prompts = [(t.t_s, t.text, t.role) for t in protocol.turns(record, setup.context)]
        result = replay(strategy, end - start, fps, prompts, start_s=start,
                        own_history=setup.context.history == "own",
                        episode=Episode(kind, record, start, end, fps), k=setup.k, memory=setup.memory,
                        window_s=setup.window_s, frame_image=frame_image, moments=protocol.moments(record, start, end),
                        **setup.timing)
        return protocol.prediction(record, result.responses), {**result.report(end - start),
                                                                **_past_end(record, protocol, duration_s,
                                                                           getattr(frame_image, "duration_s", None))}
    asks = _asks(record, setup, strategy)
    until = max((t.until_s if t.until_s is not None else t.t_s for t in asks), default=record["query_time_s"])
    result = replay(strategy, (int(until * fps + 1e-9) + 1) / fps, fps, [],
                    episode=Episode(kind, record, 0.0, record["query_time_s"], fps), k=setup.k,
                    memory=setup.memory, window_s=setup.window_s, frame_image=frame_image, asks=asks)
    answers = [r["text"] for r in result.responses if r.get("role", "assistant") == "assistant"]
    if answers:
        setup.context.own[protocol.record_id(record)] = answers[-1]
    span_s = max((r["t_s"] for r in result.responses), default=record["query_time_s"]) - record["query_time_s"]
    return protocol.prediction(record, result.responses), {**result.report(span_s), "past_end": 0,
                                                            "past_end_records": []}


def _duration(record: dict[str, Any], setup: _Setup) -> float:
    """The length of a stream-mode record's video (a stream protocol plays it to its end)."""
    video_id = record["video_id"]
    if setup.durations is None or video_id not in setup.durations:
        raise InputError("unknown video (not in the videos config)", record=f"video_id={video_id}",
                         field="$.video_id")
    duration_s = setup.durations[video_id]
    if duration_s is None:
        raise InputError("the video's duration is unknown (duration_s is null in videos.jsonl); "
                         f"{setup.protocol.name} plays the video to its end", record=f"video_id={video_id}",
                         field="$.duration_s")
    return duration_s


def _asks(record: dict[str, Any], setup: _Setup, strategy: Any) -> list[Any]:
    """An ask-mode record's questions (its user turns), once the strategy is known to answer them."""
    protocol, kind = setup.protocol, setup.kind
    if not hasattr(strategy, "answer_turn"):
        raise ConfigError(f"strategy {getattr(strategy, 'name', strategy)} cannot answer asked questions "
                          f"({protocol.name} {kind})")
    asks = [turn for turn in protocol.turns(record, setup.context) if turn.role == "user"]
    if any(turn.poll is not None for turn in asks) and not hasattr(strategy, "hz"):
        raise ConfigError(f"{protocol.name} {kind} items are polled: use --strategy polling")
    return asks


def _latest(value: Any) -> float | None:
    """The latest time in a record: the largest number under a key ending in ``_s`` (``duration_s`` aside), at any
    depth; None when it has none."""
    if isinstance(value, Mapping):
        found = [v for key, v in value.items() if isinstance(key, str) and key.endswith("_s") and key != "duration_s"
                 and isinstance(v, (int, float)) and not isinstance(v, bool)]
        found += [t for v in value.values() if isinstance(v, (Mapping, list)) and (t := _latest(v)) is not None]
        return max(found, default=None)
    if isinstance(value, list):
        return max((t for v in value if (t := _latest(v)) is not None), default=None)
    return None


def _past_end(record: dict[str, Any], protocol: Protocol, duration_s: float,
              file_s: float | None = None) -> dict[str, Any]:
    """A stream-mode record whose times lie past the end of its video (they get no call, or a call without pixels
    past the file's end; the record is scored as silence there): counted (``past_end``), listed
    (``past_end_records``) and warned in one line naming it. The end is the declared (or read) duration, or the
    decoded file's length (``file_s``) when that is shorter."""
    latest = _latest(record)
    end_s = duration_s if file_s is None else min(duration_s, file_s)
    if latest is None or latest <= end_s + 1e-9:
        return {"past_end": 0, "past_end_records": []}
    record_id = protocol.record_id(record)
    which = f"{end_s:g} s" if end_s == duration_s else f"its file {end_s:g} s, videos.jsonl says {duration_s:g} s"
    console.err.print(f"warning: record {record_id}: its times reach {latest:g} s, past the end of video "
                      f"{record['video_id']} ({which}): nothing after the end is shown to the model (a video "
                      "shorter than its annotations: the wrong file?)", markup=False)
    duration_s = end_s
    return {"past_end": 1, "past_end_records": [{"record_id": record_id, "video_id": record["video_id"],
                                                 "t_s": latest, "duration_s": duration_s}]}


def summary(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report over all runs (the same keys for every kind)."""
    if not reports:
        return {"runs": 0}
    total = {key: sum(r.get(key, 0) for r in reports) for key in _COUNTS}
    return {"runs": len(reports), **total,
            "past_end_records": [x for r in reports for x in r.get("past_end_records", [])],
            "without_pixels_records": [x for r in reports for x in r.get("without_pixels_records", [])],
            "latency_mean_s": statistics.fmean(r["latency_mean_s"] for r in reports),
            "latency_max_s": max(r["latency_max_s"] for r in reports),
            "actions_per_second": statistics.fmean(r["actions_per_second"] for r in reports)}


