"""Where records are and what they are: each kind's id field, file name and release config (views of the rows of
``streamcue/schemas/kinds.py``, where each kind is declared once), and how a record file's kind is told; loaders,
metrics, the CLI and the release read them here.

>>> from streamcue.schemas.discovery import FILE_NAMES, kind_of_record
>>> FILE_NAMES["mistake_summary"], kind_of_record({"qa_id": "q1"}, ("mc_question", "interval_qa"))
('mistake_summaries.jsonl', 'interval_qa')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from streamcue.schemas.kinds import TABLE, ordered, view

__all__ = ["ID_FIELDS", "FILE_NAMES", "CONFIG_NAMES", "KIND_OF_CONFIG", "VIDEOS_FILE", "MANIFEST",
           "kind_of_record", "kind_of_file", "folder_files"]


#: Record kinds and the field that identifies a record of that kind (:data:`streamcue.schemas.kinds.TABLE`).
ID_FIELDS: Mapping[str, str] = view("ID_FIELDS", lambda: {k: row.id_field for k, row in TABLE.items()})

#: A build folder's file of each record kind (what ``streamcue build`` writes).
FILE_NAMES: Mapping[str, str] = view("FILE_NAMES", lambda: {k: TABLE[k].file for k in ordered("files")})
VIDEOS_FILE = FILE_NAMES["video"]

#: A release's dataset config of each record kind: the one name of a config in the card, the manifest, the
#: diff, the changelog and the loaders.
CONFIG_NAMES: Mapping[str, str] = view("CONFIG_NAMES", lambda: {k: TABLE[k].config for k in ordered("release")})
#: config name -> record kind
KIND_OF_CONFIG: Mapping[str, str] = view("KIND_OF_CONFIG", lambda: {v: k for k, v in CONFIG_NAMES.items()})
#: The file that makes a folder a release (``streamcue release build``).
MANIFEST = "manifest.json"


def kind_of_record(record: Mapping[str, Any], kinds: Sequence[str]) -> str | None:
    """The first of ``kinds`` that ``record`` is (told by its id field, or what its row's ``tells`` says), else None."""
    for kind in kinds:
        tells = TABLE[kind].tells if kind in TABLE else None
        if tells(record) if tells is not None else ID_FIELDS[kind] in record:
            return kind
    return None


def kind_of_file(path: Path, kinds: Sequence[str]) -> str | None:
    """The kind among ``kinds`` of the JSONL record file ``path``: its name (``<kind>.jsonl`` or the build's
    file name), the only kind, else its first record's keys; None when nothing tells."""
    from streamcue.io import iter_jsonl

    by_name = {FILE_NAMES.get(k, f"{k}.jsonl"): k for k in kinds} | {f"{k}.jsonl": k for k in kinds}
    if path.name in by_name:
        return by_name[path.name]
    if len(kinds) == 1:
        return kinds[0]
    first = next(iter(iter_jsonl(path)), (None, None))[1]
    return kind_of_record(first, kinds) if isinstance(first, dict) else None


def folder_files(folder: Path, kinds: Sequence[str]) -> dict[str, Path]:
    """``{kind: file}`` of the record files of ``kinds`` a build folder holds, in the order of ``kinds``."""
    return {k: folder / FILE_NAMES.get(k, f"{k}.jsonl") for k in kinds
            if (folder / FILE_NAMES.get(k, f"{k}.jsonl")).is_file()}
