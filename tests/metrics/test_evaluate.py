"""File-level evaluation through the CLI and the Python API: reports, judges, cache, errors."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from streamcue.errors import ConfigError, InputError
from streamcue.metrics import evaluate
from streamcue.metrics.judges import ExactJudge, JudgeRunner, make_judge


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def estp_files(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [
        {"qa_id": "q1", "task_type": "OR", "question": "What is on the table?",
         "answers": [{"start_s": 10, "end_s": 14, "text": "a red cup"}]},
        {"qa_id": "q2", "task_type": "NAR", "answers": [{"start_s": 10, "end_s": 20, "text": "open the fridge"},
                                                       {"start_s": 40, "end_s": 44, "text": "take milk"}]},
        {"qa_id": "q3", "task_type": "TRC", "answers": [{"start_s": 5, "end_s": 6, "text": "stir"}]},
    ])
    pred = write(tmp_path / "pred.jsonl", [
        {"qa_id": "q1", "responses": [{"t_s": 10, "text": "A red cup."}]},
        {"qa_id": "q2", "responses": [{"t_s": 8, "text": "open the fridge"}, {"t_s": 12, "text": "open the fridge"},
                                      {"t_s": 30, "text": "nothing"}, {"t_s": 47, "text": "take milk"},
                                      {"t_s": 21, "text": "fridge"}]},
    ])
    return gt, pred


def test_estp_report_overall_groups_and_per_item(estp_files):
    gt, pred = estp_files
    report = evaluate("estp-f1", gt, pred, judge="exact")
    assert report["per_item"]["q1"]["f1"] == 1.0
    assert report["per_item"]["q2"]["f1"] == pytest.approx(163 / 813, abs=1e-15)
    assert report["per_item"]["q3"]["f1"] == 0.0
    assert report["overall"]["f1"] == pytest.approx((1 + 163 / 813) / 3, abs=1e-15)
    assert report["groups"]["proactive_type"]["explicit"]["f1"] == 1.0
    assert report["groups"]["task_type"]["TRC"]["n"] == 1
    assert report["missing_predictions"] == ["q3"]
    assert report["config"] == {"version": 1, "anticipation_s": 1.0, "latency_s": 2.0}


def test_vsas_report_and_distinct_judge_calls(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [{"task_id": "t1", "task_type": "present", "category": "cooking",
                                        "captions": [{"t_s": i, "text": t} for i,
                                                     t in enumerate(["a cat"] * 4 + ["a dog"] * 4)]}])
    pred = write(tmp_path / "pred.jsonl", [{"task_id": "t1", "responses": [{"t_s": 1.5, "text": "a cat"},
                                                                           {"t_s": 6.0, "text": "a dog"}]}])
    report = evaluate("vsas", gt, pred, judge="exact")
    item = report["per_item"]["t1"]
    # timesteps: "", cat, cat, cat, cat(vs dog), cat(vs dog), dog, dog -> 5 of 8 match
    assert item["accuracy"] == 5 / 8
    assert set(item) >= {"accuracy", "consistency", "rubric"}
    # 7 non-empty timesteps but only 3 distinct (truth, response) pairs reach the judge
    assert report["judge"]["requested"] == 7 and report["judge"]["calls"] == 3


def test_livecook_report(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [{"video_id": "r1", "events": [
        {"t_s": 10, "type": "success", "text": "ok"}, {"t_s": 30, "type": "mistake", "text": "add more salt"}]}])
    pred = write(tmp_path / "pred.jsonl", [{"video_id": "r1", "events": [
        {"t_s": 20, "type": "success", "text": "ok"}, {"t_s": 36, "type": "mistake", "text": "more salt needed"}]}])
    report = evaluate("livecook", gt, pred, bertscore=False)
    assert {k: report["overall"][k] for k in ("ic_acc", "precision", "recall", "f1", "feedback_pairs")} == \
        {"ic_acc": 1.0, "precision": 1.0, "recall": 1.0, "f1": 1.0, "feedback_pairs": 1}
    assert report["overall"]["rouge_l"] == pytest.approx(2 / 3)
    assert report["overall"]["bertscore"] is None
    narrow = evaluate("livecook", gt, pred, bertscore=False, window_s=5.0)
    assert narrow["overall"]["f1"] == 0.0 and narrow["config"]["window_s"] == 5.0


@pytest.mark.embedding
@pytest.mark.slow
def test_livecook_bertscore_with_the_packaged_model(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [{"video_id": "r1", "events": [{"t_s": 30, "type": "mistake",
                                                                      "text": "add more salt"}]}])
    pred = write(tmp_path / "pred.jsonl", [{"video_id": "r1", "events": [{"t_s": 31, "type": "mistake",
                                                                          "text": "add more salt"}]}])
    report = evaluate("livecook", gt, pred)
    assert report["overall"]["bertscore"] == pytest.approx(1.0, abs=1e-4)
    assert report["bertscore_model"]["num_layers"] == 4


@pytest.mark.embedding
@pytest.mark.slow
def test_embedding_judge_with_the_packaged_model():
    judge = make_judge("embedding")
    same, para, other, empty = judge.judge([("", "a man cuts an onion", "a man cuts an onion"),
                                            ("", "a man cuts an onion", "someone is slicing an onion"),
                                            ("", "a man cuts an onion", "the car is parked outside"),
                                            ("", "", "")], "vsas")
    assert same.binary and same.answer_score == pytest.approx(5.0, abs=1e-4)
    assert para.answer_score > other.answer_score and not other.binary
    assert empty.binary
    assert "all-MiniLM-L6-v2" in judge.identity()["model"]


@pytest.mark.embedding
def test_offline_switch_is_scoped_to_the_model_load(monkeypatch):
    """After the packaged model loads offline, a Hub request in the same process still goes out (real HTTP)."""
    import http.server
    import os
    import threading

    import huggingface_hub
    import huggingface_hub.constants

    from streamcue.embedding import Embedder, quiet_offline

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    hits = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_HEAD = do_GET

        def log_message(self, *args):
            pass

    hub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{hub.server_address[1]}"
    try:
        Embedder()
        assert "HF_HUB_OFFLINE" not in os.environ and "TRANSFORMERS_OFFLINE" not in os.environ
        assert huggingface_hub.constants.HF_HUB_OFFLINE is False
        with quiet_offline(), pytest.raises(Exception, match="offline"):
            huggingface_hub.HfApi(endpoint=endpoint).model_info("org/model")
        assert hits == []  # inside the block nothing went out
        with pytest.raises(huggingface_hub.errors.HfHubHTTPError):
            huggingface_hub.HfApi(endpoint=endpoint).model_info("org/model")
        assert hits and hits[0].startswith("/api/models/org/model")
    finally:
        hub.shutdown()
        hub.server_close()


def test_persistent_cache_answers_the_second_run(tmp_path):
    class Counting(ExactJudge):
        calls = 0

        def judge(self, triples, task):
            Counting.calls += len(triples)
            return super().judge(triples, task)

    triples = [("q", "a", "a"), ("q", "a", "b"), ("q", "a", "a")]
    first = JudgeRunner(Counting())
    first.verdicts(triples, "vsas")
    assert (first.stats.calls, first.stats.distinct, first.stats.cache_hits) == (2, 2, 0)
    second = JudgeRunner(Counting())
    assert [v.binary for v in second.verdicts(triples, "vsas")] == [True, False, True]
    assert (second.stats.calls, second.stats.cache_hits, Counting.calls) == (0, 2, 2)


def test_unknown_prediction_id_and_unknown_names(tmp_path, estp_files):
    gt, _ = estp_files
    pred = write(tmp_path / "bad.jsonl", [{"qa_id": "q9", "responses": []}])
    with pytest.raises(InputError, match=r"bad.jsonl:1, record q9, field qa_id: unknown qa_id"):
        evaluate("estp-f1", gt, pred)
    with pytest.raises(ConfigError, match="Did you mean 'estp-f1'"):
        evaluate("estp_f1", gt, pred)
    with pytest.raises(ConfigError, match="Did you mean 'token-f1'"):
        evaluate("estp-f1", gt, gt.with_name("pred.jsonl"), judge="tokenf1")
    with pytest.raises(ConfigError, match="unknown estp_f1 parameters"):
        evaluate("estp-f1", gt, gt.with_name("pred.jsonl"), window=3)


def test_bad_ground_truth_names_file_line_and_field(tmp_path):
    gt = write(tmp_path / "gt.jsonl", [{"qa_id": "q1", "task_type": "OR", "answers": [{"start_s": 5, "end_s": 2,
                                                                                       "text": "x"}]}])
    pred = write(tmp_path / "pred.jsonl", [])
    with pytest.raises(InputError, match=r"gt.jsonl:1, record qa_id=q1: \$.answers\[0\].end_s: end_s 2 is before "
                                         r"start_s 5"):
        evaluate("estp-f1", gt, pred)


def test_cli_prints_tables_and_writes_the_report(estp_files, tmp_path):
    gt, pred = estp_files
    out = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "streamcue", "evaluate", "estp-f1", "--gt", gt, "--pred", pred,
                             "--judge", "exact", "--output", out], capture_output=True, text=True,
                            env={"STREAMCUE_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin", "COLUMNS": "160"})
    assert result.returncode == 0, result.stderr
    assert "by task_type" in result.stdout and "judge exact" in result.stdout
    report = json.loads(out.read_text())
    assert set(report) >= {"overall", "groups", "per_item", "config", "judge"}
    assert report["config_version"] == "estp_f1.v1" and "(config estp_f1.v1)" in result.stdout


# Pinned in tests/data/config_hashes.json: a change of behaviour is a new version file, never an edit.
RELEASED_CONFIGS = ["estp_f1.v1", "vsas.v1", "livecook.v1", "vsas.v2", "livecook.v2", "ovo_bench.v1",
                    "streamingbench.v1"]


@pytest.mark.parametrize("name", RELEASED_CONFIGS)
def test_released_configs_never_change(name):
    from importlib import resources

    text = resources.files("streamcue.metrics").joinpath(f"configs/{name}.json").read_bytes()
    pinned = json.loads((Path(__file__).parents[1] / "data" / "config_hashes.json").read_text())
    assert hashlib.sha256(text).hexdigest() == pinned[name], f"{name} changed: add a new version instead"


def test_evaluate_reads_a_build_folder_as_the_readme_says(tmp_path):
    """Issue 49: ``evaluate estp-f1 --gt FOLDER`` was refused, though the README says a build folder is read; the
    folder's records score as the record file does."""
    from conftest import VALID, cli

    built = tmp_path / "built"
    built.mkdir()
    gt = write(built / "interval_qa.jsonl", [VALID["interval_qa"]])
    write(built / "videos.jsonl", [VALID["video"]])
    pred = write(tmp_path / "pred.jsonl", [VALID["interval_qa_prediction"]])
    reports = {}
    for name, source in (("folder", built), ("file", gt)):
        code, _, err = cli("evaluate", "estp-f1", "--gt", source, "--pred", pred, "--judge", "exact", "--output",
                           tmp_path / f"{name}.json")
        assert code == 0, err
        reports[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert reports["folder"]["per_item"] == reports["file"]["per_item"] and reports["folder"]["per_item"]
