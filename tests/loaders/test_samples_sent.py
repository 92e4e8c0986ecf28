"""Every sample of a run holds what was really sent (issue 31 items 5 and 8), checked against what the real local
server on 127.0.0.1 received: the messages' text (``prompts.jsonl`` by sha256), the images, the response format
(null when none went out) and the time to first token of the streamed answer."""

from __future__ import annotations

import json
import math
import subprocess
from importlib import resources

import jsonschema
import pytest

from conftest import SHARED_DATA, VALID
from streamcue.io import read_jsonl
from streamcue.loaders.strategies.base import PROMPT_STORE, prompt_hash
from streamcue.metrics.run_config import RunConfig, run
from streamcue.testing.stub_llm import StubLLMServer, default_responder, request_schema

pytestmark = pytest.mark.llm_server


def says_yes(body):
    """Always "yes" when asked whether now is the time, so that every poll is followed by an answer call."""
    schema = request_schema(body) or {}
    if "answer" in schema.get("properties", {}):
        return json.dumps({"answer": "yes"})
    return default_responder(body)


def sent(body):
    """What a request carried: each message's role and text parts, and its images."""
    texts, images = [], 0
    for message in body["messages"]:
        content = message["content"]
        parts = [content] if isinstance(content, str) else [p["text"] for p in content if p["type"] == "text"]
        texts.append({"role": message["role"], "text": parts})
        images += 0 if isinstance(content, str) else sum(p["type"] == "image_url" for p in content)
    return texts, images


def check_calls(folder, requests):
    """Each call of samples.jsonl against the request the server received (one record at a time: same order)."""
    store = {row["sha256"]: row for row in read_jsonl(folder / PROMPT_STORE)}
    assert all(prompt_hash({"role": r["role"], "text": r["text"]}) == h for h, r in store.items())
    samples = read_jsonl(folder / "samples.jsonl")
    schema = json.loads(resources.files("streamcue.schemas").joinpath("sample.schema.json").read_text())
    for sample in samples:
        jsonschema.validate(sample, schema)
    calls = [c for s in samples for c in s["calls"]]
    assert len(calls) == len(requests) > 0
    for call, body in zip(calls, requests):
        texts, images = sent(body)
        assert [{"role": store[h]["role"], "text": store[h]["text"]} for h in call["prompt"]] == texts
        assert call["response_format"] == body.get("response_format")
        assert call["frames_sent"] == images and call["bytes_sent"] >= 100 * images
        assert math.isfinite(call["ttft_s"]) and 0 < call["ttft_s"] <= call["latency_s"]
        assert call["prompt_tokens"] > 0 and call["completion_tokens"] > 0
    return calls


@pytest.fixture
def estp(tmp_path):
    from streamcue.video import ffmpeg_exe

    (tmp_path / "videos").mkdir()
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10",
                    "-t", "6", "-pix_fmt", "yuv420p", "-c:v", "libx264", str(tmp_path / "videos" / "v1.mp4")],
                   check=True)
    build = tmp_path / "estp"
    build.mkdir()
    record = dict(VALID["interval_qa"], clip={"start_s": 0.0, "end_s": 6.0},
                  answers=[{"start_s": 2.0, "end_s": 4.0, "text": "A red cup on the table."}])
    (build / "interval_qa.jsonl").write_text(json.dumps(record) + "\n")
    (build / "videos.jsonl").write_text(json.dumps(dict(VALID["video"], uri="v1.mp4", duration_s=6.0)) + "\n")
    return tmp_path


def test_a_polling_run_logs_the_text_images_and_format_the_server_received(estp, monkeypatch):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(estp / "cache"))
    with StubLLMServer(says_yes, piece_delay_s=0.01) as server:
        config = RunConfig(benchmark="estp", records=estp / "estp", video_root=estp / "videos", strategy="polling",
                           strategy_options={"hz": 1.0}, k=4, llm_base_url=server.base_url, llm_model="stub-vl")
        results = run(config, estp / "run")
        requests = list(server.requests)
    calls = check_calls(estp / "run", requests)
    answers = [c for c in calls if c["call"] == "ask_answer"]
    assert answers and all(c["frames_sent"] >= 1 for c in answers)  # the answer call carries the poll's frames
    assert all(c["response_format"]["type"] == "json_schema" for c in calls)
    assert calls[0]["response_format"]["json_schema"]["schema"] == request_schema(requests[0])
    eff = results["efficiency"]
    assert 0 < eff["ttft_p50_s"] <= eff["ttft_p90_s"] <= eff["latency_max_s"]
    page = (estp / "run" / "report.html").read_text()
    assert "time to first token" in page and "p50 n/a" not in page.split("time to first token")[1][:200]


def test_an_official_prompt_sends_no_response_format_and_a_plain_server_gives_no_ttft(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    import sys

    done = subprocess.run([sys.executable, "-m", "streamcue", "build", "ovo-bench", "--annotations",
                           SHARED_DATA / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json",
                           "--out", tmp_path / "ovo"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with StubLLMServer(lambda body: "Answer: B") as server:
        config = RunConfig(benchmark="ovo-bench", records=tmp_path / "ovo", no_video=True, limit=3,
                           llm_base_url=server.base_url, llm_model="stub-vl")
        run(config, tmp_path / "run")
        calls = check_calls(tmp_path / "run", list(server.requests))
    assert all(c["response_format"] is None for c in calls)
    assert all("response_format" not in body for body in server.requests)
    with StubLLMServer(lambda body: "Answer: B", streams=False) as plain:
        results = run(config.replace(llm_base_url=plain.base_url, no_cache=True), tmp_path / "plain")
    samples = read_jsonl(tmp_path / "plain" / "samples.jsonl")
    assert all(c["ttft_s"] is None and c["latency_s"] > 0 for s in samples for c in s["calls"])
    assert results["efficiency"]["ttft_p50_s"] is None and results["efficiency"]["latency_p50_s"] > 0
    assert "n/a (no answer was streamed" in (tmp_path / "plain" / "report.html").read_text()


def test_a_polled_no_is_not_drawn_as_speech():
    """Issue 49: StreamingBench timelines drew every polled "No" as speech; the model spoke only when it answered
    the question after a yes (the dialogue's first turn is the poll, asked again at each poll)."""
    from streamcue.metrics.run import spoke

    poll, question = "Is it the right time to output the answer?", "What is on the table?"
    turns = [{"t_s": 1.0, "role": "user", "text": poll}, {"t_s": 1.0, "role": "assistant", "text": "No"},
             {"t_s": 2.0, "role": "user", "text": poll}, {"t_s": 2.0, "role": "assistant", "text": "Yes"},
             {"t_s": 2.0, "role": "user", "text": question}, {"t_s": 2.0, "role": "assistant", "text": "B. a cup"}]
    assert spoke("active_item", {"item_id": "x", "responses": turns}) == [[2.0, "B. a cup"]]
    assert spoke("active_item", {"item_id": "x", "responses": turns[:2]}) == []
    said = [{"t_s": 3.0, "text": "A red cup."}]  # a stream protocol's responses (no poll): each one is speech
    assert spoke("interval_qa", {"qa_id": "q", "responses": said}) == [[3.0, "A red cup."]]
