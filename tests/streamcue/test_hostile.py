"""Hostile inputs, one test per class of fault (issue #11), each through the real CLI.

Every test runs ``streamcue`` on real files (real videos encoded by ffmpeg, subsets of
the real CaptainCook4D and GoalStep annotations) and checks what a careless or hostile user
would get: the exit code, one line on stderr naming the problem, never a traceback, and no
output left behind when the command failed. The command runs in this process (:func:`run`) unless the process
is the point (:func:`run_process`): anonymization's workers and ffmpeg children, signals, the Hub client's
environment, a time that must not include a model load.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import GOALSTEP_VAL, VALID, cli_run
from hostile_sources import CC4D_FILES, cc4d_subset, goalstep_subset


CAPTIONS = Path(__file__).parents[1] / "data" / "ego4d" / "captions.jsonl"
CAPTIONED_VIDEO = "c2d06df7-5d3a-4116-9edb-f1c81a4f669b"  # has captions in the fixture and usable clips


def run_process(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    """``streamcue ARGS`` as a user runs it, stdout and stderr piped (so nothing may wrap)."""
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environ.update({"STREAMCUE_NO_PROGRESS": "1", **(env or {})})
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          env=environ, timeout=timeout)


def run(*args, env=None):
    """:func:`run_process` in this process, 80 columns wide as a pipe is (``env``: variables read when the command
    runs); what it says, its exit code and a traceback (which fails the test) are the same."""
    return cli_run(*args, env={"COLUMNS": 80, **(env or {})})


def one_line_error(result, code: int, *needles: str) -> str:
    """The command failed with ``code`` and said so on exactly one line starting with ``error:``."""
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


# ---------------------------------------------------------------------------------------------
# real videos


def ffmpeg() -> str:
    pytest.importorskip("imageio_ffmpeg")
    from streamcue.video import ffmpeg_exe

    return ffmpeg_exe()


def make_video(path: Path, seconds: float = 2, size: str = "160x120", rate: int = 10) -> Path:
    """A real H.264 mp4 (ffmpeg's test pattern), fast-start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([ffmpeg(), "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}",
                    "-t", str(seconds), "-pix_fmt", "yuv420p", "-c:v", "libx264", "-movflags", "+faststart", str(path)],
                   check=True)
    return path


NO_DETECTORS = ("--detector", "none", "--plate-detector", "none")


# ---------------------------------------------------------------------------------------------
# 1. data loss: an output over an input


@pytest.mark.video
def test_1_anonymize_never_writes_over_its_inputs(tmp_path):
    rec = tmp_path / "rec"
    clip = make_video(rec / "clip.mp4")
    before = digest(clip)
    (tmp_path / "link").symlink_to(rec)
    for source, out in [(rec, rec), (clip, rec), (rec, f"{rec}/../rec"), (rec, tmp_path / "link")]:
        one_line_error(run_process("anonymize", source, "--out", out, *NO_DETECTORS), 2,
                       "refusing to overwrite an input")
    assert digest(clip) == before and files_under(rec) == ["clip.mp4"]

    make_video(rec / "clip.mov")  # clip.mp4 and clip.mov would both become out/clip.mp4
    one_line_error(run_process("anonymize", rec, "--out", tmp_path / "out", *NO_DETECTORS), 2,
                   "would both be written to")
    assert not (tmp_path / "out").exists()


