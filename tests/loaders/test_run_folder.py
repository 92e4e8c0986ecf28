"""A run folder is never replaced: ``streamcue run`` and ``streamcue replay`` into a folder that holds a run take
only the same settings again (a finished run: nothing to do; an unfinished one: resumed through the cache) and
refuse other settings in one line naming the folder and the first differing setting. Runs are made by the CLI on
the throwaway benchmark of tests/streamcue/test_new_benchmark.py against a real local model server."""

from __future__ import annotations

import json

import pytest
from conftest import cli
from toybench import answer_red

from streamcue.testing.stub_llm import StubLLMServer

pytestmark = pytest.mark.llm_server


@pytest.fixture
def built(toybench, tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    source = toybench / "dataset_builders" / "toybench.json"
    assert cli("build", "toybench", "--questions", source, "--out", tmp_path / "built")[0] == 0
    return tmp_path / "built"


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_finished_run_is_never_replaced(built, tmp_path):
    run = tmp_path / "run"
    with StubLLMServer(answer_red) as server:
        llm = ["--no-video", "--llm-base-url", server.base_url, "--llm-model", "stub"]
        code, _, err = cli("run", "toybench", built, "--out", run, *llm)
        assert code == 0, err
        made, before = server.completions, _files(run)
        # the same settings (how fast it runs aside): nothing to do, its results printed again, no file touched
        code, out, err = cli("run", "toybench", built, "--out", run, *llm, "--concurrency", "2")
        assert code == 0, err
        assert "holds this run, finished (the same settings and records): nothing to do" in " ".join(out.split())
        assert "toybench by task" in out and server.completions == made and _files(run) == before
        # other settings: refused, one line naming the folder and the first differing setting
        for extra, says in ((["--window-s", "60"], "--window-s none there, 60.0 now"),
                            (["--seed", "7"], "--seed 0 there, 7 now"),
                            (["--ids", "toy-0-0"], "--ids none there, ['toy-0-0'] now")):
            code, _, err = cli("run", "toybench", built, "--out", run, *llm, *extra)
            flat = " ".join(err.split())
            assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
            assert f"--out {run} holds a finished run made with other settings: first difference {says}" in flat
        code, _, err = cli("run", "toybench", built, "--out", run, "--no-video", "--llm-base-url", server.base_url,
                           "--llm-model", "stub-2")
        assert code == 2 and "first difference --llm-model stub there, stub-2 now" in " ".join(err.split())
        # the same settings on records changed since: refused, naming the file
        records = built / "open_question.jsonl"
        kept = records.read_bytes()
        records.write_bytes(kept.replace(b"How many cups?", b"How many mugs?"))
        code, _, err = cli("run", "toybench", built, "--out", run, *llm)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "holds a finished run of these settings on other records: open_question.jsonl is not the file it " \
               "played" in " ".join(err.split())
        records.write_bytes(kept)
        # nor does evaluate write its report over one of the run's files
        scoring = ["evaluate", "toybench", "--gt", built / "open_question.jsonl", "--pred", run / "predictions.jsonl"]
        code, _, err = cli(*scoring, "--output", run / "results.json")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "is a file of the run folder" in err, err
        code, _, err = cli(*scoring, "--output", run / "rescored.json")
        assert code == 0 and (run / "rescored.json").is_file(), err
        (run / "rescored.json").unlink()
        # replay into a run folder would replace the predictions its results scored
        code, _, err = cli("replay", built, "--out", run, "--benchmark", "toybench", *llm)
        assert code == 2 and "holds a run made with other settings: first difference command run there, replay " \
                              "now" in " ".join(err.split())
        assert server.completions == made and _files(run) == before


def test_an_unfinished_run_resumes_with_its_settings_only(built, tmp_path):
    """A run killed after its replay, before its results (results.json not written): the same command resumes it
    through the cache (no call repeated) and finishes it; other settings are refused, naming the run unfinished."""
    run = tmp_path / "run"
    with StubLLMServer(answer_red) as server:
        llm = ["--no-video", "--llm-base-url", server.base_url, "--llm-model", "stub"]
        assert cli("run", "toybench", built, "--out", run, *llm)[0] == 0
        results = json.loads((run / "results.json").read_text())
        assert results["frames"]["without_pixels"] == 0  # the count the replay's warning points to
        made = server.completions
        for name in ("results.json", "report.html", "samples.jsonl"):
            (run / name).unlink()
        code, _, err = cli("run", "toybench", built, "--out", run, *llm, "--max-tokens", "64")
        assert code == 2 and "holds an unfinished run made with other settings: first difference --max-tokens " \
                              "1024 there, 64 now" in " ".join(err.split())
        code, _, err = cli("run", "toybench", built, "--out", run, *llm)
        assert code == 0, err
        again = json.loads((run / "results.json").read_text())
        assert server.completions == made and again["tables"] == results["tables"]
        assert again["replay"]["config"] == results["replay"]["config"]


def test_a_finished_replay_is_never_replaced(built, tmp_path):
    out = tmp_path / "replay"
    with StubLLMServer(answer_red) as server:
        llm = ["--no-video", "--llm-base-url", server.base_url, "--llm-model", "stub"]
        assert cli("replay", built, "--out", out, *llm)[0] == 0
        report = json.loads((out / "replay_report.json").read_text())
        assert report["config"]["command"] == "replay" and report["config"]["llm_model"] == "stub"
        made, before = server.completions, _files(out)
        code, out_text, err = cli("replay", built, "--out", out, *llm)
        assert code == 0 and "holds this replay, finished (the same settings): nothing to do" in " ".join(
            out_text.split()), err
        code, _, err = cli("replay", built, "--out", out, *llm, "--temperature", "0.5")
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert f"--out {out} holds a finished replay made with other settings: first difference --temperature " \
               "0.0 there, 0.5 now" in " ".join(err.split())
        code, _, err = cli("run", "toybench", built, "--out", out, *llm)
        assert code == 2 and "holds a replay made with other settings: first difference command replay there, run " \
                              "now" in " ".join(err.split())
        assert server.completions == made and _files(out) == before


def test_the_same_ids_in_another_order_are_the_same_run(built, tmp_path):
    """--ids is a set: the same ids in another order (or from @FILE) into a finished run is nothing to do."""
    run = tmp_path / "run"
    (tmp_path / "ids.txt").write_text("toy-1-0\ntoy-0-0\n")
    with StubLLMServer(answer_red) as server:
        llm = ["--no-video", "--llm-base-url", server.base_url, "--llm-model", "stub"]
        code, _, err = cli("run", "toybench", built, "--out", run, *llm, "--ids", "toy-0-0,toy-1-0")
        assert code == 0, err
        made, before = server.completions, _files(run)
        for ids in ("toy-1-0,toy-0-0", f"@{tmp_path / 'ids.txt'}"):
            code, out, err = cli("run", "toybench", built, "--out", run, *llm, "--ids", ids)
            assert code == 0 and "nothing to do" in " ".join(out.split()), err
        assert server.completions == made and _files(run) == before
        code, _, err = cli("run", "toybench", built, "--out", run, *llm, "--ids", "toy-0-0")
        assert code == 2 and "first difference --ids ['toy-0-0', 'toy-1-0'] there, ['toy-0-0'] now" in " ".join(
            err.split()), err


def test_one_unparseable_count_in_the_warning_summary_results_and_samples(built, tmp_path):
    """issue 46: a run warned "3 unparseable answers", then printed ``unparseable 0``; results.json had
    ``counts.unparseable: 0`` but ``replay.unparseable: 3`` and samples ``parseable: true``. The stub answers in
    plain text where JSON was asked: every answer is unparseable, and every place says so, by record."""
    from toybench import answer_right

    with StubLLMServer(answer_right) as server:
        code, out, err = cli("run", "toybench", built, "--out", tmp_path / "run", "--no-video",
                             "--llm-base-url", server.base_url, "--llm-model", "stub")
    assert code == 0, err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    ids = [s["id"] for s in samples]
    assert results["counts"]["unparseable"] == len(results["unparseable"]) == results["replay"]["unparseable"] == 3
    assert results["unparseable"] == ids and not any(s["parseable"] for s in samples)
    assert all(s["unparseable_calls"] == 1 for s in samples)
    [warning] = [line for line in err.splitlines() if "unparseable" in line]
    assert warning.startswith("warning: 3 records with unparseable answers from stub") and ", ".join(ids) in warning
    assert "unparseable 3 (records" in " ".join(out.split())
