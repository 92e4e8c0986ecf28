"""A contact sheet is bound to the published frames (anonymize/contact_sheet.py, ``sheet_problem``): each tile is
drawn again from the published video and compared, so a person never ticks a sheet of other frames than those a
release publishes (issue 45: a forger who resealed a report could publish the raw input beside the genuine sheet).
Every case reuses the one clip the real anonymizer blurred for this process (tests/contact_sheets.py)."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from conftest import cli
from contact_sheets import anonymized_folder, own_bytes

pytest.importorskip("cv2")

from streamcue.anonymize.contact_sheet import MATCH, sheet_problem  # noqa: E402
from streamcue.seal import SEAL, seal  # noqa: E402


def _report():
    return json.loads((anonymized_folder() / "v1.anonymization.json").read_text())


def _problem(video, sheet=None, crf=18, **stated):
    report, folder = _report(), anonymized_folder()
    return sheet_problem(sheet or folder / "v1.contact.jpg", video, {**report["contact_sheet"], **stated},
                         report["input"]["fps"], crf)


def test_a_sheet_matches_the_video_it_was_drawn_from():
    """The anonymizer's own sheet and video: every tile is the published frame it names (the JPEG, the encoder
    and the outlines set aside)."""
    assert _problem(anonymized_folder() / "v1.mp4") is None


def test_a_sheet_beside_other_frames_is_named_tile_by_tile():
    """The unblurred input beside the genuine sheet (the forgery issue 45's probe published), the frames named
    one later than drawn, and an index past the video's end are each one line naming the tile."""
    folder = anonymized_folder()
    raw = _problem(folder.parent / "v1.mp4")
    assert raw.startswith("tile 1 of the contact sheet (0.0 s) is not frame 0 of v1.mp4: they differ by ")
    assert "the sheet was drawn from other frames than those published" in raw
    frames = _report()["contact_sheet"]["frames"]
    shifted = _problem(folder / "v1.mp4", frames=[f + 1 for f in frames[:-1]] + [frames[-1]])
    assert shifted is not None and shifted.startswith("tile ")
    past = _problem(folder / "v1.mp4", frames=[*frames[:-1], 10_000])
    assert past == f"tile {len(frames)} of the contact sheet names frame 10000, which v1.mp4 does not hold"
    assert _problem(folder / "v1.mp4", frames=frames[:4]).startswith("the contact sheet is not laid out as drawn")


@pytest.mark.parametrize("crf", [MATCH["most_crf"] + 1, None, True, "18"])
def test_a_sheet_of_a_video_encoded_past_the_compared_crf_is_refused(crf):
    assert _problem(anonymized_folder() / "v1.mp4", crf=crf).startswith(f"encoded at crf {crf!r}: above crf 32 ")


def test_push_refuses_the_raw_input_published_under_a_resealed_report(tmp_path):
    """The forgery end to end: the input re-muxed (the same frames, other bytes) beside the genuine sheet, its
    report resealed to name those bytes with no detection (so no hidden region for the blur check to sample).
    ``annotate anonymization push`` refuses it in one line naming the report and field before any server is
    asked."""
    folder = anonymized_folder()
    shutil.copyfile(folder / "v1.contact.jpg", tmp_path / "v1.contact.jpg")
    raw = own_bytes(folder.parent / "v1.mp4", tmp_path / "v1.mp4", "re-muxed")
    report = _report()
    report.pop(SEAL)
    zero = {"total": 0, "frames_with": 0, "max_per_frame": 0, "per_frame": [0] * report["output"]["frames"]}
    report.update(output={**report["output"], "sha256": raw}, hidden_samples=[],
                  detections={"face": zero, "plate": zero}, hidden_share_mean=0.0)
    (tmp_path / "v1.anonymization.json").write_text(json.dumps(seal(report)))
    code, out, err = cli("annotate", "anonymization", "push", "--reports", tmp_path, "--project", "forged")
    assert code != 0 and "Traceback" not in err, err
    assert "v1.anonymization.json" in err and "$.contact_sheet" in err and "is not frame 0 of v1.mp4" in err, err


def test_a_sheet_of_no_bytes_is_one_line(tmp_path):
    """An empty file where the sheet goes (its SHA-256 resealed to match) is a sheet of no tiles, not OpenCV's
    assertion on an empty buffer."""
    (tmp_path / "empty.jpg").write_bytes(b"")
    frames = len(_report()["contact_sheet"]["frames"])
    problem = _problem(anonymized_folder() / "v1.mp4", sheet=tmp_path / "empty.jpg")
    assert problem == f"the contact sheet is not laid out as drawn for {frames} frames of v1.mp4"


@pytest.mark.parametrize("index", [-1, 10**30, 2**63])
def test_a_frame_no_video_holds_is_named_as_the_sheets(index):
    """A frame before the first or far past the end is the sheet's mistake, named by its tile, never a seek that
    ffmpeg cannot parse reported as an undecodable video."""
    frames = _report()["contact_sheet"]["frames"]
    problem = _problem(anonymized_folder() / "v1.mp4", frames=[index, *frames[1:]])
    assert problem == f"tile 1 of the contact sheet names frame {index}, which v1.mp4 does not hold"


def _painted_sheet(tmp_path, paint) -> object:
    """The genuine sheet with ``paint`` (a function of the first tile and where it differs from the unblurred frame
    0 drawn as a tile: every face and plate) applied, written as PNG bytes (no JPEG to soften a fine pattern)."""
    cv2 = pytest.importorskip("cv2")
    from streamcue.anonymize.contact_sheet import _tile
    from streamcue.video import probe, read_frames

    raw = anonymized_folder().parent / "v1.mp4"
    frames = read_frames(raw, probe(raw))
    drawn = _tile(next(frames), None, "0.0 s")
    frames.close()
    image = cv2.imread(str(anonymized_folder() / "v1.contact.jpg"))
    tile = image[:drawn.shape[0], :drawn.shape[1]]
    differs = np.abs(tile.astype(np.int16) - drawn.astype(np.int16)).max(axis=2).astype(np.float32)
    paint(tile, cv2.blur(differs, (8, 8)) > 12)
    path = tmp_path / "painted.jpg"
    path.write_bytes(cv2.imencode(".png", image)[1].tobytes())
    return path


def _filled(tile, where):
    tile[where] = (0, 0, 255)


def _grid(tile, where):
    rows, columns = np.indices(where.shape)
    tile[where & (rows % 4 == 0) & (columns % 4 == 0)] = (0, 0, 255)


@pytest.mark.parametrize("paint", [_filled, _grid], ids=["filled red", "a grid of red dots"])
def test_red_paint_over_the_unblurred_faces_is_refused(tmp_path, paint):
    """Red outlines are set aside from the comparison, so a forger pairing the unblurred input with the genuine sheet
    could paint red where they differ (filled, or a grid of dots 4 px apart that sets aside every pixel): the tile
    then passed the comparison. Such red is wider than outlines are on any labelled scene's sheet, and is named."""
    problem = _problem(anonymized_folder().parent / "v1.mp4", sheet=_painted_sheet(tmp_path, paint))
    assert problem.startswith("tile 1 of the contact sheet (0.0 s) is painted red where frame 0 of v1.mp4 is not "
                              "red, wider than outlines are"), problem


def _mesh(spacing):
    def paint(tile, where):
        rows, columns = np.indices(where.shape)
        tile[where & ((rows % spacing == 0) | (columns % spacing == 0))] = (0, 0, 255)
    return paint


@pytest.mark.parametrize("spacing", [4, 6, 8, 16])
def test_a_red_mesh_of_any_spacing_over_the_unblurred_faces_is_refused(tmp_path, spacing):
    """Red lines 1 px wide a few px apart set aside every pixel they cross without making a solid red area: when a
    set-aside pixel counted as equal, lines 6 px apart hid an area of any size. A set-aside pixel is now unknown: an
    8 px square is the mean of its pixels compared, or blind when too few are, and blind squares may not hold a wide
    disk. Lines 4 to 8 px apart blind the unblurred faces (painted), lines 16 px apart leave the pixels between them
    to carry the difference (other frames): either way tile 1 is named (the genuine sheet still matching its video:
    ``test_a_sheet_matches_the_video_it_was_drawn_from``)."""
    problem = _problem(anonymized_folder().parent / "v1.mp4", sheet=_painted_sheet(tmp_path, _mesh(spacing)))
    assert re.match(r"tile 1 of the contact sheet \(0\.0 s\) is (painted red where frame 0 of v1\.mp4 is not red, "
                    r"wider than outlines are|not frame 0 of v1\.mp4: they differ by )", problem), problem


def test_a_mirrored_video_is_other_frames_not_paint(tmp_path):
    """The published frames mirrored: the sheet's red is then where the frame's is not, so the tile is named for
    differing from its frame (what it is), not for paint."""
    from streamcue.video import FrameWriter, probe, read_frames

    video = anonymized_folder() / "v1.mp4"
    info = probe(video)
    writer = FrameWriter(tmp_path / "v1.mp4", info.width, info.height, info.fps)
    for frame in read_frames(video, info):
        writer.write(np.ascontiguousarray(frame[:, ::-1]))
    writer.close()
    assert _problem(tmp_path / "v1.mp4").startswith("tile 1 of the contact sheet (0.0 s) is not frame 0 of v1.mp4")


def test_push_refuses_a_video_whose_audio_was_put_back(tmp_path):
    """The published video with an audio track muxed back in after the anonymizer dropped it (its report resealed
    to name the new bytes): the frames and the sheet still match, so the release's gate names the audio (a voice or
    a spoken name the report says is gone), and push refuses it before a person is shown the sheet."""
    import subprocess

    import imageio_ffmpeg

    from streamcue.annotation.anonymization_check import sheets
    from streamcue.anonymize.report import sha256_file
    from streamcue.errors import InputError

    folder = anonymized_folder()
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(folder / "v1.mp4"), "-f", "lavfi",
                    "-i", "sine=duration=1", "-c:v", "copy", "-c:a", "aac", "-shortest", str(tmp_path / "v1.mp4")],
                   check=True)
    shutil.copyfile(folder / "v1.contact.jpg", tmp_path / "v1.contact.jpg")
    report = _report()
    report.pop(SEAL)
    report["output"] = {**report["output"], "sha256": sha256_file(tmp_path / "v1.mp4")}
    (tmp_path / "v1.anonymization.json").write_text(json.dumps(seal(report)))
    with pytest.raises(InputError, match=r"has an audio track, the report states its audio 'dropped' \(output.audio\)"):
        sheets(tmp_path)