def test_1_builds_refuse_outputs_inside_or_over_their_inputs(tmp_path):
    cc4d = cc4d_subset(tmp_path / "cc4d")
    one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", cc4d / "metadata"), 2,
                   "inside the input folder")
    goalstep = goalstep_subset(tmp_path / "out" / "videos.jsonl", n=1)  # a source named like an output
    one_line_error(run("build", "ego4d", "--goalstep", goalstep, "--out", tmp_path / "out"), 2,
                   "refusing to overwrite an input")
    gt = write_jsonl(tmp_path / "qa.jsonl", [VALID["interval_qa_minimal"]])
    pred = write_jsonl(tmp_path / "pred.jsonl", [VALID["interval_qa_prediction"]])
    before = digest(gt)
    one_line_error(run("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "exact", "--output", gt), 2,
                   "refusing to overwrite an input")
    assert digest(gt) == before


# ---------------------------------------------------------------------------------------------
# 2. path traversal: a uri outside the video root


@pytest.mark.parametrize("uri", ["../../etc/passwd", "/etc/passwd", "file:///etc/passwd", "a/../../b.mp4", "~/x.mp4"])
def test_2_a_uri_outside_the_video_root_is_refused_everywhere(tmp_path, uri):
    records = tmp_path / "records"
    records.mkdir()
    write_jsonl(records / "videos.jsonl", [dict(VALID["video"], source="other", uri=uri,
                                                anonymization={"status": "not_required", "report": None})])
    write_jsonl(records / "interval_qa.jsonl", [dict(VALID["interval_qa"], verification={"status": "verified"})])
    result = run("validate", records / "videos.jsonl", "--kind", "video")
    assert result.returncode == 2 and "$.uri" in result.stderr and "Traceback" not in result.stderr
    one_line_error(run("release", "build", "--records", records, "--version", "1.0.0", "--out", tmp_path / "dist"),
                   2, "uri")
    assert not (tmp_path / "dist").exists()

    from streamcue.errors import InputError
    from streamcue.loaders.load import video_path

    with pytest.raises(InputError, match="uri"):
        video_path({"video_id": "v1", "uri": uri}, tmp_path / "videos")


def test_2_a_symlink_out_of_the_video_root_is_refused(tmp_path):
    from streamcue.errors import InputError
    from streamcue.loaders.load import video_path

    root = tmp_path / "videos"
    root.mkdir()
    (root / "escape").symlink_to(tmp_path)
    (tmp_path / "secret.mp4").write_bytes(b"x")
    with pytest.raises(InputError, match="resolves outside the video root"):
        video_path({"video_id": "v1", "uri": "escape/secret.mp4"}, root)
    assert video_path({"video_id": "v1", "uri": "sub/clip.mp4"}, root) == root / "sub" / "clip.mp4"


# ---------------------------------------------------------------------------------------------
# 3. NaN and Infinity


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_3_non_finite_numbers_are_refused_by_every_reader(tmp_path, token):
    goalstep = goalstep_subset(tmp_path / "gs.json", n=2)
    text = goalstep.read_text()
    first = json.loads(text)["videos"][0]["segments"][0]["start_time"]
    goalstep.write_text(text.replace(f'"start_time": {json.dumps(first)}', f'"start_time": {token}', 1))
    one_line_error(run("build", "ego4d", "--goalstep", goalstep, "--out", tmp_path / "e"), 2, "gs.json")
    assert not (tmp_path / "e").exists()

    cc4d = cc4d_subset(tmp_path / "cc4d")
    meta = cc4d / CC4D_FILES["metadata"]
    rows = list(csv.reader(meta.open()))
    rows[1][-1] = "nan" if token == "NaN" else token.lower()
    with meta.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", tmp_path / "c"), 2, "duration")
    assert not (tmp_path / "c").exists()

    video = json.dumps(VALID["video"]).replace('"duration_s": 30.0', f'"duration_s": {token}')
    bad = write_jsonl(tmp_path / "videos.jsonl", [video])
    result = run("validate", bad, "--kind", "video")
    assert result.returncode == 2 and "Traceback" not in result.stderr and "all valid" not in result.stdout


@pytest.mark.parametrize("metric, kind, field", [("estp-f1", "interval_qa", "t_s"), ("vsas", "dense_caption", "t_s"),
                                                 ("livecook", "guidance", "t_s")])
def test_3_non_finite_prediction_times_are_refused_not_scored(tmp_path, metric, kind, field):
    gt = write_jsonl(tmp_path / "gt.jsonl", [VALID[f"{kind}_minimal"]])
    for token in ("NaN", "Infinity"):
        pred = json.dumps(VALID[f"{kind}_prediction"]).replace(f'"{field}": ', f'"{field}": {token}, "x": ', 1)
        pred_file = write_jsonl(tmp_path / "pred.jsonl", [pred])
        one_line_error(run("evaluate", metric, "--gt", gt, "--pred", pred_file, "--judge", "exact", "--no-bertscore",
                           "--output", tmp_path / "r.json"), 2, "pred.jsonl:1", token)
        assert not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------------------------------------
# 4. a failed result exits non-zero and leaves nothing under a final name


@pytest.mark.video
def test_4_a_failed_anonymization_exits_2_and_leaves_no_output(tmp_path):
    whole = make_video(tmp_path / "whole.mp4", seconds=4)  # small: no detector, so no size is refused
    cut = tmp_path / "in" / "cut.mp4"  # a truncated fast-start mp4: the header promises 4 s, the data holds less
    cut.parent.mkdir()
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size * 6 // 10])
    one_line_error(run_process("anonymize", cut, "--out", tmp_path / "out", *NO_DETECTORS), 2, "anonymization failed",
                   "duration changed")
    assert files_under(tmp_path / "out") == []


# ---------------------------------------------------------------------------------------------
# 5. inconsistent CaptainCook4D sources


def _break(cc4d: Path, how: str) -> None:
    if how == "no error annotations":
        (cc4d / CC4D_FILES["errors"]).unlink()
    elif how == "recording in two splits":
        splits = json.loads((cc4d / CC4D_FILES["splits"]).read_text())
        splits["test"] = [*splits["test"], "1_7"]
        (cc4d / CC4D_FILES["splits"]).write_text(json.dumps(splits))
    elif how == "duplicate metadata row":
        with (cc4d / CC4D_FILES["metadata"]).open("a", newline="") as fh:
            fh.write("1_7,1,1,1.00,60.00\n")
    elif how == "duplicate recording key":
        text = (cc4d / CC4D_FILES["steps"]).read_text()
        entry = json.dumps(json.loads(text)["1_7"])
        (cc4d / CC4D_FILES["steps"]).write_text(text[:-1] + ', "1_7": ' + entry + "}")
    elif how == "duplicate error annotation":
        errors = json.loads((cc4d / CC4D_FILES["errors"]).read_text())
        (cc4d / CC4D_FILES["errors"]).write_text(json.dumps([*errors, errors[0]]))


@pytest.mark.parametrize("how", ["no error annotations", "recording in two splits", "duplicate metadata row",
                                 "duplicate recording key", "duplicate error annotation"])
def test_5_inconsistent_captaincook4d_sources_are_errors_or_flagged_warnings(tmp_path, how):
    cc4d = cc4d_subset(tmp_path / "cc4d")
    _break(cc4d, how)
    one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", tmp_path / "strict"), 2,
                   "--warn-inconsistent")
    assert not (tmp_path / "strict").exists()

    result = run("build", "captaincook4d", "--annotations", cc4d, "--out", tmp_path / "lenient", "--warn-inconsistent")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "lenient" / "build_report.json").read_text())
    warnings = report["details"]["warnings"]
    assert warnings and all("warning: " + w in result.stderr for w in warnings)
    videos = [json.loads(line) for line in (tmp_path / "lenient" / "videos.jsonl").read_text().splitlines()]
    assert sorted(v["video_id"] for v in videos) == ["1_10", "1_7", "2_3"]
    if how == "recording in two splits":  # the evaluation split wins: no train/test leakage
        assert {v["video_id"]: v["split"] for v in videos}["1_7"] == "test"


