"""``./dev.sh perf`` (perf/guard.py): which figures it names as lost, and what a baseline update records. The
benches themselves are not run here (minutes, and timings are never asserted): the figures below are written."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def guard():
    spec = importlib.util.spec_from_file_location("perf_guard", REPO / "perf" / "guard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _case(**figures):
    return {"figures": {name: {"value": value, "better": better} for name, (value, better) in figures.items()}}


def test_a_figure_that_lost_more_than_15_percent_is_named_whichever_way_is_better(guard, capsys):
    before = {"cases": {"a": _case(fast=(4.0, "higher"), slow=(1.0, "lower"), kept=(2.0, "higher"))}}
    now = {"a": _case(fast=(3.3, "higher"), slow=(1.2, "lower"), kept=(1.8, "higher"))}
    lines = guard.compare(now, before)
    # 3.3 / 4.0 = 0.825 and 1.0 / 1.2 = 0.83 of the speed kept: both lost; 1.8 / 2.0 = 0.90 kept
    assert [line.split(":")[1].split(" went")[0].strip() for line in lines] == ["fast", "slow"]
    assert all(line.startswith("REGRESSION a:") for line in lines)
    assert "no baseline" not in capsys.readouterr().out


def test_a_figure_without_a_baseline_is_printed_and_never_named(guard, capsys):
    assert guard.compare({"new": _case(x=(1.0, "lower"))}, None) == []
    assert "(no baseline)" in capsys.readouterr().out


def test_an_update_records_why_and_keeps_the_reasons_before_it(guard, tmp_path, monkeypatch):
    monkeypatch.setattr(guard, "BASELINE", tmp_path / "baseline.json")
    first = {"a": _case(x=(1.0, "lower"))}
    guard.update(None, first, "first", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0))
    old = json.loads(guard.BASELINE.read_text())
    guard.update(old, {"a": _case(x=(0.9, "lower"))}, "faster encoder", (0.5, 0.5, 0.5), (0.7, 0.7, 0.7))
    new = json.loads(guard.BASELINE.read_text())
    assert (new["reason"], new["load_before"], new["cases"]["a"]["figures"]["x"]["value"]) == (
        "faster encoder", [0.5, 0.5, 0.5], 0.9)
    assert [h["reason"] for h in new["history"]] == ["first"]
    assert set(new["machine"]) == {"cpu", "cores"} and new["commit"]


@pytest.mark.parametrize("argv", [["--only", "replay", "--update-baseline", "why"], ["--update-baseline", " "],
                                  ["--only", "nothing"]])
def test_a_partial_or_unexplained_update_and_an_unknown_case_are_refused(guard, argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        guard.main(argv)
    assert stopped.value.code == 2 and "error:" in capsys.readouterr().err


def test_the_committed_baseline_states_machine_load_reason_and_each_case(guard):
    baseline = json.loads(guard.BASELINE.read_text())
    assert baseline["reason"] and baseline["machine"]["cpu"] and baseline["machine"]["cores"]
    assert len(baseline["load_before"]) == 3 and len(baseline["load_after"]) == 3
    assert set(baseline["cases"]) == set(guard.CASES)
    for case in baseline["cases"].values():
        assert case["settings"] and case["figures"]
        assert all(f["better"] in ("higher", "lower") for f in case["figures"].values())
