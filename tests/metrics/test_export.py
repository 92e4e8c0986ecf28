"""``streamcue export``: a run folder in the official output formats, scored by the official scorers as they are.

A run is made by ``streamcue run`` against the local stub server (:mod:`streamcue.testing.stub_llm`, plain-text
answers from a hash of the prompt, never the ground truth), exported, and the export is scored by the official
code in ../shared (OVO-Bench ``score.py --mode offline`` at c34093f, StreamingBench ``src/data/count.py`` at
8929923), run unchanged in a subprocess: every figure they print or write equals the run's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED_DATA

pytestmark = [pytest.mark.slow, pytest.mark.llm_server]

FIXTURES = SHARED_DATA / "fixtures"
OVO_SCORER = SHARED_DATA / "ovo_bench" / "official"
COUNT = SHARED_DATA / "streamingbench" / "official" / "count.py"
DOCS = Path(__file__).resolve().parents[2] / "docs"
MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"


def cli(*args, cache, cwd=None):
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "200", "STREAMCUE_NO_PROGRESS": "1", "STREAMCUE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd)


def plain_model(body):
    """Plain-text answers chosen from a hash of the prompt: letters at the start or inside, counts, yes/no, and
    now and then garbage; a proactive poll says yes one time in three."""
    from streamcue.testing.stub_llm import message_text

    text = "\n".join(message_text(m) for m in body.get("messages", []))
    h = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    if "right time to output" in text:
        return "Yes, now." if h % 3 == 0 else "No."
    if h % 5 == 0:
        return "hmm... hard to say"
    if "How many times" in text:
        return f"They did it {h % 4} times."
    if "A." not in text:
        return ["Yes", "No", "3", "It says 3."][h % 4]
    return [f"{'ABCD'[h % 4]}. that one", f"The answer is {'ABCD'[h % 4]}.", "Answer: C"][h % 3]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An OVO-Bench run (one question per task) and a StreamingBench run (real, omni, SQA and proactive)."""
    from streamcue.testing.stub_llm import StubLLMServer

    root = tmp_path_factory.mktemp("export")
    cache = root / "cache"
    sb_src = root / "sb_src"
    sb_src.mkdir()
    for name in ("real", "proactive"):
        (sb_src / f"questions_{name}.json").write_text(
            (FIXTURES / "streamingbench" / f"questions_{name}.first3.json").read_text())
    for name, step in (("omni", 125), ("sqa", 25)):  # whole entries: omni 12 (every task), SQA 2 videos
        data = json.loads((SHARED_DATA / "streamingbench" / f"questions_{name}.json").read_text())
        (sb_src / f"questions_{name}.json").write_text(json.dumps(data[::step]))
    for args in (("ovo-bench", "--annotations", FIXTURES / "ovo_bench" / "ovo_bench_new.one_per_task.json"),
                 ("streamingbench", "--questions", sb_src)):
        done = cli("build", *args, "--out", root / f"{args[0]}-build", cache=cache)
        assert done.returncode == 0, done.stderr
    with StubLLMServer(plain_model, model=MODEL) as stub:
        for bench in ("ovo-bench", "streamingbench"):
            done = cli("run", bench, root / f"{bench}-build", "--out", root / bench, "--no-video",
                       "--llm-base-url", stub.base_url, "--llm-model", MODEL, cache=cache)
            assert done.returncode == 0, done.stderr
    return root


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def official_ovo(result_dir: Path, model: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "score.py", "--mode", "offline", "--model", model, "--result_dir",
                           str(result_dir)], cwd=OVO_SCORER, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    figures = {m.group(1): float(m.group(2)) for m in re.finditer(r"Task: (\w+), Acc: ([\d.]+)", done.stdout)}
    for name in ("Backward", "Realtime", "Forward", "Total"):
        found = re.search(rf"{name} Avg\.: ([\d.]+)", done.stdout)
        figures[f"{name.lower()}_avg"] = float(found.group(1))
    return figures


