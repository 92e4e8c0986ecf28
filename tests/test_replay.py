"""Replay protocols with a fake slow model: frames dropped, memory policies, timestamps."""

import pytest

from streamcue.errors import ConfigError
from streamcue.loaders.replay import Frame, replay, select_frames


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
    result = replay(model, duration_s=3, fps=2, prompts=[(0, "describe"), (1.0, "what now?")], k=2, policy="SW")
    assert [c[0] for c in model.calls] == [[0], [0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]
    assert [r["t_s"] for r in result.responses] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert model.calls[2][1] == "what now?" and result.frames_dropped == 0


def test_asynchronous_small_buffer_drops_frames_large_buffer_does_not():
    small = replay(Recorder(latency_s=1.0), duration_s=20, fps=10, prompts=[(0, "go")], protocol="asynchronous",
                   camera_buffer=2, k=8)
    large = replay(Recorder(latency_s=1.0), duration_s=20, fps=10, prompts=[(0, "go")], protocol="asynchronous",
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
    result = replay(Recorder(latency_s=0.05), duration_s=5, fps=10, prompts=[], protocol="asynchronous", camera_buffer=4)
    assert result.frames_dropped == 0 and result.frames_seen == 50
    assert result.report(5)["actions_per_second"] == pytest.approx(len(result.responses) / 5)


def test_contextual_history_holds_earlier_turns_and_answers():
    model = Recorder()
    replay(model, duration_s=3, fps=1, prompts=[(0, "turn 1"), (2, "turn 2")], k=1, policy="SW")
    _, prompt, history, _ = model.calls[-1]
    assert prompt == "turn 2" and (0, "turn 1") in history and (0.0, "saw 0") in history
