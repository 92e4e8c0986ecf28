"""Parity with the official scorers, run as they are from ../shared (never copied into the project).

* OVO-Bench: ``score.py --mode offline`` + ``utils/OVOBenchScore.py`` at commit c34093f
  (``shared/data/ovo_bench/official/``) on the three shipped result folders and on crafted folders
  with missing forward probes; lmms-eval's copy of the scorer (``shared/data/ovo_bench/lmms_eval/score.py``,
  commit 75571cf) on the same folders, aggregated as lmms-eval's ``ovo_back_real_acc`` /
  ``ovo_forward_acc`` do (per YAML task: the mean of its task accuracies).
* StreamingBench: ``src/data/count.py`` (``shared/data/streamingbench/official/count.py``, commit 8929923)
  on answered questions files of every subset.

Every figure the official code prints or writes is compared with streamcue's report.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from streamcue.dataset_builders import ovo_bench, streamingbench
from streamcue.dataset_builders.bench_sources import QuirkReport, parse_time
from streamcue.dataset_builders.output import write_outputs
from streamcue.io import read_jsonl
from streamcue.metrics import evaluate

pytestmark = pytest.mark.slow

OVO = SHARED_DATA / "ovo_bench"
OFFICIAL = OVO / "official"
LMMS = OVO / "lmms_eval" / "score.py"
SB = SHARED_DATA / "streamingbench"
COUNT = SB / "official" / "count.py"
MODELS = ["GPT", "InternVL2", "LLaVA_OneVision"]
GROUP = {"EPM": "backward", "ASI": "backward", "HLD": "backward", "STU": "realtime", "OJR": "realtime",
         "ATR": "realtime", "ACR": "realtime", "OCR": "realtime", "FPD": "realtime", "REC": "forward",
         "SSR": "forward", "CRR": "forward"}

# Runs lmms-eval's scorer module (loaded from its file, unchanged) on a results folder and prints what its
# ovobench aggregation functions would report: per task 100 * mean, per group (YAML task) the mean of those.
_LMMS_DRIVER = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("lmms_ovo_score", sys.argv[1])
score = importlib.util.module_from_spec(spec); spec.loader.exec_module(score)
results = {"backward": [], "realtime": [], "forward": []}
for name in sorted(os.listdir(sys.argv[2])):
    data = json.load(open(os.path.join(sys.argv[2], name)))
    for group in results:
        results[group] += data[group]
out = {}
for group in results:
    if not results[group]:
        continue
    fn = score.calculate_score_forward if group == "forward" else score.calculate_score_backward_realtime
    _, scores = fn(results[group])
    accs = []
    for task, v in scores.items():
        out[task] = 100 * sum(v) / len(v)
        accs.append(sum(v) / len(v))
    out[group + "_avg"] = 100 * sum(accs) / len(accs)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ovo_gt(tmp_path_factory):
    out = tmp_path_factory.mktemp("ovo")
    write_outputs(ovo_bench.build(ovo_bench.Config(OVO / "ovo_bench_new.json"), QuirkReport()), out)
    return out


@pytest.fixture(scope="module")
def sb_gt(tmp_path_factory):
    out = tmp_path_factory.mktemp("sb")
    write_outputs(streamingbench.build(streamingbench.Config(SB), QuirkReport()), out)
    return out


def official_ovo(folder: Path) -> dict[str, float]:
    """What ``score.py --mode offline`` prints for ``folder`` (its name must be one the script knows: GPT...)."""
    result = subprocess.run([sys.executable, "score.py", "--mode", "offline", "--model", folder.name,
                             "--result_dir", str(folder.parent)], cwd=OFFICIAL, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    figures = {m.group(1): float(m.group(2)) for m in re.finditer(r"Task: (\w+), Acc: ([\d.]+)", result.stdout)}
    for name, key in (("Backward", "backward_avg"), ("Realtime", "realtime_avg"), ("Forward", "forward_avg"),
                      ("Total", "total_avg")):
        found = re.search(rf"{name} Avg\.: ([\d.]+)", result.stdout)
        if found:
            figures[key] = float(found.group(1))
    return figures


def lmms_ovo(folder: Path) -> dict[str, float]:
    result = subprocess.run([sys.executable, "-c", _LMMS_DRIVER, str(LMMS), str(folder)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def ours(report: dict) -> dict[str, float]:
    return {k: v for k, v in report["official_figures"].items() if v is not None}


@pytest.mark.parametrize("model", MODELS)
def test_ovo_shipped_folders_equal_the_official_scorer(ovo_gt, model, tmp_path):
    folder = tmp_path / model
    shutil.copytree(OVO / "results" / model, folder)
    official = official_ovo(folder)
    shipped = {k: v for k, v in json.loads((OVO / "results" / "official_scores.json").read_text())[model].items()
               if k != "crashed"}
    assert official == shipped                      # the scorer, run here, prints what official_scores.json says
    for gt in (ovo_gt, None):                       # with the records, and with the gold letters of the file
        report = evaluate("ovo-bench", gt, folder, pred_format="ovo-results")
        assert ours(report) == official, gt
    lmms = lmms_ovo(folder)                         # no missing probe in these folders: lmms-eval agrees
    report = evaluate("ovo-bench", ovo_gt, folder, pred_format="ovo-results", rules="lmms-eval")
    for key, value in lmms.items():
        assert report["official_figures"][key] == float(f"{value:.2f}"), key


def _crafted_folder(root: Path, gt: Path, rng: random.Random, missing_share: float) -> Path:
    """A results folder in the official layout (model name GPT) answering some items of every task, with some
    forward probes left without a response (None)."""
    mc = read_jsonl(gt / "mc_question.jsonl")
    active = read_jsonl(gt / "active_item.jsonl")
    data: dict[str, list] = {"backward": [], "realtime": [], "forward": []}
    for task in GROUP:
        if GROUP[task] == "forward":
            for item in [r for r in active if r["task"] == task][:6]:
                probes = []
                for p in item["probes"]:
                    probe = {"realtime": p["t_s"], "response": None if rng.random() < missing_share else
                             rng.choice([p["expected"], "Yes", "No", "N", "Y", "3", "1 or 2", "Yesterday"])}
                    probe.update({"count": int(p["expected"])} if task == "REC" else
                                 {"type": int(p["expected"] == "Yes")})
                    probes.append(probe)
                data["forward"].append({"id": int(item["item_id"].removeprefix("ovo-")), "task": task,
                                        "test_info": probes})
            continue
        for q in [r for r in mc if r["task"] == task][:7]:
            gold = chr(65 + q["answer"])
            data[GROUP[task]].append({"id": int(q["question_id"].removeprefix("ovo-")), "task": task,
                                      "response": rng.choice([gold, "A", "B", "Answer: C", "D.", None, ""]),
                                      "ground_truth": gold})
    folder = root / "GPT"
    folder.mkdir(parents=True)
    (folder / "GPT_crafted_offline.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("seed", range(4))
def test_ovo_crafted_folders_with_missing_probes_official_and_lmms_eval(ovo_gt, tmp_path, seed):
    folder = _crafted_folder(tmp_path, ovo_gt, random.Random(seed), missing_share=0.25)
    official = official_ovo(folder)
    report = evaluate("ovo-bench", ovo_gt, folder, pred_format="ovo-results")
    assert ours(report) == official
    lmms = lmms_ovo(folder)
    report = evaluate("ovo-bench", ovo_gt, folder, pred_format="ovo-results", rules="lmms-eval")
    for key, value in lmms.items():
        assert report["official_figures"][key] == float(f"{value:.2f}"), key


def test_eight_probes_two_missing_five_right_official_62_50_lmms_eval_83_33(ovo_gt, tmp_path):
    """PAPERS.md section 7: 8 probes, 2 without a response, 5 right: 62.50 (official) vs 83.33 (lmms-eval)."""
    crr = [r for r in read_jsonl(ovo_gt / "active_item.jsonl") if r["task"] == "CRR"]
    answers = iter([True] * 5 + [False] + [None] * 2)  # 5 right, 1 wrong, 2 missing
    forward = []
    for item in crr:
        probes = []
        for p in item["probes"]:
            said = next(answers, "stop")
            if said == "stop":
                break
            wrong = "No" if p["expected"] == "Yes" else "Yes"
            probes.append({"type": int(p["expected"] == "Yes"),
                           "response": None if said is None else p["expected"] if said else wrong})
        if probes:
            forward.append({"id": int(item["item_id"].removeprefix("ovo-")), "task": "CRR", "test_info": probes})
        if sum(len(f["test_info"]) for f in forward) == 8:
            break
    mc = read_jsonl(ovo_gt / "mc_question.jsonl")
    back = next(q for q in mc if q["task"] == "EPM")
    real = next(q for q in mc if q["task"] == "STU")
    folder = tmp_path / "GPT"
    folder.mkdir()
    (folder / "GPT_x_offline.json").write_text(json.dumps({
        "backward": [{"id": int(back["question_id"][4:]), "task": "EPM", "response": "A",
                      "ground_truth": chr(65 + back["answer"])}],
        "realtime": [{"id": int(real["question_id"][4:]), "task": "STU", "response": "A",
                      "ground_truth": chr(65 + real["answer"])}],
        "forward": forward}))
    assert official_ovo(folder)["CRR"] == 62.50
    assert lmms_ovo(folder)["CRR"] == pytest.approx(83.333, abs=1e-3)
    official = evaluate("ovo-bench", ovo_gt, folder, pred_format="ovo-results")
    lmms = evaluate("ovo-bench", ovo_gt, folder, pred_format="ovo-results", rules="lmms-eval")
    assert official["official_figures"]["CRR"] == 62.50 and lmms["official_figures"]["CRR"] == 83.33
    assert lmms["config_version"] == "ovo_bench.v2+overrides" and lmms["overrides"] == {"rules": "lmms-eval"}


# ---------------------------------------------------------------- StreamingBench: count.py

def _answer(path: Path, model: str, rng: random.Random) -> list:
    data = json.loads(path.read_text())
    group = path.stem.removeprefix("questions_").split("_")[0]
    for *_, q in streamingbench.iter_questions(data, path.stem, path):
        if rng.random() < 0.05:
            continue                                   # not answered: count.py leaves it out
        if group == "proactive":
            t = parse_time(q["ground_truth_time_stamp"], path, "", "") + rng.choice([-3, -2, 0, 1, 2, 3, 5])
            q[model] = {"answered": t, "dialog_history": [
                {"role": "user", "content": "Is it the right time?", "time": t},
                {"role": "assistant", "content": rng.choice([q["ground_truth_output"], "yes", ""]), "time": t}]}
        else:  # never "": count.py's answer[0] fails on it
            q[model] = rng.choice(["A", "B", "C", "D", q["answer"], q["answer"] + ". yes", "Answer: B",
                                   [q["answer"]], ["B", "A"], " A"])
    return data


def official_count(answered: Path, model: str, task: str, cwd: Path) -> dict:
    result = subprocess.run([sys.executable, str(COUNT), "--model", model, "--task", task, "--src", str(answered)],
                            cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads((cwd / f"{model}_stats.json").read_text())


@pytest.mark.parametrize("name", ["real", "omni", "sqa", "proactive"])
def test_streamingbench_answered_files_equal_count_py(sb_gt, tmp_path, name):
    answered = tmp_path / "answered.json"
    answered.write_text(json.dumps(_answer(SB / f"questions_{name}.json", "MyModel", random.Random(name))))
    stats = official_count(answered, "MyModel", name, tmp_path)
    report = evaluate("streamingbench", sb_gt, answered, pred_format="streamingbench", model="MyModel")
    got = report["groups"]["task_type"]
    assert set(got) == set(stats) - {"total"}
    for task, counts in got.items():
        assert counts["n"] == stats[task]["total"]
        if name == "proactive":
            assert counts["time_accuracy"] == stats[task]["time_accuracy"]
            assert counts["answer_accuracy"] == stats[task]["answer_accuracy"]
        else:
            assert counts["accuracy"] == stats[task]["accuracy"]
    if "total" in stats:
        assert report["overall"]["n"] == stats["total"]["total"]
        assert report["overall"]["accuracy"] == stats["total"]["accuracy"]


# ---------------------------------------------------------------- OASIS memory defaults

def test_oasis_memory_defaults_follow_the_official_config():
    """shared/data/streambench/oasis_default.yaml (Solus-sano/OASIS src/configs/default.yaml, commit dbd342c)."""
    import inspect

    import yaml

    from streamcue.loaders.strategies.oasis import OFFICIAL, OasisMemory

    official = yaml.safe_load((SHARED_DATA / "streambench" / "oasis_default.yaml").read_text())
    assert OFFICIAL == {"short_k": official["short_memory"]["now_window_frames_limit"],
                        "event_frames": official["event_node"]["max_frames_per_node"],
                        "summary_frames": official["event_node"]["max_frames_per_node"],
                        "max_roots": official["event_forest"]["root_cnt_limit"],
                        "k_f": official["event_forest"]["rag_event_retrieve_limit"],
                        "k_q": official["event_forest"]["rag_qa_retrieve_limit"]}
    defaults = {n: p.default for n, p in inspect.signature(OasisMemory).parameters.items()}
    assert {n: defaults[n] for n in OFFICIAL} == OFFICIAL


@pytest.mark.llm_server
def test_oasis_forest_keeps_at_most_four_roots_as_the_official_code():
    from streamcue.llm import LLMSettings
    from streamcue.loaders.replay import Frame
    from streamcue.loaders.strategies.oasis import OasisMemory
    from streamcue.testing.stub_llm import StubLLMServer

    with StubLLMServer(lambda body: json.dumps({"text": "the person stirs the pot"})) as server:
        memory = OasisMemory(LLMSettings(base_url=server.base_url, model="stub"), use_cache=False)
        memory.observe([Frame(i, float(i)) for i in range(16 + 16 * 29)])
    assert memory.stats["ask_event"] == 29 and len(memory.roots) <= 4
    roots = [memory.nodes[r] for r in memory.roots]
    assert [n.start_s for n in roots] == sorted(n.start_s for n in roots) and roots[0].start_s == 0.0
