"""Ray workers for a replay (``--ray ADDRESS|local --workers N``): the records of each play sharded by video into
Ray tasks, each decoding its video and calling the model (:func:`streamcue.loaders.engine.play` on that video's
records, with its own frame source, memory and strategy); at most ``N`` tasks run at once.

* The driver alone writes the run folder: a task returns its predictions and per-call samples, and the driver puts
  them back in the records' order, so the predictions, samples and figures are exactly a local run's
  (``tests/loaders/test_ray_workers.py``).
* A task whose worker dies is run again by Ray (``max_retries``); the videos already finished are kept, and the
  calls the killed task had made are read from the answer cache (``$STREAMCUE_CACHE_DIR``, given to every task: on a
  cluster, a folder every node shares, else a node asks again what another cached).
* ``local`` starts a Ray instance on this machine with ``N`` CPUs and stops it at the end; an address
  (``HOST:6379``, ``ray://HOST:10001`` or ``auto``) joins a running cluster; a process that already joined one uses it.
* Ray is the ``scale`` extra, imported only here.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from streamcue.errors import ServiceError
from streamcue.extras import require

__all__ = ["Shard", "Remote", "start_ray", "play_on_ray", "shards_of", "with_session", "TASK_RETRIES"]

#: Times Ray runs a task again after its worker died.
TASK_RETRIES = 3


@dataclass(frozen=True)
class Shard:
    """What a task needs to play one video's records of one play (everything picklable: no client, no open file)."""

    kind: str
    rows: list[dict[str, Any]]
    protocol: Any
    strategy: str
    options: dict[str, Any]
    settings: Any
    memory: dict[str, Any]
    frames: dict[str, Any] | None
    play: dict[str, Any]
    cache_dir: str
    use_cache: bool


def _play_shard(shard: Shard) -> dict[str, Any]:
    """The Ray task: one video's records through the engine, here; what the driver merges."""
    os.environ["STREAMCUE_CACHE_DIR"] = shard.cache_dir
    os.environ["STREAMCUE_NO_PROGRESS"] = "1"
    from streamcue.loaders.engine import play
    from streamcue.loaders.frames import FrameSource
    from streamcue.loaders.memory import make_memory
    from streamcue.loaders.strategies import make_strategy

    model = make_strategy(shard.strategy, shard.settings, shard.kind, protocol=shard.protocol.name,
                          use_cache=shard.use_cache, **shard.options)
    memory = make_memory(**shard.memory, settings=shard.settings, use_cache=shard.use_cache)
    frames = FrameSource(**shard.frames) if shard.frames is not None else None
    try:
        predictions, summary = play(shard.rows, shard.kind, strategy=model, protocol=shard.protocol, memory=memory,
                                    frames=frames, **shard.play)
    finally:
        decoded = dict(frames.decoded) if frames is not None else {}
        if frames is not None:
            frames.close()
    client = getattr(model, "client", None)
    return {"predictions": predictions, "summary": summary, "decoded": decoded,
            "report": model.report() if hasattr(model, "report") else {},
            "card": client.model_card() if client is not None else None,
            "pool": client.endpoints_report() if hasattr(client, "endpoints_report") else {}}


@dataclass
class Remote:
    """The driver's stand-in for the strategies the tasks ran: their reports added up, the model entry they read
    (what :func:`streamcue.loaders.replay_run.play_all` reads of a local strategy)."""

    reports: list[dict[str, Any]] = field(default_factory=list)
    card: dict[str, Any] | None = None
    pool: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def client(self) -> Remote:
        return self

    def model_card(self) -> dict[str, Any] | None:
        return self.card

    def endpoints_report(self) -> dict[str, dict[str, int]]:
        return self.pool

    def report(self) -> dict[str, Any]:
        total: dict[str, Any] = {}
        for r in self.reports:
            for key, value in r.items():
                if key == "latency_max_s":
                    total[key] = max(total.get(key, 0.0), value)
                elif key == "latency_mean_s":
                    continue
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
                else:
                    total.setdefault(key, value)
        calls = [r.get("endpoint_calls", 0) + r.get("cache_hits", 0) for r in self.reports]
        total["latency_mean_s"] = (sum(r.get("latency_mean_s", 0.0) * n for r, n in zip(self.reports, calls))
                                   / sum(calls)) if sum(calls) else 0.0
        return total


def start_ray(address: str, workers: int) -> tuple[Any, bool]:
    """Ray, joined or started (``local``: an instance with ``workers`` CPUs); and whether this call started it."""
    ray = require("ray", "scale", "ray[data]")
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if ray.is_initialized():
        return ray, False
    local = address == "local"
    if not local:
        from streamcue.anonymize.ray_engine import check_address

        check_address(address)
    try:
        ray.init(address=None if local else address, num_cpus=workers if local else None, include_dashboard=False,
                 log_to_driver=False, logging_level="ERROR", configure_logging=False)
    except Exception as exc:  # ConnectionError and the like: one line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise ServiceError(f"could not start or join Ray{'' if local else f' at {address}'}: {reason}") from None
    return ray, True


