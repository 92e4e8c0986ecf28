"""Replay a video's timeline to a model under test (VSAS-Bench Sec. 3.2 and Algorithm 1).

Two timings, both on a simulated clock (deterministic and fast; frames are indices and
timestamps, the pixels are optional):

* **synchronous**: frame ``i`` (at ``i / fps``) is handed over and the model answers before
  the next frame; its latency does not matter and its responses are stamped at the frame time.
* **asynchronous**: a camera pushes frame ``i`` at ``i / fps`` into a bounded camera buffer
  (oldest dropped when full). Whenever the model is free it takes every frame in the buffer
  (the most recent ones), thinks for its ``latency_s``, and its response is stamped when it
  finishes. A slow model sees fewer frames and answers late; frames that leave the buffer
  before the model takes them are counted as dropped.

Frames are played as indices and times; their pixels are fetched only for the frames a call is shown
(:func:`with_pixels`, the memory's choice; a memory or model that sends frames of its own, OASIS's event summaries,
a response-in-last call, fetches theirs through :attr:`Episode.pixels`), so a long record costs no more pixels
than its calls send.

A memory is always an object (:class:`Memory`, :mod:`streamcue.loaders.memory`; a policy's name becomes its
object): it chooses which of the frames the model has taken it sees in one call (``k`` frames; the policies of
:mod:`streamcue.frame_memory`: ``SW`` the last k; ``U`` k spread uniformly over all; ``SW+U`` the last k/2
plus k - k/2 spread uniformly over the older ones) and may add a text context (OASIS's event memory,
:mod:`streamcue.loaders.strategies.oasis`). ``window_s`` keeps only the frames of the last N seconds.

The model interface is one method: ``respond(frames, prompt, history, now) -> str | None``
with an attribute ``latency_s`` (seconds per call, used by the asynchronous protocol). With
``clock="wall"`` the asynchronous protocol uses each call's measured duration instead, so a
real model's own speed decides which frames it sees and when its answers are stamped.
Guidance models may answer ``{"type": ..., "text": ...}`` to choose the event type.

Optional parts of the interface (existing models need none of them): ``takes_context = True``
makes the harness pass ``context=`` (the memory's text, or None) to ``respond``; ``begin(episode)``
is called before a record is played; ``finish(frames, prompt, history, now)`` after the stream
ends (a response-in-last model answers there); an answer may be a list of responses, each
``{"text": ...}`` with its own ``t_s`` (default: the call's time).

:func:`streamcue.loaders.engine.play` (the one entry) plays whole records with a benchmark's protocol and writes
predictions in the schemas' formats, ready for ``streamcue evaluate``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from streamcue.errors import ConfigError
from streamcue.frame_memory import POLICIES, Frame, grid_span, in_window, select_frames
from streamcue.loaders.clock import asked_at, stream_step

__all__ = ["Frame", "Model", "Memory", "Episode", "select_frames", "ReplayResult", "replay", "POLICIES", "positive",
           "DEFAULT_K", "DEFAULT_MEMORY", "PolicyMemory", "as_memory", "with_pixels"]

#: The one default of each setting, for every entry (the engine's ``play``, a replay's configuration).
DEFAULT_K = 16
DEFAULT_MEMORY = "SW+U"


def positive(value: Any, what: str, unit: str = "seconds") -> float:
    """``value`` as a float when it is a finite number above 0, else a :class:`ConfigError` naming ``what``.

    Periods, rates and windows of the replay (0 would divide by zero, NaN and Infinity would loop or never fire).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{what} must be a positive number of {unit}, got {value!r}")
    return float(value)


class Model(Protocol):
    latency_s: float

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float) -> str | dict[str, str] | None:
        """An answer, or None to stay silent. ``history``: ``(t_s, "user" | "assistant", text)`` turns."""


class Memory(Protocol):
    def view(self, frames: Sequence[Frame], k: int, now: float, prompt: str,
             history: Sequence[tuple[float, str, str]]) -> tuple[list[Frame], str | None]:
        """The frames to show and a text context, from every frame taken so far (oldest first)."""


