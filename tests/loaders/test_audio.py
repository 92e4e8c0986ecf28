"""Sound reaches the model when asked (issue 33 item 4): synthetic clips carrying a 440 Hz tone (ffmpeg's ``sine``
source muxed with ``testsrc``), played by ``write_replay`` against the real stub server on 127.0.0.1; the test decodes
what the server received (the ``input_audio`` part, or the clip's own audio track) and finds the tone by FFT."""

import base64
import io
import json
import subprocess
import wave

import numpy as np
import pytest

from conftest import VALID
from streamcue.errors import ConfigError, InputError
from streamcue.loaders.replay_config import ReplayConfig
from streamcue.loaders.replay_run import write_replay
from streamcue.testing.stub_llm import StubLLMServer
from streamcue.video import cut_audio, ffmpeg_exe, probe

pytestmark = pytest.mark.llm_server

TONE_HZ = 440.0


def make_video(path, seconds=6, tone=True):
    """A ``testsrc`` video, with a ``sine`` tone of :data:`TONE_HZ` as its sound when ``tone``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sound = ["-f", "lavfi", "-i", f"sine=frequency={TONE_HZ:g}:sample_rate=44100"] if tone else []
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10",
                    *sound, "-t", str(seconds), "-pix_fmt", "yuv420p", "-c:v", "libx264",
                    *(["-c:a", "aac"] if tone else []), str(path)], check=True)
    return path


def wav_tone(data):
    """``(seconds, strongest frequency in Hz)`` of WAV bytes (16-bit PCM)."""
    with wave.open(io.BytesIO(data)) as wav:
        rate, samples = wav.getframerate(), np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    spectrum = np.abs(np.fft.rfft(samples.astype(float)))
    return len(samples) / rate, float(np.fft.rfftfreq(len(samples), 1.0 / rate)[int(np.argmax(spectrum))])


@pytest.fixture
def played(tmp_path, monkeypatch):
    """``play(videos={id: tone}, **config)`` -> (report, server requests): one question at 4 s per video, k=4."""
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    server = StubLLMServer().start()

    def play(videos, out="out", **options):
        rows = [dict(VALID["mc_question"], question_id=f"{vid}-q", video_id=vid, query_time_s=4.0) for vid in videos]
        (tmp_path / "mc_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tmp_path / "videos.jsonl").write_text("".join(
            json.dumps(dict(VALID["video"], video_id=vid, uri=f"{vid}.mp4", duration_s=6.0)) + "\n" for vid in videos))
        for vid, tone in videos.items():
            make_video(tmp_path / "videos" / f"{vid}.mp4", tone=tone)
        config = ReplayConfig(records=tmp_path / "mc_question.jsonl", video_root=tmp_path / "videos", k=4,
                              llm_base_url=server.base_url, llm_model="m", no_cache=True, **options)
        before = len(server.requests)
        return write_replay(config, tmp_path / out), server.requests[before:]

    yield play
    server.stop()


def parts_of(body, kind):
    return [p for p in body["messages"][-1]["content"] if p["type"] == kind]


def test_audio_parts_carry_the_span_of_the_call_with_its_tone(played):
    report, requests = played({"v1": True}, audio="parts")
    (part,) = parts_of(requests[0], "input_audio")
    assert part["input_audio"]["format"] == "wav" and len(parts_of(requests[0], "image_url")) == 4
    seconds, peak = wav_tone(base64.b64decode(part["input_audio"]["data"]))
    shown = [f["t_s"] for f in report["samples"][0]["frames"]]
    assert shown == [0.0, 2.0, 3.0, 4.0]  # SW+U: the first frame and the last three
    assert seconds == pytest.approx(5.0, abs=0.05)  # from the first frame to one frame after the last (fps 1)
    assert peak == pytest.approx(TONE_HZ, abs=2.0)
    audio = report["samples"][0]["audio"]
    assert audio["mode"] == "parts" and audio["format"] == "wav" and audio["seconds"] == pytest.approx(seconds)
    assert audio["bytes"] == len(base64.b64decode(part["input_audio"]["data"]))
    assert report["audio"] == {"mode": "parts", "need_sound": 0, "sound": None, "calls": 1, "calls_without_audio": 0,
                               "seconds": audio["seconds"], "records_without_audio": []}


def test_audio_none_sends_no_sound(played):
    report, requests = played({"v1": True})
    assert not parts_of(requests[0], "input_audio") and "mm_processor_kwargs" not in requests[0]
    assert report["samples"][0]["audio"] is None
    assert report["audio"] == {"mode": "none", "need_sound": 0, "sound": None}


def test_audio_video_keeps_the_clips_sound_and_sets_the_servers_switch(played, tmp_path):
    report, requests = played({"v1": True}, audio="video", transport="video_url")
    body = requests[0]
    assert body["mm_processor_kwargs"] == {"use_audio_in_video": True}
    assert body["media_io_kwargs"] == {"video": {"num_frames": 4}}
    (clip,) = parts_of(body, "video_url")
    path = tmp_path / "received.mp4"
    path.write_bytes(base64.b64decode(clip["video_url"]["url"].split(",", 1)[1]))
    assert probe(path).has_audio
    seconds, peak = wav_tone(cut_audio(path, 0.0, 10.0, tmp_path / "received.wav").read_bytes())
    assert seconds == pytest.approx(5.0, abs=0.1) and peak == pytest.approx(TONE_HZ, abs=2.0)
    assert report["samples"][0]["audio"]["mode"] == "video" and report["samples"][0]["audio"]["format"] == "aac"
    report, requests = played({"v1": True}, out="plain", transport="video_url")
    path.write_bytes(base64.b64decode(parts_of(requests[0], "video_url")[0]["video_url"]["url"].split(",", 1)[1]))
    assert not probe(path).has_audio and "mm_processor_kwargs" not in requests[0]


def test_a_video_without_sound_is_counted_and_said_once(played, capsys):
    report, requests = played({"v1": True, "v2": False}, audio="parts")
    assert [len(parts_of(body, "input_audio")) for body in requests] == [1, 0]
    assert report["samples"][1]["audio"] == {"mode": "parts", "seconds": 0.0, "bytes": 0, "format": None,
                                             "missing": "no audio stream"}
    assert report["audio"]["calls_without_audio"] == 1 and report["audio"]["records_without_audio"] == ["v2-q"]
    said = [line for line in capsys.readouterr().err.splitlines() if "without sound" in line]
    assert len(said) == 1 and "1 of 2 calls" in said[0]


def test_audio_is_refused_where_no_sound_can_be_sent(played):
    with pytest.raises(InputError, match="--audio parts: no video played has an audio stream"):
        played({"v2": False}, audio="parts")
    with pytest.raises(ConfigError, match="--audio video .*needs --transport video_url"):
        played({"v1": True}, audio="video")
    with pytest.raises(ConfigError, match="--audio must be one of none, parts, video"):
        played({"v1": True}, audio="loud")
    with pytest.raises(ConfigError, match="--audio parts .*not --no-video"):
        ReplayConfig(records="x.jsonl", no_video=True, audio="parts")


@pytest.mark.slow
def test_the_sound_example_in_the_docs_runs_as_written(tmp_path):
    """docs/replay.md's block: a StreamingBench omni run with sound is labelled ``with sound``, the same run without
    ``--audio`` ``video-only``, in results.json and on the run page."""
    import os
    import re
    import sys
    from pathlib import Path

    from conftest import SHARED_DATA
    from streamcue.io import read_jsonl

    text = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- audio-example: run by tests/loaders/test_audio.py -->\n```bash\n(.*?)```", text, re.S)
    build, *runs = block.group(1).strip().splitlines()
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)
    with StubLLMServer() as server:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               "STREAMCUE_LLM_BASE_URL": server.base_url, "STREAMCUE_LLM_MODEL": "stub-omni",
               "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"), "STREAMCUE_NO_PROGRESS": "1"}

        def run(line):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

        run(build)
        first = {row["video_id"] for row in read_jsonl(work / "out" / "sb-omni" / "mc_question.jsonl")[:2]}
        for video in read_jsonl(work / "out" / "sb-omni" / "videos.jsonl"):  # the first records' videos, with a tone
            if video["video_id"] in first:
                make_video(work / "sb-videos" / video["uri"], seconds=62)
        for line in runs:
            run(line)
        received = [len(parts_of(body, "input_audio")) for body in server.requests]
    assert received == [1, 1, 0, 0]
    for run_name, mode, label in (("sb-sound", "parts", "with sound"), ("sb-mute", "none", "video-only")):
        results = json.loads((work / "runs" / run_name / "results.json").read_text())
        assert results["frames"]["audio"] == mode and results["frames"]["sound"] == label
        page = "".join(p.read_text() for p in (work / "runs" / run_name).glob("*.html"))
        assert f"sound={label}" in page


def received_frames(url, folder):
    """The presentation times (s) of every frame in a received ``data:video/mp4`` clip, decoded by ffmpeg."""
    path = folder / "counted.mp4"
    path.write_bytes(base64.b64decode(url.split(",", 1)[1]))
    lines = subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-i", str(path), "-map", "0:v", "-f", "framemd5",
                            "-"], check=True, capture_output=True, text=True).stdout.splitlines()
    timebase = next(line for line in lines if line.startswith("#tb 0:")).split(":", 1)[1].strip()
    num, den = (int(x) for x in timebase.split("/"))
    return [int(line.split(",")[2]) * num / den for line in lines if not line.startswith("#")]


def test_a_clip_holds_exactly_the_frames_its_sample_says(played, tmp_path):
    """Issue 49: the clip sent held every frame of its span (117 for a question at 116 s) while the request and the
    sample said 16; the server counts the frames it received and they are the sample's, at the sample's times."""
    report, requests = played({"v1": False}, transport="video_url")
    (clip,) = parts_of(requests[0], "video_url")
    video = report["samples"][0]["video"]
    times = received_frames(clip["video_url"]["url"], tmp_path)
    assert len(times) == video["frames"] == requests[0]["media_io_kwargs"]["video"]["num_frames"] == 4
    assert [t + video["start_s"] for t in times] == pytest.approx(video["t_s"])  # SW+U: 0, 2, 3, 4 s
    assert video["t_s"] == [0.0, 2.0, 3.0, 4.0]
