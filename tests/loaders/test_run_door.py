"""One evaluation door: a run from Python in five lines (docs/runs.md's block, run as written), every option
declared once reaching both ``replay`` and ``run``, checked once, and any records source (build, release)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import CAPTAINCOOK4D, REPO
from streamcue.dataset_builders import captaincook4d
from streamcue.dataset_builders.output import write_outputs
from streamcue.errors import ConfigError
from streamcue.io import read_jsonl
from streamcue.loaders.replay_config import ReplayConfig
from streamcue.metrics.run_config import RunConfig


def cli(*args, cwd=None):
    env = {**os.environ, "COLUMNS": "200", "STREAMCUE_NO_PROGRESS": "1"}
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd)


@pytest.fixture(scope="module")
def cc4d(tmp_path_factory):
    root = tmp_path_factory.mktemp("door")
    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D)), root / "out" / "cc4d")
    return root


def test_the_python_block_of_docs_runs_md(cc4d, monkeypatch, capsys):
    text = (REPO / "docs" / "runs.md").read_text(encoding="utf-8")
    block = re.search(r"## From Python\n.*?```python\n(.*?)```", text, re.S).group(1)
    assert len([line for line in block.splitlines() if line.strip()]) <= 6
    monkeypatch.chdir(cc4d)
    exec(compile(block, "docs/runs.md", "exec"), {})
    results = json.loads((cc4d / "runs" / "livecook-periodic" / "results.json").read_text())
    assert results["n_played"] == 109 and results["tables"]["group"]["mistake F1"]["n"] > 0
    assert "estimate" in capsys.readouterr().out
    done = cli("export", cc4d / "runs" / "livecook-periodic", "--out", cc4d / "export")  # no format: said so first
    assert done.returncode == 2 and "has no official output format to export to" in done.stderr, done.stderr
    assert not (cc4d / "export").exists()


def test_options_are_checked_once_in_the_configuration():
    for bad, words in (({"fps": 61}, "at most 60"), ({"jpeg_quality": 0}, "--jpeg-quality"),
                       ({"transport": "carrier-pigeon"}, "transport"), ({"memory": "all"}, "unknown memory"),
                       ({"ids": ()}, "names no record id"), ({"strategy_options": {"nope": 1}}, "unknown strategy "
                                                                                                "option")):
        with pytest.raises(ConfigError, match=words):
            ReplayConfig(records="x", **bad)
    with pytest.raises(ConfigError, match="a run needs its benchmark"):
        RunConfig(records="x")
    with pytest.raises(ConfigError, match="unknown judge 'oracle'"):
        RunConfig(records="x", benchmark="estp", judge="oracle")
    assert RunConfig(records="x", benchmark="estp", judge="llm", llm_model="m").evaluate_options()["judge_options"] == {
        "model": "m", "structured": "json_schema"}
    with pytest.raises(ConfigError, match="--config-version"):
        RunConfig(records="x", benchmark="livecook", config_version=0)
    config = RunConfig(records="x", benchmark="livecook", params={"window_s": 10})
    assert config.replace(fps=2.0).fps == 2.0 and config.metric_config().window_s == 10


def test_the_python_config_reads_ids_and_params_as_the_command_line(tmp_path):
    """Issue 49: ``RunConfig(ids="a,b")`` was split into characters and ``params=["rules=strict"]`` raised a raw
    ValueError; both are read as ``--ids`` and ``--param`` read them."""
    (tmp_path / "ids.txt").write_text("a\nb\n\n")
    for ids in ("a,b", " a, b ,", f"@{tmp_path / 'ids.txt'}", ["a", "b"]):
        assert RunConfig(records="x", benchmark="livecook", ids=ids).ids == ("a", "b")
    config = RunConfig(records="x", benchmark="ovo-bench", params=["rules=strict"])
    assert config.params == {"rules": "strict"} and config.metric_config().rules == "strict"
    assert RunConfig(records="x", benchmark="livecook", params="window_s=10").params == {"window_s": 10}
    with pytest.raises(ConfigError, match="--param expects NAME=VALUE, got 'rules'"):
        RunConfig(records="x", benchmark="ovo-bench", params=["rules"])


@pytest.mark.parametrize("benchmark", ["ovo-bench", "streamingbench"])
def test_a_judge_a_benchmark_ignores_is_refused(benchmark):
    """Issue 49: ``--judge llm`` on OVO-Bench and StreamingBench (scored by their official rules, no judge) was
    accepted and ignored."""
    with pytest.raises(ConfigError, match=f"{benchmark}'s metric scores without a judge.*--judge llm would be ignored"):
        RunConfig(records="x", benchmark=benchmark, judge="llm")


def test_every_option_reaches_replay_and_run():
    flags = ("--poll-hz", "--every-s", "--transport", "--frame-pixels", "--frame-side", "--frame-label",
             "--jpeg-quality", "--video-url", "--ids", "--split", "--limit", "--llm-retries", "--timing", "--span")
    for command in ("replay", "run"):
        done = cli(command, "--help")
        assert done.returncode == 0, done.stderr
        for flag in flags:
            assert flag in done.stdout, (command, flag)
    done = cli("run", "--help")
    for flag in ("--param", "--judge", "--config-version", "--judge-llm-model", "--resamples"):
        assert flag in done.stdout, flag


def test_the_same_refusal_from_replay_and_run(cc4d, tmp_path):
    for args in (["replay", cc4d / "out" / "cc4d"], ["run", "livecook", cc4d / "out" / "cc4d"]):
        done = cli(*args, "--out", tmp_path / "x", "--fps", "61", "--no-video")
        assert done.returncode == 2 and done.stderr.startswith("error: --fps") and "at most 60" in done.stderr, \
            done.stderr
        done = cli(*args, "--out", tmp_path / "x", "--transport", "video_url", "--no-video", "--strategy", "periodic")
        assert done.returncode == 2 and "video_url" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists()


def test_replay_takes_ids_and_split(cc4d, tmp_path):
    test_ids = [v["video_id"] for v in read_jsonl(cc4d / "out" / "cc4d" / "videos.jsonl") if v["split"] == "test"]
    done = cli("replay", cc4d / "out" / "cc4d", "--out", tmp_path / "r", "--split", "test", "--ids",
               ",".join(test_ids[:2]), "--strategy", "periodic", "--every-s", "20", "--no-video")
    assert done.returncode == 0, done.stderr
    predictions = read_jsonl(tmp_path / "r" / "predictions.jsonl")
    assert [p["video_id"] for p in predictions] == test_ids[:2]
    report = json.loads((tmp_path / "r" / "replay_report.json").read_text())
    assert report["kinds"]["guidance"]["options"]["every_s"] == 20.0
    done = cli("replay", cc4d / "out" / "cc4d", "--out", tmp_path / "r2", "--split", "train", "--ids", test_ids[0],
               "--strategy", "periodic", "--no-video")
    assert done.returncode == 2 and "unknown id" in done.stderr, done.stderr


@pytest.mark.slow
def test_run_plays_a_release_folder(cc4d, tmp_path):
    pytest.importorskip("datasets")
    dist = tmp_path / "v1.0.0"
    done = cli("release", "build", "--records", cc4d / "out" / "cc4d", "--version", "1.0.0", "--out", dist,
               "--allow-unverified")
    assert done.returncode == 0, done.stderr
    done = cli("run", "livecook", dist, "--out", tmp_path / "run", "--split", "test", "--strategy", "periodic",
               "--every-s", "20", "--no-video", "--no-bertscore", "--config-version", "1", "--param", "window_s=10")
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["n_played"] == 109 and results["metric"]["config_version"] == "livecook.v1+overrides"
    assert results["metric"]["config"]["window_s"] == 10
    assert results["protocol"]["kinds"]["guidance"]["options"]["every_s"] == 20.0
    done = cli("evaluate", "livecook", "--gt", dist, "--pred", tmp_path / "run" / "predictions.jsonl",
               "--no-bertscore")
    assert done.returncode == 0 and "livecook" in done.stdout, done.stderr
