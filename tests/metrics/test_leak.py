"""``streamcue compare --leak``: one model under a gold-reading setting and under the default, the difference per row
with its paired interval. Runs are made by ``streamcue run`` against a real local model server, on the throwaway
benchmark of tests/streamcue/test_new_benchmark.py
given a protocol option that reads the gold (``--schedule hinted`` puts
the gold answer in the question), and on PhoStream's two schedules."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from conftest import cli
from toybench import answer_red
from phostream_runs import leaking_runs, needs_data

from streamcue.io import read_jsonl
from streamcue.metrics.phostream import CATEGORY_ROWS
from streamcue.testing.stub_llm import StubLLMServer

pytestmark = pytest.mark.llm_server

#: The toy benchmark's protocol with a gold-reading option: ``hinted`` asks the question with its gold answer.
LEAKY_PROTOCOL = '''
from streamcue.loaders.protocols.base import Protocol, Turn

SCHEDULES = ("asked", "hinted")


class ToyBench(Protocol):
    name, kinds, prompts = "toybench", ("open_question",), ()
    mode = {"open_question": "ask"}
    default_strategy = {"open_question": "single-call"}
    options = ("schedule",)
    leaky_options = {"schedule": ("hinted",)}
    sound_field = ("task", ("N",))  # its counting questions need sound: played without, a run is labelled video-only

    def __init__(self, schedule="asked"):
        assert schedule in SCHEDULES
        self.schedule = schedule

    def turns(self, record, context):
        hint = f" (the answer is {record['answer']})" if self.schedule == "hinted" else ""
        return [Turn(record["query_time_s"], record["question"] + hint, form="open")]

    def prediction(self, record, responses):
        said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
        return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}


PROTOCOL = ToyBench()
'''


def leaking(body: dict) -> str:
    """A model that says the gold answer when the question carries it, else "red" (right on one question of three)."""
    hint = re.search(r"\(the answer is ([^)]*)\)", json.dumps(body))
    return hint.group(1) if hint else answer_red(body)


@pytest.fixture
def toy_runs(toybench, made_once, tmp_path, monkeypatch):
    """Run folders of the toy benchmark, model ``stub``: ``<model>-<schedule>`` for the leaking and the honest model
    under each schedule, ``wide`` (hinted, ``--window-s 60``), ``other`` (hinted, another model name) and ``silent``
    (hinted, only the two questions that need no sound: its sound label differs from the full runs'). Made once per
    module; each test edits its own copy."""
    (toybench / "loaders" / "protocols" / "toybench.py").write_text(textwrap.dedent(LEAKY_PROTOCOL).lstrip())

    def make(folder):
        source = toybench / "dataset_builders" / "toybench.json"
        assert cli("build", "toybench", "--questions", source, "--out", folder / "built")[0] == 0
        made = {f"{name}-{schedule}": (model, ["--schedule", schedule], "stub")
                for name, model in (("leaking", leaking), ("honest", answer_red)) for schedule in ("asked", "hinted")}
        made.update(wide=(leaking, ["--schedule", "hinted", "--window-s", "60"], "stub"),
                    other=(leaking, ["--schedule", "hinted"], "stub-other"),
                    silent=(leaking, ["--schedule", "hinted", "--ids", "toy-0-0,toy-1-0"], "stub"))
        for name, (model, extra, model_name) in made.items():
            # two models behind one name and one model entry: the cache (keyed by the entry, not the URL) is each
            # one's
            monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(folder / "cache" / model.__name__))
            with StubLLMServer(model) as server:
                code, _, err = cli("run", "toybench", folder / "built", "--out", folder / name, "--no-video",
                                   "--llm-base-url", server.base_url, "--llm-model", model_name, *extra)
            assert code == 0, err

    made_once("toy_runs", make, tmp_path)
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_a_leaking_model_gains_under_the_gold_reading_setting_in_either_order(toy_runs):
    for first, second in (("leaking-hinted", "leaking-asked"), ("leaking-asked", "leaking-hinted")):
        out_file = toy_runs / f"{first}.json"
        code, out, err = cli("compare", toy_runs / first, toy_runs / second, "--leak", "--output", out_file)
        assert code == 0, err
        result = json.loads(out_file.read_text())
        assert result["a"]["folder"] == str(toy_runs / "leaking-asked")  # A: gold-blind, whatever the order
        assert result["leak"]["gold_reading"] == ["protocol.schedule: hinted"]
        assert result["leak"]["gold_blind"] == ["protocol.schedule: asked"]
        total = result["tables"]["group"]["accuracy"]
        assert total["a"] == pytest.approx(1 / 3) and total["b"] == 1.0
        assert total["estimate"] == pytest.approx(2 / 3) and 0 < total["low"] <= total["estimate"] <= total["high"]
        flat = " ".join(out.split())
        assert "leak measurement: A is gold-blind (protocol.schedule: asked), B reads the gold " \
               "(protocol.schedule: hinted); leak = B - A" in flat and "leak (B - A) by group" in flat


def test_an_honest_models_leak_interval_covers_zero(toy_runs):
    code, _, err = cli("compare", toy_runs / "honest-hinted", toy_runs / "honest-asked", "--leak", "--output",
                       toy_runs / "honest.json")
    assert code == 0, err
    for table in json.loads((toy_runs / "honest.json").read_text())["tables"].values():
        for row in table.values():
            assert row["low"] <= 0 <= row["high"] and row["estimate"] == 0


def test_a_leak_pair_differing_only_in_the_records_sound_label_is_measured(toy_runs):
    """``frames.sound`` labels what the records played needed (video-only: a counting question needs sound, none was
    sent); it follows from the setting ``frames.audio`` (the same here) and the selection, so a run that played no
    such question pairs with one that did, over the records both played."""
    sound = {name: json.loads((toy_runs / name / "results.json").read_text())["frames"]["sound"]
             for name in ("silent", "leaking-asked")}
    assert sound == {"silent": None, "leaking-asked": "video-only"}
    code, out, err = cli("compare", toy_runs / "silent", toy_runs / "leaking-asked", "--leak", "--output",
                         toy_runs / "silent.json")
    assert code == 0, err
    result = json.loads((toy_runs / "silent.json").read_text())
    assert result["shared_records"] == 2 and "frames.sound" not in result["settings"]
    assert result["leak"]["records_scored_differently"] == 1  # toy-1-0: wrong unhinted, right hinted
    assert "paired over 2 records" in " ".join(out.split())


def test_a_leak_pair_sending_different_sound_is_refused_saying_why(toy_runs):
    """Runs that send different inputs (``frames.audio``) do not measure a leak: refused, naming the setting and
    why (the runs' real results.json, one with another audio mode, as ``--audio parts`` would record it)."""
    from streamcue.errors import ConfigError
    from streamcue.metrics.compare import leak_order

    a = json.loads((toy_runs / "leaking-asked" / "results.json").read_text())
    b = json.loads((toy_runs / "leaking-hinted" / "results.json").read_text())
    b["frames"]["audio"] = "parts"
    with pytest.raises(ConfigError) as caught:
        leak_order(a, b, toy_runs / "leaking-asked", toy_runs / "leaking-hinted")
    said = str(caught.value)
    assert "differ in frames.audio: none vs parts" in said and "changes what the model is sent" in said
    assert "would not be the leak alone" in said and len(said.splitlines()) == 1


def test_an_edited_setting_does_not_make_a_leak_pair(toy_runs):
    """results.json is sealed: a leaking run whose schedule was edited to look gold-blind is refused by compare
    (--leak or not), the page and export, one line naming the file and the field; the run as written is not."""
    import shutil

    forged = toy_runs / "forged"
    shutil.copytree(toy_runs / "leaking-hinted", forged)
    results = json.loads((forged / "results.json").read_text())
    results["protocol"]["schedule"] = "asked"
    (forged / "results.json").write_text(json.dumps(results, indent=2))
    for args in (("compare", toy_runs / "leaking-hinted", forged, "--leak"), ("compare", forged, toy_runs / "other"),
                 ("export", forged, "--out", toy_runs / "exported")):
        code, _, err = cli(*args)
        flat = " ".join(err.split())
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert f"{forged / 'results.json'}, field protocol: edited after the run" in flat, err
    assert not (toy_runs / "exported").exists()
    from streamcue.errors import InputError
    from streamcue.metrics.run import write_page

    with pytest.raises(InputError, match="edited after the run"):
        write_page(forged)
    del results["fields_sha256"]
    (forged / "results.json").write_text(json.dumps(results, indent=2))
    code, _, err = cli("compare", toy_runs / "leaking-hinted", forged, "--leak")
    assert code == 2 and "no fields_sha256" in err


@pytest.mark.parametrize("a, b, says", [
    ("wide", "leaking-asked", "differ in frames.window_s: 60.0 vs none: a leak is measured on two runs of one model "
                              "that differ only in protocol.schedule"),
    ("other", "leaking-asked", "differ in model: stub-other vs stub"),
    ("leaking-hinted", "honest-hinted", "both runs read the gold"),
    ("leaking-asked", "honest-asked", "neither run reads the gold"),
])
def test_runs_that_are_not_a_leak_pair_are_refused_by_name(toy_runs, a, b, says):
    code, _, err = cli("compare", toy_runs / a, toy_runs / b, "--leak")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert says in " ".join(err.split())


def test_leak_and_allow_different_exclude_each_other(toy_runs):
    code, _, err = cli("compare", toy_runs / "leaking-hinted", toy_runs / "leaking-asked", "--leak",
                       "--allow-different")
    assert code == 2 and "exclude each other" in err and len(err.strip().splitlines()) == 1


@needs_data
def test_phostream_declares_its_official_schedule_gold_reading(short, tmp_path):
    """The leaking server of tests/phostream_runs.py (it says a forward question's gold answer after a pause of more
    than a chunk: the official schedule's call at the gold time) under both schedules: ``compare --leak`` pairs the
    runs, the every-chunk run as A. The on-time answers differ (every one under official-sparse, none under
    every-chunk); the score-only metric scores every category 0, so this leak in its score is 0 until answers are
    judged."""
    items = [r for r in read_jsonl(short / "built" / "active_item.jsonl") if r["group"] == "forward"]
    leaking_runs(short, tmp_path)
    code, out, err = cli("compare", tmp_path / "official-sparse", tmp_path / "every-chunk", "--leak", "--output",
                         tmp_path / "leak.json")
    assert code == 0, err
    result = json.loads((tmp_path / "leak.json").read_text())
    assert result["a"]["folder"] == str(tmp_path / "every-chunk")
    assert result["leak"]["gold_reading"] == ["protocol.schedule: official-sparse"]
    on_time = {s: [i["category"] for i in json.loads((tmp_path / s / "results.json").read_text())["report"]
                   ["per_item"].values()].count("Error (no LLM)") for s in ("every-chunk", "official-sparse")}
    assert on_time == {"every-chunk": 0, "official-sparse": len(items)}
    shares = set(CATEGORY_ROWS.values())
    rows = [row for table in result["tables"].values() for name, row in table.items() if name not in shares]
    assert rows and all(row["estimate"] == 0 and row["low"] <= 0 <= row["high"] for row in rows)
    # the categories are rows (issue 49): there the leak shows, every forward answer moved to on time
    assert result["tables"]["group"]["on-time share"]["estimate"] == 1.0
    # the 0 is said to be of score-only figures, with how many answers the gold-reading schedule changed
    assert result["leak"]["score_only"] and result["leak"]["scored"].startswith("phostream phostream.v1, score-only")
    assert result["leak"]["records_scored_differently"] == len(items)
    flat = " ".join(out.split())
    assert "figures compared: phostream phostream.v1, score-only figures (no judge): score-only mode" in flat
    assert f"{len(items)} of {len(items)} paired records were scored differently" in flat
    assert "this is not a finding of no leak" not in flat  # a row moved: the category rows show the leak
