"""OVO-Bench and StreamingBench: builders, record kinds, official-parity and strict scoring.

The OVO-Bench annotations and results are CC BY-NC-SA: they are read from ../shared only.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SHARED_DATA
from streamcue.dataset_builders import ovo_bench, streamingbench
from streamcue.dataset_builders.bench_sources import QuirkReport, parse_time
from streamcue.dataset_builders.output import write_outputs
from streamcue.io import read_jsonl, write_jsonl
from streamcue.metrics import evaluate
from streamcue.metrics.choice_rules import choice_letter, stated_number, stated_yes_no
from streamcue.metrics.ovo_bench import ovo_choice_correct, ovo_count_correct, ovo_yes_no_correct
from streamcue.metrics.streamingbench import streamingbench_choice_correct
from streamcue.schemas import check_file

OVO = SHARED_DATA / "ovo_bench"
OVO_FILE = OVO / "ovo_bench_new.json"
SB = SHARED_DATA / "streamingbench"
MODELS = ["GPT", "InternVL2", "LLaVA_OneVision"]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "STREAMCUE_NO_PROGRESS": "1"})


def _built(tmp_path_factory, name, items_of):
    out = tmp_path_factory.mktemp(name)
    report = QuirkReport()
    write_outputs(items_of(report), out)
    return out, report.to_dict()


@pytest.fixture(scope="module")
def ovo_out(tmp_path_factory):
    return _built(tmp_path_factory, "ovo", lambda r: ovo_bench.build(ovo_bench.Config(OVO_FILE), r))


@pytest.fixture(scope="module")
def sb_out(tmp_path_factory):
    return _built(tmp_path_factory, "sb", lambda r: streamingbench.build(streamingbench.Config(SB, all_files=True), r))


# ---------------------------------------------------------------- builders

def test_ovo_build_counts_every_task_and_quirk(ovo_out):
    out, report = ovo_out
    source = Counter(item["task"] for item in json.loads(OVO_FILE.read_text()))
    built = Counter(r["task"] for k in ("mc_question", "active_item") for r in read_jsonl(out / f"{k}.jsonl"))
    assert built == source and sum(source.values()) == 1640
    assert report["records"] == {"mc_question": 1468, "active_item": 172, "video": 644}
    assert report["quirks"]["answer_names_other_option"] == 8 and report["quirks"]["answer_text_differs"] == 420
    for kind in ("mc_question", "active_item"):
        assert check_file(out / f"{kind}.jsonl", kind).ok
    videos = read_jsonl(out / "videos.jsonl")
    assert all(not v["uri"].startswith("/") and v["duration_s"] is None for v in videos)
    crr = next(r for r in read_jsonl(out / "active_item.jsonl") if r["task"] == "CRR")
    assert [p["expected"] for p in crr["probes"]] == ["No", "No", "Yes", "Yes", "Yes"]


def test_streamingbench_build_counts_every_file_and_quirk(sb_out):
    out, report = sb_out
    for path in sorted(SB.glob("questions_*.json")):
        subset = path.stem.removeprefix("questions_")
        rows = list(streamingbench.iter_questions(json.loads(path.read_text()), subset, path))
        assert Counter(q["task_type"] for *_, q in rows) == Counter(report["by_task"][subset]), subset
    quirks = report["quirks"]
    assert quirks["sqa_list_of_lists"] == 50 and quirks["options_without_prefix"] > 0
    assert quirks["hms_time"] > 8000 and quirks["question_after_clip"] > 0 and quirks["irregular_time"] == 6
    mc = read_jsonl(out / "mc_question.jsonl")
    sqa = [r for r in mc if r["subset"] == "sqa"]
    assert len(sqa) == 250 and sqa[1]["context"] == {"group_id": "sqa-0", "turn": 2}
    misleading = {r["paper_group"] for r in mc if r["task"] == "Misleading Context Understanding"}
    assert misleading == {"contextual understanding"}
    assert all(not o.startswith("A. ") for r in mc for o in r["options"][:1] if r["subset"] == "real")


@pytest.mark.parametrize("args, records, videos", [
    ((), {"mc_question": 4250, "active_item": 250}, 899),
    (("--all-files",), {"mc_question": 8495, "active_item": 301}, 899),
])
def test_streamingbench_builds_the_papers_4500_by_default_and_every_file_with_all_files(tmp_path, args, records,
                                                                                        videos):
    result = cli("build", "streamingbench", "--questions", SB, "--out", tmp_path / "sb", *args)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "sb" / "build_report.json").read_text())["details"]
    assert report["records"] == {**records, "video": videos}
    if args:
        return
    assert report["sources"] == ["questions_omni.json", "questions_proactive.json", "questions_real.json",
                                 "questions_sqa.json"]
    assert {k: sum(v.values()) for k, v in report["by_task"].items()} == {"real": 2500, "omni": 1500, "sqa": 250,
                                                                         "proactive": 250}
    rows = read_jsonl(tmp_path / "sb" / "mc_question.jsonl") + read_jsonl(tmp_path / "sb" / "active_item.jsonl")
    assert Counter(r["paper_group"] for r in rows) == {"real-time visual understanding": 2500,
                                                       "omni-source understanding": 1000,
                                                       "contextual understanding": 1000}
    assert "paper_file_missing" not in report["quirks"] and report["warnings"] == []
    oracle = [{"question_id": r["question_id"], "response": chr(65 + r["answer"])} for r in rows if "answer" in r]
    oracle += [{"item_id": r["item_id"], "responses": [{"t_s": r["target"]["t_s"], "text": r["target"]["text"]}]}
               for r in rows if "target" in r]
    write_jsonl(tmp_path / "oracle.jsonl", oracle)
    scored = evaluate("streamingbench", tmp_path / "sb", tmp_path / "oracle.jsonl")
    assert {k: (v["n"], v["accuracy"]) for k, v in scored["paper_groups"].items()} == {
        "real-time visual understanding": (2500, 1.0), "omni-source understanding": (1000, 1.0),
        "contextual understanding": (1000, 1.0), "overall": (4500, 1.0)}
    files = scored["count_py"]
    assert files["real"]["total"]["total"] == 2500 and files["omni"]["total"]["total"] == 1500
    assert "total" not in files["sqa"] and files["proactive"]["Proactive Output"]["answer_accuracy"] == 1.0


@pytest.mark.slow
def test_the_build_commands_the_streamingbench_page_shows_run(tmp_path):
    page = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "streamingbench.md").read_text()
    lines = [line for line in page.splitlines() if line.startswith("streamcue build streamingbench")]
    assert len(lines) == 3
    for line in lines:
        args = [str(SB) if a == "../shared/data/streamingbench" else a for a in line.split()[1:]]
        result = cli(*args, cwd=tmp_path)
        assert result.returncode == 0, (line, result.stderr)
    assert (tmp_path / "out" / "sb-real" / "mc_question.jsonl").is_file()


def test_streamingbench_default_build_names_a_missing_paper_file_and_refuses_a_folder_without_one(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "questions_real.json").write_text((SHARED_DATA / "fixtures" / "streamingbench" /
                                              "questions_real.first3.json").read_text())
    assert cli("build", "streamingbench", "--questions", src, "--out", tmp_path / "a").returncode == 0
    quirks = json.loads((tmp_path / "a" / "build_report.json").read_text())["details"]["quirk_examples"]
    assert quirks["paper_file_missing"] == ["questions_omni.json", "questions_sqa.json", "questions_proactive.json"]
    (src / "questions_real.json").rename(src / "questions_real_stream.json")
    refused = cli("build", "streamingbench", "--questions", src, "--out", tmp_path / "b")
    assert refused.returncode == 2 and "none of the paper's files" in refused.stderr and "--all-files" in refused.stderr
    assert cli("build", "streamingbench", "--questions", src, "--out", tmp_path / "c", "--all-files").returncode == 0


def test_clock_strings_read_as_the_official_code_reads_them():
    assert parse_time("00:03:10", "f", "r", "t") == 190
    assert parse_time("00:24", "f", "r", "t") == 24
    assert parse_time("00:12450", "f", "r", "t") == 12450


@pytest.mark.parametrize("edit, words", [
    (lambda d: d[0].update(task="XYZ"), "record id=0, field task: unknown task code 'XYZ'"),
    (lambda d: d[0].update(gt=7), "record id=0, field gt: option index 7 is out of range (4 options)"),
    (lambda d: d[0].update(video="/abs/x.mp4"), "record id=0, field video: video path '/abs/x.mp4' is not relative"),
    (lambda d: d[0].pop("realtime"), "record id=0, field realtime: missing field"),
])
def test_ovo_bad_input_is_one_line_with_file_record_field(tmp_path, edit, words):
    data = json.loads((SHARED_DATA / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json").read_text())
    edit(data)
    src = tmp_path / "ovo.json"
    src.write_text(json.dumps(data))
    result = cli("build", "ovo-bench", "--annotations", src, "--out", tmp_path / "out")
    assert result.returncode == 2 and words in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_truncated_json_is_one_line_error(tmp_path):
    src = tmp_path / "ovo.json"
    src.write_text(OVO_FILE.read_text()[:5000])
    result = cli("build", "ovo-bench", "--annotations", src, "--out", tmp_path / "out")
    assert result.returncode == 2 and "ovo.json:" in result.stderr and "invalid JSON" in result.stderr
    sbdir = tmp_path / "sb"
    sbdir.mkdir()
    (sbdir / "questions_real.json").write_text((SB / "questions_real.json").read_text()[:3000])
    result = cli("build", "streamingbench", "--questions", sbdir, "--out", tmp_path / "o2")
    assert result.returncode == 2 and "questions_real.json:" in result.stderr and "Traceback" not in result.stderr


def test_streamingbench_answer_letter_out_of_range(tmp_path):
    data = json.loads((SB / "questions_real.json").read_text())[:3]
    data[1]["questions"][0]["answer"] = "F"
    (tmp_path / "sb").mkdir()  # not the output's parent: an output inside the questions folder is refused
    (tmp_path / "sb" / "questions_real.json").write_text(json.dumps(data))
    result = cli("build", "streamingbench", "--questions", tmp_path / "sb", "--out", tmp_path / "out")
    assert result.returncode == 2
    assert "record real-1-0, field answer: answer 'F' is not an option letter of 4 options" in result.stderr


# ---------------------------------------------------------------- OVO-Bench scoring

@pytest.mark.parametrize("model", MODELS)
def test_ovo_official_parity_on_the_shipped_results(ovo_out, model):
    official = json.loads((OVO / "results" / "official_scores.json").read_text())[model]
    report = evaluate("ovo-bench", ovo_out[0], OVO / "results" / model, pred_format="ovo-results")
    expected = {k: v for k, v in official.items() if k != "crashed"}
    assert report["official_figures"] == expected


def test_ovo_cli_reports_duplicates(ovo_out, tmp_path):
    result = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", OVO / "results" / "GPT",
                 "--pred-format", "ovo-results", "--output", tmp_path / "r.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["duplicates"] == ["ovo-192", "ovo-225", "ovo-239", "ovo-414", "ovo-424", "ovo-427"]
    assert report["groups"]["task"]["HLD"]["n"] == 187  # counted as the official scorer counts them
    strict = evaluate("ovo-bench", ovo_out[0], OVO / "results" / "GPT", pred_format="ovo-results", rules="strict")
    assert strict["groups"]["task"]["HLD"]["n"] == 186 and strict["groups"]["task"]["REC"]["accuracy"] == 0.0


def test_ovo_list_and_empty_responses(ovo_out, tmp_path):
    folder = tmp_path / "M"
    folder.mkdir()
    data = json.loads((OVO / "results" / "InternVL2" / "InternVL2_EPM_offline.json").read_text())
    items = data["backward"][:4]
    items[0]["response"] = [items[0]["ground_truth"]]            # a list holding the right letter: right
    items[1]["response"] = ""                                    # empty: wrong
    items[2]["response"] = None                                  # none: wrong
    items[3]["response"] = "The answer is " + items[3]["ground_truth"]
    (folder / "x.json").write_text(json.dumps({"backward": items, "realtime": [], "forward": []}))
    report = evaluate("ovo-bench", ovo_out[0], folder, pred_format="ovo-results")
    assert report["groups"]["task"]["EPM"] == {"n": 4, "correct": 2, "accuracy": 0.5}
    rec = json.loads((OVO / "results" / "InternVL2" / "InternVL2_REC_offline.json").read_text())["forward"][:1]
    rec[0]["test_info"][0]["response"] = ["1", "0"]                # digits joined: "10"
    (folder / "x.json").write_text(json.dumps({"backward": [], "realtime": [], "forward": rec}))
    report = evaluate("ovo-bench", ovo_out[0], folder, pred_format="ovo-results")
    assert report["per_item"]["ovo-1558"]["scored"] == len(rec[0]["test_info"])


def _ovo_predictions(ovo_out, answer):
    preds = []
    for r in read_jsonl(ovo_out / "mc_question.jsonl"):
        preds.append({"question_id": r["question_id"], "response": answer(r)})
    for r in read_jsonl(ovo_out / "active_item.jsonl"):
        preds.append({"item_id": r["item_id"], "responses": [{"t_s": p["t_s"], "probe": i, "text": p["expected"]}
                                                             for i, p in enumerate(r["probes"])]})
    return preds


@pytest.mark.parametrize("rules", ["official", "strict"])
def test_ovo_oracle_scores_one(ovo_out, tmp_path, rules):
    write_jsonl(tmp_path / "p.jsonl", _ovo_predictions(ovo_out[0], lambda r: chr(65 + r["answer"])))
    report = evaluate("ovo-bench", ovo_out[0], tmp_path / "p.jsonl", rules=rules)
    assert report["overall"]["total"] == 1.0 and not report["missing_predictions"]


def test_ovo_constant_letter_scores_its_share(ovo_out, tmp_path):
    write_jsonl(tmp_path / "p.jsonl", _ovo_predictions(ovo_out[0], lambda r: "C"))
    report = evaluate("ovo-bench", ovo_out[0], tmp_path / "p.jsonl", rules="strict")
    for task, scores in report["groups"]["task"].items():
        records = [r for r in read_jsonl(ovo_out[0] / "mc_question.jsonl") if r["task"] == task]
        if records:
            assert scores["accuracy"] == sum(r["answer"] == 2 for r in records) / len(records)


def test_ovo_prediction_for_an_unknown_id_is_refused(ovo_out, tmp_path):
    write_jsonl(tmp_path / "p.jsonl", [{"question_id": "ovo-999999", "response": "A"}])
    result = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", tmp_path / "p.jsonl")
    assert result.returncode == 2 and "record ovo-999999" in result.stderr and "unknown id" in result.stderr


# ---------------------------------------------------------------- StreamingBench scoring

def _official_count(data, model, group):
    """count.py's counting rules, transcribed independently for the test (per task: total, correct)."""
    stats = {}
    outer = data if group == "sqa" else [[e] for e in data]
    for entries in outer:
        for entry in (entries if isinstance(entries, list) else [entries]):
            for q in entry["questions"]:
                if model not in q:
                    continue
                ans = q[model]
                t = stats.setdefault(q["task_type"], [0, 0, 0])
                if group == "proactive":
                    last = ans["dialog_history"][-1]
                    gt = sum(int(x) * 60 ** i for i, x in enumerate(reversed(q["ground_truth_time_stamp"].split(":"))))
                    t[0] += 1
                    if -2 <= last["time"] - gt <= 2:
                        t[1] += 1
                        t[2] += q["ground_truth_output"] in last["content"]
                    continue
                if not ans or not ans[0]:
                    continue
                t[0] += 1
                t[1] += ans[0] == q["answer"]
    return stats


