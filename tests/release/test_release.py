"""Releases from real builder output: Parquet + card, read back with datasets.load_dataset, gates, push, diff."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import CAPTAINCOOK4D, GOALSTEP_VAL, VALID, cli_run, signed
from contact_sheets import anonymized_folder
from hub_server import olah_server

datasets = pytest.importorskip("datasets")

from streamcue.anonymize.report import sha256_file  # noqa: E402
from streamcue.dataset_builders import BuildReport, captaincook4d, ego4d  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.release.manifest import read_manifest  # noqa: E402
from streamcue.release.diff import diff, read_release  # noqa: E402
from streamcue.release.push import push  # noqa: E402
from streamcue.errors import ConfigError, InputError, RecordValidationError  # noqa: E402
from streamcue.io import read_json, read_jsonl, write_jsonl  # noqa: E402
from streamcue.loaders import by_video, load  # noqa: E402

REPO_ID = "streamcue/cc4d-guidance"
#: A verification that holds (with signed()): two annotators agreed.
TWO_AGREE = {"status": "verified", "annotators": ["annotator-1", "annotator-2"], "checks": 2,
             "decided_by": "agreement"}


@pytest.fixture(scope="module")
def cc4d(tmp_path_factory):
    out = tmp_path_factory.mktemp("cc4d")
    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D)), out)
    return out


@pytest.fixture(scope="module")
def release_v1(cc4d, tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist") / "v1.0.0"
    build_release(ReleaseConfig(records=cc4d, version="1.0.0", out=dist, allow_unverified=True, repo=REPO_ID))
    return dist


def copy_records(src, dst, edit=None):
    dst.mkdir(parents=True, exist_ok=True)
    for path in src.glob("*.jsonl"):
        records = read_jsonl(path)
        if edit:
            records = edit(path.name, records)
        write_jsonl(dst / path.name, records)
    return dst


def test_load_dataset_on_the_folder_keeps_the_nested_features(release_v1, cc4d):
    ds = datasets.load_dataset(str(release_v1), "guidance", split="test")
    assert ds.num_rows == 109
    events = ds.features["events"]
    assert isinstance(events, datasets.List)
    assert events.feature["t_s"] == datasets.Value("float64")
    assert ds.features["plan"].feature["actions"].feature["end_s"] == datasets.Value("float64")
    first = ds[0]
    assert first["events"][0]["type"] == "instruction"
    assert datasets.load_dataset(str(release_v1), "videos", split="validation").num_rows == 62


def test_typed_records_round_trip_exactly(release_v1, cc4d):
    original = {r["video_id"]: r for r in read_jsonl(cc4d / "guidance.jsonl")}
    loaded = load("guidance", release_v1)
    assert {split: len(recs) for split, recs in loaded.items()} == {"train": 213, "validation": 62, "test": 109}
    for records in loaded.values():
        for rec in records:
            assert rec.to_dict() == original[rec.video_id]
    rec = loaded["test"][0]
    assert type(rec).__name__ == "Guidance" and type(rec.events[0]).__name__ == "GuidanceEvent"
    videos = {r["video_id"]: r for r in read_jsonl(cc4d / "videos.jsonl")}
    assert all(v.to_dict() == videos[v.video_id] for v in load("videos", release_v1, split="train"))


def test_interval_qa_and_dense_captions_round_trip(tmp_path):
    out = tmp_path / "ego"
    write_outputs(ego4d.build(ego4d.Config(goalstep=GOALSTEP_VAL), BuildReport("ego4d")), out)
    dense = signed(dict(VALID["dense_caption"], video_id=read_jsonl(out / "videos.jsonl")[0]["video_id"],
                        verification=TWO_AGREE))
    write_jsonl(out / "dense_caption.jsonl", [dense])
    dist = tmp_path / "dist"
    manifest = build_release(ReleaseConfig(records=out, version="0.1.0", out=dist, allow_unverified=True))
    assert set(manifest["configs"]) == {"videos", "interval_qa", "dense_caption"}
    original = {r["qa_id"]: r for r in read_jsonl(out / "interval_qa.jsonl")}
    loaded = [q for split in load("interval_qa", dist).values() for q in split]
    assert len(loaded) == len(original)
    assert all(q.to_dict() == original[q.qa_id] for q in loaded)
    [(video_id, [record])] = list(by_video(r for split in load("dense_caption", dist).values() for r in split))
    assert video_id == dense["video_id"] and record.to_dict() == dense
    card = (dist / "README.md").read_text()
    assert "| task type | count |" in card and "figures/task_types.png" in card
    assert (dist / "figures" / "interval_length.png").is_file()


def test_card_manifest_and_changelog(release_v1):
    card = (release_v1 / "README.md").read_text()
    header = card.split("---")[1]
    assert "config_name: guidance" in header and "path: data/guidance/test-00000-of-00001-" in header
    assert "license: apache-2.0" in header and "task_categories:" in header
    assert "Released with `--allow-unverified`" in card
    manifest = read_manifest(release_v1)
    assert manifest["configs"]["guidance"]["test"]["rows"] == 109
    assert manifest["schema_version"] == "1.0"
    for rel, digest in manifest["files"].items():
        assert sha256_file(release_v1 / rel) == digest
    assert "## v1.0.0" in (release_v1 / "CHANGELOG.md").read_text()


def test_a_build_is_reproducible(cc4d, release_v1, tmp_path):
    again = build_release(ReleaseConfig(records=cc4d, version="1.0.0", out=tmp_path / "again",
                                         allow_unverified=True, repo=REPO_ID))
    assert again["files"] == read_manifest(release_v1)["files"]


# --- gates -------------------------------------------------------------------------------------

def test_unverified_benchmark_records_are_refused(cc4d, tmp_path):
    with pytest.raises(InputError) as err:
        build_release(ReleaseConfig(records=cc4d, version="1.0.0", out=tmp_path / "d"))
    assert "guidance.jsonl:" in str(err.value) and "$.verification.status" in str(err.value)
    assert "--allow-unverified" in str(err.value)
    assert not (tmp_path / "d").exists()


def test_verified_records_pass_and_rejected_ones_are_left_out(cc4d, tmp_path):
    def verify(name, records):
        if name == "guidance.jsonl":
            for i, r in enumerate(records):
                records[i] = signed(dict(r, verification=dict(TWO_AGREE, status="rejected" if i == 0 else "verified")))
        return records
    records = copy_records(cc4d, tmp_path / "rec", verify)
    manifest = build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d"))
    assert manifest["rejected_left_out"] == {"guidance": 1}
    assert sum(s["rows"] for s in manifest["configs"]["guidance"].values()) == 383
    card = (tmp_path / "d" / "README.md").read_text()
    assert "Every record in the validation and test splits is human-verified" in card


def test_invalid_records_are_refused(cc4d, tmp_path):
    def corrupt(name, records):
        if name == "guidance.jsonl":
            records[2]["events"][0]["t_s"] = -1
        return records
    records = copy_records(cc4d, tmp_path / "rec", corrupt)
    with pytest.raises(RecordValidationError, match=r"guidance.jsonl:3, record video_id=\S+: \$.events\[0\].t_s"):
        build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d", allow_unverified=True))


def _anonymized_clip() -> tuple[bytes, str, bytes]:
    """A short clip blurred by the real anonymizer (made once per test process, ``contact_sheets``): its bytes, its
    passing report and its contact sheet's bytes."""
    folder = anonymized_folder()
    return ((folder / "v1.mp4").read_bytes(), (folder / "v1.anonymization.json").read_text(),
            (folder / "v1.contact.jpg").read_bytes())