def test_ovo_export_gives_the_official_scorers_figures(runs, tmp_path):
    out = tmp_path / "ovo-export"
    done = cli("export", runs / "ovo-bench", "--out", out, "--model", "GPT", cache=runs / "cache")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["format"] == "ovo-results" and manifest["model"] == "GPT"
    assert manifest["official_command"] == f"python score.py --mode offline --model GPT --result_dir {out}"
    assert len(manifest["files"]) == 12 and not manifest["left_out"]
    official = official_ovo(out, "GPT")
    ours = {k: v for k, v in _results(runs / "ovo-bench")["report"]["official_figures"].items() if v is not None}
    assert official == ours
    assert 0 < official["total_avg"] < 100  # some right, some wrong: the comparison means something


def test_the_printed_score_py_command_runs_as_printed(runs, tmp_path):
    """Issue 49: the OVO export's printed command named the run's model, which score.py refuses ("Unsupported
    model"); without --model the export now uses a name it accepts, and the line printed runs as printed from the
    official scorer's folder (``python`` being this interpreter)."""
    done = cli("export", runs / "ovo-bench", "--out", tmp_path / "ovo", cache=runs / "cache")
    assert done.returncode == 0, done.stderr
    printed = next(line for line in done.stdout.splitlines() if line.startswith("official scorer: "))
    words = printed.removeprefix("official scorer: ").split()
    assert words[:2] == ["python", "score.py"]
    scored = subprocess.run([sys.executable, *words[1:]], cwd=OVO_SCORER, capture_output=True, text=True)
    assert scored.returncode == 0 and "Total Avg.:" in scored.stdout, scored.stderr
    assert json.loads((tmp_path / "ovo" / "export.json").read_text())["run_model"] == MODEL


