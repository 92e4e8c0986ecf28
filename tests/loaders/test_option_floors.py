"""Options that make a run ask nothing, or send unusable frames, and seeds and counts out of range (issue 35, items 5
and 7): refused when the configuration is made, naming the option and the smallest (or largest) accepted value.

Each probe case runs through the real CLI entry point, for ``replay`` and ``run`` alike: exit 2, one line, no
output folder. The endpoint named is an address where nothing listens: a refusal made after a call would say
"cannot reach" instead.
"""

from __future__ import annotations

import json

import pytest
from conftest import VALID, cli_run

from streamcue.errors import ConfigError
from streamcue.loaders.replay_config import ReplayConfig
from streamcue.metrics.run_config import RunConfig

COMMANDS = {"replay": ["replay"], "run": ["run", "estp"]}
ENDPOINT = ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--no-video"]

#: (options, words of the one line): the probe's cases, and their neighbours.
CASES = [
    (["--strategy", "polling", "--poll-hz", "1e-9"], ["--poll-hz", "smallest accepted value is 0.01"]),
    (["--strategy", "periodic", "--every-s", "1e308"], ["--every-s", "largest accepted value is 600"]),
    (["--strategy", "turn-loop", "--every-s", "1e5"], ["--every-s", "largest accepted value is 600"]),
    (["--strategy", "periodic", "--mistake-every-s", "1e9"], ["--mistake-every-s", "largest accepted value is 600"]),
    (["--strategy", "response-in-last", "--max-frames", "0"], ["--max-frames", "smallest accepted value is 1"]),
    (["--fps", "1e-9"], ["--fps", "smallest accepted value is 0.1"]),
    (["--frame-side", "1"], ["--frame-side", "smallest accepted value is 64 (or 0: full size)"]),
    (["--frame-side", "-5"], ["--frame-side", "smallest accepted value is 64"]),
    (["--frame-pixels", "4"], ["--frame-pixels", "smallest accepted value is 4096"]),
    # the probe's re-run (issue 35): a deadline past the socket clock's range ended in a traceback, a million
    # retries against a silent endpoint in an hour-long wait
    (["--llm-timeout", "1e308"], ["--llm-timeout", "largest accepted value is 86400"]),
    (["--llm-retries", "1000000"], ["--llm-retries", "largest accepted value is 100"]),
]

RUN_CASES = [
    (["--seed", "-1"], ["--seed", "0 to 2**63 - 1"]),
    (["--seed", str(2 ** 63)], ["--seed", "0 to 2**63 - 1"]),
    (["--resamples", "0"], ["--resamples", "1 to 100,000"]),
    (["--resamples", "100000000"], ["--resamples", "1 to 100,000"]),
    (["--judge", "exact", "--judge-llm-model", "m"], ["--judge-llm-model", "judge exact calls no LLM"]),
    (["--judge", "token-f1", "--judge-llm-base-url", "http://127.0.0.1:9/v1"], ["--judge-llm-base-url"]),
]


def cli(*args):
    return cli_run(*args)


@pytest.fixture
def records(tmp_path):
    path = tmp_path / "interval_qa.jsonl"
    path.write_text(json.dumps(VALID["interval_qa_minimal"]) + "\n")
    return path


def refused(done, words, out):
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)
    assert not out.exists()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("options, words", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_floor_is_refused_by_replay_and_run(records, tmp_path, command, options, words):
    out = tmp_path / "out"
    refused(cli(*COMMANDS[command], records, "--out", out, *ENDPOINT, *options), words, out)


@pytest.mark.parametrize("options, words", RUN_CASES, ids=[" ".join(c[0]) for c in RUN_CASES])
def test_a_seed_count_or_idle_judge_option_is_refused_before_any_call(records, tmp_path, options, words):
    out = tmp_path / "out"
    refused(cli("run", "estp", records, "--out", out, *ENDPOINT, *options), words, out)


def test_a_judge_model_on_a_benchmark_without_a_judge_is_refused(tmp_path):
    from conftest import CAPTAINCOOK4D

    from streamcue.dataset_builders import captaincook4d
    from streamcue.dataset_builders.output import write_outputs

    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D)), tmp_path / "cc4d")
    out = tmp_path / "out"
    refused(cli("run", "livecook", tmp_path / "cc4d", "--out", out, "--strategy", "periodic", "--no-video",
                "--judge-llm-model", "m"), ["--judge-llm-model", "livecook's metric has no judge"], out)


def test_the_floors_themselves_are_accepted():
    config = ReplayConfig(records="x", fps=0.1, frame_side=64, frame_pixels=4096,
                          strategy_options={"--poll-hz": 0.01, "every_s": 600.0, "--max-frames": 1})
    assert config.frame_side == 64 and ReplayConfig(records="x", frame_side=0).frame_side == 0
    run = RunConfig(records="x", benchmark="estp", seed=2 ** 63 - 1, resamples=100_000, judge="llm",
                    judge_llm_model="j")
    assert run.bootstrap().seed == 2 ** 63 - 1 and run.evaluate_options()["judge_options"]["model"] == "j"


@pytest.mark.parametrize("changes, flag", [({"seed": -1}, "--seed"), ({"resamples": 0}, "--resamples"),
                                           ({"fps": 0.05}, "--fps"), ({"frame_side": 63}, "--frame-side"),
                                           ({"strategy_options": {"hz": 0.001}}, "--poll-hz")])
def test_a_notebook_gets_the_same_refusal(changes, flag):
    with pytest.raises(ConfigError, match=f"^{flag}"):
        RunConfig(records="x", benchmark="estp", **changes)


@pytest.mark.parametrize("changes, words", [({"timeout_s": 1e308}, "at most 86400"), ({"timeout_s": 0}, "> 0"),
                                            ({"max_retries": 101}, "at most 100"), ({"max_retries": -1}, ">= 0")])
def test_every_command_s_llm_settings_bound_the_deadline_and_the_retries(changes, words):
    """The bounds live in the one LLM client's settings, so every command that calls a model has them."""
    from streamcue.llm import LLMSettings

    with pytest.raises(ConfigError, match=words):
        LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", **changes)
    ceiling = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=86_400, max_retries=100)
    assert ceiling.max_retries == 100