def recorded_set(tmp_path, status="passed", tamper=False):
    """A recorded video, blurred by the real anonymizer, with its anonymization report (``status`` written over the
    real one's) and one dense-caption record."""
    root, rec = tmp_path / "videos", tmp_path / "rec"
    (root / "recorded").mkdir(parents=True)
    video = root / "recorded" / "v1.mp4"
    blurred, report, sheet = _anonymized_clip()
    video.write_bytes(blurred)
    (rec / "reports").mkdir(parents=True)
    (rec / "reports" / "v1.json").write_text(json.dumps(dict(json.loads(report), status=status)))
    (rec / "reports" / "v1.contact.jpg").write_bytes(sheet)  # the sheet the report names, beside it
    if tamper:
        video.write_bytes(b"the unblurred original")
    write_jsonl(rec / "videos.jsonl", [VALID["video"]])
    write_jsonl(rec / "dense_caption.jsonl", [VALID["dense_caption"]])
    return rec, root


def test_recorded_video_with_a_passing_report_is_released_with_its_video(tmp_path):
    """The video is published at videos/<uri> with its report beside it, in the Hub's video-dataset form: the
    ``video_files`` config's rows hold a ``datasets.Video`` column whose file decodes."""
    rec, root = recorded_set(tmp_path)
    manifest = build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    assert manifest["configs"]["dense_caption"]["test"]["rows"] == 1
    dist = tmp_path / "d"
    assert (dist / "videos/recorded/v1.mp4").read_bytes() == (root / "recorded/v1.mp4").read_bytes()
    assert (dist / "videos/recorded/v1.anonymization.json").read_bytes() == (rec / "reports/v1.json").read_bytes()
    assert manifest["files"]["videos/recorded/v1.mp4"] == sha256_file(root / "recorded/v1.mp4")
    # the contact sheet the report names resolves beside the published report (not a dangling reference)
    named = read_json(dist / "videos/recorded/v1.anonymization.json")["contact_sheet"]
    assert manifest["files"][f"videos/recorded/{named['path']}"] == named["sha256"]
    assert list(manifest["video_files"]) == ["test"]
    ds = datasets.load_dataset(str(dist), "video_files", split="test")
    assert isinstance(ds.features["video"], datasets.Video) and ds.num_rows == 1
    assert_frame_decodes(ds)
    card = (dist / "README.md").read_text()
    assert "1 video(s) are published under `videos/`" in card and "No video is published" not in card
    # issue 46: the card's examples run as written (the repo id replaced by the folder, which has no revision: the
    # Hub's way, through a local Hub, is test_release_hub.py's recipe), on a machine without torchcodec
    block = re.search(r"## Load it\n\n```python\n(.*?)```", card, re.S).group(1)
    block = block.replace("ORG/NAME", str(dist)).replace(', revision="v1.0.0"', "")
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torchcodec'] = None  # as if absent\n"
                           + block + "\nprint(len(first), ds.num_rows, len(records))"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == [str((root / "recorded/v1.mp4").stat().st_size), "1", "1"]


