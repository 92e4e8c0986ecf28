"""A new benchmark is its own files plus one registry entry: proved on a throwaway one, made at test time.

``toybench`` is written into a temporary folder laid out like the repository (``dataset_builders/toybench.py``,
``loaders/protocols/toybench.py``, ``metrics/toybench.py``, ``docs/benchmarks/toybench.md``), the three package
folders are put on the packages' search paths, and one Source row and one Benchmark row are added to
``streamcue/registry.py``'s tables. Nothing else is edited: ``streamcue ls``, ``streamcue build toybench`` (generated
from its Config), ``streamcue validate``, ``streamcue replay``, ``streamcue evaluate toybench``, ``streamcue run
toybench`` (task and group rows with intervals, from the units and rows its metric declares) and ``streamcue
compare`` take it, and the contract and prologue tests, called on it, pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli
import test_contracts
import test_prologue
from toybench import answer_red, answer_right

import streamcue.metrics
from streamcue.cli.main import _command
from streamcue.testing.stub_llm import StubLLMServer

pytestmark = pytest.mark.llm_server


def test_the_commands_take_a_benchmark_that_is_only_its_files_and_one_registry_entry(toybench, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = cli("ls")
    assert code == 0, err
    out = " ".join(out.split())  # (the console wraps long lines)
    assert "toybench (ToyBench): kinds open_question; build toybench; evaluate toybench; licence MIT" in out
    assert "build toybench: open_question records from ToyBench's questions file" in out
    assert "toybench (default config streambench.v1)" in out

    code, out, err = cli("build", "toybench", "--help")
    assert code == 0 and "Example" in out and "--questions" in out and "--shout" in out and "--video" in out
    helps = {p.opts[0]: p.help for p in _command().commands["build"].commands["toybench"].params}
    assert helps == {"--questions": "ToyBench's questions file.",
                     "--out": "Output folder: open_question.jsonl, videos.jsonl, build_report.json.",
                     "--shout": "Write the reference answers in capitals.",
                     "--video": "Build only these videos (repeatable).",
                     "--min-time-s": "Leave out questions asked before this time."}
    source = toybench / "dataset_builders" / "toybench.json"
    code, out, err = cli("build", "toybench", "--questions", source, "--out", tmp_path / "built",
                         "--video", "toy-0", "--video", "toy-1", "--shout", "--min-time-s", "1.5")
    assert code == 0, err
    assert f"wrote 2 open_question, 2 video to {tmp_path / 'built'}" in " ".join(out.split())
    built = [json.loads(line) for line in (tmp_path / "built" / "open_question.jsonl").read_text().splitlines()]
    assert [(q["question_id"], q["answer"]) for q in built] == [("toy-0-1", "TWO"), ("toy-1-0", "THE RED ONE")]
    code, _, err = cli("build", "toybench", "--questions", source, "--out", source / "sub")
    assert code == 2 and err.startswith("error: output") and "lies inside the input file" in err
    code, out, err = cli("build", "toybench", "--questions", source, "--out", tmp_path / "all")
    assert code == 0, err

    gt = tmp_path / "all" / "open_question.jsonl"
    assert cli("validate", gt, "--kind", "open_question")[0] == 0  # benchmark toybench: registered, so valid
    with StubLLMServer(answer_red) as server:
        code, out, err = cli("replay", tmp_path / "all", "--out", tmp_path / "run", "--llm-base-url",
                             server.base_url, "--llm-model", "stub-vl", "--no-video")
    assert code == 0, err
    report = json.loads((tmp_path / "run" / "replay_report.json").read_text())
    assert report["kinds"]["open_question"]["played"] == 3
    code, out, err = cli("evaluate", "toybench", "--gt", gt, "--pred", tmp_path / "run" / "predictions.jsonl",
                         "--output", tmp_path / "report.json")
    assert code == 0, err
    scored = json.loads((tmp_path / "report.json").read_text())
    assert scored["metric"] == "toybench" and scored["overall"] == {"n": 3, "accuracy": pytest.approx(1 / 3)}


def test_run_and_compare_give_it_task_and_group_rows_with_intervals(toybench, tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    source = toybench / "dataset_builders" / "toybench.json"
    assert cli("build", "toybench", "--questions", source, "--out", tmp_path / "built")[0] == 0
    for name, model in (("red", answer_red), ("right", answer_right)):
        with StubLLMServer(model) as server:
            code, out, err = cli("run", "toybench", tmp_path / "built", "--out", tmp_path / name, "--no-video",
                                 "--llm-base-url", server.base_url, "--llm-model", f"stub-{name}")
        assert code == 0, err
    results = json.loads((tmp_path / "red" / "results.json").read_text())
    task, group = results["tables"]["task"], results["tables"]["group"]
    assert set(task) == {"C", "N"} and set(group) == {"accuracy"}
    # C: toy-0 asks "red" (right), toy-1 "the red one" (wrong): 1/2 over 2 videos, exact bootstrap (2 ** 2 draws)
    assert task["C"]["estimate"] == pytest.approx(0.5) and (task["C"]["low"], task["C"]["high"]) == (0.0, 1.0)
    assert group["accuracy"]["estimate"] == pytest.approx(1 / 3) and group["accuracy"]["videos"] == 2
    assert group["accuracy"]["low"] is not None and group["accuracy"]["few_videos"] is True
    assert results["bootstrap"]["exact"] is True
    code, out, err = cli("compare", tmp_path / "red", tmp_path / "right", "--output", tmp_path / "cmp.json")
    assert code == 0, err
    compared = json.loads((tmp_path / "cmp.json").read_text())
    assert set(compared["tables"]["task"]) == {"C", "N"} and set(compared["tables"]["group"]) == {"accuracy"}
    row = compared["tables"]["group"]["accuracy"]
    assert (row["a"], row["b"], row["estimate"]) == (pytest.approx(1 / 3), 1.0, pytest.approx(2 / 3))
    assert row["low"] is not None and row["high"] is not None and compared["shared_records"] == 3


def test_the_contract_tests_take_it(toybench, tmp_path):
    """The generated contract and prologue tests, called on the new benchmark, pass without an edit."""
    assert test_contracts.benchmark_files("toybench", root=toybench) == []
    test_contracts.test_every_benchmark_names_what_exists("toybench")
    test_contracts.test_every_source_names_its_builder_licence_and_citation("toybench")
    test_contracts.test_builders_and_metrics_are_the_registrys_and_declare_themselves()
    test_contracts.test_every_builder_has_a_build_command("toybench")
    test_contracts.test_every_builder_keeps_the_contract("toybench", tmp_path / "builder")
    (tmp_path / "metric").mkdir()
    test_contracts.test_every_metric_keeps_the_contract("toybench", tmp_path / "metric")
    test_contracts.test_every_metric_config_version_is_pinned()
    test_contracts.test_registered_names_are_checked_against_the_registry("video", "source")
    test_contracts.test_registered_names_are_checked_against_the_registry("open_question", "benchmark")
    assert test_contracts.compares_or_keys_a_benchmark('if name == "toybench":\n    pass\n') == ["line 1: 'toybench'"]
    test_prologue.test_every_path_option_of_a_build_command_is_a_declared_input("toybench")
    for how in ("equal", "inside", "symlink", "dotdot", "named like an output"):
        case = tmp_path / "prologue" / how.replace(" ", "-")
        case.mkdir(parents=True)
        test_prologue.test_builders_refuse_an_output_over_or_inside_an_input(case, "toybench", "--questions", how)


def test_without_its_registry_entry_nothing_knows_it(tmp_path):
    from streamcue.dataset_builders import BUILDERS
    from streamcue.errors import ConfigError
    from streamcue.loaders.protocols import PROTOCOLS
    from streamcue.metrics import METRICS, get_metric
    from streamcue.schemas import check

    assert "toybench" not in BUILDERS and "toybench" not in METRICS and "toybench" not in PROTOCOLS
    with pytest.raises(ConfigError, match="unknown metric 'toybench'"):
        get_metric("toybench")
    record = dict(json.loads(json.dumps(test_contracts.VALID["open_question"])), benchmark="toybench")
    assert [v.path for v in check(record, "open_question")] == ["$.benchmark"]
    assert cli("build", "toybench", "--help")[0] == 2
    assert not Path(streamcue.dataset_builders.__path__[0], "toybench.py").exists()
