"""A new record kind is its two schema files and its rows in ``streamcue/schemas/kinds.py``: proved on a throwaway
one, made at test time.

``toy_question`` (tests/toykind.py) is ToyBench's one kind (tests/toybench.py, its files with ``open_question``
replaced): its schema files lie in a temporary folder and its rows are added to the kinds table, nothing else is
edited. ``streamcue build toybench`` writes ``toy_question.jsonl``, ``streamcue validate`` checks it (schema and the
row's semantic check), ``streamcue release build`` publishes it as a config with its card line, ``load_dataset``
and ``open_records`` read it back, and ``streamcue run toybench`` replays it against a stub model and scores it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli
from toybench import answer_right
from toykind import CARD, KIND

from streamcue.io import read_jsonl
from streamcue.testing.stub_llm import StubLLMServer

pytestmark = pytest.mark.llm_server


def test_a_kind_that_is_only_its_schema_files_and_its_rows_goes_through_every_stage(toykind, tmp_path, monkeypatch):
    from streamcue.loaders.sources import RECORD_KINDS, open_records
    from streamcue.schemas import ID_FIELDS, KINDS
    from streamcue.schemas.discovery import CONFIG_NAMES, FILE_NAMES

    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path / "cache"))
    assert KIND in KINDS and f"{KIND}_prediction" in KINDS and KIND in RECORD_KINDS
    assert (ID_FIELDS[KIND], FILE_NAMES[KIND], CONFIG_NAMES[KIND]) == ("question_id", f"{KIND}.jsonl", KIND)
    source = toykind / "dataset_builders" / "toybench.json"
    built = tmp_path / "built"
    code, out, err = cli("build", "toybench", "--questions", source, "--out", built)
    assert code == 0, err
    assert f"wrote 3 {KIND}, 2 video to {built}" in " ".join(out.split())

    # validate: the schema from the kind's own folder, then the semantic check its row names
    assert cli("validate", built / f"{KIND}.jsonl", "--kind", KIND)[0] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(dict(read_jsonl(built / f"{KIND}.jsonl")[0], benchmark="streambench")) + "\n"
                   + json.dumps(dict(read_jsonl(built / f"{KIND}.jsonl")[1], answer="")) + "\n")
    code, out, err = cli("validate", bad, "--kind", KIND)
    assert code != 0 and "$.benchmark" in out + err and "$.answer" in out + err

    # release: its own config, with the card line of its row; read back by datasets and by the loaders
    release = tmp_path / "dist"
    code, out, err = cli("release", "build", "--records", built, "--version", "1.0.0", "--out", release,
                         "--allow-unverified")
    assert code == 0, err
    manifest = json.loads((release / "manifest.json").read_text())
    assert set(manifest["configs"]) == {"videos", KIND} and manifest["default_config"] == KIND
    assert f"`{KIND}`: {CARD}" in (release / "README.md").read_text()
    import datasets

    rows = datasets.load_dataset(str(release), KIND, split="test").to_list()
    assert sorted(r["question_id"] for r in rows) == ["toy-0-0", "toy-0-1", "toy-1-0"]
    opened = open_records(release)
    assert list(opened.by_kind) == [KIND] and len(opened.by_kind[KIND]) == 3

    # replay and score: single-call plays it (its row says so), the metric reads its predictions
    with StubLLMServer(answer_right) as server:
        code, out, err = cli("run", "toybench", built, "--out", tmp_path / "run", "--no-video",
                             "--llm-base-url", server.base_url, "--llm-model", "stub-right")
    assert code == 0, err
    report = json.loads((tmp_path / "run" / "replay_report.json").read_text())
    assert report["kinds"][KIND]["played"] == 3
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tables"]["group"]["accuracy"]["estimate"] == pytest.approx(1.0)
    samples = read_jsonl(tmp_path / "run" / "samples.jsonl")
    assert {(s["kind"], s["answered"]) for s in samples} == {(KIND, True)}


def test_without_its_rows_nothing_knows_it():
    from streamcue.errors import ConfigError
    from streamcue.schemas import KINDS, check
    from streamcue.schemas.discovery import FILE_NAMES

    assert KIND not in KINDS and KIND not in FILE_NAMES
    with pytest.raises(ConfigError, match="record kind"):
        check({"question_id": "q"}, KIND)


#: The shared tables of record kinds: each is a view of streamcue/schemas/kinds.py, never a list of its own.
VIEWS = {"ID_FIELDS", "KINDS", "FILE_NAMES", "CONFIG_NAMES", "KIND_OF_CONFIG", "RELEASE_KINDS", "RECORD_KINDS",
         "DEFAULT_ORDER", "ASKED_ONCE", "_RECORD_IDS"}
PACKAGE = ("streamcue", "schemas", "anonymize", "dataset_builders", "annotation", "release", "loaders", "metrics")


def test_no_shared_module_lists_the_kinds_outside_the_table():
    import ast

    repo = Path(__file__).resolve().parents[2]
    listed = []
    for path in sorted(p for folder in PACKAGE for p in (repo / folder).rglob("*.py")):
        name, text = path.relative_to(repo).with_suffix("").as_posix(), path.read_text(encoding="utf-8")
        if not any(view in text for view in VIEWS):
            continue
        for node in ast.walk(ast.parse(text)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) and node.value is not None else []
            watched = VIEWS | ({"TASKS"} if name == "release/card" else set())
            if any(isinstance(t, ast.Name) and t.id in watched for t in targets) and not (
                    isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) in ("view", "names")):
                listed.append(f"{path.name}:{node.lineno}")
    assert listed == []


def test_every_row_names_what_exists():
    from streamcue.loaders.strategies import STRATEGIES
    from streamcue.schemas import load_schema
    from streamcue.schemas.kinds import ORDERS, TABLE, semantic_check

    for kind, row in TABLE.items():
        assert load_schema(kind)["$id"] == f"urn:streamcue:{kind}", kind
        assert set(row.strategies) <= set(STRATEGIES) and set(row.rank) <= set(ORDERS), kind
        assert row.check is None or callable(semantic_check(kind)), kind
        assert row.answer in (None, "text", "choice") and (row.file is not None or "discover" not in row.rank), kind
        assert (row.config is not None) == ("release" in row.rank), kind
