"""Property: random corruptions of the benchmark sources (OVO-Bench, StreamingBench, StreamBench) and of
predictions for their scorers never get a wrong answer through, nor a traceback.

The same corruptions as ``tests/dataset_builders/test_hostile_property.py``
(a value replaced by null, NaN, Infinity, a huge or
negative number, text, a list or an object; a key deleted or repeated; the file truncated or given a stray
byte), applied to small real sources (the fixtures under ``../shared/data``) and to the predictions a model
would write for records built from them, through the console script's entry point in this process.

For every example: exit 0 or 2; a failed command leaves no output and says why on one ``error:`` line naming
the source (never ``<... being built>``); a successful build writes only finite JSON, no time past
:data:`streamcue.finite.MAX_SECONDS`, and no quirk the build would refuse without ``--warn-inconsistent``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import SHARED_DATA
from hypothesis import given
from hypothesis import strategies as st
from conftest import cli
from test_hostile_property import EXAMPLES, check_outcome, corrupt_json

from streamcue.finite import MAX_SECONDS

FIXTURES = SHARED_DATA / "fixtures"
OVO = FIXTURES / "ovo_bench" / "ovo_bench_new.one_per_task.json"
SB = {"real": FIXTURES / "streamingbench" / "questions_real.first3.json",
      "proactive": FIXTURES / "streamingbench" / "questions_proactive.first3.json"}
STREAMBENCH = SHARED_DATA / "streambench" / "eval_streambench.json"

pytestmark = pytest.mark.skipif(not OVO.is_file() or not STREAMBENCH.is_file(), reason="needs ../shared/data")


def _times(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _times(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _times(v, key)
    elif isinstance(value, float) and key.endswith("_s"):
        yield value


def check_build(code: int, stderr: str, out: Path, source_name: str) -> None:
    check_outcome(code, stderr, out)
    if code:
        line = next(x for x in stderr.splitlines() if x.startswith("error:"))
        assert "being built" not in line, line  # a source problem is reported against the source
        return
    report = json.loads((out / "build_report.json").read_text())["details"]
    assert report["warnings"] == []  # without --warn-inconsistent nothing inconsistent is kept
    for path in out.glob("*.jsonl"):
        for text in path.read_text().splitlines():
            assert all(0 <= t <= MAX_SECONDS for t in _times(json.loads(text))), text


@pytest.mark.slow
@EXAMPLES
@given(choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_ovo_bench_sources(choice, seed):
    build_corrupted("ovo-bench", OVO.read_text(), "ovo_bench_new.json", choice, seed)


def build_corrupted(benchmark: str, text: str, name: str, choice: int, seed: int) -> None:
    """Build ``benchmark`` from its one annotation file ``name`` holding ``text`` corrupted; check the outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / name
        source.write_text(corrupt_json(text, random.Random(seed), choice))
        out = Path(tmp) / "out"
        code, _, stderr = cli("build", benchmark, "--annotations", source, "--out", out)
        check_build(code, stderr, out, source.name)


@pytest.mark.slow
@EXAMPLES
@given(which=st.sampled_from(sorted(SB)), choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_streamingbench_sources(which, choice, seed):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sb"
        folder.mkdir()
        for name, path in SB.items():
            text = path.read_text()
            (folder / f"questions_{name}.json").write_text(corrupt_json(text, rng, choice) if name == which else text)
        out = Path(tmp) / "out"
        code, _, stderr = cli("build", "streamingbench", "--questions", folder, "--out", out)
        check_build(code, stderr, out, f"questions_{which}.json")


@pytest.fixture(scope="module")
def streambench_small(tmp_path_factory):
    path = tmp_path_factory.mktemp("sbench") / "eval_streambench.json"
    path.write_text(json.dumps(json.loads(STREAMBENCH.read_text())[:3]))
    return path


@pytest.mark.slow
@EXAMPLES
@given(choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_streambench_sources(streambench_small, choice, seed):
    build_corrupted("streambench", streambench_small.read_text(), "eval_streambench.json", choice, seed)


def _active_prediction(record: dict) -> dict:
    """An answer at each probe (OVO-Bench) or at the target time (StreamingBench proactive)."""
    if record["probes"]:
        return {"item_id": record["item_id"], "responses": [{"t_s": p["t_s"], "probe": i, "text": p["expected"]}
                                                            for i, p in enumerate(record["probes"])]}
    return {"item_id": record["item_id"], "responses": [{"t_s": record["target"]["t_s"],
                                                         "text": record["target"]["text"]}]}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Ground truth of each benchmark scorer, built from the fixtures, with the scorer's own example predictions."""
    from streamcue.metrics import ovo_bench, streamingbench

    found = {}
    root = tmp_path_factory.mktemp("gt")
    sb = root / "sb-src"
    sb.mkdir()
    for name, path in SB.items():
        shutil.copy(path, sb / f"questions_{name}.json")
    for metric, args, module in (("ovo-bench", ["--annotations", OVO], ovo_bench),
                                 ("streamingbench", ["--questions", sb], streamingbench)):
        out = root / metric
        assert cli("build", metric, *args, "--out", out)[0] == 0
        for kind in ("mc_question", "active_item"):
            gt = out / f"{kind}.jsonl"
            if gt.is_file():
                records = [json.loads(x) for x in gt.read_text().splitlines()]
                found[(metric, kind)] = (gt, module.example_predictions(records) if kind == "mc_question" else
                                         [_active_prediction(r) for r in records])
    return found


@pytest.mark.slow
@EXAMPLES
@given(data=st.data(), choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_predictions_are_scored_or_refused(built, data, choice, seed):
    (metric, kind) = data.draw(st.sampled_from(sorted(built)))
    gt, predictions = built[(metric, kind)]
    rng = random.Random(seed)
    lines = [json.dumps(p) for p in predictions]
    at = rng.randrange(len(lines))
    lines[at] = corrupt_json(lines[at], rng, choice).replace("\n", " ")
    with tempfile.TemporaryDirectory() as tmp:
        pred = Path(tmp) / "pred.jsonl"
        pred.write_text("\n".join(lines) + "\n")
        report = Path(tmp) / "out" / "report.json"
        code, _, stderr = cli("evaluate", metric, "--gt", gt, "--pred", pred, "--output", report)
        check_outcome(code, stderr, report.parent)


def test_the_uncorrupted_predictions_score(built, tmp_path):
    """The property above starts from predictions that score (so a refusal there is the corruption's doing)."""
    for (metric, kind), (gt, predictions) in sorted(built.items()):
        pred = tmp_path / f"{metric}-{kind}.jsonl"
        pred.write_text("".join(json.dumps(p) + "\n" for p in predictions))
        code, _, err = cli("evaluate", metric, "--gt", gt, "--pred", pred)
        assert code == 0, (metric, kind, err)