def play_on_ray(rows: list[dict[str, Any]], shards: list[Shard], ray: Any, workers: int, model: Remote,
                record_id: Any) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Every shard of ``rows`` as a Ray task, at most ``workers`` at once; the predictions and summary a local
    :func:`~streamcue.loaders.engine.play` of ``rows`` gives (in their order), and the frames each video decoded.
    ``model`` gathers the tasks' strategy reports; ``record_id(row)`` names a record."""
    from streamcue.loaders.clock import clock_report
    from streamcue.loaders.engine import summary as total_summary

    task = ray.remote(num_cpus=1, max_retries=TASK_RETRIES)(_play_shard)
    todo, running, done = list(range(len(shards))), {}, {}
    while todo or running:
        while todo and len(running) < workers:
            n = todo.pop(0)
            running[task.remote(shards[n])] = n
        ready, _ = ray.wait(list(running), num_returns=1)
        for ref in ready:
            n = running.pop(ref)
            done[n] = _result(ray, ref, shards[n], list(running))
    outs = [done[n] for n in range(len(shards))]
    order = {str(record_id(row)): i for i, row in enumerate(rows)}
    played = []
    for shard, out in zip(shards, outs):
        if len(out["predictions"]) != len(shard.rows):
            raise ServiceError(f"a Ray task returned {len(out['predictions'])} predictions for the "
                               f"{len(shard.rows)} records of video {shard.rows[0]['video_id']}")
        played += [(order[str(record_id(row))], p) for row, p in zip(shard.rows, out["predictions"])]
    predictions = [p for _, p in sorted(played, key=lambda x: x[0])]
    samples = sorted((s for out in outs for s in out["summary"]["samples"]),
                     key=lambda s: order.get(str(s["record_id"]), len(order)))
    merged = _merge([out["summary"] for out in outs], samples, clock_report, total_summary)
    for out in outs:
        model.reports.append(out["report"])
        model.card = model.card or out["card"]
        for endpoint, figures in out["pool"].items():
            mine = model.pool.setdefault(endpoint, {})
            for key, value in figures.items():
                mine[key] = mine.get(key, 0) + value
    decoded = dict(Counter(v for out in outs for v, n in out["decoded"].items() for _ in range(n)))
    return predictions, merged, decoded


def _result(ray: Any, ref: Any, shard: Shard, others: list[Any]) -> dict[str, Any]:
    """A finished task's result; a task that failed (past its retries) stops the others and is one line: its own
    streamcue error as it was raised, or what Ray said."""
    from streamcue.errors import StreamcueError

    try:
        return ray.get(ref)
    except Exception as exc:
        for other in others:
            ray.cancel(other, force=True)
        cause = getattr(exc, "cause", None)
        if isinstance(cause, StreamcueError):
            raise cause from None
        said = (str(cause or exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
        raise ServiceError(f"the Ray task playing video {shard.rows[0]['video_id']} failed after "
                           f"{TASK_RETRIES} retries: {said}") from None


def _merge(summaries: list[dict[str, Any]], samples: list[dict[str, Any]], clock_report: Any,
           total_summary: Any) -> dict[str, Any]:
    """The tasks' summaries as one (:func:`streamcue.loaders.engine.summary` over every record's report, weighted
    by their runs), with every call's sample in the records' order."""
    parts = [s for s in summaries if s.get("runs")]
    out = total_summary(parts) if parts else {"runs": 0}
    if parts:
        runs = sum(s["runs"] for s in parts)
        out["runs"] = runs
        for key in ("latency_mean_s", "actions_per_second"):
            out[key] = sum(s[key] * s["runs"] for s in parts) / runs
    from streamcue.loaders.engine import sample_counts

    out.update(sample_counts(samples))
    stats = Counter()
    for s in summaries:
        stats.update(s.get("strategy") or {})
    if stats:
        out["strategy"] = dict(stats)
    setting = next((s["clock"]["setting"] for s in summaries if s.get("clock")), "free")
    out["clock"] = clock_report(setting, samples, sum((s.get("clock") or {}).get("skipped_moments", 0)
                                                      for s in summaries))
    return out


def shards_of(rows: list[dict[str, Any]], **common: Any) -> list[Shard]:
    """One shard per video, in the order the videos first appear among ``rows``."""
    by_video: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_video.setdefault(str(row["video_id"]), []).append(row)
    frames = common.pop("frames")
    return [Shard(rows=mine, frames=None if frames is None else {**frames, "paths": {vid: frames["paths"][vid]}},
                  **common) for vid, mine in by_video.items()]


def with_session(settings: Any) -> Any:
    """``settings`` with the driver's session name: the tasks' cached answers count as this run's own."""
    from streamcue.llm import _process_session

    return settings if settings is None or settings.session else replace(settings, session=_process_session())
