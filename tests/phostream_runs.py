"""PhoStream played through ``streamcue run`` on three short synthetic videos: the ``short`` build (made once a
session) and a leaking model under each schedule, for tests/dataset_builders/test_phostream.py and the --leak tests."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import SHARED_DATA, cli

from streamcue.io import read_jsonl, write_json
from streamcue.loaders.protocols.phostream import SCHEDULES, question_text

DATA = SHARED_DATA / "phostream"
needs_data = pytest.mark.skipif(not (DATA / "phostream_annotations.json").is_file(),
                                reason="../shared/data/phostream is not here")


#: The synthetic videos' length: the questions kept are asked and due before it.
SHORT_S = 50.0


@pytest.fixture(scope="session")
def short(tmp_path_factory):
    """Three PhoStream videos of the shared annotations with their questions of the first 45 s (an instant, a
    backward and four forward ones), built by ``streamcue build phostream``, each video a 50 s ffmpeg test pattern
    (the built videos.jsonl gives no durations: the run reads them from the files)."""
    from streamcue.video import ffmpeg_exe

    tmp = tmp_path_factory.mktemp("phostream-short")
    wanted = ("Funniest_Animal_Videos_Ever_Part_1_reencoded/output_1.mp4", "Jin_RunSeokjin",
              "30_Min_CARDIO_WORKOUT_at_Home_LOW_IMPACT_STEADY_STATE_LISS_reencoded/output_2.mp4")
    kept = []
    for video in json.loads((DATA / "phostream_annotations.json").read_text()):
        if any(w in video["video_path"] for w in wanted):
            early = [q for q in video["verified_responses"]
                     if max(clock_seconds(q["timestamp_question"]),
                            clock_seconds(q.get("timestamp_proactive") or "0:0")) < 45]
            kept.append({**video, "verified_responses": early})
    write_json(tmp / "ann.json", kept)
    code, _, err = cli("build", "phostream", "--annotations", tmp / "ann.json", "--out", tmp / "built")
    assert code == 0, err
    videos = read_jsonl(tmp / "built" / "videos.jsonl")
    for video in videos:
        path = tmp / "videos" / video["uri"]
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=96x64:rate=2",
                        "-t", str(SHORT_S), "-pix_fmt", "yuv420p", "-c:v", "libx264", str(path)], check=True)
    items = read_jsonl(tmp / "built" / "active_item.jsonl")
    assert len(videos) == 3 and [r["group"] for r in items].count("forward") == 4 and len(items) == 6
    return tmp


def run_short(short: Path, out: Path, base_url: str, *extra: str) -> dict:
    code, _, err = cli("run", "phostream", short / "built", "--video-root", short / "videos", "--out", out,
                       "--llm-base-url", base_url, "--llm-model", "stub", *extra)
    assert code == 0, err
    return json.loads((out / "results.json").read_text())


def now_of(body: dict) -> float:
    """The time of a call: its last frame's label."""
    from streamcue.testing.stub_llm import message_text

    return float(re.findall(r"Frame at ([\d.]+) s", message_text(body["messages"][-1]))[-1])


def leaking_runs(short: Path, out: Path) -> dict[str, dict]:
    """The forward questions of ``short`` run under each schedule (``out/<schedule>``) against a leaking model: it
    knows the gold answers and says one when a call comes after a pause of more than a chunk (the official
    schedule's call at the gold proactive time), else "Silent". Each schedule's results.json, by schedule."""
    from streamcue.testing.stub_llm import StubLLMServer, message_text

    items = [r for r in read_jsonl(short / "built" / "active_item.jsonl") if r["group"] == "forward"]
    gold = {question_text(r): r["target"]["text"] for r in items}
    forward = ",".join(r["item_id"] for r in items)
    results = {}
    for schedule in SCHEDULES:
        last: dict[str, float] = {}

        def leaking(body: dict) -> str:
            now, text = now_of(body), message_text(body["messages"][-1])
            question = next(q for q in gold if q in text)
            paused = now - last.get(question, now) > 1.5
            last[question] = now
            return gold[question] if paused else "Silent"

        with StubLLMServer(leaking) as server:
            results[schedule] = run_short(short, out / schedule, server.base_url, "--schedule", schedule,
                                          "--ids", forward, "--no-cache")
    return results


def clock_seconds(clock_text: str) -> int:
    minutes, seconds = clock_text.split(":")[-2:]
    return int(minutes) * 60 + int(seconds)