# ---------------------------------------------------------------------------------------------
# 6. scoring edge cases


@pytest.mark.slow
def test_6_scoring_edge_cases(tmp_path):
    # a VSAS task without any prediction earns no consistency ((N-1)/N is what a perfect run gets)
    captions = [{"t_s": i, "text": f"step {i}"} for i in range(5)]
    gt = write_jsonl(tmp_path / "dc.jsonl", [dict(VALID["dense_caption_minimal"], task_id="t1", captions=captions),
                                             dict(VALID["dense_caption_minimal"], task_id="t2", captions=captions)])
    pred = write_jsonl(tmp_path / "dc_pred.jsonl", [{"task_id": "t1", "responses": [
        {"t_s": float(i), "text": f"step {i}"} for i in range(5)]}])
    result = run("evaluate", "vsas", "--gt", gt, "--pred", pred, "--judge", "exact", "--output", tmp_path / "v.json")
    assert result.returncode == 0, result.stderr
    per_item = json.loads((tmp_path / "v.json").read_text())["per_item"]
    assert per_item["t2"]["consistency"] == 0.0 and per_item["t1"]["consistency"] > 0.5

    # LiveCook on a set without mistakes: precision/recall undefined, reported as null with a note
    truth = {"video_id": "v1", "events": [{"t_s": 3, "type": "success", "text": "done"}]}
    gt = write_jsonl(tmp_path / "g.jsonl", [truth])
    pred = write_jsonl(tmp_path / "g_pred.jsonl", [{"video_id": "v1", "events": [
        {"t_s": 3.0, "type": "success", "text": "done"}]}])
    result = run("evaluate", "livecook", "--gt", gt, "--pred", pred, "--no-bertscore", "--output", tmp_path / "l.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "l.json").read_text())
    assert report["overall"]["precision"] is None and report["overall"]["recall"] is None
    assert report["overall"]["f1"] is None and report["notes"] and "note: precision is null" in result.stdout

    # empty ground truth (and empty predictions): nothing to score is an error, not n = 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for metric in ("estp-f1", "vsas", "livecook"):
        one_line_error(run("evaluate", metric, "--gt", empty, "--pred", empty, "--judge", "exact", "--no-bertscore"),
                       2, "no ground-truth records")


# ---------------------------------------------------------------------------------------------
# 7. one-line errors instead of tracebacks


def test_7_os_and_source_faults_are_one_line_errors(tmp_path):
    cc4d = cc4d_subset(tmp_path / "cc4d")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", a_file), 2, "is not a folder")
    one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", a_file / "sub"), 2, "a_file")
    one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", "/proc/streamcue-out"), 2,
                   "/proc/streamcue-out")

    steps_file = cc4d / CC4D_FILES["steps"]
    steps = json.loads(steps_file.read_text())
    for field, where in [("description", "steps[0].description"), ("steps", "field steps")]:
        broken = json.loads(json.dumps(steps))
        if field == "steps":
            broken["1_7"]["steps"] = None
        else:
            broken["1_7"]["steps"][0]["description"] = None
        steps_file.write_text(json.dumps(broken))
        one_line_error(run("build", "captaincook4d", "--annotations", cc4d, "--out", tmp_path / "o"), 2, "1_7", where)
    assert not (tmp_path / "o").exists()

    videos = tmp_path / "gs.json"
    videos.write_text('{"videos": [1]}')
    one_line_error(run("build", "ego4d", "--goalstep", videos, "--out", tmp_path / "e"), 2, "gs.json", "videos[0]")

    gt = write_jsonl(tmp_path / "qa.jsonl", [VALID["interval_qa_minimal"]])
    pred = write_jsonl(tmp_path / "pred.jsonl", [VALID["interval_qa_prediction"]])
    one_line_error(run("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "exact", "--output", tmp_path),
                   2, "is a folder")


def test_7_cache_faults_are_one_line_errors(tmp_path):
    gt = write_jsonl(tmp_path / "qa.jsonl", [VALID["interval_qa_minimal"]])
    pred = write_jsonl(tmp_path / "pred.jsonl", [VALID["interval_qa_prediction"]])
    args = ("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "token-f1")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "cache.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x07" * 300)  # a truncated database
    one_line_error(run(*args, env={"STREAMCUE_CACHE_DIR": str(corrupt)}), 2, "cache database unusable")
    a_file = tmp_path / "not_a_folder"
    a_file.write_text("x")
    one_line_error(run(*args, env={"STREAMCUE_CACHE_DIR": str(a_file)}), 2, "STREAMCUE_CACHE_DIR")


def test_7_hub_faults_are_one_line_errors(tmp_path):
    pytest.importorskip("huggingface_hub")
    from streamcue.release.manifest import MANIFEST

    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / MANIFEST).write_text(json.dumps({"version": "1.0.0", "title": "t", "files": {}, "configs": {}}))
    one_line_error(run_process("release", "push", "--dist", dist, "--repo", "org/na..me"), 2, "is not ORG/NAME")
    result = run_process("release", "push", "--dist", dist, "--repo", "org/name", "--endpoint", "http://127.0.0.1:9",
                         env={"HF_TOKEN": "hf_dummy_token_for_test"})
    one_line_error(result, 4, "could not reach the Hub")
    assert "hf_dummy_token_for_test" not in result.stderr + result.stdout


# ---------------------------------------------------------------------------------------------
# 8. signals end the whole process tree


def _session_processes(sid: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def _interrupt_anonymize(tmp_path: Path, videos: list[Path], workers: int, sig: int) -> tuple[subprocess.Popen, str]:
    out = tmp_path / "out"
    environ = {**os.environ, "STREAMCUE_NO_PROGRESS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "streamcue", "anonymize", str(videos[0].parent), "--out", str(out),
                             "--workers", str(workers), "--max-side", "0", "--allow-unmeasured"], env=environ,
                            start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob(".*.tmp.mp4"))) < min(workers, len(videos)):
        time.sleep(0.05)  # wait until every worker is encoding
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, sig)  # the parent only: it must stop its workers and their ffmpeg children itself
    _, stderr = proc.communicate(timeout=60)
    return proc, stderr


