"""The run's clock: whether the model's own latency decides when its answers arrive (docs/clock.md).

* ``free`` (every benchmark's official setting, the default): the stream stops while the model answers; an answer
  is stamped with the moment the model was asked.
* ``live``: each stream (one record's timeline) has a virtual clock. A call issued at stream time ``t`` whose
  answer took ``L`` seconds (request to last token, as measured: :attr:`streamcue.llm.Reply.served_s`, kept in the
  cache with the answer, so a cache hit replays it) arrives at ``t + L``, and every timing rule reads ``t + L``.
  One call is in flight per stream: calls made for one moment follow each other (a poll, then its answer), and
  the moments of the schedule that fall inside a call (``t <= m < t + L``: the frames at which the strategy would
  have been consulted, or the protocol's scheduled moments) are skipped and counted. A call sees the frames up to
  its issue time.
* ``fixed:S``: the same with a declared latency of ``S`` seconds per call instead of the measured one.

A virtual clock, never a sleep: a run takes the time of its calls and no more; concurrency across streams is
unchanged. Under ``free`` nothing here is consulted, so free runs are exactly what they were.

Each placed call's sample gains ``issued_s``, ``arrived_s`` and ``skipped`` (the moments it made the stream skip).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamcue.errors import ConfigError
from streamcue.finite import parse_csv_number

__all__ = ["CLOCK_HELP", "WITHIN_S", "Clock", "StreamClock", "arrival", "asked_at", "checked_clock", "clock_report",
           "current", "issue", "next_poll", "place", "restamp", "stream_step", "streaming"]

CLOCK_HELP = ("free (default, every benchmark's official setting: the stream stops while the model answers), live "
              "(an answer arrives after its measured latency and timing rules read that time; moments inside a call "
              "are skipped) or fixed:S (the same with a declared latency of S seconds per call). docs/clock.md.")
#: The answer latencies whose shares are reported (answered within 1, 2 and 5 s).
WITHIN_S = (1.0, 2.0, 5.0)
_EPS = 1e-9


@dataclass(frozen=True)
class Clock:
    """A clock setting: ``free``, ``live`` or ``fixed`` with ``seconds``."""

    mode: str = "free"
    seconds: float | None = None

    @classmethod
    def parse(cls, value: Any) -> Clock:
        """``free``, ``live`` or ``fixed:S`` (S a finite number of seconds >= 0) as a :class:`Clock`; anything else
        is one line saying what is accepted."""
        if isinstance(value, Clock):
            return value
        text = str(value if value is not None else "free").strip()
        if text in ("free", "live"):
            return cls(text)
        head, _, tail = text.partition(":")
        if head == "fixed":
            try:  # as a number option is read: no digit underscores (fixed:1_0), no NaN or Infinity
                seconds = parse_csv_number(tail)
            except ValueError:
                seconds = math.nan
            if math.isfinite(seconds) and seconds >= 0:
                return cls("fixed", seconds)
        raise ConfigError(f"--clock must be free, live or fixed:S (S seconds per call, a finite number >= 0), "
                          f"got {text!r}")

    def __str__(self) -> str:
        return f"fixed:{self.seconds:g}" if self.mode == "fixed" else self.mode

    @property
    def free(self) -> bool:
        return self.mode == "free"

    def latency(self, served_s: float | None, cached: bool) -> float:
        """The seconds a call takes on this clock: the declared ones (fixed), else the server's measured latency."""
        if self.mode == "fixed":
            return float(self.seconds or 0.0)
        if served_s is None:
            where = "a cached answer kept no latency (written before latencies were kept)" if cached else \
                "a call has no measured latency"
            raise ConfigError(f"--clock live: {where}; use --no-cache or a new cache so the latency is measured")
        return served_s


@dataclass
class StreamClock:
    """One stream's virtual clock: when its next call is issued (``cursor``), until when a call is in flight
    (``busy_until``), how many moments were skipped, and the samples of the calls of the current moment."""

    clock: Clock
    cursor: float = 0.0
    busy_until: float = -math.inf
    skipped: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)

    @contextlib.contextmanager
    def at(self, now: float) -> Iterator[StreamClock]:
        """The calls made in the block are issued from ``now`` on, one after the other; ``cursor`` is the arrival
        of the last one afterwards (``now`` when none was made)."""
        self.cursor = now
        self.calls = []
        yield self

    def busy(self, t_s: float) -> bool:
        """Whether a call is in flight at stream time ``t_s`` (its answer arrives after it)."""
        return t_s < self.busy_until - _EPS

    def skip(self, t_s: float) -> None:
        """A moment of the schedule at ``t_s`` fell inside a call: counted, and named in that call's sample."""
        self.skipped += 1
        owner = next((s for s in self.calls if s["issued_s"] <= t_s + _EPS < s["arrived_s"]),
                     self.calls[-1] if self.calls else None)
        if owner is not None:
            owner["skipped"].append(round(t_s, 6))

    def place(self, served_s: float | None, cached: bool, sample: dict[str, Any] | None) -> None:
        """One endpoint call, issued at ``cursor``: it arrives after its latency on this clock."""
        issued = self.cursor
        arrived = issued + self.clock.latency(served_s, cached)
        self.cursor = arrived
        self.busy_until = max(self.busy_until, arrived)
        if sample is not None:
            sample.update({"issued_s": round(issued, 6), "arrived_s": round(arrived, 6), "skipped": []})
            self.calls.append(sample)


