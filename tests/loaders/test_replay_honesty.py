"""Nothing silent in replay (issue 23 items 3, 4, 6; issue 25 cache poisoning), against the real stub server on
127.0.0.1 and real ffmpeg: unparseable answers are recorded wrong answers, 429/5xx are retried and counted, the cache
holds nothing invalid and knows the server's model card, plain-text answers are kept for the scorer, a run without
videos must say --no-video, frames without pixels are counted, records play concurrently in input order, and every
call is a sample saying exactly what was sent."""

import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import VALID
from streamcue.cache import Cache
from streamcue.errors import ConfigError, ServiceError
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.loaders.engine import play
from streamcue.loaders.frames import FrameSource
from streamcue.loaders.strategies import make_strategy
from streamcue.loaders.strategies.base import Transport
from streamcue.testing.stub_llm import StubLLMServer, default_responder, message_text

pytestmark = pytest.mark.llm_server

SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "number"}}}


def request(text="hello"):
    return Request(({"role": "user", "content": text},), SCHEMA, "test.v1")


def make_video(path, seconds=6, size="160x120", rate=10):
    from streamcue.video import ffmpeg_exe

    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}",
                    "-t", str(seconds), "-pix_fmt", "yuv420p", "-c:v", "libx264", str(path)], check=True)
    return path


def questions(n=3, video="v1", at=4.0):
    return [dict(VALID["mc_question"], question_id=f"{video}-q{i}", video_id=video, question=f"Question {i}?",
                 query_time_s=at) for i in range(n)]


def user_text(body):
    return message_text(body["messages"][-1])


def test_a_nan_answer_is_never_cached_and_names_the_endpoint(tmp_path):
    cache = Cache(tmp_path / "c.sqlite3", table="llm_responses")
    with StubLLMServer(lambda body: '{"answer": NaN}') as server:
        llm = LLMClient(LLMSettings(base_url=server.base_url, model="stub-model", invalid_retries=0), cache=cache)
        reply = llm.reply(request())
        assert not reply.ok and reply.text == '{"answer": NaN}' and reply.parsed is None
        assert f"stub-model at {server.base_url}" in reply.problem and "NaN" in reply.problem
        assert len(cache) == 0  # validated before writing: nothing invalid enters the cache
        with pytest.raises(ServiceError, match=f"stub-model at {server.base_url}: answer is not valid JSON"):
            llm.complete(request())
        assert server.completions == 2 and llm.usage.unparseable == 2
    # an entry written by an older version with a NaN in it reads as a miss, and the cache refuses to write one
    cache._db.execute("INSERT INTO llm_responses VALUES ('k', '{\"answer\": NaN}')")
    assert cache.get("k") is None
    with pytest.raises(ValueError):
        cache.put("k2", {"answer": float("nan")})
    cache.close()
    assert sqlite3.connect(tmp_path / "c.sqlite3").execute("SELECT COUNT(*) FROM llm_responses").fetchone()[0] == 1


def test_429_and_5xx_are_retried_with_backoff_and_counted():
    with StubLLMServer(lambda body: '{"answer": 1}') as server:
        llm = LLMClient(LLMSettings(base_url=server.base_url, model="m", max_retries=3),
                        use_cache=False)
        server.inject("status", (429, "0"))
        server.inject("status", 503)
        reply = llm.reply(request())
        assert reply.ok and reply.retries == 2 and llm.usage.retries == 2 and len(server.requests) == 3
        server.inject("status", 500, times=4)
        with pytest.raises(ServiceError, match="answered HTTP 500 for model m .after 3 retries"):
            llm.reply(request())
        server.inject("status", 400)  # a bad request is not retried
        with pytest.raises(ServiceError, match="HTTP 400"):
            llm.reply(request())


