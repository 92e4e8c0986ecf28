"""Options and prediction files the last probe still accepted (issue 25): each is now one line and exit 2.

Run through the real CLI entry point, in this process (the exit code and stderr a process would give); no server is
reached (the annotate case names an address where nothing listens, and must be refused before any request).
"""

from __future__ import annotations

import json

import pytest
from conftest import VALID, cli_run


def cli(*args):
    return cli_run(*args)


def one_line(done, words):
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert words in done.stderr, done.stderr


@pytest.fixture
def estp(tmp_path):
    gt = tmp_path / "gt.jsonl"
    gt.write_text(json.dumps(VALID["interval_qa_minimal"]) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"qa_id": "q1", "responses": []}) + "\n")
    return gt, pred


def test_config_version_zero_is_refused(estp):
    gt, pred = estp
    one_line(cli("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--config-version", "0"), "--config-version")


def test_a_second_prediction_for_one_record_is_refused_naming_its_line(estp, tmp_path):
    gt, pred = estp
    pred.write_text(pred.read_text() * 2)
    done = cli("evaluate", "estp-f1", "--gt", gt, "--pred", pred)
    one_line(done, "duplicate qa_id")
    assert f"{pred}:2" in done.stderr and "qa_id" in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-2", "1.5"])
def test_stats_agreement_threshold_must_be_a_cosine(tmp_path, value):
    records = tmp_path / "dense_caption.jsonl"
    records.write_text(json.dumps(VALID["dense_caption"]) + "\n")
    one_line(cli("stats", "agreement", "--generated", records, "--verified", records, "--threshold", value),
             "--threshold")


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_annotate_status_tolerance_is_checked_before_the_server(value):
    one_line(cli("annotate", "status", "--project", "p", "--url", "http://127.0.0.1:9", "--tolerance", value),
             "tolerance")


def test_build_ego4d_refuses_llm_concurrency_zero_even_without_captions(tmp_path):
    from conftest import GOALSTEP_VAL

    one_line(cli("build", "ego4d", "--goalstep", GOALSTEP_VAL, "--out", tmp_path / "out", "--llm-concurrency", "0"),
             "--llm-concurrency")
    assert not (tmp_path / "out").exists()


def test_release_diff_show_must_not_be_negative(tmp_path):
    one_line(cli("release", "diff", tmp_path, tmp_path, "--show", "-1"), "--show")