def assert_frame_decodes(ds):
    """The first row's video decodes (one frame read; ``datasets`` decodes lazily with torchcodec when installed,
    which needs FFmpeg's shared libraries: the bytes are decoded here with OpenCV's own FFmpeg)."""
    import tempfile

    video = ds.cast_column("video", datasets.Video(decode=False))[0]["video"]
    with tempfile.NamedTemporaryFile(suffix=".mp4") as handle:
        handle.write(video["bytes"])
        handle.flush()
        assert_file_decodes(handle.name)


def assert_file_decodes(path):
    import cv2

    capture = cv2.VideoCapture(str(path))
    ok, frame = capture.read()
    capture.release()
    assert ok and frame.shape == (720, 1280, 3)


def test_a_raw_recording_or_a_changed_copy_is_never_published(tmp_path):
    rec, root = recorded_set(tmp_path)
    report = json.loads((rec / "reports" / "v1.json").read_text())
    report["input"]["sha256"] = report["output"]["sha256"]
    (rec / "reports" / "v1.json").write_text(json.dumps(report))
    with pytest.raises(InputError, match="output.s bytes are the input.s .*nothing was hidden"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    assert not (tmp_path / "d").exists()


def test_videos_of_sources_that_may_not_publish_them_are_not_published(release_v1):
    assert not (release_v1 / "videos").exists()
    card = (release_v1 / "README.md").read_text()
    assert "obtain them from the source" in card and "https://github.com/CaptainCook4D/annotations" in card
    assert "video_files" not in card.split("---")[1]


@pytest.mark.parametrize("status, tamper, message", [
    ("failed", False, "anonymization status is 'failed'"),
    ("passed", True, r"v1\.mp4 is not the video the report states: its SHA-256 is [0-9a-f]{12}, the report's "
                     r"\$\.output\.sha256 [0-9a-f]{12} "),
])
def test_recorded_video_without_a_valid_report_is_refused(tmp_path, status, tamper, message):
    rec, root = recorded_set(tmp_path, status, tamper)
    with pytest.raises(InputError, match=message) as err:
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    assert "videos.jsonl:1, record video_id=v1: $.anonymization.report: " in str(err.value)


@pytest.mark.parametrize("second", ["unmeasured", "missing"])
def test_every_refused_video_is_named_in_one_run_and_nothing_is_published(tmp_path, second):
    """Issue 45: v1's bytes changed after anonymization and v2's report is ``unmeasured`` (or missing): the build
    checks every copy before refusing, names both (one line each: records file, record, field; exit 2, no
    traceback), and leaves no release folder, staged or not, nor the pseudonyms file its annotators would have been
    added to (it is written once the release is)."""
    rec, root = recorded_set(tmp_path, tamper=True)
    write_jsonl(rec / "dense_caption.jsonl", [dict(VALID["dense_caption"], verification=dict(
        TWO_AGREE, annotators=["ann1", "ann2"]))])  # account names, which a build maps to pseudonyms
    report = json.loads((rec / "reports" / "v1.json").read_text())
    (root / "other").mkdir()  # its own folder: its report names the sheet v1.contact.jpg too, published beside it
    (root / "other" / "v2.mp4").write_bytes(_anonymized_clip()[0])
    (rec / "reports" / "v2").mkdir()
    (rec / "reports" / "v2" / "v1.contact.jpg").write_bytes((rec / "reports" / "v1.contact.jpg").read_bytes())
    if second == "unmeasured":
        (rec / "reports" / "v2" / "v2.json").write_text(json.dumps(dict(report, status="unmeasured")))
    write_jsonl(rec / "videos.jsonl", [VALID["video"], dict(VALID["video"], video_id="v2", uri="other/v2.mp4",
                                                            anonymization={"status": "passed",
                                                                           "report": "reports/v2/v2.json"})])
    done = cli_run("release", "build", "--records", rec, "--video-root", root, "--version", "1.0.0", "--out",
                   tmp_path / "d", "--allow-unverified")  # its record names annotators, its signature is not held
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    first, other = done.stderr.strip().splitlines()
    assert re.search(r"^error: \S*videos\.jsonl:1, record video_id=v1: \$\.anonymization\.report: .*recorded/v1\.mp4 "
                     r"is not the video the report states: its SHA-256 is [0-9a-f]{12}", first), first
    assert other.startswith(f"error: {rec / 'videos.jsonl'}:2, record video_id=v2: $.anonymization.report: "), other
    assert ("status is 'unmeasured'" if second == "unmeasured" else "not found") in other, other
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec", "videos"]  # no d, no d.tmp, no pseudonyms.json


def test_a_gate_prints_fifty_refused_videos_then_how_many_more(tmp_path):
    """53 videos to publish whose records say their anonymization failed (no clip needed: refused before any file is
    read): the first 50 are named, one line each, then how many more; exit 2, nothing written."""
    rec = tmp_path / "rec"
    rec.mkdir()
    write_jsonl(rec / "videos.jsonl", [dict(VALID["video"], video_id=f"v{n}", anonymization={
        "status": "failed", "report": "r.json"}) for n in range(1, 54)])
    write_jsonl(rec / "dense_caption.jsonl", [VALID["dense_caption"]])
    (tmp_path / "videos").mkdir()
    done = cli_run("release", "build", "--records", rec, "--video-root", tmp_path / "videos", "--version", "1.0.0",
                   "--out", tmp_path / "d")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 51 and lines[-1] == "error: ... and 3 more", done.stderr[-500:]
    assert [line.split("record video_id=")[1].split(":")[0] for line in lines[:50]] == [f"v{n}" for n in range(1, 51)]
    assert all(": $.anonymization: a video to publish without a passing anonymization (status 'failed')" in line
               for line in lines[:50])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec", "videos"]


def test_a_not_anonymized_video_is_refused(tmp_path):
    rec, root = recorded_set(tmp_path, "not_anonymized")
    with pytest.raises(InputError, match="anonymization status is 'not_anonymized', not 'passed'"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    assert not (tmp_path / "d").exists()


def test_a_report_without_detectors_or_detections_is_refused(tmp_path):
    rec, root = recorded_set(tmp_path)
    report = json.loads((rec / "reports" / "v1.json").read_text())
    report["detections"]["plate"]["per_frame"] = []
    (rec / "reports" / "v1.json").write_text(json.dumps(report))
    with pytest.raises(InputError, match="plate detection log does not cover its 10 frames"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    report["detectors"]["face"] = None
    (rec / "reports" / "v1.json").write_text(json.dumps(report))
    with pytest.raises(InputError, match="names no face detector"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))


def test_a_recorded_video_report_is_published_inside_the_release(tmp_path):
    """The report (even one named by an absolute path) is copied beside the video, and the published record
    points there: no maintainer's path, no '..' segment."""
    rec, root = recorded_set(tmp_path)
    video = dict(VALID["video"], anonymization={"status": "passed",
                                                "report": str((rec / "reports" / "v1.json").resolve())})
    write_jsonl(rec / "videos.jsonl", [video])
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    [published] = load("videos", tmp_path / "d", split="test")
    assert published.anonymization.report == "videos/recorded/v1.anonymization.json"
    assert ((tmp_path / "d" / "videos/recorded/v1.anonymization.json").read_bytes()
            == (rec / "reports" / "v1.json").read_bytes())


def test_an_absolute_path_in_any_published_string_is_refused(tmp_path):
    rec, root = recorded_set(tmp_path)
    caption = json.loads(json.dumps(VALID["dense_caption"]))  # a home directory deep inside a list of structs
    caption["captions"][-1]["text"] = "the file /home/alice/secret.mp4 is open"
    write_jsonl(rec / "dense_caption.jsonl", [signed(caption)])
    with pytest.raises(InputError, match="names a local absolute path or home directory") as err:
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    assert "alice" not in str(err.value) and str(tmp_path) not in str(err.value)  # the message names no path
    assert not (tmp_path / "d").exists()


def test_published_text_files_are_scanned_too(tmp_path):
    from streamcue.release.gates import scan_published

    (tmp_path / "README.md").write_text("Built from ~/data/cc4d on a laptop.\n")
    with pytest.raises(InputError, match=r"README.md: a published file names .* \(~/...\)"):
        scan_published(tmp_path)
    (tmp_path / "README.md").write_text("Add 1/2 cup of water and/or milk; see https://example.org/a/b.\n")
    scan_published(tmp_path)


def test_recorded_video_needs_a_video_root_and_a_report(tmp_path):
    rec, root = recorded_set(tmp_path)
    with pytest.raises(ConfigError, match="--video-root"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d"))
    (rec / "reports" / "v1.json").unlink()
    with pytest.raises(InputError, match="report .* not found"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))


def test_versions_are_never_overwritten(cc4d, release_v1, tmp_path):
    with pytest.raises(ConfigError, match="never overwritten"):
        build_release(ReleaseConfig(records=cc4d, version="1.0.1", out=release_v1, allow_unverified=True))
    with pytest.raises(ConfigError, match="not newer than the previous release 1.0.0"):
        build_release(ReleaseConfig(records=cc4d, version="1.0.0", out=tmp_path / "d", previous=release_v1,
                                     allow_unverified=True))
    with pytest.raises(ConfigError, match="not X.Y.Z"):
        build_release(ReleaseConfig(records=cc4d, version="1.0", out=tmp_path / "d", allow_unverified=True))


# --- diff, push, pinned loads ------------------------------------------------------------------

@pytest.fixture(scope="module")
def release_v2(cc4d, release_v1, tmp_path_factory):
    def edit(name, records):
        if name == "guidance.jsonl":
            records[1]["activity"] = "Changed activity"
            del records[0]
        return records
    base = tmp_path_factory.mktemp("v2")
    records = copy_records(cc4d, base / "rec", edit)
    build_release(ReleaseConfig(records=records, version="1.1.0", out=base / "v1.1.0", previous=release_v1,
                                 allow_unverified=True, repo=REPO_ID))
    return base / "v1.1.0"


def test_diff_and_changelog(release_v1, release_v2, cc4d):
    first = read_jsonl(cc4d / "guidance.jsonl")[:2]
    changes = diff(read_release(release_v1)[1], read_release(release_v2)[1])
    assert changes["guidance"].removed == [f"train/{first[0]['video_id']}"]
    assert changes["guidance"].modified == [f"train/{first[1]['video_id']}"]
    assert not changes["guidance"].added and not changes["videos"].changed
    changelog = (release_v2 / "CHANGELOG.md").read_text()
    assert changelog.index("## v1.1.0") < changelog.index("## v1.0.0")
    assert "guidance: 0 added, 1 removed, 1 modified" in changelog


def test_push_refuses_a_changed_release_folder(release_v1, tmp_path):
    tampered = tmp_path / "tampered"
    subprocess.run(["cp", "-r", str(release_v1), str(tampered)], check=True)
    (tampered / "CHANGELOG.md").write_text("edited by hand")
    with pytest.raises(InputError, match="changed since the release was built"):
        push(tampered, REPO_ID, git_root=tmp_path / "hub")


@pytest.mark.slow
@pytest.mark.hub_server
def test_pinned_versions_load_through_a_hub_compatible_server(release_v1, release_v2, cc4d, tmp_path):
    hub = tmp_path / "hub"
    first = push(release_v1, REPO_ID, git_root=hub)
    second = push(release_v2, REPO_ID, git_root=hub)
    assert (first.tag, second.tag) == ("v1.0.0", "v1.1.0") and first.commit != second.commit
    with pytest.raises(ConfigError, match="v1.0.0 is already published"):
        push(release_v1, REPO_ID, git_root=hub)
    with pytest.raises(ConfigError, match="no revisions"):
        load("guidance", release_v1, revision="v1.0.0")

    script = (
        "import json, sys\n"
        "from streamcue.loaders import load\n"
        "out = {rev: [r.to_dict() for r in load('guidance', sys.argv[1], revision=rev, split='train')]\n"
        "       for rev in ('v1.0.0', 'v1.1.0')}\n"
        "print(json.dumps(out))\n"
    )
    with olah_server(hub, tmp_path, REPO_ID) as endpoint:
        env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf-home"),
               "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}
        done = subprocess.run([sys.executable, "-c", script, REPO_ID], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    source = read_jsonl(cc4d / "guidance.jsonl")
    train_ids = {r["video_id"] for r in read_jsonl(cc4d / "videos.jsonl") if r["split"] == "train"}
    expected = [r for r in source if r["video_id"] in train_ids]
    assert loaded["v1.0.0"] == expected
    assert len(loaded["v1.1.0"]) == len(expected) - 1
    assert loaded["v1.1.0"][0]["activity"] == "Changed activity"


# --- licences (streamcue/registry.py): the gate and the card ----------------------------------------

def _bench_records(tmp_path, name):
    """A real build of a benchmark's smallest input (its builder's example_config)."""
    from conftest import SHARED_DATA

    from streamcue.dataset_builders import get_builder, run_builder

    builder = get_builder(name)
    result, _ = run_builder(builder, builder.load().example_config(SHARED_DATA), tmp_path / name)
    return result.out


@pytest.mark.parametrize("licence", ["apache-2.0", "cc-by-nc-sa-4.0"])
def test_records_of_a_source_that_may_not_be_redistributed_are_refused(tmp_path, licence):
    """OVO-Bench is CC BY-NC-SA and for tests and local use only: no release licence lets its records out."""
    records = _bench_records(tmp_path, "ovo-bench")
    with pytest.raises(InputError) as err:
        build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d", allow_unverified=True,
                                    license=licence))
    message = str(err.value)
    assert "source ovo-bench (CC-BY-NC-SA-4.0) may not be redistributed" in message and licence in message
    assert "videos.jsonl:1" in message and "$.source" in message and "\n" not in message
    assert not (tmp_path / "d").exists()


def test_the_licence_refusal_is_one_line_from_the_cli(tmp_path):
    records = _bench_records(tmp_path, "ovo-bench")
    done = cli_run("release", "build", "--records", records, "--version", "1.0.0", "--out", tmp_path / "d",
                   "--allow-unverified")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "ovo-bench (CC-BY-NC-SA-4.0)" in done.stderr and "apache-2.0" in done.stderr
    assert not (tmp_path / "d").exists()


def test_a_permissive_source_is_released_and_the_card_cites_it_with_its_licence(tmp_path):
    records = _bench_records(tmp_path, "streamingbench")
    manifest = build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d",
                                           allow_unverified=True))
    assert manifest["license"] == "apache-2.0" and set(manifest["configs"]) >= {"videos", "mc_question"}
    card = (tmp_path / "d" / "README.md").read_text()
    assert "| StreamingBench | `streamingbench` | MIT |" in card
    assert "@article{lin2024streamingbench," in card and "title = {{StreamingBench}" in card