def _answer_file(path, model, rng):
    data = json.loads(path.read_text())
    group = path.stem.removeprefix("questions_").split("_")[0]
    for *_, q in streamingbench.iter_questions(data, path.stem, path):
        choice = rng.random()
        if choice < 0.05:
            continue                                   # not answered: not counted
        if group == "proactive":
            gt = parse_time(q["ground_truth_time_stamp"], path, "", "")
            t = gt + rng.choice([-3, -2, 0, 1, 2, 3, 5])
            q[model] = {"answered": t, "dialog_history": [
                {"role": "user", "content": "Is it the right time?", "time": t},
                {"role": "assistant", "content": rng.choice([q["ground_truth_output"], "yes", ""]), "time": t}]}
        else:
            q[model] = rng.choice(["A", "B", "C", "D", q["answer"], q["answer"] + ". yes", "Answer: B", "",
                                   [q["answer"]], ["B", "A"], " A"])
    return data


@pytest.mark.parametrize("path", sorted(SB.glob("questions_*.json")), ids=lambda p: p.stem)
def test_streamingbench_every_file_matches_the_official_counting_rules(sb_out, tmp_path, path):
    rng = random.Random(path.stem)
    data = _answer_file(path, "MyModel", rng)
    answered = tmp_path / "answered.json"
    answered.write_text(json.dumps(data))
    report = evaluate("streamingbench", sb_out[0], answered, pred_format="streamingbench", model="MyModel")
    group = path.stem.removeprefix("questions_").split("_")[0]
    expected = _official_count(data, "MyModel", group)
    got = report["groups"]["task_type"]
    assert set(got) == set(expected)
    for task, (n, correct, answer_correct) in expected.items():
        assert got[task]["n"] == n
        if group == "proactive":
            assert got[task]["time_accuracy"] == correct / n and got[task]["answer_accuracy"] == answer_correct / n
        else:
            assert got[task]["accuracy"] == correct / n