@dataclass(frozen=True)
class PolicyMemory:
    """A frame selector of :mod:`streamcue.frame_memory` (SW, U or SW+U) as a memory; no text context."""

    name: str

    def __post_init__(self) -> None:
        select_frames([], 1, self.name)  # an unknown policy fails here, before any call

    def view(self, frames: Sequence[Frame], k: int, now: float, prompt: str,
             history: Sequence[tuple[float, str, str]]) -> tuple[list[Frame], str | None]:
        return select_frames(frames, k, self.name), None


def as_memory(memory: str | Memory) -> Memory:
    """``memory`` as an object: a selector's name (SW, U, SW+U) becomes its :class:`PolicyMemory`."""
    return PolicyMemory(memory) if isinstance(memory, str) else memory


@dataclass(frozen=True)
class Episode:
    """What is being played: the record (a dict), its kind and the stretch of video; ``pixels(index, t_s)`` gives a
    frame's pixels (None without a video)."""

    kind: str
    record: Any
    start_s: float
    end_s: float
    fps: float
    pixels: Any = None


def with_pixels(frames: Sequence[Frame], frame_image: Any) -> list[Frame]:
    """``frames`` with their pixels from ``frame_image(index, t_s)`` (those that have none yet; as they are without
    ``frame_image``)."""
    if frame_image is None:
        return list(frames)
    return [Frame(f.index, f.t_s, frame_image(f.index, f.t_s)) if f.image is None else f for f in frames]


@dataclass
class ReplayResult:
    responses: list[dict[str, Any]] = field(default_factory=list)  # {t_s, text[, type]}
    calls: int = 0
    frames_total: int = 0
    frames_seen: int = 0
    frames_dropped: int = 0       # evicted from the camera buffer before the model took them
    frames_unprocessed: int = 0   # still waiting when the stream ended
    latencies: list[float] = field(default_factory=list)

    def report(self, duration_s: float) -> dict[str, Any]:
        """The counts over ``duration_s`` seconds; the responses are the model's own (not the user turns an asked
        question's dialogue keeps, ``"role": "user"``)."""
        lat = self.latencies or [0.0]
        said = sum(1 for r in self.responses if r.get("role", "assistant") == "assistant")
        return {"responses": said, "calls": self.calls, "frames_total": self.frames_total,
                "frames_seen": self.frames_seen, "frames_dropped": self.frames_dropped,
                "frames_unprocessed": self.frames_unprocessed,
                "latency_mean_s": statistics.fmean(lat), "latency_max_s": max(lat),
                "actions_per_second": said / duration_s if duration_s > 0 else 0.0}