def test_the_cc4d_card_cites_captaincook4d(release_v1):
    card = (release_v1 / "README.md").read_text()
    assert "| CaptainCook4D | `captaincook4d` | MIT |" in card and "@inproceedings{peddi2024captaincook4d," in card


def test_a_source_without_a_registry_entry_is_refused(tmp_path):
    from conftest import VALID

    records = tmp_path / "records"
    records.mkdir()
    write_jsonl(records / "videos.jsonl", [dict(VALID["video"], source="other",
                                                anonymization={"status": "not_required", "report": None})])
    write_jsonl(records / "interval_qa.jsonl", [dict(VALID["interval_qa"], verification={"status": "verified"})])
    with pytest.raises(InputError, match=r"source other has no entry in the registry of sources .* licence is unknown"):
        build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d"))


def test_licence_rules():
    """Not redistributable: never; permissive: anything; NC only as NC; SA only as itself."""
    from dataclasses import replace

    from streamcue.registry import SOURCES
    from streamcue.release.gates import licence_problem

    ovo = SOURCES["ovo-bench"]
    assert "may not be redistributed" in licence_problem(ovo, "cc-by-nc-sa-4.0")
    shareable = replace(ovo, redistributable=True)  # the same licence, were its authors to allow releases
    assert licence_problem(shareable, "cc-by-nc-sa-4.0") is None
    for other in ("apache-2.0", "mit", "cc-by-4.0", "cc-by-nc-4.0"):
        assert licence_problem(shareable, other) == (
            f"source ovo-bench (CC-BY-NC-SA-4.0) does not allow a release under {other}: release it under "
            "--license cc-by-nc-sa-4.0, or leave it out")
    non_commercial = replace(shareable, licence="CC-BY-NC-4.0")
    assert licence_problem(non_commercial, "cc-by-nc-sa-4.0") is None and licence_problem(non_commercial, "mit")
    for name in ("captaincook4d", "ego4d", "recorded", "streamingbench", "streambench"):
        assert licence_problem(SOURCES[name], "apache-2.0") is None, name


