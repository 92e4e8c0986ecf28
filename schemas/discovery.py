"""Where records are and what they are: each kind's id field, file name and release config, and how a
record file's kind is told. The one place that decides it (loaders, metrics, the CLI and the release read it).

>>> from streamcue.schemas.discovery import FILE_NAMES, kind_of_record
>>> FILE_NAMES["mistake_summary"], kind_of_record({"qa_id": "q1"}, ("mc_question", "interval_qa"))
('mistake_summaries.jsonl', 'interval_qa')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ID_FIELDS", "FILE_NAMES", "CONFIG_NAMES", "KIND_OF_CONFIG", "VIDEOS_FILE", "MANIFEST",
           "kind_of_record", "kind_of_file", "folder_files"]


#: Record kinds and the field that identifies a record of that kind.
ID_FIELDS: dict[str, str] = {
    "video": "video_id",
    "interval_qa": "qa_id",
    "dense_caption": "task_id",
    "guidance": "video_id",
    "interval_qa_prediction": "qa_id",
    "dense_caption_prediction": "task_id",
    "guidance_prediction": "video_id",
    "interval_qa_minimal": "qa_id",
    "dense_caption_minimal": "task_id",
    "guidance_minimal": "video_id",
    "recorded_task": "task_id",
    "reasoning_trace": "id",
    "reasoning_trace_prediction": "id",
    "mistake_summary": "summary_id",
    "counterfactual_mistake": "cf_id",
    "mc_question": "question_id",
    "active_item": "item_id",
    "mc_question_prediction": "question_id",
    "active_item_prediction": "item_id",
    "open_question": "question_id",
    "open_question_prediction": "question_id",
}

#: A build folder's file of each record kind (what ``streamcue build`` writes).
FILE_NAMES: dict[str, str] = {
    "video": "videos.jsonl",
    "guidance": "guidance.jsonl",
    "interval_qa": "interval_qa.jsonl",
    "dense_caption": "dense_caption.jsonl",
    "mistake_summary": "mistake_summaries.jsonl",
    "counterfactual_mistake": "counterfactual_mistakes.jsonl",
    "mc_question": "mc_question.jsonl",
    "active_item": "active_item.jsonl",
    "open_question": "open_question.jsonl",
}
VIDEOS_FILE = FILE_NAMES["video"]

#: A release's dataset config of each record kind: the one name of a config in the card, the manifest, the
#: diff, the changelog and the loaders.
CONFIG_NAMES: dict[str, str] = {"video": "videos", "interval_qa": "interval_qa", "dense_caption": "dense_caption",
                                "guidance": "guidance", "mc_question": "mc_question", "active_item": "active_item",
                                "open_question": "open_question"}
#: config name -> record kind
KIND_OF_CONFIG: dict[str, str] = {v: k for k, v in CONFIG_NAMES.items()}
#: The file that makes a folder a release (``streamcue release build``).
MANIFEST = "manifest.json"

#: What tells a record of each kind where its id field alone does not: a guidance record's id is its video's
#: ``video_id`` (a video record has a ``uri``); multiple-choice and open questions both have a ``question_id``,
#: only the former has ``options``.
_TELLS = {"video": lambda r: "uri" in r and "plan" not in r, "guidance": lambda r: "plan" in r,
          "mc_question": lambda r: "options" in r,
          "open_question": lambda r: "question_id" in r and "options" not in r}


def kind_of_record(record: Mapping[str, Any], kinds: Sequence[str]) -> str | None:
    """The first of ``kinds`` that ``record`` is (told by its id field, or what ``_TELLS`` says), else None."""
    for kind in kinds:
        tells = _TELLS.get(kind)
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
