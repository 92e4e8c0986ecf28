"""``streamcue compare`` cannot mislead: settings side by side, differences refused by name, runs checked against
themselves, options range-checked where parsed; rows on few videos flagged. Runs are made by ``streamcue run`` on
the throwaway benchmark of tests/streamcue/test_new_benchmark.py against a real local model server."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import cli
from toybench import answer_red, answer_right

from streamcue.testing.stub_llm import StubLLMServer

pytestmark = pytest.mark.llm_server


@pytest.fixture
def runs(toybench, made_once, tmp_path, monkeypatch):
    """Run folders of the toy benchmark: ``red`` and ``right`` (two models), ``window`` (``--window-s 60``), and
    ``first`` / ``last`` (``--ids``: no record in common). Made once per module; each test edits its own copy."""

    def make(folder):
        monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(folder / "cache"))
        source = toybench / "dataset_builders" / "toybench.json"
        assert cli("build", "toybench", "--questions", source, "--out", folder / "built")[0] == 0
        made = {"red": (answer_red, []), "right": (answer_right, []), "window": (answer_right, ["--window-s", "60"]),
                "first": (answer_red, ["--ids", "toy-0-0"]), "last": (answer_red, ["--ids", "toy-1-0"])}
        for name, (model, extra) in made.items():
            with StubLLMServer(model) as server:
                code, _, err = cli("run", "toybench", folder / "built", "--out", folder / name, "--no-video",
                                   "--llm-base-url", server.base_url, "--llm-model", f"stub-{name}", *extra)
            assert code == 0, err

    made_once("runs", make, tmp_path)
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_settings_side_by_side_and_a_different_window_refused_by_name(runs):
    code, out, err = cli("compare", runs / "red", runs / "window")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "frames.window_s: none vs 60.0" in err and "--allow-different" in err
    code, out, err = cli("compare", runs / "red", runs / "window", "--allow-different", "--output", runs / "c.json")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "note: compared although the runs differ in frames.window_s: none vs 60.0" in flat
    result = json.loads((runs / "c.json").read_text())
    assert result["settings"]["frames.window_s"] == [None, 60.0] and result["settings"]["model"] == [
        "stub-red", "stub-window"]
    assert result["differences"] == ["frames.window_s: none vs 60.0"]
    code, out, err = cli("compare", runs / "red", runs / "right")  # only the model differs
    assert code == 0, err
    assert "settings" in out and "differs" not in out and "stub-red" in out and "stub-right" in out


def test_runs_sharing_no_record_are_refused(runs):
    for allow in ([], ["--allow-different"]):
        code, _, err = cli("compare", runs / "first", runs / "last", *allow)
        assert code == 2 and "share no record" in err and len(err.strip().splitlines()) == 1


def _tamper(runs, name, edit):
    """A copy of run ``right`` whose samples.jsonl ``edit`` changed (a list of sample dicts -> a list), its
    results.json ``samples_sha256`` and seal made again, as by someone who knows the seal: what is left to refuse it
    is the samples' agreement with the results (an edit alone is refused by the file's SHA-256,
    tests/metrics/test_compare_settings.py)."""
    import hashlib

    from streamcue.metrics.bench_readers import seal_results

    folder = runs / name
    shutil.copytree(runs / "right", folder)
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in edit(samples)))
    results = json.loads((folder / "results.json").read_text())
    results["samples_sha256"] = hashlib.sha256((folder / "samples.jsonl").read_bytes()).hexdigest()
    (folder / "results.json").write_text(json.dumps(seal_results(results)))
    return folder


def _set_units(samples, units):
    samples[1]["units"] = units
    return samples


TAMPERS = [
    ("edited", lambda s: _set_units(s, [[s[1]["units"][0][0], 1.0 - s[1]["units"][0][1], 1.0]]),
     "units are not those of its score"),
    ("repeated", lambda s: [*s, s[0]], "appear more than once"),
    ("out-of-range", lambda s: _set_units(s, [[s[1]["units"][0][0], 5, 1]]), "0 <= num <= den"),
    ("score", lambda s: [s[0], {**s[1], "score": {"correct": 0.0}}, *s[2:]], "not the run's own"),
    # issue 46: every sample's video renamed (the rows' video counts unchanged): compare printed every figure None
    ("video", lambda s: [{**x, "video_id": f"renamed-{x['video_id']}"} for x in s], "is not its record's"),
]


@pytest.mark.parametrize("name, edit, says", TAMPERS)
def test_a_run_whose_samples_disagree_with_its_results_is_refused(runs, name, edit, says):
    tampered = _tamper(runs, name, edit)
    for a, b in ((runs / "red", tampered), (tampered, runs / "red")):
        code, _, err = cli("compare", a, b)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
        assert str(tampered) in err


#: each tamper above, and what the one line names: (file, record, field); the record is a sample's id or a row name
NAMED = {"edited": ("samples.jsonl", 1, "units"), "repeated": ("samples.jsonl", 0, "id"),
         "out-of-range": ("samples.jsonl", 1, "units"), "score": ("samples.jsonl", 1, "score"),
         "video": ("samples.jsonl", 0, "video_id")}


@pytest.mark.parametrize("name, edit, says", TAMPERS)
def test_a_page_made_from_a_run_whose_samples_disagree_is_refused(runs, name, edit, says):
    """The page, made again from a run folder, checks it exactly as ``compare`` does (issue #35 probe): one line
    naming file, record and field, and the page that was there is left as it was."""
    from streamcue.errors import InputError
    from streamcue.metrics.run import write_page

    tampered = _tamper(runs, f"page-{name}", edit)
    before = (tampered / "report.html").read_bytes()
    samples = [json.loads(line) for line in (tampered / "samples.jsonl").read_text().splitlines()]
    with pytest.raises(InputError, match=says) as caught:
        write_page(tampered)
    file, at, field = NAMED[name]
    error = caught.value
    assert error.file == tampered / file and error.record == samples[at]["id"] and error.field == field, str(error)
    assert len(str(error).splitlines()) == 1 and (tampered / "report.html").read_bytes() == before


def test_a_page_made_from_a_run_whose_tables_were_edited_names_the_row(runs):
    """An edited table is refused by results.json's seal, naming the field; one edited and sealed again (as by
    someone who knows the seal) is still refused: the tables recomputed from samples.jsonl disagree, naming the row."""
    from streamcue.errors import InputError
    from streamcue.metrics.bench_readers import seal_results
    from streamcue.metrics.run import write_page

    folder = runs / "page-tables"
    shutil.copytree(runs / "right", folder)
    results = json.loads((folder / "results.json").read_text())
    row = next(iter(results["tables"]["group"]))
    results["tables"]["group"][row]["estimate"] = 1.0 - results["tables"]["group"][row]["estimate"]
    (folder / "results.json").write_text(json.dumps(results))
    with pytest.raises(InputError, match="edited after the run") as caught:
        write_page(folder)
    assert (caught.value.file, caught.value.field) == (folder / "results.json", "tables")
    (folder / "results.json").write_text(json.dumps(seal_results(results)))
    with pytest.raises(InputError, match="the run's files disagree") as caught:
        write_page(folder)
    assert (caught.value.file, caught.value.record, caught.value.field) == (folder / "results.json", row,
                                                                           "tables.group")
    untouched = runs / "right"
    before = (untouched / "report.html").read_text()
    assert write_page(untouched) == untouched / "report.html"  # a run in agreement is drawn again, the same
    assert (untouched / "report.html").read_text() == before


@pytest.mark.parametrize("option, value", [("--seed", "-1"), ("--resamples", "100000000"), ("--resamples", "0")])
def test_seed_and_resamples_are_range_checked_where_parsed(runs, option, value):
    code, _, err = cli("compare", runs / "red", runs / "right", option, value)
    assert code == 2 and option in err and "Traceback" not in err


def test_rows_on_few_videos_are_flagged_in_results_and_on_the_page(runs):
    results = json.loads((runs / "red" / "results.json").read_text())
    assert results["bootstrap"]["min_videos"] == 5
    assert all(row["few_videos"] for table in results["tables"].values() for row in table.values())
    page = (runs / "red" / "report.html").read_text()
    assert "rest on fewer than 5 videos" in page and "2 videos (few)" in page


def test_efficiency_is_a_result_in_results_on_the_page_and_in_compare(runs):
    results = json.loads((runs / "red" / "results.json").read_text())
    eff = results["efficiency"]
    assert eff["calls"] == eff["endpoint_calls"] == 3 and eff["latency_max_s"] >= eff["latency_p50_s"] > 0
    assert eff["tokens_in"] > 0 and eff["tokens_out"] > 0 and eff["tokens_in_per_call"] == eff["tokens_in"] / 3
    assert eff["frames_sent"] == 0 and eff["bytes_sent"] == 0  # a blind run sends no pixels
    assert 0 < eff["ttft_p50_s"] <= eff["ttft_p90_s"] <= eff["ttft_max_s"] <= eff["latency_max_s"]  # streamed
    assert eff["media_s"] == 3.0 + 2.0 and eff["real_time_factor"] == eff["wall_s"] / 5.0  # last call times
    assert "<h2>Efficiency</h2>" in (runs / "red" / "report.html").read_text()
    code, out, err = cli("compare", runs / "red", runs / "right", "--output", runs / "c.json")
    assert code == 0, err
    compared = json.loads((runs / "c.json").read_text())["efficiency"]
    assert compared["endpoint_calls"][0] == 3 and compared["endpoint_calls"][1] >= 3  # B's plain text is asked again
    assert "efficiency" in out and "tokens_in" in out and "ttft_p50_s" in out and "ttft_p90_s" in out
    assert compared["ttft_p90_s"][0] == eff["ttft_p90_s"]


def test_efficiency_figures():
    """Hand-computed: cached calls cost nothing; nearest-rank percentiles; per-call tokens over calls made."""
    from streamcue.metrics.run import efficiency

    calls = [{"t_s": 1.0, "latency_s": 0.4, "ttft_s": 0.1, "prompt_tokens": 100, "completion_tokens": 5,
              "frames_sent": 4, "bytes_sent": 4000},
             {"t_s": 8.0, "latency_s": 0.2, "ttft_s": 0.3, "prompt_tokens": 300, "completion_tokens": 7,
              "frames_sent": 8, "bytes_sent": 9000},
             {"t_s": 9.0, "latency_s": 0.0, "cached": True, "frames_sent": 8, "bytes_sent": 9000}]
    samples = [{"video_id": "a", "calls": calls[:2]}, {"video_id": "b", "calls": calls[2:]}]
    eff = efficiency(samples, {"wall_s": 6.0}, [{"video_id": "a", "duration_s": 20.0}], None, None)
    assert (eff["calls"], eff["endpoint_calls"]) == (3, 2)
    assert (eff["latency_mean_s"], eff["latency_p50_s"], eff["latency_p90_s"]) == (pytest.approx(0.3), 0.2, 0.4)
    assert (eff["ttft_p50_s"], eff["ttft_max_s"]) == (0.1, 0.3)
    assert (eff["tokens_in"], eff["tokens_out"], eff["tokens_in_per_call"]) == (400, 12, 200)
    assert (eff["frames_sent"], eff["bytes_sent"]) == (12, 13000)
    # the real-time factor counts only the videos answered wholly by the endpoint: b's one call came from the cache
    assert (eff["media_s"], eff["wall_s"], eff["real_time_factor"]) == (29.0, 6.0, pytest.approx(6.0 / 20.0))
    assert "1 of 2 videos answered wholly by the endpoint" in eff["real_time_basis"] and eff["concurrency"] == 1
    cached = efficiency([{"video_id": "b", "calls": calls[2:]}], {"wall_s": 0.1, "concurrency": 4}, [], None, None)
    assert cached["real_time_factor"] is None and "from the cache" in cached["real_time_basis"]  # issue 49
    none = efficiency([{"video_id": "a", "calls": [{"latency_s": "slow", "prompt_tokens": -3}]}], {}, [], None, None)
    assert none["latency_mean_s"] is None and none["tokens_in"] is None and none["real_time_factor"] is None


@pytest.mark.parametrize("rule", ["groups", "tasks"])
def test_a_metrics_rows_give_its_own_figures_the_total_by_its_config_rule(rule):
    """OVO-Bench's total in the tables follows the config's ``total`` rule, as the metric's own figure does (one
    statistic computes both): 2 backward tasks and 1 realtime task, where the two rules differ."""
    from streamcue.metrics.bootstrap import tables
    from streamcue.metrics.ovo_bench import Entry, aggregate, rows

    entries = [Entry("a", "EPM", letter="A", response="A"), Entry("b", "ASI", letter="A", response="B"),
               Entry("c", "STU", letter="A", response="A")]
    overall, _, per_item = aggregate(entries, "official", rule)
    assert overall["total"] == pytest.approx({"groups": (0.5 + 1) / 2, "tasks": (1 + 0 + 1) / 3}[rule])
    units = [(rid, item["task"], float(item["correct"]), float(item["scored"])) for rid, item in per_item.items()]
    table, _ = tables(units, rows(["EPM", "ASI", "STU"], {"total": rule}))
    assert table["group"]["total"]["estimate"] == overall["total"]
    assert table["group"]["backward"]["estimate"] == overall["backward"]