@pytest.fixture(scope="module")
def long_videos(tmp_path_factory):
    """Two recordings long enough (30 s at 640x360) to be interrupted while they are being encoded."""
    rec = tmp_path_factory.mktemp("long") / "rec"
    return [make_video(rec / f"clip{i}.mp4", seconds=30, size="640x360", rate=25) for i in range(2)]


@pytest.mark.video
@pytest.mark.slow
@pytest.mark.parametrize("workers, sig, code", [(1, signal.SIGINT, 130), (1, signal.SIGTERM, 143),
                                                (2, signal.SIGTERM, 143), (2, signal.SIGINT, 130)])
def test_8_signals_end_the_process_tree_cleanly(tmp_path, long_videos, workers, sig, code):
    proc, stderr = _interrupt_anonymize(tmp_path, long_videos, workers, sig)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "terminate called" not in stderr
    time.sleep(0.5)
    assert _session_processes(proc.pid) == []  # no worker, no ffmpeg left encoding
    assert files_under(tmp_path / "out") == []  # no temporary file, no partial output


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.video
@pytest.mark.slow
def test_8_a_worker_killed_while_encoding_leaves_no_temporary_file(tmp_path, long_videos):
    """A worker that dies without cleaning up (SIGKILL: the out-of-memory killer, or the parent's after a worker did
    not end in time) left its temporary output in --out. The parent removes what its workers left: the run reports
    the videos as failed, one line each naming the video (it said "A process in the process pool was terminated
    abruptly ..." once per video), and --out holds nothing. About 6 s: the workers start and load their models
    before they encode, as in the signal test above."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "streamcue", "anonymize", str(long_videos[0].parent), "--out",
                             str(out), "--workers", "2", "--max-side", "0", "--allow-unmeasured"],
                            env={**os.environ, "STREAMCUE_NO_PROGRESS": "1"}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob(".*.tmp.mp4"))) < 2:
        time.sleep(0.05)  # both workers encoding
    workers = [pid for pid in _children(proc.pid) if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert workers and proc.poll() is None, proc.communicate()
    os.kill(workers[0], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in stderr, stderr
    for video in long_videos:  # each video named, with what happened
        assert f"{video}: a worker process died (killed, or out of memory)" in stderr, stderr
    time.sleep(0.5)
    assert _session_processes(proc.pid) == []
    assert files_under(out) == []



@pytest.mark.video
@pytest.mark.slow
def test_8_workers_end_when_their_parent_is_killed(tmp_path, long_videos):
    """A parent SIGKILLed (the out-of-memory killer) while its workers encode: they went on taking video after video
    from the queue, writing outputs no one reported, and then waited for ever. Now each worker ends with its parent
    (SIGTERM from Linux), cleaning up as for the parent's own SIGTERM: no process left, nothing in --out. About 10 s:
    the workers start and load their models before they encode, then clean up."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "streamcue", "anonymize", str(long_videos[0].parent), "--out",
                             str(out), "--workers", "2", "--max-side", "0", "--allow-unmeasured"],
                            env={**os.environ, "STREAMCUE_NO_PROGRESS": "1"}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob(".*.tmp.mp4"))) < 2:
        time.sleep(0.05)  # both workers encoding
    assert proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _session_processes(proc.pid):
        time.sleep(0.1)
    assert _session_processes(proc.pid) == []
    assert files_under(out) == []

