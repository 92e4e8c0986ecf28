"""The Ego4D builder: real GoalStep val, our own narration/caption fixtures, LLM stages over real HTTP."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from streamcue.dataset_builders import BuildReport, ego4d
from streamcue.dataset_builders.ego4d_sources import load_captions, load_goalstep, load_narrations
from streamcue.dataset_builders.estp_gen.clean import CleanConfig, clean_video, narration_coverage
from streamcue.dataset_builders.estp_gen.records import merge_answers
from streamcue.dataset_builders.estp_gen.templates import second_person, verb_phrase
from streamcue.dataset_builders.output import write_outputs
from streamcue.errors import InputError
from streamcue.llm import LLMSettings
from streamcue.schemas import validate_file
from streamcue.testing.stub_llm import StubLLMServer

from conftest import GOALSTEP_VAL, cli_run
from estp_responder import estp_responder

DATA = Path(__file__).parents[1] / "data" / "ego4d"
VID = "c2d06df7-5d3a-4116-9edb-f1c81a4f669b"


@pytest.fixture(scope="module")
def val_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("ego")
    report = BuildReport("ego4d")
    result = write_outputs(ego4d.build(ego4d.Config(goalstep=GOALSTEP_VAL, narrations=DATA / "narration.json"),
                                       report), out)
    return result, report


def test_template_stage_on_real_goalstep_val(val_build):
    result, report = val_build
    assert validate_file(result.files["interval_qa"], "interval_qa").records == result.counts["interval_qa"]
    assert set(report.details["by_task_type"]) == {"AR", "NAR", "TU", "TRC"}
    # at most one TU question per video
    assert 0 < report.details["by_task_type"]["TU"] <= report.details["usable_videos"]
    # 35ab724d has one irrelevant step; 228eb02a has one narration in the fixture, so every clip fails coverage.
    assert report.details["usable_videos"] == 132
    assert sorted(report.details["unusable_videos"]) == ["228eb02a-6c89-4aa0-9cd4-0cdab1550c83",
                                                         "35ab724d-5dba-4094-927b-e7bc5ad8cf41"]
    records = [json.loads(line) for line in result.files["interval_qa"].read_text().splitlines()]
    assert len({r["qa_id"] for r in records}) == len(records)
    trc = [r for r in records if r["task_type"] == "TRC"]
    groups = Counter(r["context"]["group_id"] for r in trc)
    assert set(groups.values()) == {3}  # trc_turns = 3 turns per chain
    assert all(r["proactive_type"] == "contextual" for r in trc)


def test_grp_videos_and_quirks_are_noted(val_build):
    _, report = val_build
    assert sum(1 for notes in report.details["source_notes"].values() if any("grp-" in n for n in notes)) == 33
    assert any("clamped to its parent" in n for notes in report.details["source_notes"].values() for n in notes)
    assert any("lacks is_relevant" in n for notes in report.details["source_notes"].values() for n in notes)
    videos = load_goalstep(GOALSTEP_VAL)
    grp = next(v for v in videos if v.video_uid.startswith("grp-"))
    assert grp.video_uid[4:] in grp.members and len(grp.members) > 1


def test_ar_questions_from_narrations(val_build):
    result, _ = val_build
    ar = [json.loads(line) for line in result.files["interval_qa"].read_text().splitlines() if ':AR:' in line]
    questions = {r["question"] for r in ar}
    # "pick up" occurs 39 times in the fixture, more than ar_max_count (30): too common to ask about.
    assert "Tell me every time I pick up something." not in questions
    knead = next(r for r in ar if r["question"] == "Tell me every time I knead something.")
    assert knead["video_id"] == VID and len(knead["answers"]) == 25
    assert all(a["text"].startswith("You knead the dough") for a in knead["answers"])
    starts = [a["start_s"] for a in knead["answers"]]
    assert starts == sorted(starts)


def test_verbs_and_second_person():
    assert verb_phrase("C picks up a cup") == ("pick up", "a cup")
    assert verb_phrase("C washes the bowl") == ("wash", "the bowl")
    assert verb_phrase("C carries the tray") == ("carry", "the tray")
    assert verb_phrase("O man walks") is None
    assert second_person("C puts down the spoon") == "You put down the spoon."


def test_cleaning_rules():
    video = next(v for v in load_goalstep(GOALSTEP_VAL) if v.video_uid == VID)
    narrations = load_narrations(DATA / "narration.json")[VID]
    assert narrations == sorted(narrations, key=lambda n: (n.t_s, n.text))  # out-of-order input sorted, passes merged
    assert narrations[0].text == "C picks up a bowl" or all("#" not in n.text for n in narrations)
    assert narration_coverage(0, 20, narrations, 10) == 1.0
    assert narration_coverage(1000, 1100, narrations, 10) == 0.0
    result = clean_video(video, narrations, CleanConfig())
    reasons = Counter(d["reason"].split(" (")[0] for d in result.dropped)
    assert reasons["narration coverage 0.00 below 0.3"] > 0  # steps past the fixture's narrations
    assert all(s.duration_s >= 10 for s in result.kept)


def test_merge_answers_sorts_and_merges_overlaps():
    merged = merge_answers([{"start_s": 10, "end_s": 20, "text": "b"}, {"start_s": 0, "end_s": 5, "text": "a"},
                            {"start_s": 15, "end_s": 30, "text": "c"}, {"start_s": 30, "end_s": 31, "text": "d"}])
    assert merged == [{"start_s": 0, "end_s": 5, "text": "a"}, {"start_s": 10, "end_s": 30, "text": "b"},
                      {"start_s": 30, "end_s": 31, "text": "d"}]


def test_test_split_and_bad_inputs_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="only step_segments without times"):
        load_goalstep(GOALSTEP_VAL.with_name("goalstep_test.json"))
    truncated = tmp_path / "val.json"
    truncated.write_text(GOALSTEP_VAL.read_text()[:3000])
    with pytest.raises(InputError, match=r"val.json:\d+: invalid JSON"):
        load_goalstep(truncated)
    data = json.loads(GOALSTEP_VAL.read_text())
    data["videos"][0]["segments"][2]["end_time"] = 1.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match=rf"record {VID}, field segments\[2\].end_time: end_time 1.0 is before"):
        load_goalstep(bad)
    caps = tmp_path / "caps.jsonl"
    caps.write_text(json.dumps({"video_id": "nope", "start_s": 0, "end_s": 1, "kind": "event", "text": "x"}) + "\n")
    with pytest.raises(InputError, match=r"caps.jsonl:1, record nope, field video_id: unknown video id"):
        load_captions(caps, {VID})
    caps.write_text(json.dumps({"video_id": VID, "start_s": 5, "end_s": 1, "kind": "event", "text": "x"}) + "\n")
    with pytest.raises(InputError, match=r"caps.jsonl:1, record .*, field end_s: end_s 1.0 is before start_s 5.0"):
        load_captions(caps, {VID})


@pytest.mark.llm_server
@pytest.mark.embedding
@pytest.mark.slow
def test_all_five_stages_against_a_real_http_server(tmp_path):
    with StubLLMServer(estp_responder) as server:
        report = BuildReport("ego4d")
        config = ego4d.Config(goalstep=GOALSTEP_VAL, captions=DATA / "captions.jsonl", videos=(VID,),
                              llm=LLMSettings(base_url=server.base_url, model="stub-model"))
        result = write_outputs(ego4d.build(config, report), tmp_path)
        calls = server.completions
    records = [json.loads(line) for line in result.files["interval_qa"].read_text().splitlines()]
    validate_file(result.files["interval_qa"], "interval_qa")
    generated = [r for r in records if r["provenance"]["stage"] in ("one_to_one", "one_to_many")]
    assert generated and all(r["provenance"]["model"] == "stub-model" and r["provenance"]["prompt_hash"]
                             for r in generated)
    # Retrieval found other moments with the same cue ("red kettle on the stove") and the LLM confirmed them.
    expanded = [r for r in generated if r["provenance"].get("expanded_by")]
    assert expanded and max(len(r["answers"]) for r in expanded) >= 2
    kettle = next(r for r in expanded if "turns around and looks at the red kettle" in r["question"])
    assert any(a["text"].startswith("Again:") for a in kettle["answers"])
    orc = [r for r in records if r["task_type"] == "ORC"]
    assert orc and {r["context"]["turn"] for r in orc} == {1, 2}
    assert report.llm["calls"] == calls and report.llm["cache_hits"] == 0
    # LLM calls per generated question (one-to-one + expansions + groups)
    assert calls <= 3 * len(generated)


@pytest.mark.llm_server
@pytest.mark.embedding
@pytest.mark.slow
def test_killed_build_resumes_with_same_records_and_no_repeated_calls(tmp_path):
    release = threading.Event()
    seen = []

    def blocking(body):
        seen.append(body)
        if len(seen) == 3 and not release.is_set():  # the third call hangs until the build is killed
            release.wait(60)
            raise RuntimeError("client gone")
        return estp_responder(body)

    def command(server, out, cache):
        return ([sys.executable, "-m", "streamcue", "build", "ego4d", "--goalstep", str(GOALSTEP_VAL),
                 "--captions", str(DATA / "captions.jsonl"), "--video", VID, "--out", str(out),
                 "--llm-base-url", server.base_url, "--llm-model", "stub-model", "--llm-concurrency", "1"],
                {**os.environ, "STREAMCUE_CACHE_DIR": str(cache), "STREAMCUE_NO_PROGRESS": "1"})

    def in_process(cmd, env):
        """``command``'s build run in this process (its two variables are read when the command runs)."""
        return cli_run(*cmd[3:], env={name: env[name] for name in ("STREAMCUE_CACHE_DIR", "STREAMCUE_NO_PROGRESS")})

    with StubLLMServer(blocking) as server:
        cmd, env = command(server, tmp_path / "a", tmp_path / "cache-a")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while len(seen) < 3 and time.time() < deadline:
            time.sleep(0.05)
        assert len(seen) == 3, proc.stderr.read() if proc.poll() is not None else "build never reached call 3"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        release.set()
        assert not (tmp_path / "a" / "interval_qa.jsonl").exists()  # nothing half-written
        done = in_process(cmd, env)  # the resume: in this process too, from what the killed one left
        assert done.returncode == 0, done.stderr
        answered = [json.dumps(b["messages"]) for b in server.requests if b.get("_answered")]
        assert len(answered) == len(set(answered))  # no call answered twice
        cmd, env = command(server, tmp_path / "b", tmp_path / "cache-b")  # the builds not killed: in this process
        assert in_process(cmd, env).returncode == 0
        fresh = [json.dumps(b["messages"]) for b in server.requests if b.get("_answered")][len(answered):]
        assert sorted(fresh) == sorted(answered)
        # A re-run with a warm cache makes no call at all.
        before = server.completions
        cmd, env = command(server, tmp_path / "c", tmp_path / "cache-b")
        assert in_process(cmd, env).returncode == 0
        assert server.completions == before
    for name in ("interval_qa.jsonl", "videos.jsonl"):
        a, b, c = ((tmp_path / run / name).read_text() for run in ("a", "b", "c"))
        assert a == b == c
