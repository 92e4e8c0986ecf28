"""The Label Studio round-trip against a real server: push, annotate through the API, pull."""

from __future__ import annotations

import copy
import itertools
import json

import pytest

from conftest import CAPTAINCOOK4D, VALID, cli_run, pulled_verification
from label_studio_server import command_env, executable, make_users, push_served, serve_videos

pytest.importorskip("label_studio_sdk")
httpx = pytest.importorskip("httpx")

from streamcue.annotation import client as ls  # noqa: E402
from streamcue.annotation.convert import frames_to_span, moment_to_frame, prediction, span_to_frames  # noqa: E402
from streamcue.annotation.order import review_key  # noqa: E402
from streamcue.annotation.roundtrip import pull, status, status_report  # noqa: E402
from streamcue.annotation.verify import content_sha256  # noqa: E402
from streamcue.dataset_builders import captaincook4d  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.errors import ConfigError, InputError, ServiceError  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402

pytestmark = [pytest.mark.label_studio, pytest.mark.slow, pytest.mark.usefixtures("connected"),
              pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs it "
                                 "in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)")]
FPS = 30.0
_names = itertools.count()


def annotate_command(server, *args):
    """``streamcue annotate ARGS`` in this process (:func:`conftest.cli_run`) with the server's variables, which the
    command reads when it runs."""
    return cli_run("annotate", *args, env=command_env(server))


@pytest.fixture(scope="module")
def annotators(server):
    return list(make_users(server, ("ann1", "ann2"), "streamcue.test", username="{}").values())


def project_name(kind):
    return f"{kind}-{next(_names)}"


def records_dir(tmp_path, kind, records):
    write_jsonl(tmp_path / "videos.jsonl", [VALID["video"]])
    write_jsonl(tmp_path / f"{kind}.jsonl", records)
    return tmp_path / f"{kind}.jsonl"


def qa_records():
    first = copy.deepcopy(VALID["interval_qa"])
    second = dict(copy.deepcopy(VALID["interval_qa"]), qa_id="q2", question="When is the tap running?",
                  answers=[{"start_s": 20.0, "end_s": 25.0, "text": "The tap is running."}])
    third = dict(copy.deepcopy(VALID["interval_qa"]), qa_id="q3", question="Tell me when the lid is on.")
    return [first, second, third]


def task_ids(project):
    server = ls.connect()
    proj, _ = ls.project_for(server, project)
    return {t["data"]["record_id"]: t["id"] for t in ls.export_tasks(server, proj.id)}


def annotate(server, task, result, user, cancelled=False, lead_time=None):
    r = httpx.post(f"{server.url}/api/tasks/{task}/annotations/", headers={"Authorization": f"Token {server.token}"},
                   json={"result": result, "completed_by": user, "was_cancelled": cancelled,
                         **({"lead_time": lead_time} if lead_time is not None else {})})
    r.raise_for_status()


def rows(result, rid, from_name):
    return next(r for r in result if r["id"] == rid and r["from_name"] == from_name)


def test_frame_conversion_is_exact():
    for start_s, end_s in [(0.0, 1.0), (2.0, 4.0), (10.5, 12.5)]:
        start, end = span_to_frames(start_s, end_s, FPS)
        assert frames_to_span(start, end, FPS) == (start_s, end_s)
    assert span_to_frames(0.0, 1.0, 30) == (1, 30)  # 1-based, inclusive


def test_untouched_records_of_every_kind_come_back_identical(server, tmp_path):
    out = tmp_path / "cc"
    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D, recordings=("1_7", "1_10",
                                                                                                  "2_3"))), out)
    cases = [("guidance", out / "guidance.jsonl")]
    for kind, records in (("interval_qa", qa_records()), ("dense_caption", [VALID["dense_caption"]]),
                          ("guidance", [VALID["guidance"]])):
        cases.append((kind, records_dir(tmp_path / kind, kind, records)))
    for kind, path in cases:
        name = project_name(kind)
        result = push_served(kind, path, name)
        assert result.imported == len(read_jsonl(path)) and result.skipped == 0
        assert push_served(kind, path, name).imported == 0  # pushing again adds nothing
        pulled = tmp_path / f"{name}.jsonl"
        summary = pull(name, pulled)
        assert summary.states == {"untouched": len(read_jsonl(path))}
        assert pulled.read_text() == path.read_text()


