"""Replay a video's timeline to a model under test (VSAS-Bench Sec. 3.2 and Algorithm 1).

Two protocols, both on a simulated clock (deterministic and fast; frames are indices and
timestamps, the pixels are optional):

* **synchronous**: frame ``i`` (at ``i / fps``) is handed over and the model answers before
  the next frame; its latency does not matter and its responses are stamped at the frame time.
* **asynchronous**: a camera pushes frame ``i`` at ``i / fps`` into a bounded camera buffer
  (oldest dropped when full). Whenever the model is free it takes every frame in the buffer
  (the most recent ones), thinks for its ``latency_s``, and its response is stamped when it
  finishes. A slow model sees fewer frames and answers late; frames that leave the buffer
  before the model takes them are counted as dropped.

Memory policies (:mod:`streamcue.frame_memory`) choose which of the frames the model has taken it sees in one call
(``k`` frames): ``SW`` the last k; ``U`` k spread uniformly over all; ``SW+U`` the last k/2
plus k - k/2 spread uniformly over the older ones.

The model interface is one method: ``respond(frames, prompt, history, now) -> str | None``
with an attribute ``latency_s`` (seconds per call, used by the asynchronous protocol). With
``clock="wall"`` the asynchronous protocol uses each call's measured duration instead, so a
real model's own speed decides which frames it sees and when its answers are stamped.
Guidance models may answer ``{"type": ..., "text": ...}`` to choose the event type.

:mod:`streamcue.loaders.replay_records` plays whole records and writes predictions in the
schemas' formats, ready for ``streamcue evaluate``.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from streamcue.errors import ConfigError
from streamcue.frame_memory import POLICIES, Frame, select_frames

__all__ = ["Frame", "Model", "select_frames", "ReplayResult", "replay", "POLICIES"]


class Model(Protocol):
    latency_s: float

    def respond(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]],
                now: float) -> str | dict[str, str] | None:
        """An answer, or None to stay silent. ``history``: ``(t_s, "user" | "assistant", text)`` turns."""


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
        lat = self.latencies or [0.0]
        return {"responses": len(self.responses), "calls": self.calls, "frames_total": self.frames_total,
                "frames_seen": self.frames_seen, "frames_dropped": self.frames_dropped,
                "frames_unprocessed": self.frames_unprocessed,
                "latency_mean_s": statistics.fmean(lat), "latency_max_s": max(lat),
                "actions_per_second": len(self.responses) / duration_s if duration_s > 0 else 0.0}


def replay(model: Model, duration_s: float, fps: float, prompts: Sequence[tuple[float, str]], *,
           protocol: str = "synchronous", k: int = 64, policy: str = "SW+U", camera_buffer: int = 600,
           clock: str = "simulated", frame_image: Any = None) -> ReplayResult:
    """Play ``duration_s`` seconds at ``fps`` to ``model``.

    ``prompts`` are ``(time, text)`` events (a question at its query time, a task prompt at 0);
    the latest prompt delivered so far is the current one; the history holds every prompt
    delivered and every answer as ``(t_s, "user" | "assistant", text)`` (for contextual
    multi-turn questions). ``frame_image(index, t_s)``
    gives a frame's pixels when a video is at hand (else frames carry only index and time).
    """
    if protocol not in ("synchronous", "asynchronous"):
        raise ConfigError(f"unknown protocol {protocol!r}; use synchronous or asynchronous")
    if fps <= 0 or camera_buffer < 1:
        raise ConfigError("fps must be positive and the camera buffer at least 1 frame")
    if clock not in ("simulated", "wall"):
        raise ConfigError(f"unknown clock {clock!r}; use simulated or wall")
    n = int(duration_s * fps)
    frames = [Frame(i, i / fps, frame_image(i, i / fps) if frame_image else None) for i in range(n)]
    pending = sorted(prompts)
    result = ReplayResult(frames_total=n)
    taken: list[Frame] = []
    history: list[tuple[float, str, str]] = []
    current = [""]

    def prompt_at(now: float) -> str:
        while pending and pending[0][0] <= now:
            t_s, text = pending.pop(0)
            history.append((t_s, "user", text))
            current[0] = text
        return current[0]

    def ask(now: float) -> tuple[Any, float]:
        """The model's answer and its latency (simulated, or measured on the wall clock)."""
        prompt = prompt_at(now)
        started = time.perf_counter()
        answer = model.respond(select_frames(taken, k, policy), prompt, list(history), now)
        return answer, (time.perf_counter() - started if clock == "wall" else model.latency_s)

    def record(answer: Any, now: float, stamp: float) -> None:
        result.calls += 1
        result.latencies.append(stamp - now)
        if answer is not None:
            response = dict(answer) if isinstance(answer, dict) else {"text": answer}
            result.responses.append({"t_s": stamp, **response})
            history.append((stamp, "assistant", response["text"]))

    if protocol == "synchronous":
        for frame in frames:
            taken.append(frame)
            record(ask(frame.t_s)[0], frame.t_s, frame.t_s)
        result.frames_seen = len(taken)
        return result
    buffer: deque[Frame] = deque()
    free_at = 0.0
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
        if clock == "simulated" and now + model.latency_s > duration_s:
            break  # the stream ends before the model could answer
        taken.extend(buffer)
        buffer.clear()
        answer, latency = ask(now)
        if now + latency > duration_s:
            break
        record(answer, now, now + latency)
        free_at = now + latency
    result.frames_unprocessed = len(buffer) + (n - i)
    result.frames_seen = len(taken)
    return result
