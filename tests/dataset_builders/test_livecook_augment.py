"""LiveCook augmentations on the real GoalStep val file, through the stub LLM server over HTTP."""

import json
import os
import re
import subprocess
import sys

import pytest

from streamcue.dataset_builders import livecook_augment as la
from streamcue.dataset_builders.ego4d_sources import load_goalstep
from streamcue.dataset_builders.estp_gen.clean import CleanConfig, clean_video
from streamcue.dataset_builders.jitter import jitter_guidance
from streamcue.dataset_builders.output import write_outputs
from streamcue.llm import LLMSettings
from streamcue.schemas import validate_file
from streamcue.testing.stub_llm import StubLLMServer

from conftest import GOALSTEP_VAL
from kill_resume import HangAtCall, kill_at_hanging_call, resume_without_repeats
from livecook_responder import livecook_responder

pytestmark = pytest.mark.llm_server
VID = "c2d06df7-5d3a-4116-9edb-f1c81a4f669b"


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def val_build(tmp_path_factory):
    with StubLLMServer(livecook_responder) as server:
        report = la.AugmentFigures()
        config = la.Config(goalstep=GOALSTEP_VAL, llm=LLMSettings(base_url=server.base_url, model="stub-model"))
        result = write_outputs(la.build(config, report), tmp_path_factory.mktemp("augment"))
    return result, report


@pytest.mark.slow
def test_a_completion_record_for_every_step_that_passes_the_cleaning_rules(val_build):
    result, report = val_build
    assert validate_file(result.files["guidance"], "guidance", videos=result.files["video"]).records == 133
    records = {r["video_id"]: r for r in read(result.files["guidance"])}
    kept = 0
    for video in load_goalstep(GOALSTEP_VAL):
        steps = clean_video(video, None, CleanConfig()).kept
        kept += len(steps)
        if not steps:
            assert video.video_uid not in records
            continue
        record = records[video.video_uid]
        assert [p["step_ids"] for p in record["plan"]] == [[s.index] for s in steps]
        events = record["events"]
        assert {e["type"] for e in events} == {"instruction", "success", "finish"}  # success feedback only
        starts = {e["plan_index"]: e["t_s"] for e in events if e["type"] == "instruction"}
        ends = {e["plan_index"]: e["t_s"] for e in events if e["type"] == "success"}
        assert [starts[i] for i in range(len(steps))] == [s.start_s for s in steps]
        assert [ends[i] for i in range(len(steps))] == [s.end_s for s in steps]
    assert kept == report.kept_steps == 2073
    plan = records[VID]["plan"][0]
    assert plan["text"] == "Please Kneads the dough with the mixer."  # the responder's instruction, as a sentence


def test_every_counterfactual_differs_from_its_source_in_exactly_one_slot(val_build):
    result, report = val_build
    path = result.files["counterfactual_mistake"]
    records = read(path)
    assert validate_file(path, "counterfactual_mistake", videos=result.files["video"]).records == len(records) > 1500
    videos = {v.video_uid: v for v in load_goalstep(GOALSTEP_VAL)}
    for r in records:
        changed = [slot for slot in ("verb", "noun") if r["original"][slot] != r["counterfactual"][slot]]
        assert changed == [r["changed_slot"]], r["cf_id"]
        src = r["source"]
        step = next(s for s in videos[src["video_uid"]].steps if s.index == src["step_index"])
        sub = step.substeps[src["substep_index"]]
        assert (step.description, sub.description) == (src["step_description"], src["substep_description"])
        words = re.findall(r"[A-Za-z]+", sub.description)
        # the responder's parse of the critical substep: first word, last word
        assert r["original"]["verb"] == words[0].lower()
        assert r["mistake"]["t_s"] == sub.end_s and r["mistake"]["time_source"] == "substep_end"
        assert r["instruction"]["t_s"] == step.start_s and r["critical"]["chosen_from"] == "goalstep_substeps"
        assert any("FHO" in n for n in r["provenance"]["notes"])
    assert report.counterfactuals["noun"] + report.counterfactuals["verb"] == len(records)


def test_jitter_is_seeded_bounded_and_keeps_records_valid(val_build, tmp_path):
    result, _ = val_build
    record = next(r for r in read(result.files["guidance"]) if r["video_id"] == VID)
    a, b, c = (jitter_guidance(record, 30.0, seed) for seed in (1, 1, 2))
    assert a == b and a != c and record["provenance"].get("jitter") is None  # seeded, and a copy
    original = {e["plan_index"]: e["t_s"] for e in record["events"] if e["type"] == "instruction"}
    shifted = {e["plan_index"]: e["t_s"] for e in a["events"] if e["type"] == "instruction"}
    feedback = {e["plan_index"]: e["t_s"] for e in a["events"] if e["type"] == "success"}
    assert any(shifted[i] != original[i] for i in original)
    for i, t in shifted.items():
        assert abs(t - original[i]) <= 30.0 + 1e-9 and 0 <= t < feedback[i]
    assert all(e["time_source"] == "jittered" for e in a["events"] if e["type"] == "instruction")
    (tmp_path / "g.jsonl").write_text(json.dumps(a) + "\n")
    validate_file(tmp_path / "g.jsonl", "guidance", videos=result.files["video"])