def test_streamingbench_oracle_and_constant_letter(sb_out, tmp_path):
    mc = [r for r in read_jsonl(sb_out[0] / "mc_question.jsonl") if r["subset"] == "real"]
    write_jsonl(tmp_path / "oracle.jsonl", [{"question_id": r["question_id"], "response": chr(65 + r["answer"])}
                                            for r in mc])
    oracle = evaluate("streamingbench", sb_out[0], tmp_path / "oracle.jsonl", rules="strict")
    assert oracle["overall"]["accuracy"] == 1.0
    write_jsonl(tmp_path / "b.jsonl", [{"question_id": r["question_id"], "response": "B"} for r in mc])
    report = evaluate("streamingbench", sb_out[0], tmp_path / "b.jsonl")
    assert report["overall"]["accuracy"] == sum(r["answer"] == 1 for r in mc) / len(mc)


def test_streamingbench_format_needs_a_model_and_a_matching_file(sb_out, tmp_path):
    result = cli("evaluate", "streamingbench", "--gt", sb_out[0], "--pred", SB / "questions_real.json",
                 "--pred-format", "streamingbench")
    assert result.returncode == 2 and "--pred-model" in result.stderr
    (tmp_path / "x.json").write_text(json.dumps([{"questions": [{"question": "nothing like it"}]}]))
    result = cli("evaluate", "streamingbench", "--gt", sb_out[0], "--pred", tmp_path / "x.json",
                 "--pred-format", "streamingbench", "--pred-model", "M")
    assert result.returncode == 2 and "does not match any questions file" in result.stderr