# ---------------------------------------------------------------------------------------------
# 9. validate reports everything, refuses empty files, never wraps; an empty source is an error


def test_9_validate_reports_every_violation_on_one_line_each(tmp_path):
    long_dir = tmp_path / ("a-folder-with-a-rather-long-name-" * 3)
    long_dir.mkdir()
    bad = dict(VALID["interval_qa"], qa_id="q2", task_type="ZZ")
    path = write_jsonl(long_dir / "qa.jsonl", [VALID["interval_qa"], '{"qa_id": "q3", "answers": [',
                                               bad, "[1, 2]", '{"qa_id": NaN}'])
    result = run("validate", path, "--kind", "interval_qa")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert [line.split(",")[0].split(": ")[0] for line in lines[:-1]] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert lines[-1] == f"{path}: 4 violations in 5 records"

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = run("validate", empty, "--kind", "video")
    assert result.returncode == 2 and "empty file" in result.stderr

    goalstep = tmp_path / "gs.json"
    goalstep.write_text('{"videos": []}')
    one_line_error(run("build", "ego4d", "--goalstep", goalstep, "--out", tmp_path / "e"), 2, "empty")
    assert not (tmp_path / "e").exists()


# ---------------------------------------------------------------------------------------------
# 10. names into a card, secrets in messages, slow failures


