import json

import pytest

from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.schemas import KINDS, check, check_file, validate, validate_file
from streamcue.schemas.fields import field_rows

from conftest import VALID


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_a_valid_example(kind):
    validate(VALID[kind], kind, durations={"v1": 30.0})


@pytest.mark.parametrize("kind", KINDS)
def test_field_table_covers_required_fields(kind):
    rows = {row[0]: row for row in field_rows(kind)}
    for name in ("schema_version",) if "schema_version" in VALID[kind] else ():
        assert rows[name][2] == "yes"
    assert all(row[1] for row in rows.values())


def paths(record, kind, **kw):
    return [(v.path, v.message) for v in check(record, kind, **kw)]


@pytest.mark.parametrize(
    "kind, mutate, path, words",
    [
        ("video", lambda r: r.update(source="youtube"), "$.source", "is not one of"),
        ("video", lambda r: r.pop("duration_s"), "$", "'duration_s' is a required property"),
        ("video", lambda r: r["anonymization"].update(status="not_required"), "$.anonymization.status",
         "recorded video"),
        ("interval_qa", lambda r: r.update(task_type="XYZ"), "$.task_type", "is not one of"),
        ("counterfactual_mistake", lambda r: r["counterfactual"].update(verb="stir"), "$.counterfactual.verb",
         "only the noun may change"),
        ("counterfactual_mistake", lambda r: r["counterfactual"].update(noun="water"), "$.counterfactual.noun",
         "noun is unchanged"),
        ("counterfactual_mistake", lambda r: r["instruction"].update(t_s=9.0), "$.mistake.t_s",
         "before the instruction"),
        ("interval_qa", lambda r: r.update(answers=[]), "$.answers", "should be non-empty"),
        ("interval_qa", lambda r: r["answers"][0].update(start_s=5.0), "$.answers[0].end_s", "before start_s"),
        ("interval_qa", lambda r: r.update(proactive_type="implicit"), "$.proactive_type", "OR is explicit"),
        ("interval_qa", lambda r: r["answers"].reverse(), "$.answers[1].start_s", "not sorted"),
        ("interval_qa", lambda r: r["answers"][1].update(optimal_s=20.0), "$.answers[1].optimal_s",
         "outside its interval"),
        ("interval_qa", lambda r: r.update(query_time_s=5.0), "$.answers[0].end_s", "before the question"),
        ("interval_qa", lambda r: r.update(task_type="TRC", proactive_type="contextual"), "$.context", "contextual"),
        ("interval_qa", lambda r: r["answers"][1].update(end_s=40.0), "$.answers[1].end_s",
         "past the end of the video"),
        ("dense_caption", lambda r: r["captions"][1].update(t_s=2), "$.captions[1].t_s", "one caption per second"),
        ("dense_caption", lambda r: r.update(fps=2), "$.fps", "1 was expected"),
        ("guidance", lambda r: r["events"].reverse(), "$.events[2].t_s", "not sorted"),
        ("guidance", lambda r: r["events"][1].update(mistake_category=None), "$.events[1].mistake_category",
         "need a mistake_category"),
        ("guidance", lambda r: r["events"].pop(), "$.events", "finish"),
        ("guidance", lambda r: r["events"][0].update(step_ids=[9]), "$.events[0].step_ids", "not in the plan"),
        ("guidance", lambda r: r["plan"][0]["actions"][0].update(end_s=0.5), "$.plan[0].actions[0].end_s",
         "before start_s"),
        ("interval_qa_prediction", lambda r: r["responses"][0].update(t_s=-1), "$.responses[0].t_s",
         "less than the minimum"),
        ("guidance_prediction", lambda r: r["events"][0].update(type="hint"), "$.events[0].type", "is not one of"),
    ],
)
def test_invalid_examples_name_the_path(valid, kind, mutate, path, words):
    record = valid[kind]
    mutate(record)
    found = paths(record, kind, durations={"v1": 30.0})
    assert any(p == path and words in m for p, m in found), found


def test_unknown_video_is_reported(valid):
    assert ("$.video_id", "unknown video_id 'v1' (not in the videos file)") in paths(valid["guidance"], "guidance",
                                                                                     durations={})


def test_validate_raises_with_every_violation(valid):
    record = valid["interval_qa"]
    record["task_type"] = "nope"
    record["question"] = ""
    with pytest.raises(RecordValidationError) as info:
        validate(record, "interval_qa")
    assert len(info.value.violations) == 2
    assert "qa_id=q1" in str(info.value) and "(and 1 more violation)" in str(info.value)


def test_unknown_kind_suggests_the_closest():
    with pytest.raises(ConfigError, match="Did you mean 'guidance'"):
        validate({}, "guidanse")


def write_jsonl(path, records, raw_lines=()):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "".join(raw_lines))
    return path


def test_file_errors_name_file_line_record_and_path(tmp_path, valid):
    bad = json.loads(json.dumps(valid["interval_qa"]))
    bad["qa_id"] = "q2"
    bad["answers"][0]["end_s"] = 1.5
    f = write_jsonl(tmp_path / "qa.jsonl", [valid["interval_qa"], bad, valid["interval_qa"]])
    report = check_file(f, "interval_qa")
    assert [str(v) for v in report.violations] == [
        f"{f}:2, record qa_id=q2: $.answers[0].end_s: end_s 1.5 is before start_s 2.0",
        f"{f}:3, record qa_id=q1: $.qa_id: duplicate qa_id 'q1' (first seen at line 1)",
    ]


def test_truncated_jsonl_line_is_a_violation_and_the_rest_is_still_checked(tmp_path, valid):
    bad = dict(valid["guidance"], video_id="v3", events=[])
    f = write_jsonl(tmp_path / "g.jsonl", [valid["guidance"]],
                    ['{"video_id": "v2", "plan": [\n', json.dumps(bad) + "\n"])
    report = check_file(f, "guidance")
    assert report.records == 3
    assert [(v.line, v.path) for v in report.violations][:1] == [(2, "$")]
    assert "invalid JSON" in report.violations[0].message
    assert any(v.line == 3 for v in report.violations)
    with pytest.raises(InputError, match=r"g.jsonl:2, .*invalid JSON|g.jsonl:2: .*invalid JSON"):
        validate_file(f, "guidance")


def test_videos_file_beside_records_bounds_times(tmp_path, valid):
    write_jsonl(tmp_path / "videos.jsonl", [dict(valid["video"], duration_s=5.0)])
    f = write_jsonl(tmp_path / "guidance.jsonl", [valid["guidance"]])
    with pytest.raises(RecordValidationError, match="past the end of the video"):
        validate_file(f, "guidance")
