"""Every setting that changes what is sent is recorded in results.json and named by ``compare`` (issue 49): runs
that differed only in ``--frame-pixels``, ``--frame-label`` or ``--jpeg-quality`` were compared without a word,
and two checkpoints served under one name compared as "model-a vs model-a". One small OVO-Bench build (two
questions on two 6 s test-pattern videos) is run once against the stub server; each case runs it once more with
one setting changed and compares the two."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import VALID, cli

from streamcue.testing.stub_llm import StubLLMServer
from streamcue.video import ffmpeg_exe

pytestmark = pytest.mark.llm_server


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """``(folder, server, run)``: the build (mc_question.jsonl, videos.jsonl, videos/), a stub server, and
    ``run(out, *options)`` -> (exit code, stderr), each distinct set of options run once (kept by the options)."""
    top = tmp_path_factory.mktemp("settings")
    root = top / "built"
    (root / "videos").mkdir(parents=True)
    rows, videos = [], []
    for n, vid in enumerate(("v1", "v2")):
        subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc=size=160x120:rate=10,hue=h={90 * n}", "-t", "6", "-pix_fmt", "yuv420p",
                        "-c:v", "libx264", str(root / "videos" / f"{vid}.mp4")], check=True)
        rows.append(dict(VALID["mc_question"], question_id=f"ovo-{n}", video_id=vid, query_time_s=4.0))
        videos.append(dict(VALID["video"], video_id=vid, uri=f"{vid}.mp4", duration_s=6.0))
    (root / "mc_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "videos.jsonl").write_text("".join(json.dumps(v) + "\n" for v in videos))
    made: dict[tuple[str, ...], object] = {}
    with StubLLMServer() as server:
        def run(*options: str):
            if options not in made:
                out = top / f"run-{len(made)}"
                code, _, err = cli("run", "ovo-bench", root, "--video-root", root / "videos", "--out", out, "--k", "4",
                                   "--llm-base-url", server.base_url, "--llm-model", "stub-model", *options)
                assert code == 0, err
                made[options] = out, server.requests[-1]
            return made[options]
        yield root, server, run


#: (case, the options of run A, of run B, the setting compare names)
REFUSED = [
    ("frame-pixels", [], ["--frame-pixels", "8000"], "frames.frame_pixels: none vs 8000"),
    ("frame-side", [], ["--frame-side", "96"], "frames.frame_side: 448 vs 96"),
    ("frame-label", [], ["--frame-label", "clock"], "frames.frame_label: seconds vs clock"),
    ("jpeg-quality", [], ["--jpeg-quality", "50"], "frames.jpeg_quality: 85 vs 50"),
    ("transport", [], ["--transport", "video_url"], "frames.transport: frames vs video_url"),
    ("video-url", ["--transport", "video_url"], ["--transport", "video_url", "--video-url", "file"],
     "frames.video_url: data vs file"),
    ("k", [], ["--k", "2"], "frames.k: 4 vs 2"),
    ("fps", [], ["--fps", "2"], "frames.fps: 1.0 vs 2.0"),
    ("memory", [], ["--memory", "SW"], "frames.memory: SW+U vs SW"),
    ("temperature", [], ["--temperature", "0.5"], "generation.temperature: 0.0 vs 0.5"),
    ("max-tokens", [], ["--max-tokens", "64"], "generation.max_tokens: 1024 vs 64"),
]


@pytest.mark.parametrize("case, options_a, options_b, named", REFUSED, ids=[c[0] for c in REFUSED])
def test_runs_differing_in_one_setting_that_changes_requests_are_refused_naming_it(bench, case, options_a, options_b,
                                                                                    named):
    _, _, run = bench
    (run_a, request_a), (run_b, request_b) = run(*options_a), run(*options_b)
    assert request_a != request_b  # the setting changes what is sent
    code, _, err = cli("compare", run_a, run_b)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert named in err


@pytest.mark.parametrize("case", ["model-revision", "model-entry"])
def test_two_checkpoints_under_one_name_are_named_as_the_models_compared(bench, case):
    _, server, run = bench
    run_a, _ = run()
    if case == "model-revision":
        run_b, _ = run("--model-revision", "ckpt-2")
        named = "model revision: none vs ckpt-2"
    else:
        server.card = {"root": "/checkpoints/b"}  # another checkpoint behind the same URL and name
        try:
            run_b, _ = run("--concurrency", "2")  # a run folder of its own; concurrency is not a setting
        finally:
            server.card = {}
        named = "model entry: "
    code, out, err = cli("compare", run_a, run_b)
    assert code == 0, err
    said = " ".join(out.split())
    assert "models compared: A and B differ in" in said and named in said
    assert "model: stub-model vs stub-model" not in said  # the name alone does not tell them apart


def _edit_spoken(sample):
    sample["spoke"][0][1] = "A. an onion, certainly"


def _edit_raw(sample):
    sample["raw_answer"] = "A"


def _edit_frames(sample):
    sample["frames"] = sample["frames"][:1]
    sample["calls"][0]["frames_sent"] = 1


@pytest.mark.parametrize("edit", [_edit_spoken, _edit_raw, _edit_frames], ids=["spoken", "raw-answer", "frames"])
def test_an_edited_sample_is_refused_by_compare_export_and_the_page(bench, tmp_path, edit):
    """Issue 49: editing a sample's spoken text, raw answer or frame count passed compare, export and the page (the
    page showed the edit); the seal covers samples.jsonl (results.json samples_sha256)."""
    import shutil

    from streamcue.errors import InputError
    from streamcue.metrics.run import write_page

    _, _, run = bench
    base, _ = run()
    edited = tmp_path / "edited"
    shutil.copytree(base, edited)
    samples = [json.loads(line) for line in (edited / "samples.jsonl").read_text().splitlines()]
    edit(samples[0])
    (edited / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    page = (edited / "report.html").read_bytes()
    for command in (["compare", base, edited], ["export", edited, "--out", tmp_path / "export"]):
        code, _, err = cli(*command)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "samples.jsonl" in err and "samples_sha256" in err
    with pytest.raises(InputError, match="samples_sha256"):
        write_page(edited)
    assert (edited / "report.html").read_bytes() == page and not (tmp_path / "export").exists()


def test_throughputs_at_different_concurrency_are_not_set_side_by_side(bench, tmp_path):
    """Issue 49: the real-time factor is a throughput at concurrency N; compare showed two runs' side by side."""
    _, _, run = bench
    (run_a, _), (run_b, _) = run(), run("--concurrency", "3")
    code, out, err = cli("compare", run_a, run_b, "--output", tmp_path / "c.json")
    assert code == 0, err  # concurrency changes how a run goes, not what it asks
    result = json.loads((tmp_path / "c.json").read_text())
    assert "throughputs at concurrency 1 vs 3: not comparable" in result["efficiency_note"]
    assert "not comparable" in " ".join(out.split())
    assert result["efficiency"]["concurrency"] == [1, 3]