def test_the_cache_key_includes_what_the_server_says_about_the_model(tmp_path):
    cache = Cache(tmp_path / "c.sqlite3", table="llm_responses")
    with StubLLMServer(lambda body: '{"answer": 1}', card={"root": "/models/qwen-7b"}) as server:
        def calls():
            llm = LLMClient(LLMSettings(base_url=server.base_url, model="stub-model"), cache=cache)
            llm.complete(request())
            return llm.usage.calls

        assert calls() == 1
        assert calls() == 0  # vLLM's "created" changes at every request: not part of the key
        server.card = {"root": "/models/qwen-72b"}  # another model behind the same URL and name
        assert calls() == 1


@pytest.fixture
def video(tmp_path):
    make_video(tmp_path / "videos" / "v1.mp4", seconds=6)
    make_video(tmp_path / "videos" / "v2.mp4", seconds=3)
    return {"v1": tmp_path / "videos" / "v1.mp4", "v2": tmp_path / "videos" / "v2.mp4"}


def test_plain_text_answers_are_kept_for_the_scorer(tmp_path, monkeypatch, video):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))

    from streamcue.loaders.protocols.ovo_bench import OVOBench

    def plain(body):
        return "garbage ~~" if "Question 1?" in user_text(body) else "Answer: B"

    with StubLLMServer(plain) as server:
        settings = LLMSettings(base_url=server.base_url, model="m", structured="none", temperature=0.3,
                               max_tokens=64)
        model = make_strategy("single-call", settings, "mc_question", protocol="ovo-bench")
        # streamcue's prompts with --llm-structured none (the official prompts, the default: tests/loaders/test_run.py)
        predictions, report = play(questions(), "mc_question", strategy=model, frames=FrameSource(video), k=4,
                                   protocol=OVOBench("streamcue"))
        system = server.requests[0]["messages"][0]["content"]
        assert "JSON" not in system and "letter" in system and "response_format" not in server.requests[0]
        assert (server.requests[0]["temperature"], server.requests[0]["max_tokens"]) == (0.3, 64)
    assert [p["response"] for p in predictions] == ["Answer: B", "garbage ~~", "Answer: B"]  # the scorer's rule decides
    sample = report["samples"][0]
    assert sample["prompt_version"].startswith("bench_choice.v1@") and sample["prompt_version"].endswith("+plain")
    assert sample["raw"] == "Answer: B" and sample["parsed"] == {"text": "Answer: B"} and report["unparseable"] == 0


