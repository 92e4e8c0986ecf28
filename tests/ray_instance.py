"""The local Ray instance of the test process, shared by the modules marked ``pytest.mark.ray`` (the xdist
scheduler in conftest.py runs them one after another on one worker): 2 CPUs, joined by this process as a driver
joins a cluster, so that a run made in this process uses it as it is. A test that needs no GPU on it, or one GPU
declared (``ray.init(num_gpus=1)`` needs no device), says so; one that needs neither takes the instance that is up.
Started at the first test that asks for it, started again only when a test needs other GPUs, so that the worker
processes (and the models they keep) last from one test to the next; shut down as soon as the next test is not a
Ray test, so that it never idles beside the rest of the suite.
"""

from __future__ import annotations

import sys

import pytest

_DECLARED: dict[str, int] = {}  # the GPUs of the instance this process started


def _instance(gpus: int | None):
    """The process's Ray instance with ``gpus`` GPUs declared (None: whatever the running one has, else none)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized() and gpus is not None and _DECLARED.get("gpus") != gpus:
        ray.shutdown()
    if not ray.is_initialized():
        _DECLARED["gpus"] = gpus or 0
        ray.init(num_cpus=2, num_gpus=gpus or 0, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                 configure_logging=False)
    return ray


@pytest.fixture
def joined_ray():
    """The local Ray instance this process joined (``ray``, initialized), with or without a GPU."""
    return _instance(None)


@pytest.fixture
def joined_ray_without_a_gpu():
    """The local Ray instance this process joined, with no GPU."""
    return _instance(0)


@pytest.fixture
def joined_ray_with_a_gpu():
    """The local Ray instance this process joined, with one GPU declared."""
    return _instance(1)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last Ray test in a row: the instance goes (a later Ray test starts one again)."""
    ray = sys.modules.get("ray")
    if ray is not None and (nextitem is None or nextitem.get_closest_marker("ray") is None) and ray.is_initialized():
        ray.shutdown()
