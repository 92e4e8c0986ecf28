"""ToyBench: a throwaway benchmark written at test time, its one registry entry, and two stub models.

Proved end to end in tests/streamcue/test_new_benchmark.py; compare and --leak tests play it too.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

import streamcue.dataset_builders
import streamcue.loaders.protocols
import streamcue.metrics
from streamcue.cli.main import _command
from streamcue.registry import BENCHMARKS, SOURCES, Benchmark, Source
from streamcue.testing.stub_llm import request_schema, schema_instance


BUILDER = '''
"""ToyBench: a throwaway benchmark (tests/toybench.py). Source: one JSON list of videos and questions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streamcue.io import read_json
from streamcue.prologue import input_path, option

__all__ = ["Config", "build", "example_config"]

MAKES = ("open_question", "video")
SUMMARY = "open_question records from ToyBench's questions file"
EXAMPLE = "streamcue build toybench --questions toybench.json --out out/toy"


@dataclass(frozen=True)
class Config:
    questions: Path = input_path("--questions", help="ToyBench's questions file.")
    shout: bool = option("Write the reference answers in capitals.", default=False)
    only: tuple[str, ...] = option("Build only these videos (repeatable).", default=(), name="--video")
    min_time_s: float = option("Leave out questions asked before this time.", default=0.0)


def build(config, report):
    entries = read_json(config.questions)
    for n, entry in enumerate(entries):
        video_id = f"toy-{n}"
        if config.only and video_id not in config.only:
            continue
        yield "video", {"schema_version": "1.0", "video_id": video_id, "source": "toybench", "duration_s": None,
                        "license": "MIT", "uri": entry["video"], "split": "test",
                        "anonymization": {"status": "not_required"}}
        for k, q in enumerate(entry["questions"]):
            if q["t"] < config.min_time_s:
                continue
            yield "open_question", {
                "schema_version": "1.0", "question_id": f"toy-{n}-{k}", "video_id": video_id,
                "benchmark": "toybench", "task": q["task"], "group": None, "question": q["q"],
                "answer": q["a"].upper() if config.shout else q["a"], "query_time_s": q["t"],
                "provenance": {"builder": "toybench", "version": "1"}, "verification": {"status": "unverified"}}
    report.details = {"entries": len(entries)}


def example_config(data_root: Path) -> Config:
    return Config(Path(__file__).with_name("toybench.json"))
'''

PROTOCOL = '''
"""ToyBench: each question asked once, at its time, in free text."""

from __future__ import annotations

from streamcue.loaders.protocols.base import Protocol, Turn

__all__ = ["PROTOCOL"]


class ToyBench(Protocol):
    name, kinds, prompts = "toybench", ("open_question",), ()
    mode = {"open_question": "ask"}
    default_strategy = {"open_question": "single-call"}

    def turns(self, record, context):
        return [Turn(record["query_time_s"], record["question"], form="open")]

    def prediction(self, record, responses):
        said = responses[-1] if responses else {"t_s": record["query_time_s"], "text": None}
        return {"question_id": record["question_id"], "response": said["text"], "t_s": said["t_s"]}


PROTOCOL = ToyBench()
'''

METRIC = '''
"""ToyBench: exact-match accuracy (case and spaces ignored), per task and overall."""

from __future__ import annotations

from streamcue.metrics.bootstrap import pooled_rows, record_units
from streamcue.metrics.registry import Metric
from streamcue.metrics.scoring import grouped, make_report, mean, read_pairs

__all__ = ["METRIC", "run", "example_predictions"]

METRIC = Metric("toybench", "open_question", "streambench", higher_is_better=True, uses_judge=False,
                summary="ToyBench exact-match accuracy", entry="streamcue.metrics.toybench:run",
                config_class="streamcue.metrics.streambench:StreamBenchConfig", config_latest=1,
                units=record_units("correct"), rows=pooled_rows("accuracy"))


def run(gt, pred, config, context):
    truth, preds = read_pairs(gt, pred, "open_question")
    said = {i: ((preds.get(i) or {}).get("response") or "").strip().lower() for i in truth}
    per_item = {i: {"correct": float(said[i] == r["answer"].strip().lower())} for i, r in truth.items()}
    groups = {"task": grouped(per_item, {i: r["task"] for i, r in truth.items()}, ["correct"])}
    overall = {"n": len(truth), "accuracy": mean([s["correct"] for s in per_item.values()])}
    return make_report("toybench", config, None, overall, groups, per_item, sorted(set(truth) - set(preds)))


def example_predictions(gt):
    return [{"question_id": r["question_id"], "response": r["answer"]} for r in gt]
'''

SOURCE_FILE = [{"video": "toy/a.mp4", "questions": [{"q": "What colour is the cup?", "a": "red", "t": 1.0, "task": "C"},
                                                    {"q": "How many cups?", "a": "two", "t": 2.0, "task": "N"}]},
               {"video": "toy/b.mp4", "questions": [{"q": "Which cup fell?", "a": "the red one", "t": 3.0,
                                                     "task": "C"}]}]


@pytest.fixture
def toybench(tmp_path, monkeypatch):
    """The throwaway benchmark's files in ``tmp_path/repo`` and its one registry entry (a Source and a Benchmark
    row); the root folder is returned."""
    root = tmp_path / "repo"
    files = {"dataset_builders/toybench.py": BUILDER, "loaders/protocols/toybench.py": PROTOCOL,
             "metrics/toybench.py": METRIC, "docs/benchmarks/toybench.md": "# ToyBench\n\nA throwaway benchmark.\n",
             "dataset_builders/toybench.json": json.dumps(SOURCE_FILE)}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())
    for package, folder in ((streamcue.dataset_builders, "dataset_builders"), (streamcue.metrics, "metrics"),
                            (streamcue.loaders.protocols, "loaders/protocols")):
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(root / folder)])
    # the registry entry
    monkeypatch.setitem(SOURCES, "toybench", Source("toybench", "ToyBench", "MIT", True, "all MIT (a test)", "",
                                                    "https://example.org/toybench", "toybench"))
    monkeypatch.setitem(BENCHMARKS, "toybench", Benchmark(
        "toybench", "ToyBench", ("open_question",), ("toybench",), "toybench", "toybench",
        "docs/benchmarks/toybench.md", "@misc{toybench, title = {ToyBench}}", "https://example.org/toybench"))
    _command.cache_clear()  # the command tree is built once per process: build it again with the new entry
    yield root
    _command.cache_clear()
    for name in ("dataset_builders", "metrics", "loaders.protocols"):
        sys.modules.pop(f"streamcue.{name}.toybench", None)


def answer_red(body):
    """The stub model: "red" to every question (in the JSON shape asked for, if any)."""
    schema = request_schema(body)
    if not schema:
        return "red"
    answer = schema_instance(schema, "toy")
    return json.dumps({k: "red" if isinstance(v, str) else v for k, v in answer.items()})


def answer_right(body):
    """A stub model that answers every question of the toy file right."""
    text = json.dumps(body)
    for entry in SOURCE_FILE:
        for q in entry["questions"]:
            if q["q"] in text:
                return q["a"]
    return "?"
