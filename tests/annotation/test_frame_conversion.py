"""Seconds <-> Label Studio frames (annotation/convert.py) at times that do not fall on a frame.

Frames are 1-based and inclusive: [start_s, end_s] -> round(start_s * fps) + 1 .. round(end_s * fps).
Python's round() takes a half to the even neighbour, so a time exactly half a frame away from
two frames goes to the even frame index; either way a round trip moves a time by at most half a
frame, except that a span shorter than a frame keeps at least its start frame.
"""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcue.annotation.convert import frames_to_span, moment_to_frame, span_to_frames


def test_frame_aligned_spans_come_back_exactly():
    for start_s, end_s in [(0.0, 1.0), (2.0, 4.0), (10.5, 12.5)]:
        assert frames_to_span(*span_to_frames(start_s, end_s, 30), 30) == (start_s, end_s)
    assert span_to_frames(0.0, 1.0, 30) == (1, 30)


def test_off_grid_times_snap_to_the_nearest_frame():
    # 30 fps: 10.01 s is frame position 300.3 -> 300 -> frame 301 (starts at 10.0 s); 12.49 s -> 374.7 -> 375.
    assert span_to_frames(10.01, 12.49, 30) == (301, 375)
    assert frames_to_span(301, 375, 30) == (10.0, 12.5)
    assert moment_to_frame(10.01, 30) == 301 and moment_to_frame(10.02, 30) == 302  # 300.6 -> 301 -> frame 302
    # 29.97 fps (NTSC): 1.0 s is position 29.97 -> 30 -> frame 31, back to 30/29.97 = 1.001 s.
    start, end = span_to_frames(1.0, 2.0, 29.97)
    assert (start, end) == (31, 60)
    assert math.isclose(frames_to_span(start, end, 29.97)[0], 30 / 29.97)


def test_half_frame_times_round_to_the_even_frame():
    # 2 fps: frames are 0.5 s long, so 0.25 s, 0.75 s and 1.25 s lie exactly half-way (binary-exact floats).
    assert span_to_frames(0.25, 0.75, 2) == (1, 2)   # positions 0.5 -> 0, 1.5 -> 2
    assert span_to_frames(1.25, 1.75, 2) == (3, 4)   # positions 2.5 -> 2, 3.5 -> 4
    assert frames_to_span(1, 2, 2) == (0.0, 1.0) and frames_to_span(3, 4, 2) == (1.0, 2.0)
    assert moment_to_frame(0.25, 2) == 1 and moment_to_frame(0.75, 2) == 3
    # A span inside one frame keeps one frame (start = end).
    assert span_to_frames(0.1, 0.2, 2) == (1, 1)


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 3600, allow_nan=False), st.floats(0, 600, allow_nan=False), st.sampled_from([1, 2, 5, 24, 25,
                                                                                                 29.97, 30, 60]))
def test_property_round_trip_moves_a_time_by_at_most_half_a_frame(start_s, length_s, fps):
    end_s = start_s + length_s
    start, end = span_to_frames(start_s, end_s, fps)
    assert 1 <= start <= end
    back_start, back_end = frames_to_span(start, end, fps)
    half = 0.5 / fps + 1e-9
    assert abs(back_start - start_s) <= half
    if end > start or round(end_s * fps) >= start:  # not widened to the one-frame minimum
        assert abs(back_end - end_s) <= half
    assert span_to_frames(back_start, back_end, fps) == (start, end)  # stable: a second round trip changes nothing
