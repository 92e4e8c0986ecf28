"""The replay engine: protocol x strategy x memory x frame source, one loop for every record kind.

* **protocol** (:mod:`streamcue.loaders.protocols`): per benchmark, what is asked when, which
  earlier turns are shown, how answers become ``<kind>_prediction`` records;
* **strategy** (:mod:`streamcue.loaders.strategies`): when the model is called and what it is asked;
* **memory** (:mod:`streamcue.loaders.memory`): which frames (and text) one call sees;
* **frame source** (:class:`streamcue.loaders.frames.FrameSource`): the pixels, each video decoded
  once; frames are chosen by one selector with one window rule (:mod:`streamcue.frame_memory`).

Stream protocols play the record's span through :func:`streamcue.loaders.replay.replay` (the
strategy is called at every frame); ask protocols ask each question at its time with the frames
up to then. Records are played video by video (a multi-turn group in turn order, so a later
turn can show the model's own earlier answer); predictions come back in the input order.

>>> predictions, report = play(records, "interval_qa", strategy=model, durations=durations)   # doctest: +SKIP
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.frame_memory import Frame, frames_until, select_frames
from streamcue.loaders.protocols import Context, Protocol, protocol_for
from streamcue.loaders.protocols.base import on_grid
from streamcue.loaders.replay import Episode, positive, replay
from streamcue.loaders.strategies.base import user_content
from streamcue.progress import track

__all__ = ["HISTORIES", "SPANS", "play", "summary"]

HISTORIES = ("gold", "own")
SPANS = ("video", "clip")
_COUNTS = ("responses", "calls", "frames_total", "frames_seen", "frames_dropped", "frames_unprocessed")


def _as_dict(record: Any) -> dict[str, Any]:
    return record.to_dict() if hasattr(record, "to_dict") else dict(record)


def _order(records: Sequence[dict[str, Any]]) -> list[int]:
    """Indices in play order: video by video (first appearance), a group's turns in turn order."""
    first: dict[str, int] = {}
    for i, r in enumerate(records):
        first.setdefault(r["video_id"], i)
    return sorted(range(len(records)), key=lambda i: (first[records[i]["video_id"]],
                                                      (records[i].get("context") or {}).get("turn", 0), i))