def command(server, out, cache, *extra):
    return (
        [
            sys.executable,
            "-m",
            "streamcue",
            "build",
            "livecook-augment",
            "--goalstep",
            str(GOALSTEP_VAL),
            "--video",
            VID,
            "--out",
            str(out),
            "--llm-base-url",
            server.base_url,
            "--llm-model",
            "stub-model",
            "--llm-concurrency",
            "1",
            "--jitter-s",
            "30",
            "--seed",
            "3",
            *extra,
        ],
        {**os.environ, "STREAMCUE_CACHE_DIR": str(cache), "STREAMCUE_NO_PROGRESS": "1"},
    )


@pytest.mark.slow
def test_killed_build_resumes_with_same_output_and_a_rebuild_makes_no_call(tmp_path):
    hang = HangAtCall(livecook_responder)  # the third call hangs until the build is killed
    with StubLLMServer(hang) as server:
        cmd, env = command(server, tmp_path / "a", tmp_path / "cache-a")
        kill_at_hanging_call(cmd, env, hang)
        assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())  # nothing half-written
        resume_without_repeats(cmd, env, server)
        cmd, env = command(server, tmp_path / "b", tmp_path / "cache-b")
        assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
        before = server.completions
        cmd, env = command(server, tmp_path / "c", tmp_path / "cache-b")
        assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
        assert server.completions == before  # a rebuild with a warm cache makes no call
    for name in ("guidance.jsonl", "counterfactual_mistakes.jsonl", "videos.jsonl"):
        assert (
            (tmp_path / "a" / name).read_text()
            == (tmp_path / "b" / name).read_text()
            == (tmp_path / "c" / name).read_text()
        )
    report = json.loads((tmp_path / "c" / "build_report.json").read_text())
    assert report["details"]["jitter"] == {"k_s": 30.0, "seed": 3} and report["llm"]["calls"] == 0


def test_hostile_options_are_one_line_errors(tmp_path):
    with StubLLMServer(livecook_responder) as server:
        for extra, words in (
            (("--jitter-s", "-5"), "jitter must be"),
            (("--jitter-s", "nan"), "jitter must be"),
            (("--video", "nope"), "video ids not in"),
        ):
            cmd, env = command(server, tmp_path / "x", tmp_path / "cache", *extra)
            done = subprocess.run(
                cmd[:-4] + list(extra) if extra[0] == "--jitter-s" else cmd, env=env, capture_output=True, text=True
            )
            assert done.returncode == 2 and words in done.stderr and done.stderr.count("\n") == 1, done.stderr
        test_file = GOALSTEP_VAL.with_name("goalstep_test.json")
        cmd, env = command(server, tmp_path / "x", tmp_path / "cache")
        cmd[cmd.index("--goalstep") + 1] = str(test_file)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert done.returncode == 2 and "only step_segments" in done.stderr
        assert server.completions == 0
    assert not (tmp_path / "x").exists()


def test_captaincook4d_training_export_jitters_only_the_train_split(tmp_path):
    from conftest import CAPTAINCOOK4D

    from streamcue.dataset_builders import captaincook4d

    plain = {r["video_id"]: r for k, r in captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D))
             if k == "guidance"}
    items = list(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D, jitter_s=30.0, jitter_seed=7)))
    split = {r["video_id"]: r["split"] for k, r in items if k == "video"}
    result = write_outputs(iter(items), tmp_path)  # every record still valid
    assert result.counts["guidance"] == len(plain) == 384
    for kind, record in items:
        if kind != "guidance":
            continue
        if split[record["video_id"]] != "train":
            assert record == plain[record["video_id"]]  # benchmark splits are never jittered
            continue
        assert record["provenance"]["jitter"] == {"k_s": 30.0, "seed": 7}
        before = [e for e in plain[record["video_id"]]["events"] if e["type"] == "instruction"]
        after = {e["plan_index"]: e["t_s"] for e in record["events"] if e["type"] == "instruction"}
        assert all(abs(after[e["plan_index"]] - e["t_s"]) <= 30.0 + 1e-9 for e in before)
    done = subprocess.run([sys.executable, "-m", "streamcue", "build", "captaincook4d", "--annotations",
                           str(CAPTAINCOOK4D), "--out", str(tmp_path / "x"), "--jitter-s", "-1"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "jitter must be" in done.stderr and not (tmp_path / "x").exists()