@pytest.mark.slow
def test_10_release_repo_name_secrets_and_fast_llm_failure(tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    write_jsonl(records / "videos.jsonl", [dict(VALID["video"], source="other",
                                                anonymization={"status": "not_required", "report": None})])
    write_jsonl(records / "interval_qa.jsonl", [dict(VALID["interval_qa"], verification={"status": "verified"})])
    one_line_error(run("release", "build", "--records", records, "--version", "1.0.0", "--out", tmp_path / "d",
                       "--repo", "../../evil"), 2, "is not ORG/NAME")
    assert not (tmp_path / "d").exists()

    # no model load before the endpoint fails (it took 21 s with the model loaded first): an embedding package that
    # cannot be imported is on the path, so a load before the call would be the error instead. No retries: the
    # closed port fails at its first try (retries against one, with a password in the address, are
    # test_hostile_new.py::test_unreachable_endpoint_never_prints_the_password's)
    poisoned = tmp_path / "poisoned"
    poisoned.mkdir()
    (poisoned / "sentence_transformers.py").write_text("raise ImportError('the model was loaded before the call')\n")
    path = os.pathsep.join(filter(None, [str(poisoned), os.environ.get("PYTHONPATH")]))
    result = run_process("build", "ego4d", "--goalstep", GOALSTEP_VAL, "--captions", CAPTIONS, "--video",
                         CAPTIONED_VIDEO, "--out", tmp_path / "e", "--llm-base-url",
                         "http://user:PASSWORD@127.0.0.1:9/v1?api_key=SECRET", "--llm-model", "m", "--llm-retries",
                         "0", env={"PYTHONPATH": path})
    line = one_line_error(result, 4, "127.0.0.1:9", "(after 0 retries)")  # --llm-retries reaches the builder
    assert "PASSWORD" not in result.stderr + result.stdout and "SECRET" not in result.stderr + result.stdout
    assert "***" in line
    assert not (tmp_path / "e").exists()


def test_10_the_embedding_model_loads_on_first_use_only():
    pytest.importorskip("sentence_transformers")
    from streamcue.embedding import Embedder

    embedder = Embedder()
    assert "model" not in embedder.__dict__
    assert math.isclose(float(embedder.pair_similarity(["a cup"], ["a cup"])[0]), 1.0, abs_tol=1e-5)
    assert "model" in embedder.__dict__