def test_streamingbench_export_gives_count_py_figures(runs, tmp_path):
    out = tmp_path / "sb-export"
    done = cli("export", runs / "streamingbench", "--out", out, cache=runs / "cache")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["model"] == "Qwen_Qwen2.5-VL-7B-Instruct"  # the run's model name, made a file name and key
    report = _results(runs / "streamingbench")["report"]
    tasks = report["groups"]["task_type"]
    seen = set()
    files = {}
    for item in manifest["files"]:
        cwd = tmp_path / item["file"]
        cwd.mkdir()
        done = subprocess.run([sys.executable, str(COUNT), "--model", manifest["model"], "--task",
                               item["count_py_task"], "--src", str(out / item["file"])], cwd=cwd,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        stats = json.loads((cwd / f"{manifest['model']}_stats.json").read_text())
        for task, counts in stats.items():
            if task == "total":
                continue
            seen.add(task)
            assert counts["total"] == tasks[task]["n"], task
            for key in ("accuracy", "time_accuracy", "answer_accuracy"):
                if key in counts:
                    assert counts[key] == tasks[task][key], (task, key)
        if item["file"] == "questions_real.json":
            real = [t for t, v in tasks.items() if "accuracy" in v and t in stats]
            assert stats["total"]["total"] == sum(tasks[t]["n"] for t in real)
        assert stats == report["count_py"][item["file"].removeprefix("questions_").removesuffix(".json")]
        files[item["file"]] = stats
    assert seen == set(tasks)
    # the paper's categories from count.py's own counts: the omni file's Misleading and Anomaly Context go to
    # contextual understanding with SQA and the proactive answers
    contextual = ("Misleading Context Understanding", "Anomaly Context Understanding")
    omni = {t: v for t, v in files["questions_omni.json"].items() if t != "total"}
    pro = files["questions_proactive.json"]["Proactive Output"]
    sqa = files["questions_sqa.json"]["Sequential Question Answering"]
    expected = {"real-time visual understanding": (files["questions_real.json"]["total"]["correct"],
                                                   files["questions_real.json"]["total"]["total"]),
                "omni-source understanding": (sum(v["correct"] for t, v in omni.items() if t not in contextual),
                                              sum(v["total"] for t, v in omni.items() if t not in contextual)),
                "contextual understanding": (sum(v["correct"] for t, v in omni.items() if t in contextual)
                                             + sqa["correct"] + pro["answer_correct"],
                                             sum(v["total"] for t, v in omni.items() if t in contextual)
                                             + sqa["total"] + pro["total"])}
    expected["overall"] = tuple(map(sum, zip(*expected.values())))
    assert {k: (v["correct"], v["n"]) for k, v in report["paper_groups"].items()} == expected
    # the run's group rows (the metric's own units and rows) give the same figures
    boot = json.loads((runs / "streamingbench" / "results.json").read_text())["tables"]["group"]
    assert {k: boot[k]["estimate"] for k in report["paper_groups"]} == {
        k: v["accuracy"] for k, v in report["paper_groups"].items()}
    assert boot["proactive time"]["estimate"] == tasks["Proactive Output"]["time_accuracy"]
    assert {f["file"] for f in manifest["files"]} == {f"questions_{s}.json" for s in ("real", "omni", "sqa",
                                                                                       "proactive")}
    assert isinstance(json.loads((out / "questions_sqa.json").read_text())[0], list)  # SQA's list of lists


def test_export_refuses_with_one_line(runs, tmp_path):
    cache = runs / "cache"
    inside = cli("export", runs / "ovo-bench", "--out", runs / "ovo-bench" / "x", cache=cache)
    assert inside.returncode == 2 and len(inside.stderr.strip().splitlines()) == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a").write_text("x")
    full = cli("export", runs / "ovo-bench", "--out", tmp_path / "full", cache=cache)
    assert full.returncode == 2 and "not empty" in full.stderr
    not_run = cli("export", tmp_path / "full", "--out", tmp_path / "o", cache=cache)
    assert not_run.returncode == 2 and "not a run folder" in not_run.stderr
    assert not (tmp_path / "o").exists()
    assert os.listdir(tmp_path / "full") == ["a"]


def test_a_metric_without_an_export_is_refused():
    from streamcue.errors import ConfigError
    from streamcue.metrics.bench_readers import exporter

    with pytest.raises(ConfigError, match="estp-f1 has no official output format"):
        exporter("estp-f1")


def _doc_lines(page: Path) -> list[str]:
    """The lines of the page's bash blocks that hold a ``streamcue export`` command, with the lines beside it."""
    blocks = re.findall(r"```bash\n(.*?)```", page.read_text(), re.S)
    return [line for block in blocks if "streamcue export" in block for line in block.strip().splitlines()]


@pytest.mark.parametrize("page", ["runs.md", "benchmarks/ovo_bench.md", "benchmarks/streamingbench.md"])
def test_every_export_command_the_docs_show_runs(runs, tmp_path, page):
    """Each command of the page's export examples, run as written in a folder where runs/qwen-ovo and runs/sb-try
    are this module's runs; the official scorers' lines run from their folders in ../shared."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "qwen-ovo").symlink_to(runs / "ovo-bench")
    (tmp_path / "runs" / "sb-try").symlink_to(runs / "streamingbench")
    lines = _doc_lines(DOCS / page)
    assert lines
    for line in lines:
        words = line.split()
        if words[0] == "streamcue":
            done = cli(*words[1:], cache=runs / "cache", cwd=tmp_path)
        elif "score.py" in words:  # cd OVO-Bench && python score.py ...: the official scorer, from its folder
            args = words[words.index("score.py") + 1:]
            args[args.index("--result_dir") + 1] = str(tmp_path / args[args.index("--result_dir") + 1])
            done = subprocess.run([sys.executable, "score.py", *args], cwd=OVO_SCORER, capture_output=True, text=True)
            assert "Total Avg.:" in done.stdout
        else:
            assert words[:2] == ["python", "count.py"], line
            done = subprocess.run([sys.executable, str(COUNT), *words[2:]], cwd=tmp_path, capture_output=True,
                                  text=True)
        assert done.returncode == 0, (line, done.stderr)


def test_a_run_whose_predictions_were_edited_is_not_exported_or_compared(runs, tmp_path):
    """results.json names the SHA-256 of the predictions it scored: an edit afterwards is refused in one line,
    by export (which would hand the official scorer figures the run never gave) and by compare."""
    import shutil

    edited = tmp_path / "edited"
    shutil.copytree(runs / "ovo-bench", edited, symlinks=True)
    lines = (edited / "predictions.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["answer"] = "Z" if record.get("answer") != "Z" else "Y"
    (edited / "predictions.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    for args in (("export", edited, "--out", tmp_path / "out"), ("compare", runs / "ovo-bench", edited)):
        done = cli(*args, cache=runs / "cache")
        assert done.returncode == 2 and "not the predictions this run scored" in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "predictions.jsonl" in done.stderr
    assert not (tmp_path / "out").exists()
    assert cli("export", runs / "ovo-bench", "--out", tmp_path / "fine", cache=runs / "cache").returncode == 0


@pytest.mark.parametrize("edit", ["changed", "removed", "added"])
def test_a_run_whose_ground_truth_was_edited_is_not_exported_compared_or_paged(runs, tmp_path, edit):
    """results.json names the SHA-256 of each played/ file (the ground truth the run was scored on): a gold answer
    changed afterwards, a played file removed or one added is refused in one line naming the file, by export (the
    official scorer would score the edited gold), compare and the page."""
    import shutil

    from streamcue.errors import InputError
    from streamcue.metrics.run import write_page

    edited = tmp_path / "edited"
    shutil.copytree(runs / "ovo-bench", edited, symlinks=True)
    played = edited / "played" / "mc_question.jsonl"
    if edit == "changed":
        lines = played.read_text().splitlines()
        record = json.loads(lines[0])
        record["answer"] = (record["answer"] + 1) % len(record["options"])
        played.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
        named = played.name
    elif edit == "removed":
        played.unlink()
        named = played.name
    else:
        (edited / "played" / "extra.jsonl").write_text(played.read_text())
        named = "extra.jsonl"
    for args in (("export", edited, "--out", tmp_path / "out"), ("compare", runs / "ovo-bench", edited)):
        done = cli(*args, cache=runs / "cache")
        assert done.returncode == 2 and "not the ground truth this run was scored on" in done.stderr, \
            (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and named in done.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match="played_sha256"):
        write_page(str(edited))


def test_a_run_whose_results_leave_their_schema_is_refused_by_every_reader(runs, tmp_path):
    """One reader (``bench_readers.read_results``) checks a run's results.json for export, compare and the page
    alike: one sealed again after an edit that leaves its schema (a negative ``n_played``) is refused by each, one
    line naming the file and the field (export checked no schema before)."""
    import shutil

    from streamcue.errors import InputError
    from streamcue.metrics.bench_readers import seal_results
    from streamcue.metrics.run import write_page

    edited = tmp_path / "edited"
    shutil.copytree(runs / "ovo-bench", edited, symlinks=True)
    results = json.loads((edited / "results.json").read_text())
    results["n_played"] = -1
    (edited / "results.json").write_text(json.dumps(seal_results(results)))
    said = f"{edited / 'results.json'}, field $.n_played: not a streamcue results.json"
    for args in (("export", edited, "--out", tmp_path / "out"), ("compare", runs / "ovo-bench", edited)):
        done = cli(*args, cache=runs / "cache")
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
        assert said in " ".join(done.stderr.split()), (args, done.stderr)
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match="not a streamcue results.json") as caught:
        write_page(edited)
    assert (caught.value.file, caught.value.field) == (edited / "results.json", "$.n_played")