# ---------------------------------------------------------------- rules

@pytest.mark.parametrize("response, letter, official, strict", [
    ("A", "A", True, True), ("Answer: B", "A", True, False), ("Answer: B", "B", True, True),
    ("(C) a carrot", "C", True, True), ("", "A", False, False), (None, "A", False, False),
    (["B"], "B", True, True), ("I think D.", "D", True, True), ("A or B", "A", True, True),
])
def test_ovo_choice_rules(response, letter, official, strict):
    assert ovo_choice_correct(response, letter, 4, "official") is official
    assert ovo_choice_correct(response, letter, 4, "strict") is strict


def test_streamingbench_first_character_rule():
    assert streamingbench_choice_correct("Answer: B", "A", 4) is True
    assert streamingbench_choice_correct("Answer: B", "A", 4, "strict") is False
    assert streamingbench_choice_correct(["B", "A"], "B", 4) is True
    assert streamingbench_choice_correct("", "A", 4) is False


def test_count_and_yes_no_rules():
    assert ovo_count_correct("1 or 2", "12") and not ovo_count_correct("1 or 2", "12", "strict")
    assert ovo_count_correct("three times", "3", "strict") and stated_number("none") is None
    assert ovo_yes_no_correct("Yesterday", "Yes") and not ovo_yes_no_correct("Yesterday", "Yes", "strict")
    assert ovo_yes_no_correct("Y", "Yes") and ovo_yes_no_correct("N", "No") and not ovo_yes_no_correct("Y", "No")
    assert stated_yes_no("no, not yet") == "No" and stated_yes_no("maybe") is None


@given(st.integers(0, 4), st.sampled_from(["", ".", ". because", ")"]))
def test_a_leading_letter_is_always_its_choice(index, tail):
    letter = chr(65 + index)
    assert choice_letter(letter + tail, 5) == letter
    assert choice_letter(f"The answer is {letter}", 5) == letter


@given(st.text(max_size=30), st.sampled_from("ABCD"))
def test_official_ovo_rule_is_a_substring_test(text, letter):
    assert ovo_choice_correct(text, letter, 4) is (letter in text)


# ---------------------------------------------------------------- schema-derived parts

@pytest.mark.slow
def test_streamingbench_records_release_and_load_typed(tmp_path):
    from streamcue.release.build import ReleaseConfig, build_release
    from streamcue.loaders import load

    out = tmp_path / "records"
    write_outputs(streamingbench.build(streamingbench.Config(SB, ("proactive_50", "sqa"))), out)
    build_release(ReleaseConfig(records=out, version="1.0.0", out=tmp_path / "dist", allow_unverified=True,
                                 license="mit"))
    for kind in ("mc_question", "active_item"):
        typed = load(kind, tmp_path / "dist", split="test")
        source = read_jsonl(out / f"{kind}.jsonl")
        assert [r.to_dict() for r in typed] == source
    sqa = load("mc_question", tmp_path / "dist", split="test")[1]
    assert type(sqa).__name__ == "MCQuestion" and sqa.context.turn == 2 and sqa.options[sqa.answer]


def test_schema_and_validate_commands_know_the_new_kinds(tmp_path):
    for kind in ("mc_question", "active_item", "mc_question_prediction", "active_item_prediction"):
        result = cli("schema", kind)
        assert result.returncode == 0 and "question" in result.stdout or "item_id" in result.stdout
    bad = tmp_path / "q.jsonl"
    record = {"schema_version": "1.0", "question_id": "q1", "video_id": "v1", "benchmark": "ovo-bench", "task": "EPM",
              "group": "backward", "question": "?", "options": ["a", "b"], "answer": 2, "query_time_s": 1.0,
              "provenance": {"builder": "t", "version": "1"}, "verification": {"status": "unverified"}}
    write_jsonl(bad, [record])
    result = cli("validate", bad, "--kind", "mc_question")
    assert result.returncode == 2 and "$.answer: answer index 2 is out of range (2 options)" in result.stderr


# ---------------------------------------------------------------- replay through the OpenAI-compatible adapter

class ProtocolChecker:
    """A scripted vision model on the stub server that checks what each call may see.

    Multiple choice: always "A". Yes/no: yes (so proactive items answer at the first poll).
    Open questions: "1". Every call's frames must lie in [now - 60 s, now].
    """

    def __init__(self):
        self.violations = []
        self.sqa_dialogues = []

    def __call__(self, body):
        import re

        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        texts = [p["text"] for p in user if p["type"] == "text"]
        now = float(re.match(r"Time now: ([\d.]+) s", texts[0]).group(1))
        times = [float(t.split()[2]) for t in texts if t.startswith("Frame at")]
        if not times or max(times) > now + 1e-9 or min(times) < now - 60 - 1e-9:
            self.violations.append((now, times))
        if any(t.startswith("Dialogue so far") for t in texts):
            self.sqa_dialogues.append(next(t for t in texts if t.startswith("Dialogue so far")))
        if '"answer": "yes" or "no"' in system:
            return json.dumps({"answer": "yes"})
        if "only the letter" in system:
            return json.dumps({"text": "A"})
        return json.dumps({"text": "1"})