def test_push_names_every_refused_report_of_a_folder_before_any_server_is_asked(tmp_path, monkeypatch):
    """Issue 45: a folder of three bad reports (one edited after the run, one whose video is missing, one beside a
    video changed since) is refused naming all three in one run, one line each naming the report and the field (the
    edited one by the field it names, not ``$``; the changed video with both SHA-256s), exit 2, and Label Studio is
    never asked: its address is a real socket that nothing connects to."""
    import socket

    from streamcue.anonymize.report import sha256_file

    folder, report = anonymized_folder(), _report()
    for name in ("v1", "v2", "v3"):
        shutil.copyfile(folder / "v1.contact.jpg", tmp_path / f"{name}.contact.jpg")
        named = {**report, "output": {**report["output"], "path": f"{name}.mp4"},
                 "contact_sheet": {**report["contact_sheet"], "path": f"{name}.contact.jpg"}}
        named.pop(SEAL)
        (tmp_path / f"{name}.anonymization.json").write_text(json.dumps(seal(named)))
    shutil.copyfile(folder / "v1.mp4", tmp_path / "v1.mp4")
    edited = json.loads((tmp_path / "v1.anonymization.json").read_text())
    (tmp_path / "v1.anonymization.json").write_text(json.dumps({**edited, "hidden_share_mean": 0.5}))
    (tmp_path / "v3.mp4").write_bytes((folder / "v1.mp4").read_bytes() + b"\x00")  # not the bytes it states
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        monkeypatch.setenv("LABEL_STUDIO_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
        monkeypatch.setenv("LABEL_STUDIO_API_KEY", "never-sent")
        code, out, err = cli("annotate", "anonymization", "push", "--reports", tmp_path, "--project", "three bad")
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody knocked
    assert code == 2 and "Traceback" not in err and "imported" not in out, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    assert lines[0].startswith(f"error: {tmp_path / 'v1.anonymization.json'}: $.hidden_share_mean: edited after the "
                               "run") and \
        lines[0].endswith("(hidden_share_mean)"), lines[0]
    assert lines[1] == (f"error: {tmp_path / 'v2.anonymization.json'}: $.output.path: the video the report names "
                        "(v2.mp4) is not beside it: the contact sheet is compared with its frames before a person is "
                        "shown it")
    found, stated = sha256_file(tmp_path / "v3.mp4"), report["output"]["sha256"]
    assert lines[2].startswith(f"error: {tmp_path / 'v3.anonymization.json'}: $: {tmp_path / 'v3.mp4'} is not the "
                               f"video the report states: its SHA-256 is {found[:12]}, the report's $.output.sha256 "
                               f"{stated[:12]} "), lines[2]
    code, _, err = cli("annotate", "anonymization", "push", "--reports", tmp_path / "v1.mp4", "--project", "a video")
    assert code == 2 and err.strip() == (f"error: {tmp_path / 'v1.mp4'}: no anonymization report (NAME.anonymization"
                                         ".json, written by streamcue anonymize beside NAME.mp4): pass one, or the "
                                         "folder of them"), err  # the video given for its report: said so