@pytest.mark.slow
def test_unparseable_answers_are_recorded_wrong_answers_and_every_call_is_a_sample(tmp_path, video):
    (tmp_path / "videos").mkdir(exist_ok=True)
    records = tmp_path / "ovo" / "mc_question.jsonl"
    records.parent.mkdir()
    records.write_text("".join(json.dumps(r) + "\n" for r in questions()))
    (tmp_path / "ovo" / "videos.jsonl").write_text(json.dumps(dict(VALID["video"], uri="v1.mp4")) + "\n")

    def answers(body):
        asked = " ".join(message_text(m) for m in body["messages"])  # the re-asks too
        return "I think it is B" if "Question 1?" in asked else default_responder(body)

    env = {"PATH": "/usr/bin:/bin", "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    with StubLLMServer(answers) as server:
        args = [sys.executable, "-m", "streamcue", "replay", records, "--out", tmp_path / "run", "--video-root",
                tmp_path / "videos", "--k", "4", "--llm-base-url", server.base_url, "--llm-model", "stub-vl",
                "--prompt-set", "streamcue"]  # JSON answers: re-asked when invalid
        server.inject("status", 500)
        done = subprocess.run(args, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr  # was exit 4 with no predictions
        assert f"1 unparseable answers from stub-vl at {server.base_url}" in done.stderr and "v1-q1" in done.stderr
        first_calls = server.completions
        again = subprocess.run([*args[:args.index("--out") + 1], tmp_path / "again", *args[args.index("--out") + 2:]],
                               capture_output=True, text=True, env=env)  # a finished replay's folder is never replaced
        assert again.returncode == 0, again.stderr
        assert server.completions - first_calls == 3  # only the unparseable answer is asked again (3 attempts)
    predictions = [json.loads(line) for line in (tmp_path / "again" / "predictions.jsonl").read_text().splitlines()]
    assert [p["question_id"] for p in predictions] == ["v1-q0", "v1-q1", "v1-q2"]
    assert predictions[1]["response"] is None and predictions[0]["response"]
    report = json.loads((tmp_path / "again" / "replay_report.json").read_text())
    assert report["unparseable"] == 1 and report["unparseable_records"][0]["record_id"] == "v1-q1"
    assert "not JSON" in report["unparseable_records"][0]["problem"]
    assert report["cache_hits"] == 2 and report["blind"] is False and report["llm"]["model"] == "stub-vl"
    assert report["llm"]["model_card"]["id"] == "stub-vl" and report["frames"]["transport"] == "frames"
    samples = [json.loads(line) for line in (tmp_path / "again" / "samples.jsonl").read_text().splitlines()]
    assert [s["record_id"] for s in samples] == ["v1-q0", "v1-q1", "v1-q2"]
    sample = samples[0]
    assert sample["t_s"] == 4.0 and sample["transport"] == "frames" and sample["cached"] is True
    assert [f["t_s"] for f in sample["frames"]] == [0.0, 2.0, 3.0, 4.0]  # SW+U of the frames 0-4 s
    assert all(f["width"] == 160 and f["height"] == 120 and f["bytes"] > 100 for f in sample["frames"])
    assert sample["bytes_sent"] == sum(f["bytes"] for f in sample["frames"]) and sample["frames_sent"] == 4
    assert samples[1]["raw"] == "I think it is B" and samples[1]["parsed"] is None


def test_concurrent_play_keeps_the_input_order_and_decodes_each_video_once(tmp_path, monkeypatch, video):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    records = [r for pair in zip(questions(4, "v1"), questions(4, "v2", at=2.0)) for r in pair]  # videos interleaved
    with StubLLMServer(delay_s=0.05) as server:
        settings = LLMSettings(base_url=server.base_url, model="m")
        one, _ = play(records, "mc_question", strategy=make_strategy("single-call", settings, "mc_question"),
                      frames=FrameSource(video), k=4)
        frames = FrameSource(video)
        many, report = play(records, "mc_question", strategy=make_strategy("single-call", settings, "mc_question",
                                                                           use_cache=False),
                            frames=frames, k=4, concurrency=4)
    assert many == one and [p["question_id"] for p in many] == [r["question_id"] for r in records]
    assert dict(frames.decoded) == {"v1": 1, "v2": 1}
    assert [s["record_id"] for s in report["samples"]] == [r["question_id"] for r in records]


def test_frames_past_the_end_are_counted_and_a_run_without_videos_says_so(tmp_path, monkeypatch, video):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    with StubLLMServer() as server:
        settings = LLMSettings(base_url=server.base_url, model="m")
        model = make_strategy("single-call", settings, "mc_question")
        _, report = play(questions(1, "v2", at=6.0), "mc_question", strategy=model, frames=FrameSource(video),
                         k=6, memory="SW")
        assert report["frames_without_pixels"] == 4  # the 3 s video (frames 0-2 s) has none at 3-6 s
        assert [f.get("bytes", 0) > 0 for f in report["samples"][0]["frames"]] == [True] * 2 + [False] * 4
        from streamcue.loaders.replay_config import ReplayConfig
        from streamcue.loaders.replay_run import write_replay

        records = tmp_path / "mc_question.jsonl"
        records.write_text(json.dumps(questions(1)[0]) + "\n")
        (tmp_path / "videos.jsonl").write_text(json.dumps(dict(VALID["video"], uri="v1.mp4")) + "\n")
        config = ReplayConfig(records=records, k=4, llm_base_url=server.base_url, llm_model="m")
        with pytest.raises(ConfigError, match="no --video-root: the model would see no frames.*--no-video"):
            write_replay(config, tmp_path / "a")
        assert not (tmp_path / "a").exists()
        report = write_replay(config.replace(no_video=True), tmp_path / "b")
        assert report["blind"] is True and report["frames"]["without_pixels"] == 0
        report = write_replay(config.replace(video_root=tmp_path / "videos", concurrency=2), tmp_path / "c")
        assert report["blind"] is False and report["samples"][0]["frames_sent"] == 4


def test_the_frame_transport_is_chosen_and_recorded(tmp_path, monkeypatch, video):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    with StubLLMServer() as server:
        settings = LLMSettings(base_url=server.base_url, model="m")

        def run(frames, transport=None):
            model = make_strategy("single-call", settings, "mc_question", use_cache=False)
            return play(questions(1), "mc_question", strategy=model, frames=frames, k=4, transport=transport)[1]

        report = run(FrameSource(video, pixels=4000, quality=50), Transport(label="clock"))
        sent = report["samples"][0]["frames"]
        assert all(f["width"] * f["height"] <= 4000 and abs(f["width"] / f["height"] - 4 / 3) < 0.1 for f in sent)
        assert "Frame at 00:00:04" in user_text(server.requests[-1])
        run(FrameSource(video), Transport(label="none"))
        assert "Frame at" not in user_text(server.requests[-1])
        report = run(FrameSource(video), Transport(mode="video_url"))
        body = server.requests[-1]
        parts = body["messages"][-1]["content"]
        clips = [p for p in parts if p["type"] == "video_url"]
        assert len(clips) == 1 and clips[0]["video_url"]["url"].startswith("data:video/mp4;base64,")
        assert not any(p["type"] == "image_url" for p in parts)
        assert body["media_io_kwargs"] == {"video": {"num_frames": 4}}
        sample = report["samples"][0]
        assert sample["transport"] == "video_url" and sample["video"]["frames"] == 4 and sample["bytes_sent"] > 0
        with pytest.raises(ConfigError, match="video_url"):
            run(None, Transport(mode="video_url"))


def test_a_stream_record_past_the_end_of_a_shorter_file_is_named(tmp_path, video):
    """videos.jsonl declares 40 s, the file holds 3 s: the record is flagged past-end and its frames without pixels
    are warned naming it (a newcomer's run got one generic line that named no record)."""
    records = tmp_path / "iqa" / "interval_qa.jsonl"
    records.parent.mkdir()
    records.write_text(json.dumps(dict(VALID["interval_qa"], video_id="v2")) + "\n")
    (tmp_path / "iqa" / "videos.jsonl").write_text(
        json.dumps(dict(VALID["video"], video_id="v2", uri="v2.mp4", duration_s=40.0)) + "\n")
    env = {"PATH": "/usr/bin:/bin", "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}
    with StubLLMServer() as server:
        args = [sys.executable, "-m", "streamcue", "replay", records, "--out", tmp_path / "run", "--video-root",
                tmp_path / "videos", "--llm-base-url", server.base_url, "--llm-model", "stub"]
        done = subprocess.run(args, capture_output=True, text=True, env=env)
        args[args.index(tmp_path / "run")] = tmp_path / "again"
        again = subprocess.run(args, capture_output=True, text=True, env=env)  # answered from the cache alone
    assert done.returncode == 0, done.stderr
    assert "mean latency" in done.stdout and again.returncode == 0, again.stderr
    assert "0 endpoint calls" in again.stdout and "no model latency (every answer from the cache)" in again.stdout
    assert "mean latency" not in again.stdout
    err = " ".join(done.stderr.split())
    assert "record q1: its times reach 30 s, past the end of video v2 (its file 3 s, videos.jsonl says 40 s)" in err
    report = json.loads((tmp_path / "run" / "replay_report.json").read_text())
    replay = report["kinds"]["interval_qa"]["replay"]
    missing = report["frames"]["without_pixels"]
    assert missing > 0 and replay["without_pixels_records"] == [{"record_id": "q1", "video_id": "v2",
                                                                  "frames": missing}]
    assert replay["past_end_records"] == [{"record_id": "q1", "video_id": "v2", "t_s": 30.0, "duration_s": 3.0}]
    assert f"warning: {missing} frames of 1 record were sent without pixels" in err
    assert "only their time labels): q1;" in err