def play(records: Iterable[Any], kind: str, *, strategy: Any, protocol: Protocol | None = None,
         memory: Any = "SW+U", k: int = 16, fps: float = 1.0, window_s: float | None = None,
         history: str | None = None, span: str = "video", tail_s: float = 5.0,
         durations: Mapping[str, float | None] | None = None, frames: Any = None, timing: str = "synchronous",
         clock: str = "simulated", camera_buffer: int = 600) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Predictions for every record (dicts or typed records) and a summary of the runs.

    ``strategy`` is a replay model (:func:`streamcue.loaders.strategies.make_strategy`); ``memory`` a
    policy name or memory object (:func:`streamcue.loaders.memory.make_memory`); ``history`` gold or
    own (default: the protocol's); ``durations`` maps video ids to seconds (stream protocols need
    them); ``frames(video_id)`` gives a video's ``frame_image(index, t_s)`` (else frames carry only
    their times). ``timing`` (synchronous or asynchronous), ``clock`` and ``camera_buffer`` go to
    :func:`~streamcue.loaders.replay.replay` for stream protocols.
    """
    positive(fps, "--fps", "frames per second")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be at least 1 frame, got {k!r}")
    if window_s is not None:
        positive(window_s, "the context window")
    if span not in SPANS:
        raise ConfigError(f"unknown span {span!r}; use video or clip")
    rows = [_as_dict(r) for r in records]
    protocol = protocol or protocol_for(kind, rows[0] if rows else None)
    history = history or protocol.history
    if history not in HISTORIES:
        raise ConfigError(f"unknown history {history!r}; use gold (the gold answers) or own (the model's)")
    if isinstance(memory, str):
        select_frames([], k, memory)  # an unknown policy fails before any call
    context = Context(history=history)
    for r in rows:
        if r.get("context"):
            context.groups.setdefault(r["context"]["group_id"], []).append(r)
    mode = protocol.mode[kind]
    predictions: list[dict[str, Any] | None] = [None] * len(rows)
    reports = []
    for i in track(_order(rows), f"replaying {kind}"):
        record = rows[i]
        frame_image = frames(record["video_id"]) if frames is not None else None
        if mode == "stream":
            prediction, report = _stream(record, kind, protocol, context, strategy, memory, k, fps, window_s, span,
                                         tail_s, durations, frame_image,
                                         {"protocol": timing, "clock": clock, "camera_buffer": camera_buffer})
        else:
            prediction, report = _asked(record, kind, protocol, context, strategy, memory, k, fps, window_s,
                                        frame_image)
        predictions[i] = prediction
        reports.append(report)
    out = summary(reports)
    if getattr(strategy, "stats", None) is not None:
        out["strategy"] = dict(strategy.stats)
    return [p for p in predictions if p is not None], out


def _stream(record: dict[str, Any], kind: str, protocol: Protocol, context: Context, strategy: Any, memory: Any,
            k: int, fps: float, window_s: float | None, span: str, tail_s: float,
            durations: Mapping[str, float | None] | None, frame_image: Any,
            timing: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    video_id = record["video_id"]
    if durations is None or video_id not in durations:
        raise InputError("unknown video (not in the videos config)", record=f"video_id={video_id}",
                         field="$.video_id")
    if durations[video_id] is None:
        raise InputError("the video's duration is unknown (duration_s is null in videos.jsonl); "
                         f"{protocol.name} plays the video to its end", record=f"video_id={video_id}",
                         field="$.duration_s")
    start, end = on_grid(*protocol.span(record, durations[video_id], context, span=span, tail_s=tail_s), fps)
    prompts = [(t.t_s, t.text, t.role) for t in protocol.turns(record, context)]
    result = replay(strategy, end - start, fps, prompts, start_s=start, own_history=context.history == "own",
                    episode=Episode(kind, record, start, end, fps), k=k, policy=memory, window_s=window_s,
                    frame_image=frame_image, **timing)
    return protocol.prediction(record, result.responses), result.report(end - start)


def _asked(record: dict[str, Any], kind: str, protocol: Protocol, context: Context, strategy: Any, memory: Any,
           k: int, fps: float, window_s: float | None, frame_image: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    if not hasattr(strategy, "answer_turn"):
        raise ConfigError(f"strategy {getattr(strategy, 'name', strategy)} cannot answer asked questions "
                          f"({protocol.name} {kind})")
    counts = dict.fromkeys(_COUNTS, 0)
    if not isinstance(memory, str) and hasattr(memory, "begin"):
        memory.begin(Episode(kind, record, 0.0, record["query_time_s"], fps))

    def view(now: float, prompt: str, dialogue: Sequence[tuple[float, str, str]]) -> list[dict[str, Any]]:
        offered = frames_until(now, fps, window_s)
        if isinstance(memory, str):
            shown, text = select_frames(offered, k, memory), None
        else:
            shown, text = memory.view(offered, k, now, prompt, list(dialogue))
        if frame_image is not None:
            shown = [Frame(f.index, f.t_s, frame_image(f.index, f.t_s)) for f in shown]
        counts["calls"] += 1
        counts["frames_total"] += len(offered)
        counts["frames_seen"] += len(shown)
        return user_content(shown, prompt, dialogue, now, text)

    responses: list[dict[str, Any]] = []
    for turn in protocol.turns(record, context):
        if turn.role != "user":
            continue
        if turn.poll is not None and not hasattr(strategy, "hz"):
            raise ConfigError(f"{protocol.name} {kind} items are polled: use --strategy polling")
        said = strategy.answer_turn(turn, view)
        responses += said
    counts["responses"] = sum(1 for r in responses if r.get("role", "assistant") == "assistant")
    prediction = protocol.prediction(record, responses)
    answers = [r["text"] for r in responses if r.get("role", "assistant") == "assistant"]
    if answers:
        context.own[protocol.record_id(record)] = answers[-1]
    span_s = max((r["t_s"] for r in responses), default=record["query_time_s"]) - record["query_time_s"]
    return prediction, {**counts, "latency_mean_s": 0.0, "latency_max_s": 0.0,
                        "actions_per_second": counts["responses"] / span_s if span_s > 0 else 0.0}


def summary(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report over all runs (the same keys for every kind)."""
    if not reports:
        return {"runs": 0}
    total = {key: sum(r[key] for r in reports) for key in _COUNTS}
    return {"runs": len(reports), **total,
            "latency_mean_s": statistics.fmean(r["latency_mean_s"] for r in reports),
            "latency_max_s": max(r["latency_max_s"] for r in reports),
            "actions_per_second": statistics.fmean(r["actions_per_second"] for r in reports)}


