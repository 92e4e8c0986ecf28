"""Issue 25: source data no one can answer, crashes and late refusals, each closed at its root, each tested.

Source-level checks (``QuirkReport.inconsistent`` in ``dataset_builders/bench_sources.py``): the error names
the *source* file, the record and the field (never ``<videos.jsonl being built>``); with
``--warn-inconsistent`` the record is kept, counted as a quirk and shown as a warning. The readers
(``streamcue/io.py``) refuse JSON nested past ``MAX_DEPTH``; writes the disk refuses name their file; CSV
numbers refuse digit underscores. Every case runs the real CLI in-process on real (fixture) sources.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CAPTAINCOOK4D, FILE_SIZE_LIMITED, SHARED_DATA, cli


FIXTURES = SHARED_DATA / "fixtures"
OVO = FIXTURES / "ovo_bench" / "ovo_bench_new.one_per_task.json"
SB_PROACTIVE = FIXTURES / "streamingbench" / "questions_proactive.first3.json"
SB_REAL = FIXTURES / "streamingbench" / "questions_real.first3.json"
STREAMBENCH = SHARED_DATA / "streambench" / "eval_streambench.json"

pytestmark = pytest.mark.skipif(not OVO.is_file() or not SB_REAL.is_file(), reason="needs ../shared/data/fixtures")


def one_line_error(result: tuple[int, str, str], *words: str) -> str:
    code, _, err = result
    assert code == 2, (code, err)
    assert "Traceback" not in err and "being built" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def ovo_source(tmp_path: Path, edit) -> Path:
    items = json.loads(OVO.read_text())
    edit(items)
    path = tmp_path / "src" / "ovo.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(items))
    return path


def by_task(items: list[dict], task: str) -> dict:
    return next(i for i in items if i["task"] == task)


def sb_folder(tmp_path: Path, name: str, source: Path, edit) -> Path:
    data = json.loads(source.read_text())
    edit(data)
    folder = tmp_path / "sb"
    folder.mkdir(exist_ok=True)
    (folder / f"questions_{name}.json").write_text(json.dumps(data))
    return folder


# ---------------------------------------------------------------------------------------------------------
# source data no one can answer: an error naming the source, or a counted quirk with --warn-inconsistent

def _target_before_question(data):
    data[0]["questions"][0]["ground_truth_time_stamp"] = "00:10:00"  # asked at 00:10:18


def _unknown_task(data):
    data[0]["questions"][0]["task_type"] = "Telepathy"


def _ssr_missing_step(items):
    by_task(items, "SSR")["test_info"][1]["step"] = "a step this item does not have"


INCONSISTENT = {  # case -> (builder, source maker, words in the error, quirk)
    "streamingbench target before question": (
        "streamingbench", lambda t: sb_folder(t, "proactive", SB_PROACTIVE, _target_before_question),
        ["questions_proactive.json", "record proactive-0-0", "field ground_truth_time_stamp", "before"],
        "target_before_question"),
    "streamingbench unknown task type": (
        "streamingbench", lambda t: sb_folder(t, "real", SB_REAL, _unknown_task),
        ["questions_real.json", "record real-0-0", "field task_type", "'Telepathy'"], "unknown_task_type"),
    "ovo SSR probe about a missing step": (
        "ovo-bench", lambda t: ovo_source(t, _ssr_missing_step),
        ["ovo.json", "record id=1516", "field test_info[1].step", "all_steps"], "probe_step_not_in_item"),
}
OPTION = {"ovo-bench": "--annotations", "streamingbench": "--questions"}


@pytest.mark.parametrize("case", sorted(INCONSISTENT))
def test_source_data_no_one_can_answer_stops_the_build_naming_the_source(tmp_path, case):
    builder, make, words, _ = INCONSISTENT[case]
    one_line_error(cli("build", builder, OPTION[builder], make(tmp_path), "--out", tmp_path / "out"), *words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", sorted(INCONSISTENT))
def test_warn_inconsistent_keeps_it_counted_and_shown(tmp_path, case):
    builder, make, words, quirk = INCONSISTENT[case]
    code, out, err = cli("build", builder, OPTION[builder], make(tmp_path), "--out", tmp_path / "out",
                         "--warn-inconsistent")
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "build_report.json").read_text())["details"]
    assert report["quirks"][quirk] == 1 and f"1 {quirk}" in " ".join(out.split())  # (the console wraps lines)
    assert len(report["warnings"]) == 1 and all(w in report["warnings"][0] for w in words[:3])
    assert err.strip().startswith("warning: ") and words[0] in err


def _bad_path(path):
    return lambda items: by_task(items, "EPM").__setitem__("video", path)


@pytest.mark.parametrize("path", ["C:/videos/x.mp4", "a\\b.mp4", "file:///etc/passwd", "https://x/y.mp4",
                                  "../x.mp4", "/abs/x.mp4", "a/\x00.mp4"])
def test_a_bad_ovo_video_path_is_reported_against_the_source(tmp_path, path):
    source = ovo_source(tmp_path, _bad_path(path))
    one_line_error(cli("build", "ovo-bench", "--annotations", source, "--out", tmp_path / "out"),
                   "ovo.json", "record id=0", "field video")


def test_an_inverted_ovo_span_is_reported_against_the_source(tmp_path):
    def invert(items):
        rec = by_task(items, "REC")
        rec["start_times"], rec["end_times"] = [17], [6]

    source = ovo_source(tmp_path, invert)
    one_line_error(cli("build", "ovo-bench", "--annotations", source, "--out", tmp_path / "out"),
                   "ovo.json", "record id=1558", "field end_times[0]", "before it starts")


@pytest.mark.parametrize("builder", ["ovo-bench", "streamingbench", "streambench"])
@pytest.mark.parametrize("value", [1e308, 604801, -1, "9999999:00:00"])
def test_a_time_no_video_reaches_is_refused_in_benchmarks_without_durations(tmp_path, builder, value):
    if builder == "ovo-bench":
        source = ovo_source(tmp_path, lambda items: by_task(items, "EPM").__setitem__("realtime", value))
        args, words = ["--annotations", source], ["ovo.json", "record id=0", "field realtime"]
    elif builder == "streamingbench":
        def late(data):
            data[0]["questions"][0]["time_stamp"] = value
        source = sb_folder(tmp_path, "real", SB_REAL, late)
        args, words = ["--questions", source], ["questions_real.json", "record real-0-0", "field time_stamp"]
    else:
        if not STREAMBENCH.is_file():
            pytest.skip("needs ../shared/data/streambench")
        entries = json.loads(STREAMBENCH.read_text())[:2]
        entries[0]["breakpoint"][0]["time"] = value
        source = tmp_path / "eval_streambench.json"
        source.write_text(json.dumps(entries))
        args, words = ["--annotations", source], ["eval_streambench.json", "breakpoint[0].time"]
    one_line_error(cli("build", builder, *args, "--out", tmp_path / "out"), *words)
    assert not (tmp_path / "out").exists()


def test_the_real_sources_still_build_without_warnings(tmp_path):
    for builder, option, source in (("ovo-bench", "--annotations", OVO),
                                    ("streamingbench", "--questions", SHARED_DATA / "streamingbench")):
        code, _, err = cli("build", builder, option, source, "--out", tmp_path / builder)
        assert code == 0 and not err.strip(), err
        assert json.loads((tmp_path / builder / "build_report.json").read_text())["details"]["warnings"] == []


# ---------------------------------------------------------------------------------------------------------
# crashes: deep JSON in every reader, a full disk, digit underscores in CSV numbers

DEEP = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize("depth", [101, 900, 3000])
def test_deeply_nested_json_is_one_line_in_every_reader(tmp_path, depth):
    from streamcue.errors import InputError
    from streamcue.io import NestedTooDeep, iter_jsonl, loads, read_json

    nested = "[" * depth + "]" * depth
    doc, lines = tmp_path / "deep.json", tmp_path / "deep.jsonl"
    doc.write_text(nested)
    lines.write_text('{"ok": 1}\n{"a": ' + nested + "}\n")
    with pytest.raises(InputError, match="nested more than 100 levels") as caught:
        read_json(doc)
    assert caught.value.file == doc
    with pytest.raises(InputError, match="nested more than 100 levels") as caught:
        list(iter_jsonl(lines))
    assert (caught.value.file, caught.value.line) == (lines, 2)
    with pytest.raises(NestedTooDeep):
        loads(nested)
    with pytest.raises(json.JSONDecodeError):  # what callers of loads already catch
        loads(nested)
    assert loads("[" * 100 + "]" * 100) is not None  # the limit itself is fine


@pytest.mark.parametrize("command", [
    lambda f, t: ["validate", f, "--kind", "interval_qa"],
    lambda f, t: ["build", "ovo-bench", "--annotations", f, "--out", t / "out"],
    lambda f, t: ["evaluate", "estp-f1", "--gt", f, "--pred", f, "--judge", "exact"],
    lambda f, t: ["stats", "evidence", "--checked", f, "--verified", f],
    lambda f, t: ["release", "build", "--records", f.parent, "--version", "1.0.0", "--out", t / "rel"],
])
def test_deeply_nested_json_through_the_cli(tmp_path, command):
    folder = tmp_path / "records"
    folder.mkdir()
    target = folder / "interval_qa.jsonl"
    for name in ("interval_qa.jsonl", "videos.jsonl"):
        (folder / name).write_text('{"a": ' + DEEP + "}\n")
    code, _, err = cli(*command(target, tmp_path))
    assert code == 2 and "Traceback" not in err and "RecursionError" not in err, err
    assert "nested more than 100 levels" in err and f"{folder}/" in err, err


def test_yaml_tasks_nested_deeply_are_one_line(tmp_path):
    from streamcue.dataset_builders.recorded import read_tasks
    from streamcue.errors import InputError

    tasks = tmp_path / "tasks.yaml"
    tasks.write_text("tasks: " + DEEP + "\n")
    with pytest.raises(InputError) as caught:
        read_tasks(tasks)
    assert caught.value.file == tasks


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # a disk that is full after 20 kB


@FILE_SIZE_LIMITED
def test_a_full_disk_names_the_file_it_refused(tmp_path):
    """Python ignores SIGXFSZ, so the limit is an EFBIG "File too large": it must name the file, and leave none."""
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "streamcue", "build", "ovo-bench", "--annotations",
                          SHARED_DATA / "ovo_bench" / "ovo_bench_new.json", "--out", out],
                         capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size,
                         env={**os.environ, "STREAMCUE_NO_PROGRESS": "1"})
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {out}/") and "file too large" in lines[0], run.stderr
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True


def test_atomic_write_names_the_file_on_a_disk_error(tmp_path):
    import errno

    from streamcue.io import atomic_write

    target = tmp_path / "x.jsonl"
    with pytest.raises(OSError) as caught, atomic_write(target) as fh:
        fh.write("x")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert caught.value.filename == str(target) and caught.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cell", ["557.0_61", "1_000", "nan", "inf", "1e999", "", "0x10"])
def test_csv_numbers_refuse_what_float_accepts(tmp_path, cell):
    if not CAPTAINCOOK4D.is_dir():
        pytest.skip("needs ../shared/data/captaincook4d")
    from hostile_sources import CC4D_FILES, cc4d_subset

    cc4d = cc4d_subset(tmp_path / "cc4d")
    metadata = cc4d / CC4D_FILES["metadata"]
    rows = list(csv.reader(metadata.open(newline="")))
    column = rows[0].index("duration(sec)")
    rows[1][column] = cell
    with metadata.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    one_line_error(cli("build", "captaincook4d", "--annotations", cc4d, "--out", tmp_path / "out"),
                   "video_information.csv:2", "duration(sec)")
    assert not (tmp_path / "out").exists()


def test_parse_csv_number():
    from streamcue.finite import parse_csv_number

    assert parse_csv_number(" 557.061 ") == 557.061 and parse_csv_number("1e3") == 1000.0
    for bad in ("557.0_61", "nan", "-inf", "1e999", "abc"):
        with pytest.raises(ValueError):
            parse_csv_number(bad)


# ---------------------------------------------------------------------------------------------------------
# tracebacks and late refusals

def test_an_embedding_model_folder_that_is_not_a_model_is_one_line(tmp_path):
    empty, broken = tmp_path / "empty", tmp_path / "broken"
    empty.mkdir()
    broken.mkdir()
    (empty / "notes.txt").write_text("not a model")
    (broken / "config.json").write_text("{")
    for folder, words in ((empty, ["not a sentence-transformers model folder"]),
                          (broken, ["cannot load this sentence-transformers model"])):
        from streamcue.embedding import Embedder
        from streamcue.errors import ConfigError

        with pytest.raises(ConfigError, match=words[0]) as caught:
            Embedder(folder).encode(["a text"])
        assert str(folder) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("option, value", [("--pad-s", "inf"), ("--pad-s", "nan"), ("--pad-s", "-1"),
                                           ("--confidence", "2"), ("--confidence", "nan"), ("--concurrency", "0"),
                                           ("--max-rounds", "0"), ("--max-frames", "0"), ("--frame-side", "0")])
def test_verify_evidence_checks_its_options_before_any_work(tmp_path, option, value):
    records = tmp_path / "r" / "interval_qa.jsonl"
    records.parent.mkdir()
    records.write_text("")  # never read: the option is refused first
    one_line_error(cli("verify-evidence", "--records", records, "--video-root", tmp_path, "--out", tmp_path / "out",
                       option, value, "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"), option)
    assert not (tmp_path / "out").exists()


def _tasks(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "videos"
    root.mkdir(exist_ok=True)
    for name in ("a.mp4", "b/a.mp4"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"not decoded: refused first")
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(text)
    return tasks


TASK = "{task_id: t1, video: a.mp4, task_type: present, category: cooking, prompt: Describe.}"


@pytest.mark.parametrize("text, words", [
    (f"tasks:\n- {TASK}\n- {TASK}\n", ["task_id=t1", "field task_id", "repeated"]),
    (f"tasks:\n- &one {TASK}\n- *one\n", ["task_id=t1", "field task_id", "repeated"]),          # a YAML alias
    ("tasks:\n- {task_id: t1, video: a.mp4, task_type: present, category: c, prompt: P}\n"
     "- {task_id: t2, video: b/a.mp4, task_type: present, category: c, prompt: P}\n",
     ["task_id=t2", "field video_id", "'a'"]),                                                    # two videos, one id
])
def test_build_recorded_refuses_repeats_before_any_video_is_touched(tmp_path, text, words):
    tasks = _tasks(tmp_path, text)
    one_line_error(cli("build", "recorded", "--video-root", tmp_path / "videos", "--tasks", tasks,
                       "--out", tmp_path / "out", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"),
                   "tasks.yaml", *words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option, value", [("--frame-side", "0"), ("--k", "0"), ("--k", "-1"),
                                           ("--frame-side", "-5")])
def test_build_recorded_refuses_counts_up_front(tmp_path, option, value):
    tasks = _tasks(tmp_path, f"tasks:\n- {TASK}\n")
    one_line_error(cli("build", "recorded", "--video-root", tmp_path / "videos", "--tasks", tasks,
                       "--out", tmp_path / "out", option, value,
                       "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"), option)
    assert not (tmp_path / "out").exists()


def test_a_livecook_plan_index_past_the_plan_is_refused(tmp_path):
    if not CAPTAINCOOK4D.is_dir():
        pytest.skip("needs ../shared/data/captaincook4d")
    out = tmp_path / "cc"
    assert cli("build", "captaincook4d", "--annotations", CAPTAINCOOK4D, "--out", out, "--recording", "1_7")[0] == 0
    gt = json.loads((out / "guidance.jsonl").read_text().splitlines()[0])
    first = {k: gt["events"][0][k] for k in ("t_s", "type", "text")}
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"video_id": gt["video_id"], "events": [first, {**first, "plan_index": 999}]}) + "\n")
    one_line_error(cli("evaluate", "livecook", "--gt", out / "guidance.jsonl", "--pred", pred, "--no-bertscore"),
                   "pred.jsonl:1", f"record video_id={gt['video_id']}", "field events[1].plan_index", "999",
                   f"{len(gt['plan'])} steps")