_LOCAL = threading.local()


def current() -> StreamClock | None:
    """The stream clock open in this thread (None under ``free`` and outside a replay)."""
    return getattr(_LOCAL, "stream", None)


@contextlib.contextmanager
def streaming(clock: Clock | str | None) -> Iterator[StreamClock | None]:
    """A new stream clock for the calls made in this thread until the block ends (none under ``free``)."""
    clock = Clock.parse(clock)
    previous = current()
    _LOCAL.stream = None if clock.free else StreamClock(clock)
    try:
        yield _LOCAL.stream
    finally:
        _LOCAL.stream = previous


def place(reply: Any, sample: dict[str, Any] | None) -> None:
    """Put an endpoint call (a :class:`~streamcue.llm.Reply`) on the open stream clock; nothing under ``free``."""
    stream = current()
    if stream is not None:
        stream.place(getattr(reply, "served_s", None), bool(getattr(reply, "cached", False)), sample)


def clock_report(clock: Clock | str, samples: Sequence[Mapping[str, Any]], skipped: int) -> dict[str, Any]:
    """The clock block of a report: the setting, the placed calls, the moments skipped, and per answer (the calls
    of one record at one ask time) its latency = arrival of its last call - ask time: mean, max and the shares
    answered within 1, 2 and 5 s (``within_s``)."""
    clock = Clock.parse(clock)
    out: dict[str, Any] = {"setting": str(clock), "skipped_moments": skipped}
    placed = [s for s in samples if "arrived_s" in s]
    if clock.free or not placed:
        return {**out, "answers": 0}
    last: dict[tuple[Any, Any], float] = {}
    for s in placed:
        key = (s.get("record_id"), s.get("t_s"))
        last[key] = max(last.get(key, -math.inf), s["arrived_s"])
    latencies = [arrived - float(key[1] if key[1] is not None else arrived) for key, arrived in last.items()]
    return {**out, "answers": len(latencies), "latency_mean_s": round(statistics.fmean(latencies), 6),
            "latency_max_s": round(max(latencies), 6),
            "within_s": {f"{w:g}": round(sum(x <= w + _EPS for x in latencies) / len(latencies), 6)
                         for w in WITHIN_S}}


def stream_step(due: Any, ask: Any, record: Any) -> Any:
    """The synchronous timing's step under the open stream clock (None under ``free``: the caller keeps its own):
    a due moment inside a call is skipped and counted; otherwise the model is asked at the frame's time and its
    answer is stamped at the arrival of its last call (the frame's time when it made none)."""
    stream = current()
    if stream is None:
        return None

    def step(i: int, frame: Any) -> None:
        t_s = frame.t_s
        if not due(t_s):
            return
        if stream.busy(t_s):
            stream.skip(t_s)
            return
        with stream.at(t_s):
            answer = ask(t_s)[0]
        record(restamp(answer, t_s, stream.cursor), t_s, stream.cursor)

    return step


def restamp(answer: Any, now: float, arrived: float) -> Any:
    """``answer`` (None, one, or a list; text or ``{"text", "t_s"?, ...}``) with the responses a strategy stamped at
    the ask time ``now`` (a guidance event) stamped at ``arrived`` instead; times of its own choosing (a frame it
    names) are kept."""
    if arrived == now or answer is None:
        return answer

    def one(item: Any) -> Any:
        if isinstance(item, Mapping) and isinstance(item.get("t_s"), (int, float)) and abs(item["t_s"] - now) < _EPS:
            return {**item, "t_s": arrived}
        return item

    return [one(item) for item in answer] if isinstance(answer, list) else one(answer)


def asked_at(answer: Any) -> Any:
    """An asked question's ``answer(turn)`` whose calls are issued from the turn's time on the open stream clock."""
    stream = current()
    if stream is None:
        return answer

    def at_turn(turn: Any) -> Any:
        with stream.at(turn.t_s):
            return answer(turn)

    return at_turn


def next_poll(start_s: float, n: int, hz: float, arrived_s: float) -> tuple[int, float]:
    """The next poll of a polled question after poll ``n`` (at ``start_s + n / hz``) whose calls arrived at
    ``arrived_s``: the first of the grid at or after the arrival; the polls passed over are skipped moments of the
    open stream clock (none under ``free``, where ``arrived_s`` is the poll's own time)."""
    n += 1
    stream = current()
    while stream is not None and start_s + n / hz < arrived_s - _EPS:
        stream.skip(start_s + n / hz)
        n += 1
    return n, start_s + n / hz


def arrival(now: float) -> float:
    """When the calls made since the last :meth:`StreamClock.at` arrived (``now`` under ``free``)."""
    stream = current()
    return now if stream is None else stream.cursor


def issue(now: float) -> None:
    """Issue the next calls of this thread's stream from ``now`` (nothing under ``free``)."""
    stream = current()
    if stream is not None:
        stream.cursor = now
        stream.calls = []


def checked_clock(clock: Clock | str | None, timing: str = "synchronous") -> Clock:
    """``clock`` parsed; a live or fixed clock with the asynchronous timing (which has its own latency model,
    VSAS-Bench's camera buffer) is refused in one line."""
    clock = Clock.parse(clock)
    if not clock.free and timing != "synchronous":
        raise ConfigError(f"--clock {clock} plays the synchronous timing on a virtual clock; --timing {timing} has "
                          "its own (the camera buffer): use one or the other")
    return clock
