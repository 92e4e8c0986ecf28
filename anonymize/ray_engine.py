"""Many videos on Ray Data: one task per video, on a local Ray instance or a cluster.

Each task runs :func:`~streamcue.anonymize.pipeline.anonymize_video` on one file and returns
one row (``done`` or ``failed`` with its one-line error); a failed video never stops the others.
Before anything is sent, videos whose output and passing report already match the input's
SHA-256 and state this run's options are ``skipped``, so a re-run does only what is missing, failed
or asked for with other options.

On a cluster every node must see the input and output folders at the same paths (shared
storage) and have ``streamcue[anonymize,scale]`` installed.

GPU workers: a task asks Ray for ``gpus`` GPUs (:func:`gpus_per_task`) as it asks for one CPU,
so Ray runs it only on a node with a GPU free and never runs more tasks on one GPU than
``1 / gpus``; the task's face detector then runs on the GPU Ray gave it (``CUDA_VISIBLE_DEVICES``).

Start-up is paid once per worker process: Ray runs task after task in the same worker processes, and each keeps
the :class:`~streamcue.anonymize.pipeline.Anonymizer` it built (models loaded, canary passed) for the next video
with the same options and model files (:func:`worker_anonymizer`). Ray ends a GPU task's worker after the task
(its ``max_calls`` is 1 for tasks that ask for GPUs), so there each video still loads its own.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamcue.anonymize.detectors import asks_for_gpu
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, already_done, anonymize_video
from streamcue.errors import ConfigError, ServiceError, StreamcueError
from streamcue.extras import require

__all__ = ["CONNECT_TIMEOUT_S", "VideoOutcome", "check_address", "gpus_per_task",
           "worker_anonymizer", "anonymize_on_ray"]


@dataclass
class VideoOutcome:
    video: Path
    state: str                      # done, skipped or failed
    report: dict[str, Any] | None = None
    error: str | None = None
    resources: dict[str, float] | None = None    # the CPUs and GPUs Ray gave its task: {"CPU": 1.0, "GPU": 0.5}
    ran: tuple[float, float] | None = None       # when its task started and ended (time.time() on its node)
    worker: dict[str, int] | None = None         # its worker process: {"pid", "anonymizers_built": in that process}


#: seconds to wait for a Ray cluster's address to answer before the run is refused
CONNECT_TIMEOUT_S = 5.0
#: HTTP/2's client connection preface and an empty SETTINGS frame
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def check_address(address: str | None, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """A cluster address (``HOST:PORT`` or ``ray://HOST:PORT``) must accept a connection and answer
    as a gRPC server within ``timeout`` seconds; ``ray.init`` itself waits for minutes on an address
    where nothing, or something else, listens.
    None (a local instance) and ``auto`` (the cluster on this machine) are left to Ray."""
    if not address or address == "auto":
        return
    where = address.removeprefix("ray://")
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as conn:
            # Ray's GCS and Ray Client are gRPC servers: they answer HTTP/2's connection preface with a
            # SETTINGS frame at once; anything else listening there (ray.init would wait on it for minutes) does not
            conn.sendall(_HTTP2_PREFACE)
            reply = b""
            while len(reply) < 9:
                block = conn.recv(9 - len(reply))
                if not block:
                    break
                reply += block
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ServiceError(f"no Ray cluster answers at {address} ({reason}; waited up to {timeout:g} s): is "
                           "`ray start --head` running there?") from None
    if len(reply) < 9 or reply[3] != 0x04:
        raise ServiceError(f"no Ray cluster answers at {address} (something listens there but does not speak "
                           "gRPC, as Ray does): is it the Ray head's port (6379, or ray://HOST:10001)?")


def gpus_per_task(device: str, asked: float | None = None) -> float:
    """GPUs each task asks Ray for: ``asked`` (``--gpus-per-video``) when given, else 1 when ``device``
    is ``cuda`` or resolves to it here (``auto`` on a machine with a CUDA device), else 0 (a CPU run).
    Ray takes a share of one GPU (above 0, up to 1: 0.25 runs four videos on a GPU) or whole GPUs."""
    if asked is None:
        return 1.0 if asks_for_gpu(device) else 0.0
    if not math.isfinite(asked) or asked <= 0 or (asked > 1 and not float(asked).is_integer()):
        raise ConfigError(f"--gpus-per-video must be above 0 and at most 1 (a share of one GPU) or a whole number, "
                          f"got {asked:g}")
    if device == "cpu":
        raise ConfigError("--gpus-per-video needs --device cuda or auto: on the CPU a task has no use for a GPU")
    return float(asked)


def _check_gpus(ray: Any, gpus: float, address: str | None) -> None:
    """Tasks asking for more GPUs than any node has would wait for ever: one line instead."""
    most = max((node["Resources"].get("GPU", 0.0) for node in ray.nodes() if node.get("Alive")), default=0.0)
    if gpus > most:
        where = f"the Ray cluster at {address}" if address else "the local Ray instance"
        raise ConfigError(f"--gpus-per-video {gpus:g}: no node of {where} has {gpus:g} GPU{'s' * (gpus > 1)} "
                          f"(the most on one node: {most:g}); run on GPU nodes, or leave --gpus-per-video out and "
                          "use --device cpu")


#: this process's Anonymizer, by the options and model files it was built for, and how many it built
_ANONYMIZER: dict[str, Any] = {"key": None, "anonymizer": None, "built": 0}


def worker_anonymizer(options: str, stated: str) -> Any:
    """The Anonymizer for ``options`` (an :class:`AnonymizeConfig` as JSON) in this process: built once (models
    loaded, canary run) and kept for every later task with the same options and model files (``stated``, the
    options as :meth:`AnonymizeConfig.stated` gives them: model files by SHA-256), the previous one dropped."""
    key = options + stated
    if _ANONYMIZER["key"] != key:
        _ANONYMIZER.update(key=None, anonymizer=None)  # the old models go before the new ones load
        _ANONYMIZER.update(key=key, anonymizer=Anonymizer(AnonymizeConfig(**json.loads(options))),
                           built=_ANONYMIZER["built"] + 1)
    return _ANONYMIZER["anonymizer"]


def _one(row: dict[str, Any]) -> dict[str, Any]:
    """The Ray task: one video, never raising (the error travels back as text)."""
    import ray

    started = time.time()
    given = ray.get_runtime_context().get_assigned_resources()  # Ray Data may add a memory figure
    resources = json.dumps({name: given[name] for name in ("CPU", "GPU") if name in given})

    def worker() -> str:
        return json.dumps({"pid": os.getpid(), "anonymizers_built": _ANONYMIZER["built"]})

    try:
        report = anonymize_video(row["video"], row["out"], anonymizer=worker_anonymizer(row["options"], row["stated"]))
    except Exception as exc:  # reported per video; the other tasks go on
        message = str(exc) if isinstance(exc, StreamcueError) else f"{type(exc).__name__}: {exc}"
        return {"video": row["video"], "state": "failed", "error": message, "report": "", "resources": resources,
                "started": started, "ended": time.time(), "worker": worker()}
    # unmeasured: the user allowed it (--allow-unmeasured, which any GPU run needs); a release still refuses it
    state = "done" if report["status"] in ("passed", "unmeasured") else "failed"
    error = "" if state == "done" else f"status {report['status']}: {'; '.join(report['problems'])}"
    return {"video": row["video"], "state": state, "error": error, "report": json.dumps(report),
            "resources": resources, "started": started, "ended": time.time(), "worker": worker()}


def _quiet() -> None:
    """Ray's INFO lines name local session folders; its errors still show."""
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)


