"""Hostile-user cases of the commands added this session, through the real CLI (in this process)."""

from __future__ import annotations

import socket

import pytest

from conftest import CAPTAINCOOK4D, cli_run

pytestmark = pytest.mark.skipif(not CAPTAINCOOK4D.is_dir(), reason="needs ../shared/data/captaincook4d")


def streamcue(*args):
    return cli_run(*args)


def one_line_error(run, code, *words):
    assert run.returncode == code, run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def guidance(tmp_path_factory):
    out = tmp_path_factory.mktemp("cc")
    run = streamcue("build", "captaincook4d", "--annotations", CAPTAINCOOK4D, "--out", out, "--recording", "1_7")
    assert run.returncode == 0, run.stderr
    return out / "guidance.jsonl"


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("options, words", [
    (["--strategy", "periodic", "--every-s", "0"], ["period", "0.0"]),          # was a ZeroDivisionError traceback
    (["--strategy", "periodic", "--every-s", "nan"], ["period", "nan"]),        # was accepted
    (["--strategy", "periodic", "--every-s", "-3"], ["period", "-3.0"]),        # was accepted
    (["--strategy", "periodic", "--window-s", "inf"], ["context window", "inf"]),  # was accepted
    (["--strategy", "periodic", "--window-s", "nan"], ["context window"]),
    (["--strategy", "turn-loop", "--every-s", "inf"], ["turn-loop period", "inf"]),
])
def test_replay_refuses_non_positive_or_non_finite_periods(guidance, tmp_path, options, words):
    run = streamcue("replay", guidance, "--out", tmp_path / "run", "--limit", "1", *options,
                    "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m")
    one_line_error(run, 2, *words)
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


@pytest.mark.slow
def test_unreachable_endpoint_never_prints_the_password(guidance, tmp_path):
    url = f"http://bob:s3cretpw@127.0.0.1:{closed_port()}/v1"
    # one retry: the address goes through the retry path too (the default's four are test_llm.py's)
    run = streamcue("replay", guidance, "--out", tmp_path / "run", "--strategy", "turn-loop", "--limit", "1",
                    "--no-video", "--llm-base-url", url, "--llm-model", "m", "--llm-retries", "1")
    line = one_line_error(run, 4, "cannot reach", "127.0.0.1", "(after 1 retry)")
    assert "s3cretpw" not in run.stdout + run.stderr and "bob" not in line
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


@pytest.mark.parametrize("url", ["http://bob:s3cretpw@127.0.0.1:x/v1", "http://bob:s3cretpw@127.0.0.1:99999/v1",
                                 "ftp://127.0.0.1/v1", "localhost:8000"])
def test_malformed_endpoint_is_one_line_without_the_password(guidance, tmp_path, url):
    run = streamcue("replay", guidance, "--out", tmp_path / "run", "--strategy", "turn-loop", "--limit", "1",
                    "--llm-base-url", url, "--llm-model", "m")
    one_line_error(run, 2, "LLM base URL")  # was an httpx InvalidURL traceback
    assert "s3cretpw" not in run.stdout + run.stderr


@pytest.mark.parametrize("builder, option, make", [
    ("ovo-bench", "--annotations", lambda d: (d / "ovo.json").write_text("[]") and d / "ovo.json"),
    ("streamingbench", "--questions", lambda d: (d / "questions_real.json").write_text("[]") and d),
])
def test_benchmark_builders_refuse_an_empty_source(tmp_path, builder, option, make):
    src = tmp_path / "src"
    src.mkdir()
    run = streamcue("build", builder, option, make(src), "--out", tmp_path / "out")
    one_line_error(run, 2, "nothing to convert")  # was "wrote  to OUT" with empty files and exit 0
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("metric", ["ovo-bench", "streamingbench"])
def test_benchmark_scores_refuse_empty_ground_truth(tmp_path, metric):
    gt, pred = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl"
    gt.write_text("")
    pred.write_text("")
    run = streamcue("evaluate", metric, "--gt", gt, "--pred", pred)
    one_line_error(run, 2, "gt.jsonl", "nothing to score")  # was a table of 0 tasks and exit 0


@pytest.mark.parametrize("builder, option, value", [
    ("livecook-augment", "--min-clip-s", "inf"),   # was a build of 0 records, exit 0
    ("livecook-augment", "--min-clip-s", "nan"),   # was accepted (NaN drops nothing)
    ("ego4d", "--min-clip-s", "-1"),
    ("ego4d", "--min-coverage", "nan"),
])
def test_clip_cleaning_options_are_finite(tmp_path, builder, option, value):
    from conftest import GOALSTEP_VAL

    run = streamcue("build", builder, "--goalstep", GOALSTEP_VAL, "--out", tmp_path / "out", option, value,
                    "--llm-base-url", f"http://127.0.0.1:{closed_port()}/v1", "--llm-model", "m")
    one_line_error(run, 2, value if value != "-1" else "-1.0")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("param, words", [
    ("window_s=-1", ["livecook parameter window_s", "-1"]),            # was accepted
    ("window_s=NaN", ["window_s", "NaN", "finite"]),                   # was accepted
    ("window_s=Infinity", ["window_s", "Infinity", "finite"]),         # was a scipy ValueError traceback
    ("window_s=1e999", ["window_s", "finite"]),
    ("window_s=abc", ["livecook parameter window_s", "'abc'"]),
    ("rouge_use_stemmer=1", ["livecook parameter rouge_use_stemmer", "true or false"]),
])
def test_metric_parameters_are_typed_and_finite(guidance, tmp_path, param, words):
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"video_id": "1_7", "events": []}\n')
    run = streamcue("evaluate", "livecook", "--gt", guidance, "--pred", pred, "--param", param)
    one_line_error(run, 2, *words)


def test_evaluate_output_never_overwrites_a_file_of_a_ground_truth_folder(tmp_path):
    from conftest import SHARED_DATA

    ovo = SHARED_DATA / "ovo_bench"
    if not (ovo / "ovo_bench_new.json").is_file():
        pytest.skip("needs ../shared/data/ovo_bench")
    gt = tmp_path / "ovo"
    assert streamcue("build", "ovo-bench", "--annotations", ovo / "ovo_bench_new.json", "--out", gt).returncode == 0
    before = (gt / "mc_question.jsonl").read_bytes()
    run = streamcue("evaluate", "ovo-bench", "--gt", gt, "--pred", ovo / "results" / "GPT",
                    "--pred-format", "ovo-results", "--output", gt / "mc_question.jsonl")
    one_line_error(run, 2, "mc_question.jsonl", "refusing to overwrite")  # the report replaced the records before
    assert (gt / "mc_question.jsonl").read_bytes() == before


def test_evidence_stats_refuses_wrong_files(guidance, tmp_path):
    from conftest import GOALSTEP_VAL

    out = tmp_path / "eg"
    assert streamcue("build", "ego4d", "--goalstep", GOALSTEP_VAL, "--out", out, "--video",
                     "c2d06df7-5d3a-4116-9edb-f1c81a4f669b").returncode == 0
    qa, videos = out / "interval_qa.jsonl", out / "videos.jsonl"
    # records never checked: was a table of zeros and exit 0
    one_line_error(streamcue("stats", "evidence", "--checked", qa, "--verified", qa), 2, "evidence_check")
    # videos.jsonl as the annotated records: was a KeyError traceback
    one_line_error(streamcue("stats", "evidence", "--checked", qa, "--verified", videos), 2, "videos.jsonl", "qa_id")
