"""``streamcue run ... --ray local --workers N``: the records sharded by video into Ray tasks on a local Ray instance
(2 CPUs, joined once by the Ray tests, as on a cluster the driver joined before), against a real local model server.
Two workers give exactly the figures of a local run; a worker killed during the run is replaced, the videos already
finished are kept and no answered call is asked twice (the killed task's calls come back from the cache)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import SHARED_DATA, cli

from streamcue.testing.stub_llm import StubLLMServer, message_text, request_schema

pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.llm_server, pytest.mark.slow]

FIXTURE = SHARED_DATA / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json"


def answer(body):
    """Plain-text answers from a hash of the prompt (never from the order of the calls), in the shape asked for."""
    text = "\n".join(message_text(m) for m in body.get("messages", []))
    h = hashlib.sha256(text.encode()).digest()[0]
    schema = request_schema(body)
    if schema and "answer" in schema.get("properties", {}):
        return json.dumps({"answer": "yes" if h % 2 else "no"})
    said = f"Answer: {'ABCD'[h % 4]}" if h % 3 else "I cannot tell."
    return json.dumps({"text": said}) if schema else said


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An OVO-Bench build of 12 records over several videos."""
    root = tmp_path_factory.mktemp("ray")
    assert cli("build", "ovo-bench", "--annotations", FIXTURE, "--out", root / "ovo")[0] == 0
    return root / "ovo"


@pytest.fixture
def joined(built, joined_ray):
    """:func:`built`, with the local Ray instance (2 CPUs) that this process joined (tests/ray_instance.py, the Ray
    tests' shared one): ``--ray local`` then uses it as it is."""
    return built


def run(records, out, server, *extra):
    """``streamcue run`` of OVO-Bench, blind (``--no-video``), against ``server``."""
    return cli("run", "ovo-bench", records, "--out", out, "--no-video", "--llm-base-url", server.base_url,
               "--llm-model", "stub-model", *extra)


def figures(out: Path):
    results = json.loads((out / "results.json").read_text())
    return results["tables"], results["counts"], (out / "predictions.jsonl").read_bytes()


def test_two_ray_workers_give_exactly_the_figures_of_a_local_run(joined, tmp_path, monkeypatch):
    """docs/runs.md's pool-example block, line by line: a run on a pool of two endpoints (from @endpoints.txt), then
    the same on two Ray workers with a fresh cache: every call made again, on the workers, and exactly the figures."""
    import re
    import shlex
    import shutil

    text = (Path(__file__).resolve().parents[2] / "docs" / "runs.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- pool-example: run by tests/loaders/test_ray_workers.py -->\n```bash\n(.*?)```", text,
                      re.S).group(1)
    lines = [line for line in block.strip().splitlines() if line.startswith("streamcue ")]
    assert len(lines) == 2 and "--ray local --workers 2" in lines[1]
    shutil.copytree(joined, tmp_path / "out" / "ovo")
    monkeypatch.chdir(tmp_path)
    with StubLLMServer(answer) as a, StubLLMServer(answer) as b:
        Path("endpoints.txt").write_text(f"{a.base_url}\n{b.base_url}\n")
        monkeypatch.setenv("STREAMCUE_LLM_MODEL", "stub-model")
        for n, line in enumerate(lines):
            monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / f"cache{n}"))
            before = a.completions + b.completions
            code, _, err = cli(*shlex.split(line)[1:])
            assert code == 0, (line, err)
        calls = a.completions + b.completions - before
    assert calls == before  # every call made again, on the workers (a fresh cache)
    assert figures(tmp_path / "runs" / "ray") == figures(tmp_path / "runs" / "pool")
    results = json.loads((tmp_path / "runs" / "ray" / "results.json").read_text())
    assert results["replay"]["endpoint"]["endpoint_calls"] == calls
    shares = results["throughput"]["endpoints"]
    assert set(shares) == {a.base_url, b.base_url} and all(mine["calls"] > 0 for mine in shares.values())


def _kill_a_task_worker() -> int:
    """SIGKILL a Ray worker process of this test's own Ray instance (started from this process: the raylet is its
    child, the workers the raylet's) running a replay task (its title ``ray::_play_shard``); its pid. Another run's
    workers on the machine are never touched."""
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::_play_shard") and os.getpid() in _ancestors(pid):
            os.kill(pid, signal.SIGKILL)
            return pid
    raise AssertionError("no Ray worker runs a replay task")


def _ancestors(pid: int) -> list[int]:
    """The parent, grandparent, ... of process ``pid`` (from /proc; empty once it is gone)."""
    found = []
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        found.append(pid)
    return found


def test_a_killed_worker_is_replaced_and_finished_videos_are_kept(joined, tmp_path, monkeypatch):
    with StubLLMServer(answer) as server:
        monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "c1"))
        assert run(joined, tmp_path / "local", server)[0] == 0
        local = server.completions
    killed, lock = [], threading.Lock()

    def kills_once(body):  # the 4th call: its worker is killed before the answer (then HTTP 500 to no one)
        with lock:
            kills_once.n += 1
            if kills_once.n == 4 and not killed:
                killed.append(_kill_a_task_worker())
                time.sleep(0.5)
                raise RuntimeError("the worker died")
        return answer(body)

    kills_once.n = 0
    with StubLLMServer(kills_once) as server:
        monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "c2"))
        code, _, err = run(joined, tmp_path / "ray", server, "--ray", "local", "--workers", "1")
        assert code == 0, err
        assert killed and server.completions == local  # no answered call asked twice: finished videos kept
    assert figures(tmp_path / "ray") == figures(tmp_path / "local")