def replay(model: Model, duration_s: float, fps: float, prompts: Sequence[tuple[Any, ...]], *,
           timing: str = "synchronous", k: int = DEFAULT_K, memory: str | Memory = DEFAULT_MEMORY,
           camera_buffer: int = 600,
           clock: str = "simulated", frame_image: Any = None, start_s: float = 0.0, window_s: float | None = None,
           own_history: bool = True, episode: Episode | None = None,
           moments: Sequence[float] | None = None, asks: Sequence[Any] | None = None) -> ReplayResult:
    """Play ``duration_s`` seconds from ``start_s`` at ``fps`` to ``model``.

    ``prompts`` are ``(time, text)`` events (a question at its query time, a task prompt at 0),
    or ``(time, text, "assistant")`` for answers already given (gold answers of earlier turns);
    the latest user prompt delivered so far is the current one; the history holds every event
    delivered and, with ``own_history``, every answer of the model, as
    ``(t_s, "user" | "assistant", text)`` (for contextual multi-turn questions).
    ``frame_image(index, t_s)`` gives a frame's pixels when a video is at hand (else frames carry
    only index and time), asked only for the frames a call is shown (and given to ``begin`` as the episode's
    ``pixels``); indices count from the start of the video. ``moments`` (a protocol's schedule) limits
    the calls to the first frame at or after each of these times (synchronous timing only); None: every frame.

    ``asks`` (an ask protocol's questions, :class:`~streamcue.loaders.protocols.base.Turn`) are moments too: when
    the timeline reaches a question's time (the last frame at or before it) the model's
    ``answer_turn(turn, view)`` answers it, where ``view(now, prompt, dialogue)`` gives the frames the memory shows
    of those up to ``now`` (with their pixels) and its text; each view is one call (``calls``; ``frames_total`` and
    ``frames_seen`` add the frames offered and shown), and the turn's answers are the responses.
    """
    _check(timing, fps, camera_buffer, clock, window_s, moments if asks is None else asks)
    memory = as_memory(memory)
    n = int(duration_s * fps + 1e-9)
    first = round(start_s * fps)
    frames = [Frame(first + i, start_s + i / fps) for i in range(n)]  # pixels: only for the frames shown
    end_s = start_s + duration_s
    pending = sorted((p[0], p[1], p[2] if len(p) > 2 else "user") for p in prompts)
    episode = _episode(episode, start_s, end_s, fps, frame_image)
    for part in (model, memory):
        if hasattr(part, "begin"):
            part.begin(episode)
    result = ReplayResult(frames_total=n if asks is None else 0)
    taken: list[Frame] = []
    history: list[tuple[float, str, str]] = []
    current = [""]

    def prompt_at(now: float) -> str:
        while pending and pending[0][0] <= now:
            t_s, text, role = pending.pop(0)
            history.append((t_s, role, text))
            if role == "user":
                current[0] = text
        return current[0]

    def visible(now: float) -> list[Frame]:
        return taken if window_s is None else in_window(taken, now, window_s)

    def ask(now: float) -> tuple[Any, float]:
        """The model's answer and its latency (simulated, or measured on the wall clock)."""
        prompt = prompt_at(now)
        started = time.perf_counter()
        shown, context = memory.view(visible(now), k, now, prompt, list(history))
        shown = with_pixels(shown, frame_image)
        extra = {"context": context} if getattr(model, "takes_context", False) else {}
        answer = model.respond(shown, prompt, list(history), now, **extra)
        return answer, (time.perf_counter() - started if clock == "wall" else model.latency_s)

    def view(now: float, prompt: str, dialogue: Sequence[tuple[float, str, str]]) -> tuple[list[Frame], str | None]:
        """An asked question's look at the frames up to ``now`` (one call)."""
        at, stop = grid_span(now, fps, window_s, start_s)
        offered = in_window(frames[at:stop], now, window_s)
        shown, context = memory.view(offered, k, now, prompt, list(dialogue))
        result.calls += 1
        result.frames_total += len(offered)
        result.frames_seen += len(shown)
        return with_pixels(shown, frame_image), context

    def keep(answer: Any, stamp: float) -> None:
        _keep(answer, stamp, result, history if own_history else None)

    def record(answer: Any, now: float, stamp: float) -> None:
        result.calls += 1
        result.latencies.append(stamp - now)
        keep(answer, stamp)

    def finish(now: float) -> None:
        result.frames_seen = len(taken)
        if hasattr(model, "finish"):
            keep(model.finish(visible(now), prompt_at(now), list(history), now), now)

    if asks is not None:
        questions = _Questions(asks, start_s, fps, asked_at(lambda turn: result.responses.extend(
            model.answer_turn(turn, view))))
        _synchronous(frames, taken, questions)
        questions.rest()
        return result
    if timing == "synchronous":
        due = _due(moments)
        _synchronous(frames, taken, stream_step(due, ask, record) or (
            lambda i, frame: due(frame.t_s) and record(ask(frame.t_s)[0], frame.t_s, frame.t_s)))
        finish(frames[-1].t_s if frames else start_s)
        return result
    free_at, left = _asynchronous(frames, start_s, end_s, camera_buffer, clock, model, result, taken, ask, record)
    result.frames_unprocessed = left
    finish(min(free_at, end_s))
    return result


def _synchronous(frames: list[Frame], taken: list[Frame], step: Any) -> None:
    """The synchronous timing: frame after frame is taken, and ``step(i, frame)`` (a call when one is due) is done
    before the next arrives."""
    for i, frame in enumerate(frames):
        taken.append(frame)
        step(i, frame)