def test_interval_qa_moved_edited_rejected_and_disputed(server, annotators, tmp_path):
    records = qa_records()
    path = records_dir(tmp_path, "interval_qa", records)
    name = project_name("interval_qa")
    push_served("interval_qa", path, name)
    tasks = task_ids(name)
    # q1: both annotators move the second interval by a few frames and edit its text the same way
    for user, end_frame in zip(annotators, (390, 395)):
        result = prediction(records[0], "interval_qa", FPS)
        rows(result, "a1", "answers")["value"]["ranges"] = [{"start": 301, "end": end_frame}]
        rows(result, "a1", "answer_text")["value"]["text"] = ["The red cup is by the sink."]
        annotate(server, tasks["q1"], result, user)
    # q2: both reject it; one skipped annotation is ignored
    for user in annotators:
        result = prediction(records[1], "interval_qa", FPS) + [
            {"id": "flags1", "from_name": "flags", "to_name": "video", "type": "choices",
             "value": {"choices": ["reject"]}}]
        annotate(server, tasks["q2"], result, user)
    annotate(server, tasks["q2"], [], annotators[0], cancelled=True)
    # q3: they disagree on the answer text
    for user, text in zip(annotators, ("A red cup on the table.", "A blue cup on the table.")):
        result = prediction(records[2], "interval_qa", FPS)
        rows(result, "a0", "answer_text")["value"]["text"] = [text]
        annotate(server, tasks["q3"], result, user)

    summary = pull(name, tmp_path / "pulled.jsonl")
    pulled = {r["qa_id"]: r for r in read_jsonl(tmp_path / "pulled.jsonl")}
    q1 = pulled["q1"]
    assert q1["answers"][0] == records[0]["answers"][0]  # untouched interval: exact seconds kept
    assert q1["answers"][1] == {"start_s": 10.0, "end_s": 13.0, "optimal_s": 10.5,
                                "text": "The red cup is by the sink."}
    assert pulled_verification(q1) == {
        "status": "verified", "annotators": ["ann1@streamcue.test", "ann2@streamcue.test"], "checks": 2,
        "guideline": "interval_qa.v1", "decided_by": "agreement",
        "content_sha256": content_sha256(q1)}   # the hash of what was verified, signed
    assert "interval a1 moved" in summary.changes["q1"] and "answer a1 edited" in summary.changes["q1"]
    assert pulled["q2"]["verification"]["status"] == "rejected" and pulled["q2"]["answers"] == records[1]["answers"]
    assert pulled["q2"]["verification"]["checks"] == 2
    q3 = pulled["q3"]
    assert {k: v for k, v in q3.items() if k != "verification"} == {k: v for k,
                                                                    v in records[2].items() if k != "verification"}
    assert q3["verification"]["status"] == "unverified" and q3["verification"]["checks"] == 2
    assert q3["verification"]["notes"][-1] == (
        "disagreement: answer a0 (2s-4s): text 'A red cup on the table.' (ann1@streamcue.test) vs "
        "'A blue cup on the table.' (ann2@streamcue.test)")
    assert "q3" in summary.disagreements
    states = {row["record"]: (row["state"], row["annotations"], row["missing"]) for row in status(name)}
    assert states == {"q1": ("verified", 2, 0), "q2": ("rejected", 2, 0), "q3": ("disagreement", 2, 0)}
    # the command's summary piped (80 columns, not a terminal): its title and every line whole, none wrapped
    done = cli_run("annotate", "pull", "--project", name, "--out", tmp_path / "cli.jsonl",
                   env={**command_env(server), "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"3 records -> {tmp_path / 'cli.jsonl'}" in lines, done.stdout
    assert f"q3: annotators disagree: {summary.disagreements['q3']}" in lines and "q2: question rejected" in lines


def test_dense_captions_corrected_and_guidance_mistake_moved(server, annotators, tmp_path):
    dense = copy.deepcopy(VALID["dense_caption"])
    path = records_dir(tmp_path / "d", "dense_caption", [dense])
    name = project_name("dense_caption")
    push_served("dense_caption", path, name)
    for user in annotators:
        result = prediction(dense, "dense_caption", FPS)
        rows(result, "c1", "caption")["value"]["text"] = ["Slicing the onion into rings."]
        annotate(server, task_ids(name)["t1"], result, user)
    pull(name, tmp_path / "dense.jsonl")
    [record] = read_jsonl(tmp_path / "dense.jsonl")
    assert record["captions"] == [dense["captions"][0], {"t_s": 1, "text": "Slicing the onion into rings.",
                                                         "corrected": True}]
    assert record["verification"]["status"] == "verified"

    guidance = copy.deepcopy(VALID["guidance"])
    path = records_dir(tmp_path / "g", "guidance", [guidance])
    name = project_name("guidance")
    push_served("guidance", path, name)
    tasks = task_ids(name)
    # one annotator so far: pending, nothing applied yet
    result = prediction(guidance, "guidance", FPS)
    rows(result, "e1", "events")["value"]["ranges"] = [{"start": 211, "end": 211}]  # the mistake shows at 7 s
    rows(result, "e1", "event_text")["value"]["text"] = ["Add more water: the kettle is below the line."]
    annotate(server, tasks["v1"], result, annotators[0])
    pull(name, tmp_path / "g1.jsonl")
    [pending] = read_jsonl(tmp_path / "g1.jsonl")
    assert pending["events"] == guidance["events"]
    assert pending["verification"] == {"status": "unverified", "annotators": ["ann1@streamcue.test"], "checks": 1,
                                       "guideline": "guidance.v1"}
    annotate(server, tasks["v1"], result, annotators[1])
    pull(name, tmp_path / "g2.jsonl")
    [record] = read_jsonl(tmp_path / "g2.jsonl")
    mistake = [e for e in record["events"] if e["type"] == "mistake"][0]
    assert mistake == {**guidance["events"][1], "t_s": 7.0, "text": "Add more water: the kettle is below the line.",
                       "time_source": "annotator"}
    assert [e["type"] for e in record["events"]] == ["instruction", "mistake", "finish"]


def test_clear_errors_and_no_partial_output(server, annotators, tmp_path, monkeypatch):
    path = records_dir(tmp_path, "guidance", [VALID["guidance"]])
    name = project_name("guidance")
    push_served("guidance", path, name)
    with pytest.raises(ConfigError, match=f"project '{name}' was built for guidance records, not interval_qa"):
        push_served("interval_qa", records_dir(tmp_path / "qa", "interval_qa", qa_records()), name)
    # a malformed region: the range ends before it starts
    result = prediction(VALID["guidance"], "guidance", FPS)
    rows(result, "e0", "events")["value"]["ranges"] = [{"start": 50, "end": 10}]
    annotate(server, task_ids(name)["v1"], result, annotators[0])
    out = tmp_path / "out.jsonl"
    out.write_text("previous pull\n")
    with pytest.raises(InputError, match=r"task \d+, annotation \d+, region e0: range 50-10 is not two frame numbers"):
        pull(name, out)
    assert out.read_text() == "previous pull\n"

    # a label the config does not have
    other = project_name("guidance")
    push_served("guidance", path, other)
    result = prediction(VALID["guidance"], "guidance", FPS)
    rows(result, "e1", "events")["value"]["timelinelabels"] = ["warning"]
    annotate(server, task_ids(other)["v1"], result, annotators[0])
    with pytest.raises(InputError, match=r"annotation \d+: does not fit the labeling config: .*valid labels"):
        pull(other, out)
    assert out.read_text() == "previous pull\n"

    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "wrong-token")
    with pytest.raises(ServiceError, match="refused the token"):
        pull(name, out)
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:9")
    with pytest.raises(ServiceError, match="cannot reach Label Studio at http://127.0.0.1:9"):
        pull(name, out)
    assert out.read_text() == "previous pull\n"


def test_cli_push_status_pull(server, tmp_path):
    path = records_dir(tmp_path, "interval_qa", qa_records())
    name = project_name("interval_qa")

    def run(*args):
        return annotate_command(server, *args)

    done = run("push", "--kind", "interval_qa", "--records", str(path), "--project", name,
               "--video-root", str(serve_videos(path.with_name("videos.jsonl"))))
    assert done.returncode == 0, done.stderr
    assert "3 tasks imported" in done.stdout
    done = run("status", "--project", name)
    assert done.returncode == 0 and "untouched" in done.stdout and "q3" in done.stdout
    done = run("pull", "--project", name, "--out", str(tmp_path / "pulled.jsonl"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pulled.jsonl").read_text() == path.read_text()
    assert server.token not in done.stdout + done.stderr
    done = run("pull", "--project", "no-such-project", "--out", str(tmp_path / "x.jsonl"))
    assert done.returncode == 2 and done.stderr.startswith("error: no Label Studio project named 'no-such-project'")
    assert json.loads((tmp_path / "pulled.jsonl").read_text().splitlines()[0])["qa_id"] == "q1"


def test_pull_validates_times_against_the_video_as_validate_does(server, annotators, tmp_path):
    """The probe: both annotators put a mistake at 333,334 s of a 30 s video and pull wrote it as verified (validate
    refused the same file). Now that record comes back as pushed, unverified, with the reason; an agreed record
    is verified and carries the hash of what was verified."""
    from streamcue.schemas import check_file

    late, fine = copy.deepcopy(VALID["guidance"]), dict(copy.deepcopy(VALID["guidance"]), video_id="v1b")
    write_jsonl(tmp_path / "videos.jsonl", [VALID["video"], dict(VALID["video"], video_id="v1b")])
    write_jsonl(tmp_path / "guidance.jsonl", [late, fine])
    name = project_name("guidance")
    push_served("guidance", tmp_path / "guidance.jsonl", name)
    tasks = task_ids(name)
    for user in annotators:
        result = prediction(late, "guidance", FPS)
        frame = moment_to_frame(333_334.0, FPS)
        rows(result, "e1", "events")["value"]["ranges"] = [{"start": frame, "end": frame}]
        annotate(server, tasks["v1"], result, user)
        annotate(server, tasks["v1b"], prediction(fine, "guidance", FPS), user)
    out = tmp_path / "pulled.jsonl"   # beside videos.jsonl: validate checks it against the videos' lengths
    summary = pull(name, out)
    assert summary.states == {"invalid": 1, "verified": 1}
    assert "past the end of the video (30.0 s)" in summary.invalid["v1"]
    pulled = {r["video_id"]: r for r in read_jsonl(out)}
    assert pulled["v1"]["events"] == late["events"] and pulled["v1"]["verification"]["status"] == "unverified"
    assert "content_sha256" not in pulled["v1"]["verification"]
    assert pulled["v1b"]["verification"]["content_sha256"] == content_sha256(pulled["v1b"])
    assert check_file(out, "guidance").ok   # what validate says of the file pull wrote
    # issue 46: with no videos.jsonl anywhere near (pulled elsewhere), the length push wrote into the task holds
    (tmp_path / "elsewhere").mkdir()
    again = pull(name, tmp_path / "elsewhere" / "pulled.jsonl")
    assert again.states == {"invalid": 1, "verified": 1}
    assert "past the end of the video (30.0 s)" in again.invalid["v1"]


def test_videos_are_served_through_local_files(server, tmp_path):
    path = records_dir(tmp_path, "dense_caption", [VALID["dense_caption"]])
    name = project_name("dense_caption")
    with pytest.raises(ConfigError, match="must be a subfolder of the document root"):
        push_served("dense_caption", path, name, videos_root=server.document_root, document_root=server.document_root)
    sub = server.document_root / "videos"
    (sub / "recorded").mkdir(parents=True, exist_ok=True)
    (sub / "recorded" / "v1.mp4").write_bytes(b"served bytes")
    push_served("dense_caption", path, name, videos_root=sub, document_root=server.document_root)
    conn = ls.connect()
    project, _ = ls.project_for(conn, name)
    [task] = ls.export_tasks(conn, project.id)
    assert task["data"]["video"] == "/data/local-files/?d=videos/recorded/v1.mp4"
    served = httpx.get(server.url + task["data"]["video"], headers={"Authorization": f"Token {server.token}"})
    assert served.status_code == 200 and served.content == b"served bytes"


def test_the_evidence_verdict_is_a_task_field_and_survives_the_round_trip(server, tmp_path):
    records = qa_records()
    records[1]["provenance"]["evidence_check"] = {
        "verdict": "unsupported", "confidence": 0.85, "justification": "the tap runs at 40 s, not at 20 s",
        "evidence": [{"start_s": 40.0, "end_s": 44.0, "description": "The tap is running."}],
        "observed": [{"start_s": 0.0, "end_s": 30.0}], "rounds": 2, "calls": 6, "model": "m", "prompts": {}}
    path = records_dir(tmp_path / "ev", "interval_qa", records)
    name = project_name("interval_qa")
    push_served("interval_qa", path, name)
    session = ls.connect()
    project, _ = ls.project_for(session, name)
    data = {t["data"]["record_id"]: t["data"] for t in ls.export_tasks(session, project.id)}
    assert (data["q2"]["evidence_verdict"], data["q2"]["evidence_confidence"]) == ("unsupported", 0.85)
    assert "evidence_verdict" not in data["q1"]
    pull(name, tmp_path / "pulled.jsonl")
    assert (tmp_path / "pulled.jsonl").read_text() == path.read_text()


def test_double_check_counts_distinct_annotators_not_annotations(server, annotators, tmp_path):
    records = qa_records()[:1]
    name = project_name("interval_qa")
    push_served("interval_qa", records_dir(tmp_path, "interval_qa", records), name)
    task = task_ids(name)["q1"]

    def moved(text):
        result = prediction(records[0], "interval_qa", FPS)
        rows(result, "a1", "answer_text")["value"]["text"] = [text]
        return result

    # one annotator submits twice (a first try, then a correction): one check, their latest counts
    annotate(server, task, moved("A wrong answer."), annotators[0], lead_time=40.0)
    annotate(server, task, moved("The red cup is by the sink."), annotators[0], lead_time=20.0)
    summary = pull(name, tmp_path / "once.jsonl")
    [record] = read_jsonl(tmp_path / "once.jsonl")
    assert summary.states == {"pending": 1}
    assert record["verification"] == {"status": "unverified", "annotators": ["ann1@streamcue.test"], "checks": 1,
                                      "guideline": "interval_qa.v1"}
    assert status(name)[0]["missing"] == 1
    # a second, distinct annotator agrees with the first one's latest answer: verified by two
    annotate(server, task, moved("the red cup is by the sink"), annotators[1], lead_time=30.0)
    pull(name, tmp_path / "twice.jsonl")
    [record] = read_jsonl(tmp_path / "twice.jsonl")
    assert record["answers"][1]["text"] == "The red cup is by the sink."
    assert pulled_verification(record) == {"status": "verified", "checks": 2, "guideline": "interval_qa.v1",
                                      "annotators": ["ann1@streamcue.test", "ann2@streamcue.test"],
                                      "decided_by": "agreement", "content_sha256": content_sha256(record)}
    rows_, people = status_report(name)
    assert rows_[0]["annotations"] == 2 and rows_[0]["missing"] == 0
    # throughput: ann1 did one task (two submissions), timed by their latest annotation
    assert [(p["annotator"], p["tasks"], p["skipped"], p["median_s"]) for p in people] == [
        ("ann1@streamcue.test", 1, 0, 20.0), ("ann2@streamcue.test", 1, 0, 30.0)]
    done = annotate_command(server, "status", "--project", name)
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("throughput"):]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if "@streamcue.test" in line]
    assert cells == [["ann1@streamcue.test", "1", "0", "20 s", "20 s"],
                     ["ann2@streamcue.test", "1", "0", "30 s", "30 s"]]


def guidance_with_success():
    record = copy.deepcopy(VALID["guidance"])
    record["video_id"] = "v2"
    record["events"][1] = {"t_s": 6.0, "type": "success", "text": "The water boils.", "plan_index": 0, "step_ids": [1],
                           "mistake_category": None, "time_source": "annotation"}
    return record


def test_relabelled_events_are_valid_or_reported_for_their_record_only(server, annotators, tmp_path):
    first, second = copy.deepcopy(VALID["guidance"]), guidance_with_success()
    write_jsonl(tmp_path / "videos.jsonl", [VALID["video"], dict(VALID["video"], video_id="v2", uri="recorded/v2.mp4")])
    write_jsonl(tmp_path / "guidance.jsonl", [first, second])
    name = project_name("guidance")
    push_served("guidance", tmp_path / "guidance.jsonl", name)
    tasks = task_ids(name)
    for user in annotators:
        relabelled = prediction(first, "guidance", FPS)  # the mistake was really a success
        rows(relabelled, "e1", "events")["value"]["timelinelabels"] = ["success"]
        annotate(server, tasks["v1"], relabelled, user)
        relabelled = prediction(second, "guidance", FPS)  # the success was really a mistake: which kind?
        rows(relabelled, "e1", "events")["value"]["timelinelabels"] = ["mistake"]
        annotate(server, tasks["v2"], relabelled, user)
    out = tmp_path / "pulled.jsonl"
    summary = pull(name, out)
    pulled = {r["video_id"]: r for r in read_jsonl(out)}
    assert summary.states == {"verified": 1, "invalid": 1}
    assert pulled["v1"]["events"][1] == {**first["events"][1], "type": "success", "mistake_category": None}
    assert summary.changes["v1"] == ["mistake e1 relabelled success"]
    assert pulled["v1"]["verification"]["status"] == "verified"
    # the record a category is missing for comes back as pushed, unverified, with the reason
    assert {k: v for k, v in pulled["v2"].items() if k != "verification"} == \
        {k: v for k, v in second.items() if k != "verification"}
    assert pulled["v2"]["verification"] == {
        "status": "unverified", "annotators": ["ann1@streamcue.test", "ann2@streamcue.test"], "checks": 2,
        "guideline": "guidance.v1",
        "notes": ["invalid: $.events[1].mistake_category: mistake events need a mistake_category, other events must "
                  "have null"]}
    assert "mistake_category" in summary.invalid["v2"]
    assert {r["record"]: r["state"] for r in status(name)} == {"v1": "verified", "v2": "invalid"}
    done = annotate_command(server, "pull", "--project", name, "--out", tmp_path / "cli.jsonl")
    assert done.returncode == 0, done.stderr
    assert f"warning: Label Studio project '{name}', record v2: the annotation makes the record invalid" in done.stderr
    assert (tmp_path / "cli.jsonl").read_text() == out.read_text()


def test_guideline_is_the_projects_instructions_and_fixed_once_annotated(server, annotators, tmp_path):
    path = records_dir(tmp_path, "dense_caption", [VALID["dense_caption"]])
    name = project_name("dense_caption")
    assert push_served("dense_caption", path, name).guideline == "dense_caption.v2"
    conn = ls.connect()
    project, _ = ls.project_for(conn, name)
    assert project.show_instruction is True
    assert "<h1>Checking dense captions, one per second</h1>" in project.expert_instruction
    assert ls.guideline_version(project.expert_instruction) == "dense_caption.v2"
    # a project made under an older guideline takes the new one while nobody has annotated ...
    conn.client.projects.update(project.id, expert_instruction="<p>streamcue guideline dense_caption.v0</p>")
    push_served("dense_caption", path, name)
    project, _ = ls.project_for(conn, name)
    assert ls.guideline_version(project.expert_instruction) == "dense_caption.v2"
    # ... and keeps it once someone has: the records must name the version their annotators saw
    conn.client.projects.update(project.id, expert_instruction="<p>streamcue guideline dense_caption.v0</p>")
    annotate(server, task_ids(name)["t1"], prediction(VALID["dense_caption"], "dense_caption", FPS), annotators[0])
    with pytest.raises(ConfigError, match=f"project '{name}' was annotated under guideline dense_caption.v0; push to a "
                                          "new project to use guideline dense_caption.v2"):
        push_served("dense_caption", path, name)
    pull(name, tmp_path / "pulled.jsonl", required=1)
    assert read_jsonl(tmp_path / "pulled.jsonl")[0]["verification"]["guideline"] == "dense_caption.v0"


def checked(qa_id, verdict=None, sure=None, confidence=None):
    record = dict(copy.deepcopy(VALID["interval_qa"]), qa_id=qa_id)
    if verdict:
        record["provenance"]["evidence_check"] = {"verdict": verdict, "confidence": sure, "evidence": [], "rounds": 1,
                                                  "calls": 3, "model": "m", "prompts": {}}
    if confidence is not None:
        record["provenance"]["confidence"] = confidence
    return record


def test_push_order_puts_the_records_most_likely_wrong_first(server, tmp_path):
    records = [checked("rule"), checked("ok-sure", "supported", 0.9), checked("bad-doubt", "unsupported", 0.6),
               checked("gen-low", confidence=0.2), checked("unsure", "unsure", 0.5),
               checked("ok-doubt", "supported", 0.3), checked("bad-sure", "unsupported", 0.95),
               checked("gen-high", confidence=0.8)]
    name = project_name("interval_qa")
    push_served("interval_qa", records_dir(tmp_path, "interval_qa", records), name, order=True)
    conn = ls.connect()
    project, _ = ls.project_for(conn, name)
    tasks = ls.export_tasks(conn, project.id)  # Label Studio serves tasks in this (id) order
    expected = ["bad-sure", "bad-doubt", "unsure", "gen-low", "gen-high", "rule", "ok-doubt", "ok-sure"]
    assert [t["data"]["record_id"] for t in tasks] == expected
    assert [t["data"]["review_rank"] for t in tasks] == list(range(1, 9))
    assert pull(name, tmp_path / "pulled.jsonl").records == 8  # ordering changes no record


def test_review_key_ignores_nonsense_confidences():
    for value in (float("nan"), float("inf"), -1, 2, True, "0.1", None):
        assert review_key(checked("x", confidence=value)) == review_key(checked("x"))
    assert review_key(checked("x", "supported", float("nan"))) == (3, 0.0)
    assert review_key(checked("x", "no-such-verdict", 0.9)) == (1, 0.0)