@pytest.mark.slow
@pytest.mark.llm_server
def test_replayed_predictions_follow_the_protocols_and_score(tmp_path):
    from streamcue.testing.stub_llm import StubLLMServer

    fixtures = SHARED_DATA / "fixtures"
    sb_dir = tmp_path / "sb_src"
    sb_dir.mkdir()
    (sb_dir / "questions_proactive.json").write_text((fixtures / "streamingbench" / "questions_proactive.first3.json")
                                                     .read_text())
    (sb_dir / "questions_sqa_stream.json").write_text((fixtures / "streamingbench" /
                                                       "questions_sqa_stream.first1.json").read_text())
    ovo_src = fixtures / "ovo_bench" / "ovo_bench_new.one_per_task.json"
    assert cli("build", "ovo-bench", "--annotations", ovo_src, "--out", tmp_path / "ovo").returncode == 0
    assert cli("build", "streamingbench", "--questions", sb_dir, "--out", tmp_path / "sb",
               "--all-files").returncode == 0  # sqa_stream: not of the paper's set
    checker = ProtocolChecker()
    with StubLLMServer(checker) as server:
        for name in ("ovo", "sb"):
            done = cli("replay", tmp_path / name, "--out", tmp_path / f"run_{name}", "--window-s", "60",
                       "--prompt-set", "streamcue",  # this test reads streamcue's prompts; official: test_run.py
                       "--no-video", "--llm-base-url", server.base_url, "--llm-model", "scripted-vl")
            assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / "run_sb" / "replay_report.json").read_text())
        assert {k: (v["benchmark"], v["strategy"]) for k, v in report["kinds"].items()} == {
            "mc_question": ("streamingbench", "single-call"), "active_item": ("streamingbench", "polling")}
        assert report["kinds"]["active_item"]["options"] == {"hz": 1.0} and report["history"] == {
            "mc_question": "gold", "active_item": "gold"}
    assert not checker.violations
    # SQA: the second and later turns carry the earlier questions with their gold answers
    sqa = [r for r in read_jsonl(tmp_path / "sb" / "mc_question.jsonl")]
    first = sqa[0]
    assert any(f"{chr(65 + first['answer'])}. {first['options'][first['answer']]}" in d for d in checker.sqa_dialogues)

    ovo_report = evaluate("ovo-bench", tmp_path / "ovo", tmp_path / "run_ovo" / "predictions.jsonl", rules="strict")
    mc = read_jsonl(tmp_path / "ovo" / "mc_question.jsonl")
    for r in mc:  # "A" is right exactly where the gold option is A
        assert ovo_report["per_item"][r["question_id"]]["correct"] == (r["answer"] == 0)
    forward = {r["item_id"]: r for r in read_jsonl(tmp_path / "ovo" / "active_item.jsonl")}
    preds = {p["item_id"]: p for p in read_jsonl(tmp_path / "run_ovo" / "predictions.jsonl") if "item_id" in p}
    for item_id, record in forward.items():  # asked once at every probe time
        assert [r["t_s"] for r in preds[item_id]["responses"]] == [p["t_s"] for p in record["probes"]]

    sb_report = evaluate("streamingbench", tmp_path / "sb", tmp_path / "run_sb" / "predictions.jsonl")
    proactive = read_jsonl(tmp_path / "sb" / "active_item.jsonl")
    sb_preds = {p.get("item_id"): p for p in read_jsonl(tmp_path / "run_sb" / "predictions.jsonl")}
    for r in proactive:  # yes at the first poll: question time + 1 s, then the answer
        said = sb_preds[r["item_id"]]["responses"]
        assert [s["t_s"] for s in said] == [r["query_time_s"] + 1] * 4 and said[1]["text"] == "Yes"
    expected_time = sum(abs(r["query_time_s"] + 1 - r["target"]["t_s"]) <= 2 for r in proactive) / len(proactive)
    assert sb_report["overall"]["time_accuracy"] == expected_time
    assert sb_report["overall"]["accuracy"] == sum(r["answer"] == 0 for r in sqa) / len(sqa)


@pytest.mark.llm_server
def test_proactive_polling_stops_at_ground_truth_plus_4_and_own_history(tmp_path):
    from streamcue.llm import LLMSettings
    from streamcue.loaders.engine import play
    from streamcue.loaders.protocols.streamingbench import StreamingBench
    from streamcue.loaders.strategies import make_strategy
    from streamcue.testing.stub_llm import StubLLMServer

    def never(body):
        system = body["messages"][0]["content"]
        return json.dumps({"answer": "no"} if '"answer"' in system else {"text": "C"})

    item = {"item_id": "p1", "video_id": "v1", "benchmark": "streamingbench", "task": "Proactive Output",
            "group": "proactive", "question": "Say when.", "query_time_s": 10.0, "probes": [],
            "target": {"t_s": 13.0, "text": "now"}}
    turns = [dict(VALID_SQA, question_id=f"s{n}", query_time_s=float(n), context={"group_id": "g", "turn": n})
             for n in (1, 2)]
    with StubLLMServer(never) as server:
        settings = LLMSettings(base_url=server.base_url, model="stub-vl")
        poller = make_strategy("polling", settings, "active_item", protocol="streamingbench", hz=1.0, use_cache=False)
        streamcue_prompts = StreamingBench("streamcue")  # this test reads streamcue's JSON prompts
        (preds,), report = play([item], "active_item", strategy=poller, k=2, protocol=streamcue_prompts)
        asker = make_strategy("single-call", settings, "mc_question", use_cache=False)
        sqa, _ = play(turns[::-1], "mc_question", strategy=asker, history="own", k=2,  # turn order, whatever the input
                      protocol=streamcue_prompts)
        dialogue = [m["text"] for m in server.requests[-1]["messages"][-1]["content"] if m["type"] == "text"]
    polls = preds["responses"]
    assert [r["t_s"] for r in polls if r["role"] == "assistant"] == [11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]
    assert all(r["text"] == "No" for r in polls if r["role"] == "assistant")
    assert any("assistant: C" in t for t in dialogue), dialogue  # turn 2 sees the model's own turn-1 answer
    assert report["strategy"]["ask_yes_no"] == 7 and asker.stats["ask_choice"] == 2
    assert [p["question_id"] for p in sqa] == ["s2", "s1"]  # predictions in the input order


VALID_SQA = {"video_id": "v1", "benchmark": "streamingbench", "task": "Sequential Question Answering", "group": "sqa",
             "question": "Who serves?", "options": ["Ma", "Fan"], "answer": 1}


#: A prompt edit must be deliberate: a new version file, and its hash here.
@pytest.mark.parametrize("args, words", [
    (["ovo-bench", "--pred", "GPT_FILE", "--pred-format", "ovo-results"], "expected an OVO-Bench results folder"),
    (["streamingbench", "--pred", "GPT_FILE"],
     "field benchmark: this is an 'ovo-bench' record; this scorer is for streamingbench"),
    (["ovo-bench", "--pred", "GPT", "--pred-format", "ovo-results", "--param", "rules=lenient"],
     "rules must be official, strict or lmms-eval"),
    (["ovo-bench", "--pred", "GPT", "--pred-format", "streamingbench"], "unknown --pred-format 'streamingbench'"),
    (["ovo-bench", "--pred", "GPT", "--pred-format", "ovo-results", "--param", "time_window_s=3"],
     "unknown ovo_bench parameters"),
])
def test_hostile_evaluate_options_are_one_line_errors(ovo_out, args, words):
    results = OVO / "results" / "GPT"
    args = [str(results) if a == "GPT" else str(results / "GPT_ACR_offline.json") if a == "GPT_FILE" else a
            for a in args]
    result = cli("evaluate", args[0], "--gt", ovo_out[0], *args[1:])
    assert result.returncode == 2 and words in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2 and "Traceback" not in result.stderr