class _Questions:
    """An ask protocol's questions as moments of the synchronous timing: each is answered (``answer(turn)``) at the
    last frame at or before its time (the frame a view at that time ends on), in the given order."""

    def __init__(self, asks: Sequence[Any], start_s: float, fps: float, answer: Any) -> None:
        self.left, self.start_s, self.fps, self.answer = deque(asks), start_s, fps, answer

    def __call__(self, i: int, frame: Frame) -> None:
        while self.left and grid_span(self.left[0].t_s, self.fps, None, self.start_s)[1] - 1 <= i:
            self.answer(self.left.popleft())

    def rest(self) -> None:
        """The questions the timeline never reached (none when it reaches the last one's time)."""
        while self.left:
            self.answer(self.left.popleft())


def _episode(episode: Episode | None, start_s: float, end_s: float, fps: float, frame_image: Any) -> Episode:
    """The episode handed to ``begin`` (a bare one without ``episode``), with ``frame_image`` as its ``pixels``."""
    episode = episode or Episode("", None, start_s, end_s, fps)
    return episode if frame_image is None or episode.pixels is not None else replace(episode, pixels=frame_image)


def _due(moments: Sequence[float] | None) -> Any:
    """``due(t_s)``: whether a frame at ``t_s`` gets a call: always without ``moments``, else when a moment not yet
    served lies at or before it (several moments between two frames make one call)."""
    if moments is None:
        return lambda t_s: True
    left = sorted(moments, reverse=True)

    def due(t_s: float) -> bool:
        hit = False
        while left and left[-1] <= t_s + 1e-9:
            left.pop()
            hit = True
        return hit

    return due


def _keep(answer: Any, stamp: float, result: ReplayResult, history: list[tuple[float, str, str]] | None) -> None:
    """The model's answer (None, one, or a list; text or ``{"text", "t_s"?, ...}``) as responses stamped at ``stamp``
    unless they carry their own time; each one also goes into ``history`` when given (own history)."""
    if answer is None:
        return
    for item in answer if isinstance(answer, list) else [answer]:
        response = dict(item) if isinstance(item, dict) else {"text": item}
        response = {"t_s": response.pop("t_s", stamp), **response}
        result.responses.append(response)
        if history is not None:
            history.append((response["t_s"], "assistant", response["text"]))


def _check(timing: str, fps: float, camera_buffer: int, clock: str, window_s: float | None,
           moments: Sequence[Any] | None) -> None:
    """Every setting of :func:`replay` checked before any call (the memory: by :func:`as_memory`)."""
    if timing not in ("synchronous", "asynchronous"):
        raise ConfigError(f"unknown timing {timing!r}; use synchronous or asynchronous")
    if fps <= 0 or camera_buffer < 1:
        raise ConfigError("fps must be positive and the camera buffer at least 1 frame")
    if clock not in ("simulated", "wall"):
        raise ConfigError(f"unknown clock {clock!r}; use simulated or wall")
    if window_s is not None:
        positive(window_s, "the context window")
    if moments is not None and timing != "synchronous":
        raise ConfigError("this protocol asks at set moments (its schedule or its questions' times): use --timing "
                          "synchronous")


def _asynchronous(frames: list[Frame], start_s: float, end_s: float, camera_buffer: int, clock: str, model: Any,
                  result: ReplayResult, taken: list[Frame], ask: Any, record: Any) -> tuple[float, int]:
    """The asynchronous timing: a camera pushes frames into a bounded buffer while the model is busy; whenever it
    is free it takes the buffer. Returns when the model was last free and how many frames it never took."""
    n = len(frames)
    buffer: deque[Frame] = deque()
    free_at = start_s
    i = 0
    while i < n or buffer:
        # the camera keeps pushing until the model is free
        while i < n and frames[i].t_s <= free_at:
            buffer.append(frames[i])
            if len(buffer) > camera_buffer:
                buffer.popleft()
                result.frames_dropped += 1
            i += 1
        if not buffer:
            free_at = frames[i].t_s
            continue
        now = max(free_at, buffer[-1].t_s)
        if clock == "simulated" and now + model.latency_s > end_s:
            break  # the stream ends before the model could answer
        taken.extend(buffer)
        buffer.clear()
        answer, latency = ask(now)
        if now + latency > end_s:
            break
        record(answer, now, now + latency)
        free_at = now + latency
    return free_at, len(buffer) + (n - i)
