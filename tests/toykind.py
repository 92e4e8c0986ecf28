"""A throwaway record kind made at test time: its two schema files (record and prediction) written to a temporary
folder, its two rows added to ``streamcue/schemas/kinds.py``'s table, and ToyBench (tests/toybench.py) made a
benchmark of that kind instead of ``open_question``. Nothing else is edited.

Proved end to end in tests/schemas/test_new_kind.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

import pytest

from streamcue.registry import BENCHMARKS
from streamcue.schemas._semantic import registered_benchmark
from streamcue.schemas.kinds import TABLE, Kind

#: The throwaway kind's name.
KIND = "toy_question"
CARD = "a toy question asked once at its time, answered in free text (a test's throwaway kind)"


def _schema(kind: str, like: str, title: str) -> dict[str, Any]:
    """The schema of ``kind``: a copy of the package's ``like`` schema under the new kind's own ``$id``."""
    schema = json.loads(resources.files("streamcue.schemas").joinpath(f"{like}.schema.json").read_text())
    return {**schema, "$id": f"urn:streamcue:{kind}", "title": kind, "description": title}


def check_toy_question(record: Mapping[str, Any], durations: Any) -> Iterator[tuple[str, str]]:
    """The kind's semantic check (its row names it): a benchmark registered with toy_question records, and the
    question asked inside the video."""
    yield from registered_benchmark(record, KIND)
    duration = (durations or {}).get(record["video_id"])
    if duration is not None and record["query_time_s"] > duration:
        yield "$.query_time_s", f"time {record['query_time_s']} s is past the end of the video ({duration} s)"


def _rows(folder: Any) -> tuple[Kind, Kind]:
    question = Kind(KIND, "question_id", f"{KIND}.jsonl", KIND, card=CARD,
                    tells=lambda r: "question_id" in r and r.get("benchmark") == "toybench", answer="text",
                    strategies=("single-call",), check="toykind:check_toy_question", schemas=folder,
                    rank={"discover": 8, "default": 5.5, "ids": 6, "release": 7, "files": 9})
    return question, Kind(f"{KIND}_prediction", "question_id", schemas=folder)


@pytest.fixture
def toykind(toybench, tmp_path, monkeypatch):
    """ToyBench (its files and registry entry, tests/toybench.py) with ``toy_question`` as its one kind: the kind's
    schema files in ``tmp_path/kind-schemas`` and its rows in the kinds table. Returns ToyBench's root folder."""
    folder = tmp_path / "kind-schemas"
    folder.mkdir()
    for kind, like, title in ((KIND, "open_question", "A toy question (a test's throwaway kind)."),
                              (f"{KIND}_prediction", "open_question_prediction", "A toy question's answer.")):
        (folder / f"{kind}.schema.json").write_text(json.dumps(_schema(kind, like, title), indent=1))
    for row in _rows(folder):
        monkeypatch.setitem(TABLE, row.name, row)
    for path in ("dataset_builders/toybench.py", "loaders/protocols/toybench.py", "metrics/toybench.py"):
        file = toybench / path
        file.write_text(file.read_text().replace("open_question", KIND))
    monkeypatch.setitem(BENCHMARKS, "toybench", dataclasses.replace(BENCHMARKS["toybench"], kinds=(KIND,)))
    return toybench