def test_a_results_entry_for_an_unknown_id_is_refused(ovo_out, tmp_path):
    folder = tmp_path / "M"
    folder.mkdir()
    entry = {"id": 999999, "task": "EPM", "response": "A", "ground_truth": "A"}
    (folder / "x.json").write_text(json.dumps({"backward": [entry], "realtime": [], "forward": []}))
    result = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", folder, "--pred-format", "ovo-results")
    assert result.returncode == 2 and "x.json, record backward[0], field id: unknown id 999999" in result.stderr


def test_ovo_aggregation_by_hand():
    """EPM 1/2, STU 1/1, REC probes pooled 1/4: groups 0.5 / 1.0 / 0.25, total their mean 0.5833."""
    from streamcue.metrics.ovo_bench import Entry, aggregate

    entries = [Entry("e1", "EPM", letter="A", response="A"), Entry("e2", "EPM", letter="B", response="C"),
               Entry("s1", "STU", letter="D", response="D."),
               Entry("r1", "REC", probes=[("1", "1"), ("2", "3")]), Entry("r2", "REC", probes=[("0", None), ("1", "")])]
    overall, groups, per_item = aggregate(entries, "official")
    assert (overall["backward"], overall["realtime"], overall["forward"]) == (0.5, 1.0, 0.25)
    assert overall["total"] == pytest.approx((0.5 + 1.0 + 0.25) / 3) and groups["task"]["REC"]["n"] == 4
    assert per_item["r1"] == {"task": "REC", "correct": 1, "scored": 2}


def test_streamingbench_missing_answers_official_left_out_strict_wrong(sb_out, tmp_path):
    mc = [r for r in read_jsonl(sb_out[0] / "mc_question.jsonl") if r["subset"] == "real"]
    half = mc[: len(mc) // 2]
    write_jsonl(tmp_path / "half.jsonl", [{"question_id": r["question_id"], "response": chr(65 + r["answer"])}
                                          for r in half])
    official = evaluate("streamingbench", sb_out[0], tmp_path / "half.jsonl")
    strict = evaluate("streamingbench", sb_out[0], tmp_path / "half.jsonl", rules="strict")
    assert official["overall"] == {"n": len(half), "accuracy": 1.0}
    assert strict["overall"]["n"] == len(mc) and strict["overall"]["accuracy"] == len(half) / len(mc)
    assert len(strict["missing_predictions"]) == len(mc) - len(half) and strict["subsets"] == ["real"]


# ---------------------------------------------------------------- official prompt sets

def _official_constants(path):
    """The string constants of an official module, read without running it (its imports need its repository)."""
    import ast

    tree = ast.parse(path.read_text())
    return {n.targets[0].id: n.value.value for n in tree.body
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}


def test_official_ovo_prompts_are_the_official_texts(ovo_out):
    from streamcue.loaders.protocols import Context
    from streamcue.loaders.protocols.ovo_bench import OVOBench

    const = _official_constants(OVO / "official" / "constant.py")
    protocol = OVOBench("official")
    assert protocol.complete_prompts and protocol.prompts[0] == "ovo_official_choice.v1"
    q = read_jsonl(ovo_out[0] / "mc_question.jsonl")[0]
    (turn,) = protocol.turns(q, Context())
    options = "; ".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(q["options"])) + ";"  # utils/OVOBench.py
    assert turn.text == const["BR_PROMPT_TEMPLATE"].format(q["question"], options) and turn.form == "choice"
    items = {r["task"]: r for r in read_jsonl(ovo_out[0] / "active_item.jsonl")}
    rec = protocol.turns(items["REC"], Context())[0]
    assert rec.text == const["REC_PROMPT_TEMPLATE"].format(f"How many times did they {items['REC']['activity']}?")
    ssr = protocol.turns(items["SSR"], Context())
    assert [t.text for t in ssr] == [const["SSR_PROMPT_TEMPLATE"].format(p["step"]) for p in items["SSR"]["probes"]]
    assert [t.probe for t in ssr] == list(range(len(items["SSR"]["probes"])))
    crr = protocol.turns(items["CRR"], Context())[0]
    assert crr.text == const["CRR_PROMPT_TEMPLATE"].format(items["CRR"]["question"])
    assert OVOBench().prompt_set == "official" and "Reply" not in turn.text  # the default, documented