def test_every_release_has_croissant_metadata_that_mlcroissant_validates(release_v1, tmp_path):
    """croissant.json (Croissant 1.0 with its RAI fields) loads in mlcroissant without an error, and the
    configs' records are readable through it."""
    mlc = pytest.importorskip("mlcroissant")
    rec, root = recorded_set(tmp_path)
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    for dist in (release_v1, tmp_path / "d"):
        dataset = mlc.Dataset(jsonld=dist / "croissant.json")
        assert not dataset.metadata.ctx.issues.errors
        document = json.loads((dist / "croissant.json").read_text())
        for key in ("rai:dataAnnotationProtocol", "rai:personalSensitiveInformation", "rai:dataCollection",
                    "rai:dataAnnotationAnalysis"):
            assert document[key], key
    assert any("anonymization" in text for text in document["rai:personalSensitiveInformation"])
    assert {r["@id"] for r in document["recordSet"]} == {"videos", "dense_caption", "video_files"}


def _tampered_copy(release, dst, how):
    """A copy of ``release`` whose guidance Parquet file is damaged ``how``; with ``relist`` the manifest's SHA-256
    is rewritten to match, so only the row count or the Parquet structure can tell."""
    import pyarrow.parquet as pq

    subprocess.run(["cp", "-r", str(release), str(dst)], check=True)
    manifest = json.loads((dst / "manifest.json").read_text())
    rel = next(iter(manifest["configs"]["guidance"].values()))["path"]
    path = dst / rel
    if how == "byte":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif how == "half_rows":
        table = pq.read_table(path)
        pq.write_table(table.slice(0, table.num_rows // 2), path)
    else:
        path.write_bytes(b"PAR1 not a parquet file PAR1")
    if how != "byte":
        manifest["files"][rel] = sha256_file(path)
        (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst, path


@pytest.mark.parametrize(("how", "message"), [("byte", "manifest.json's files"),
                                              ("half_rows", "rows, manifest.json says"),
                                              ("garbage", "not a readable Parquet file")])
def test_every_reader_checks_the_files_against_the_manifest(cc4d, release_v1, tmp_path, how, message):
    from conftest import cli
    from streamcue.loaders import open_records

    bad, path = _tampered_copy(release_v1, tmp_path / "bad", how)
    for read in (lambda: read_release(bad), lambda: open_records(bad, kind="guidance"),
                 lambda: load("guidance", bad)):
        with pytest.raises(InputError, match=message) as caught:
            read()
        assert path.name in str(caught.value)
    (tmp_path / "pred.jsonl").write_text("")
    for args in (("release", "diff", release_v1, bad),
                 ("release", "build", "--records", cc4d,
                  "--version", "2.0.0", "--out", tmp_path / "v2", "--previous", bad, "--allow-unverified"),
                 # issue 46: run gave a 90-line traceback on a corrupt file; run and evaluate --gt read the release
                 ("evaluate", "livecook", "--gt", bad, "--pred", tmp_path / "pred.jsonl", "--no-bertscore"),
                 ("run", "livecook", bad, "--out", tmp_path / "run", "--no-video", "--llm-model", "m",
                  "--llm-base-url", "http://127.0.0.1:9/v1")):
        code, out, err = cli(*args)
        assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert path.name in err and message in err
    assert not (tmp_path / "v2").exists()