def anonymize_on_ray(videos: list[Path], out_dir: Path, options: AnonymizeConfig, *, address: str | None = None,
                     cpus: int | None = None, gpus: float = 0.0) -> Iterator[VideoOutcome]:
    """Skipped videos first, then one outcome per video as the Ray tasks finish.

    ``address`` is a running cluster (``ray://HOST:10001`` or ``HOST:6379``, or ``auto``);
    without it a local instance with ``cpus`` CPUs (and the GPUs Ray finds) is started and shut
    down at the end. An instance that this process already joined is used as it is. ``gpus``
    (see :func:`gpus_per_task`) is what each task asks for beside its CPU; when no node has that
    many, nothing is sent and the error says so.
    """
    ray = require("ray", "scale", "ray[data]")
    out_dir = Path(out_dir).resolve()
    todo = []
    stated = options.stated()  # once: a model file is hashed once, not once a video
    for video in videos:
        report = already_done(video, out_dir, stated)
        if report is not None:
            yield VideoOutcome(video, "skipped", report)
        else:
            todo.append(video)
    if not todo:
        return
    started = False
    _quiet()
    if not ray.is_initialized():
        check_address(address)
        try:
            ray.init(address=address, num_cpus=None if address else cpus, include_dashboard=False,
                     log_to_driver=False, logging_level="ERROR", configure_logging=False)
        except Exception as exc:  # ConnectionError and the like: one line, exit 4
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise ServiceError(f"could not start or join Ray{f' at {address}' if address else ''}: {reason}") from None
        started = True
    try:
        if gpus:
            _check_gpus(ray, gpus, address)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        _quiet()
        # one CPU and one detector thread per task: the tasks, not the threads, fill the cores
        task_options = asdict(options) | {"threads": options.threads or 1}
        rows = [{"video": str(v.resolve()), "out": str(out_dir), "options": json.dumps(task_options),
                 "stated": json.dumps(stated)} for v in todo]
        by_path = {str(v.resolve()): v for v in todo}
        dataset = ray.data.from_items(rows, override_num_blocks=len(rows))
        dataset = dataset.map(_one, num_cpus=1, **({"num_gpus": gpus} if gpus else {}))
        for row in dataset.iter_rows():
            report = json.loads(row["report"]) if row["report"] else None
            video = by_path[row["video"]]  # errors name the video as the user gave it
            yield VideoOutcome(video, row["state"], report, row["error"].replace(row["video"], str(video)) or None,
                               json.loads(row["resources"]), (row["started"], row["ended"]), json.loads(row["worker"]))
    finally:
        if started:
            ray.shutdown()