def test_official_streamingbench_prompts_are_the_official_texts(sb_out):
    from streamcue.loaders.protocols import Context
    from streamcue.loaders.protocols.streamingbench import StreamingBench

    bench = SB / "official" / "benchmark"
    plain = _official_constants(bench / "StreamingBench.py")["PROMPT_TEMPLATE"]
    sqa_t = _official_constants(bench / "StreamingBenchSQA.py")["PROMPT_TEMPLATE"]
    pro_t = _official_constants(bench / "StreamingBenchProactive.py")["PROMPT_TEMPLATE_PROACTIVE"]
    protocol = StreamingBench("official", context="last-60s")
    assert protocol.window_s == 60.0 and StreamingBench().window_s is None
    mc = read_jsonl(sb_out[0] / "mc_question.jsonl")
    real = next(r for r in mc if r["subset"] == "real" and len(r["options"]) == 4)
    opts = [f"{chr(65 + i)}. {o}" for i, o in enumerate(real["options"])]
    (turn,) = protocol.turns(real, Context(history="gold"))
    assert turn.text == plain.format(real["question"], *opts) + "\n\nThe best option is:"
    sqa = [r for r in mc if r.get("context") and len(r["options"]) == 4]
    context = Context(history="gold")
    for r in sqa:
        context.groups.setdefault(r["context"]["group_id"], []).append(r)
    second = next(r for r in sqa if r["context"]["turn"] > 0 and all(len(e["options"]) == 4 for e in context.group(r)))
    text = ""
    for e in context.group(second)[:-1]:  # the official context string, built as StreamingBenchSQA.py does
        eo = [f"{chr(65 + i)}. {o}" for i, o in enumerate(e["options"])]
        h, m, s = int(e["query_time_s"]) // 3600, int(e["query_time_s"]) % 3600 // 60, int(e["query_time_s"]) % 60
        if not text:
            text += ("Here are the contextual information related to the video. Please answer the questions based on "
                     "the contextual information: ")
        text += (f"At timestamp {h:02d}:{m:02d}:{s:02d}, the following question and answer occurred: Question: "
                 f"{e['question']}; Options: {eo[0]}, {eo[1]}, {eo[2]}, {eo[3]}; Answer: {chr(65 + e['answer'])}; ")
    opts = [f"{chr(65 + i)}. {o}" for i, o in enumerate(second["options"])]
    (turn,) = protocol.turns(second, context)
    assert turn.text == sqa_t.format(text, second["question"], *opts) and not turn.dialogue
    item = read_jsonl(sb_out[0] / "active_item.jsonl")[0]
    (turn,) = protocol.turns(item, Context())
    query = (f"{item['question']} Is it the right time to output \"{item['target']['text']}\"? "
             "You can only answer yes or no.")
    assert turn.poll == pro_t.format(query) and turn.text == pro_t.format(item["question"])
    assert turn.t_s == item["query_time_s"] + 1 and turn.until_s == item["target"]["t_s"] + 4
    assert StreamingBench.poll_says_yes(" Yes, now.") and not StreamingBench.poll_says_yes("No")
    assert StreamingBench.parsed(real, "Answer: B") == "A"  # count.py's first character


def test_unknown_prompt_set_or_context_is_one_line():
    from streamcue.errors import ConfigError
    from streamcue.loaders.protocols.ovo_bench import OVOBench
    from streamcue.loaders.protocols.streamingbench import StreamingBench

    with pytest.raises(ConfigError, match="unknown prompt set 'leaderboard'"):
        OVOBench("leaderboard")
    with pytest.raises(ConfigError, match="use all .* or last-60s"):
        StreamingBench(context="60")


# ---------------------------------------------------------------- nothing wrong accepted silently (issue 25)

def test_rewritten_gold_letters_are_reported_and_strict_uses_the_records(ovo_out, tmp_path):
    import shutil

    folder = tmp_path / "GPT"
    shutil.copytree(OVO / "results" / "GPT", folder)
    acr = folder / "GPT_ACR_offline.json"
    data = json.loads(acr.read_text())
    for item in data["realtime"]:  # the gold letter rewritten to whatever the model said
        item["ground_truth"] = (item["response"] or "A")[:1]
    acr.write_text(json.dumps(data))
    changed = [f"ovo-{i['id']}" for i, o in zip(data["realtime"], json.loads(
        (OVO / "results" / "GPT" / "GPT_ACR_offline.json").read_text())["realtime"]) if i["ground_truth"] !=
        o["ground_truth"]]
    out = tmp_path / "r.json"
    result = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", folder, "--pred-format", "ovo-results",
                 "--output", out)
    assert result.returncode == 0 and f"{len(changed) + 3} gold answers that differ from the records'" in result.stderr
    report = json.loads(out.read_text())
    assert {m["id"] for m in report["ground_truth_mismatches"]} >= set(changed) and report["gold_source"] == "records"
    strict = evaluate("ovo-bench", ovo_out[0], folder, pred_format="ovo-results", rules="strict")
    original = evaluate("ovo-bench", ovo_out[0], OVO / "results" / "GPT", pred_format="ovo-results", rules="strict")
    assert strict["groups"]["task"]["ACR"] == original["groups"]["task"]["ACR"]  # the records' letters, not theirs
    bare = cli("evaluate", "ovo-bench", "--pred", folder, "--pred-format", "ovo-results")
    assert bare.returncode == 0 and "gold answers were taken from the file" in bare.stdout
    refused = cli("evaluate", "ovo-bench", "--pred", folder, "--pred-format", "ovo-results", "--param", "rules=strict")
    assert refused.returncode == 2 and "--gt is needed" in refused.stderr


def _forward_preds(ovo_out, tmp_path, edit):
    items = read_jsonl(ovo_out[0] / "active_item.jsonl")[:3]
    preds = [{"item_id": r["item_id"], "responses": [{"t_s": p["t_s"], "probe": i, "text": p["expected"]}
                                                    for i, p in enumerate(r["probes"])]} for r in items]
    edit(preds, items)
    path = tmp_path / "pred.jsonl"
    write_jsonl(path, preds)
    return path, items


@pytest.mark.parametrize("edit, problem", [
    (lambda p, _: p[0]["responses"][0].pop("probe"), "forward responses without the probe field"),
    (lambda p, _: p[0]["responses"][0].update(probe=99), "probe index out of range"),
    (lambda p, _: p[0]["responses"].append(dict(p[0]["responses"][0])), "probes answered more than once"),
    (lambda p, items: p.__setitem__(0, {"question_id": items[0]["item_id"], "response": "Yes"}),
     "predictions of the wrong kind for their id"),
])
def test_forward_prediction_problems_are_counted_named_and_strict_refuses(ovo_out, tmp_path, edit, problem):
    path, items = _forward_preds(ovo_out, tmp_path, edit)
    result = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", path)
    assert result.returncode == 0 and f"warning: 1 {problem}" in result.stderr and items[0]["item_id"] in result.stderr
    report = evaluate("ovo-bench", ovo_out[0], path)
    (name,) = report["problems"]
    assert report["problems"][name]["ids"] == [items[0]["item_id"]]
    strict = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", path, "--param", "rules=strict")
    assert strict.returncode == 2 and "rules=strict" in strict.stderr and f"record {items[0]['item_id']}" in \
        strict.stderr and "Traceback" not in strict.stderr


def test_object_answers_in_a_results_folder_are_named(ovo_out, tmp_path):
    import shutil

    folder = tmp_path / "GPT"
    shutil.copytree(OVO / "results" / "InternVL2", folder)
    file = folder / "InternVL2_EPM_offline.json"
    data = json.loads(file.read_text())
    data["backward"][0]["response"] = {"text": data["backward"][0]["ground_truth"]}
    file.write_text(json.dumps(data))
    report = evaluate("ovo-bench", ovo_out[0], folder, pred_format="ovo-results")
    assert report["problems"]["object_answers"]["ids"] == [f"ovo-{data['backward'][0]['id']}"]
    with pytest.raises(Exception, match="rules=strict: 1 answers given as objects"):
        evaluate("ovo-bench", ovo_out[0], folder, pred_format="ovo-results", rules="strict")


