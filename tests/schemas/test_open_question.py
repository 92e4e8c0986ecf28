"""The ``open_question`` record kind: an open-ended question asked during a stream, answered in free text.

Shared by every benchmark whose questions are open-ended (StreamBench first): schema, semantic checks,
Parquet columns and typed records, all derived from ``schemas/open_question*.schema.json``.
"""

from __future__ import annotations

import copy

import pytest

from conftest import VALID

from streamcue.dataset_builders.output import FILE_NAMES, write_outputs
from streamcue.errors import RecordValidationError
from streamcue.io import read_jsonl
from streamcue.loaders.records import record_class
from streamcue.release.card import CONFIG_NAMES
from streamcue.schemas import ID_FIELDS, KINDS, check, check_file, validate
from streamcue.schemas.features import RELEASE_KINDS, codec, decode, encode, json_columns


def question(**changes):
    record = copy.deepcopy(VALID["open_question"])
    record.update(changes)
    return record


def problems(record, kind="open_question", **kw):
    return [(v.path, v.message) for v in check(record, kind, **kw)]


def test_the_kind_is_registered_everywhere_a_kind_is_named():
    assert {"open_question", "open_question_prediction"} <= set(KINDS)
    assert ID_FIELDS["open_question"] == ID_FIELDS["open_question_prediction"] == "question_id"
    assert FILE_NAMES["open_question"] == "open_question.jsonl"
    assert "open_question" in RELEASE_KINDS and CONFIG_NAMES["open_question"] == "open_question"


def test_a_question_and_a_prediction_are_valid():
    validate(question(), "open_question", durations={"v1": 30.0})
    validate(VALID["open_question_prediction"], "open_question_prediction")
    validate({"question_id": "sb-1", "response": None}, "open_question_prediction")  # no answer given


@pytest.mark.parametrize("change, path, words", [
    ({"answer": ""}, "$.answer", "should be non-empty"),
    ({"question": ""}, "$.question", "should be non-empty"),
    ({"query_time_s": -1}, "$.query_time_s", "less than the minimum"),
    ({"context": {"group_id": "sb", "turn": 0}}, "$.context.turn", "less than the minimum"),
    ({"options": ["a", "b"]}, "$", "Additional properties"),
    ({"task": ""}, "$.task", "should be non-empty"),
])
def test_schema_violations_name_the_path(change, path, words):
    found = problems(question(**change))
    assert any(p == path and words in m for p, m in found), found


def test_a_missing_reference_answer_is_a_violation():
    record = question()
    del record["answer"]
    assert problems(record) == [("$", "'answer' is a required property")]


def test_times_are_checked_against_the_video():
    assert problems(question(query_time_s=31.0), durations={"v1": 30.0}) == [
        ("$.query_time_s", "time 31.0 s is past the end of the video (30.0 s)")]
    assert problems(question(), durations={"other": 30.0}) == [
        ("$.video_id", "unknown video_id 'v1' (not in the videos file)")]
    assert problems(question(query_time_s=5.0, clip={"start_s": 9.0, "end_s": 12.0})) == [
        ("$.clip.start_s", "the clip starts at 9.0 s, after the question is asked (5.0 s)")]
    assert problems(question(clip={"start_s": 9.0, "end_s": 3.0})) == [
        ("$.clip.end_s", "end_s 3.0 is before start_s 9.0")]


def test_prediction_violations():
    assert problems({"question_id": "sb-1"}, "open_question_prediction") == [
        ("$", "'response' is a required property")]
    assert problems({"question_id": "sb-1", "response": 3}, "open_question_prediction") == [
        ("$.response", "3 is not of type 'string', 'null'")]


def test_file_check_finds_duplicate_ids_and_reads_the_videos_beside(tmp_path):
    video = copy.deepcopy(VALID["video"])
    video["duration_s"] = 10.0
    out = write_outputs([("video", video), ("open_question", question(query_time_s=5.0)),
                         ("open_question", question(question_id="sb-2", query_time_s=8.0))], tmp_path / "built")
    assert out.counts == {"video": 1, "open_question": 2}
    assert read_jsonl(tmp_path / "built" / "open_question.jsonl")[1]["question_id"] == "sb-2"
    lines = (tmp_path / "built" / "open_question.jsonl").read_text().splitlines()
    (tmp_path / "built" / "open_question.jsonl").write_text("\n".join([lines[0], lines[0]]) + "\n")
    report = check_file(tmp_path / "built" / "open_question.jsonl", "open_question")
    assert [v.message for v in report.violations] == ["duplicate question_id 'sb-1' (first seen at line 1)"]
    with pytest.raises(RecordValidationError, match="past the end of the video"):
        write_outputs([("video", video), ("open_question", question(query_time_s=12.0))], tmp_path / "late")


def test_parquet_columns_and_typed_records_round_trip():
    record = question()
    assert json_columns("open_question") == ["provenance", "verification"]
    assert codec("open_question").props["context"].form == "struct"
    assert decode(encode(record, "open_question"), "open_question") == record
    cls = record_class("open_question")
    typed = cls.from_dict(record)
    assert cls.__name__ == "OpenQuestion" and typed.context.turn == 1 and typed.answer.startswith("On the board")
    assert typed.to_dict() == record
    prediction = record_class("open_question_prediction").from_dict(VALID["open_question_prediction"])
    assert prediction.response == "On the cutting board." and prediction.to_dict() == VALID["open_question_prediction"]
