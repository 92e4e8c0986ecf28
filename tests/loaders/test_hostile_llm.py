"""A hostile model endpoint through the real CLI (in this process): ``run``, ``replay`` and ``verify-evidence``
against a real HTTP server on 127.0.0.1 that answers HTTP 200 with an HTML page, token counts as strings, a number
as the answer or an answer over the size cap. Each is one ``error:`` line naming the endpoint and what was wrong,
exit 4, never a traceback, and no output folder under its final name."""

from __future__ import annotations

import pytest

from conftest import CAPTAINCOOK4D, GOALSTEP_VAL, SHARED_DATA, cli_run
from streamcue.testing.stub_llm import StubLLMServer

pytestmark = [pytest.mark.llm_server,
              pytest.mark.skipif(not CAPTAINCOOK4D.is_dir(), reason="needs ../shared/data")]

FAULTS = {
    "html": (("body", ("text/html; charset=utf-8", b"<html><body>Bad Gateway</body></html>")),
             "that is not JSON (text/html"),
    "usage-strings": (("usage", {"prompt_tokens": "12", "completion_tokens": "3"}),
                      "malformed at usage/completion_tokens: '3' is not of type 'integer', 'null'"),
    "content-number": (("content", 42), "malformed at choices/0/delta/content: 42 is not of type"),
    "huge": (("content", "x" * 2_000_000), "over the 1,048,576-byte cap"),
    # an HTTP 200 holding no choice at all: once read as an empty answer, a silent "no answer" (issue #35 probe)
    "no-choices": (("body", ("application/json", b'{"choices": []}')), "malformed at choices: []"),
}


def cli(*args, cache):
    """The command in this process (both variables are read when it runs)."""
    return cli_run(*args, env={"COLUMNS": 200, "STREAMCUE_CACHE_DIR": cache})


def one_line_error(done, *words):
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: LLM server http://127.0.0.1:"), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """An OVO-Bench build, a CaptainCook4D guidance build and a GoalStep build: the inputs of the three commands."""
    root = tmp_path_factory.mktemp("records")
    cache = root / "cache"
    builds = {
        "ovo": ["build", "ovo-bench", "--annotations",
                SHARED_DATA / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json", "--out", root / "ovo"],
        "cc": ["build", "captaincook4d", "--annotations", CAPTAINCOOK4D, "--out", root / "cc", "--recording", "1_7"],
        "ego": ["build", "ego4d", "--goalstep", GOALSTEP_VAL, "--out", root / "ego"],
    }
    for args in builds.values():
        done = cli(*args, cache=cache)
        assert done.returncode == 0, done.stderr
    return root


def commands(records, out, base_url):
    llm = ["--llm-base-url", base_url, "--llm-model", "stub-model"]
    return {
        "run": ["run", "ovo-bench", records / "ovo", "--out", out, "--no-video", "--limit", "1", *llm],
        "replay": ["replay", records / "cc" / "guidance.jsonl", "--out", out, "--strategy", "turn-loop", "--limit",
                   "1", "--no-video", *llm],
    }


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_hostile_answer_is_one_line(records, tmp_path, command, fault):
    (kind, value), words = FAULTS[fault]
    with StubLLMServer() as server:
        server.inject(kind, value, times=1000)
        done = cli(*commands(records, tmp_path / "out", server.base_url)[command], cache=tmp_path / "cache")
    one_line_error(done, words)
    assert not (tmp_path / "out" / "predictions.jsonl").exists()


@pytest.mark.video
def test_verify_evidence_refuses_a_hostile_answer_in_one_line(records, tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    from evidence_responder import write_test_videos

    from streamcue.io import read_jsonl, write_jsonl

    videos = [v for v in read_jsonl(records / "ego" / "videos.jsonl") if v["duration_s"] <= 60][:1]
    assert videos
    write_test_videos(videos, tmp_path / "videos")
    rows = [r for r in read_jsonl(records / "ego" / "interval_qa.jsonl") if r["video_id"] == videos[0]["video_id"]]
    write_jsonl(tmp_path / "in" / "videos.jsonl", videos)
    write_jsonl(tmp_path / "in" / "interval_qa.jsonl", rows[:1])
    for fault in ("html", "content-number"):
        (kind, value), words = FAULTS[fault]
        with StubLLMServer() as server:
            server.inject(kind, value, times=1000)
            done = cli("verify-evidence", "--records", tmp_path / "in" / "interval_qa.jsonl", "--out",
                       tmp_path / fault, "--video-root", tmp_path / "videos", "--llm-base-url", server.base_url,
                       "--llm-model", "stub-model", cache=tmp_path / "cache")
        one_line_error(done, words)
        assert not (tmp_path / fault / "interval_qa.jsonl").exists()