def test_empty_or_object_streamingbench_predictions_warn_and_strict_refuses(sb_out, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = cli("evaluate", "streamingbench", "--gt", sb_out[0], "--pred", empty)
    assert result.returncode == 0 and "warning: 1 prediction files with no answer" in result.stderr
    strict = cli("evaluate", "streamingbench", "--gt", sb_out[0], "--pred", empty, "--param", "rules=strict")
    assert strict.returncode == 2 and "no answer" in strict.stderr and "Traceback" not in strict.stderr
    data = json.loads((SB / "questions_real.json").read_text())
    rows = list(streamingbench.iter_questions(data, "real", SB / "questions_real.json"))
    for n, (*_, q) in enumerate(rows[:20]):
        q["M"] = {"answer": q["answer"]} if n < 2 else q["answer"]
    answered = tmp_path / "real.json"
    answered.write_text(json.dumps(data))
    result = cli("evaluate", "streamingbench", "--gt", sb_out[0], "--pred", answered, "--pred-format",
                 "streamingbench", "--pred-model", "M")
    assert result.returncode == 0 and "warning: 2 answers given as objects" in result.stderr
    report = evaluate("streamingbench", sb_out[0], answered, pred_format="streamingbench", model="M")
    assert report["overall"]["n"] == 18 and report["overall"]["accuracy"] == 1.0


def test_parameter_overrides_show_in_the_label_and_the_report(ovo_out, tmp_path):
    out = tmp_path / "r.json"
    result = cli("evaluate", "ovo-bench", "--gt", ovo_out[0], "--pred", OVO / "results" / "LLaVA_OneVision",
                 "--pred-format", "ovo-results", "--param", "total=tasks", "--output", out)
    assert result.returncode == 0 and "ovo_bench.v2+overrides" in result.stdout.replace("\n", "")
    assert "overridden parameters: total='tasks'" in result.stdout
    report = json.loads(out.read_text())
    assert report["config_version"] == "ovo_bench.v2+overrides" and report["overrides"] == {"total": "tasks"}
    plain = evaluate("ovo-bench", ovo_out[0], OVO / "results" / "LLaVA_OneVision", pred_format="ovo-results")
    assert plain["config_version"] == "ovo_bench.v2" and "overrides" not in plain
    v1 = evaluate("ovo-bench", ovo_out[0], OVO / "results" / "LLaVA_OneVision", pred_format="ovo-results",
                  config_version=1)
    assert v1["config_version"] == "ovo_bench.v1" and v1["official_figures"] == plain["official_figures"]


def test_lmms_eval_sample_logs_score_like_the_results_folder(ovo_out, tmp_path):
    """lmms-eval --log_samples lines (doc + filtered_resps, or the process_results dict) score as the same
    answers in an OVO results folder."""
    mc = read_jsonl(ovo_out[0] / "mc_question.jsonl")[:40]
    active = [r for r in read_jsonl(ovo_out[0] / "active_item.jsonl") if r["task"] == "SSR"][:3]
    lines, folder_data = [], {"backward": [], "realtime": [], "forward": []}
    for n, q in enumerate(mc):
        doc = {"id": int(q["question_id"][4:]), "task": q["task"], "question": q["question"],
               "options": q["options"], "gt": q["answer"]}
        said = "ABCD"[n % 4]
        lines.append({"doc_id": n, "doc": doc, "target": "", "resps": [[said]], "filtered_resps": [said]})
        folder_data[q["group"]].append({"id": doc["id"], "task": q["task"], "response": said,
                                        "ground_truth": chr(65 + q["answer"])})
    for item in active:
        info = [{"step": p["step"], "type": int(p["expected"] == "Yes")} for p in item["probes"]]
        said = ["Yes" if i % 2 else None for i in range(len(info))]
        doc = {"id": int(item["item_id"][4:]), "task": "SSR", "test_info": info}
        lines.append({"doc_id": 99, "doc": doc, "resps": [[said]], "filtered_resps": [said]})
        folder_data["forward"].append({"id": doc["id"], "task": "SSR",
                                       "test_info": [{**p, "response": s} for p, s in zip(info, said)]})
    write_jsonl(tmp_path / "samples_ovo.jsonl", lines)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "x.json").write_text(json.dumps(folder_data))
    for rules in ("official", "lmms-eval"):
        logs = evaluate("ovo-bench", ovo_out[0], tmp_path / "samples_ovo.jsonl", pred_format="lmms-eval", rules=rules)
        folder = evaluate("ovo-bench", ovo_out[0], tmp_path / "folder", pred_format="ovo-results", rules=rules)
        assert logs["official_figures"] == folder["official_figures"] and logs["per_item"] == folder["per_item"]
    answered = sum(1 for item in active for i in range(len(item["probes"])) if i % 2)
    assert logs["groups"]["task"]["SSR"]["n"] == answered  # lmms-eval skips the probes without a response


def test_livecook_overrides_are_labelled_not_passed_off_as_v2(tmp_path):
    """Issue 25: --param success_matching=any --param mistake_matching=closest_first computed v1's semantics
    under the label livecook.v2; the label now says +overrides and the report lists them (one place:
    metrics/scoring.py, for every metric)."""
    (tmp_path / "gt.jsonl").write_text(json.dumps({"video_id": "v", "events": [
        {"t_s": 10.0, "type": "mistake", "text": "a"}]}) + "\n")
    (tmp_path / "pred.jsonl").write_text(json.dumps({"video_id": "v", "events": [
        {"t_s": 12.0, "type": "mistake", "text": "a"}]}) + "\n")
    out = tmp_path / "r.json"
    result = cli("evaluate", "livecook", "--gt", tmp_path / "gt.jsonl", "--pred", tmp_path / "pred.jsonl",
                 "--no-bertscore", "--param", "success_matching=any", "--param", "mistake_matching=closest_first",
                 "--output", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["config_version"] == "livecook.v2+overrides"
    assert report["overrides"] == {"success_matching": "any", "mistake_matching": "closest_first"}
    assert "overridden parameters: success_matching='any', mistake_matching='closest_first'" in result.stdout
