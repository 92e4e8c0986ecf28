"""Choosing what to push, adjudicating disagreements, agreement for every kind, pull into the build,
and the annotate cases of issue 25: against a real Label Studio server (annotations made through its API)."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import CAPTAINCOOK4D, VALID, cli_run, pulled_verification
from label_studio_server import command_env, executable, make_users, push_served, serve_videos

pytest.importorskip("label_studio_sdk")
httpx = pytest.importorskip("httpx")

from streamcue.annotation import client as ls  # noqa: E402
from streamcue.annotation.convert import Applied, prediction  # noqa: E402
from streamcue.annotation.roundtrip import Selection, pull  # noqa: E402
from streamcue.annotation.verify import content_sha256, differences  # noqa: E402
from streamcue.dataset_builders import captaincook4d  # noqa: E402
from streamcue.dataset_builders.output import run_builder  # noqa: E402
from streamcue.dataset_builders.registry import BUILDERS  # noqa: E402
from streamcue.errors import ConfigError, InputError  # noqa: E402
from streamcue.io import read_json, read_jsonl, write_jsonl  # noqa: E402

pytestmark = [pytest.mark.label_studio, pytest.mark.slow, pytest.mark.usefixtures("connected"),
              pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs it "
                                 "in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)")]
FPS = 30.0
PEOPLE = ("ann1", "ann2", "ann3", "rev")


@pytest.fixture(scope="module")
def users(server):
    return make_users(server, PEOPLE, "streamcue.test", username="{}")


def annotate(server, task, result, user):
    r = httpx.post(f"{server.url}/api/tasks/{task}/annotations/", headers={"Authorization": f"Token {server.token}"},
                   json={"result": result, "completed_by": user})
    r.raise_for_status()


def tasks_of(project):
    conn = ls.connect()
    proj, _ = ls.project_for(conn, project)
    return {t["data"]["record_id"]: t for t in ls.export_tasks(conn, proj.id)}


def row(result, rid, from_name):
    return next(r for r in result if r["id"] == rid and r["from_name"] == from_name)


def guidance_records(n):
    records, videos = [], []
    for i in range(n):
        record = copy.deepcopy(VALID["guidance"])
        record["video_id"] = f"v{i}"
        records.append(record)
        videos.append(dict(VALID["video"], video_id=f"v{i}", uri=f"recorded/v{i}.mp4",
                           split="validation" if i % 2 else "test"))
    return records, videos


def moved(record, rid, frame=None, text=None, label=None):
    result = prediction(record, "guidance", FPS)
    if frame is not None:
        row(result, rid, "events")["value"]["ranges"] = [{"start": frame, "end": frame}]
    if text is not None:
        row(result, rid, "event_text")["value"]["text"] = [text]
    if label is not None:
        row(result, rid, "events")["value"]["timelinelabels"] = [label]
    return result


def cli(server, *args):
    """``streamcue ARGS`` in this process (:func:`conftest.cli_run`) with the connected server's variables, which
    the commands read when they run."""
    return cli_run(*args, env=command_env(server))


def test_a_difference_names_the_item_and_field():
    record = VALID["guidance"]
    kept = Applied(copy.deepcopy(record), items={f"e{i}": e for i, e in enumerate(record["events"])})
    later = copy.deepcopy(kept)
    later.items["e1"] = dict(later.items["e1"], t_s=15.0)
    [diff] = differences("guidance", kept, later, 1.0, ("ann1", "ann2"), record)
    assert (diff.item, diff.field) == ("e1", "t_s")
    assert diff.text == "event e1 (mistake at 10s): t_s 10s (ann1) vs 15s (ann2), more than 1s apart"
    gone = copy.deepcopy(kept)
    del gone.items["e1"]
    gone.items["+xyz"] = {"t_s": 20.0, "type": "mistake", "text": "Spilled the water."}
    texts = [d.text for d in differences("guidance", kept, gone, 1.0, ("ann1", "ann2"), record)]
    assert texts == ["event e1 (mistake at 10s): deleted by ann2, kept by ann1",
                     "a mistake added at 20s ('Spilled the water.') by ann2 only"]


def test_push_what_you_choose_and_the_sample_is_recorded(server, users, tmp_path):
    records, videos = guidance_records(6)
    write_jsonl(tmp_path / "videos.jsonl", videos)
    write_jsonl(tmp_path / "guidance.jsonl", records)
    path = tmp_path / "guidance.jsonl"
    assert push_served("guidance", path, "chosen ids", selection=Selection(ids=("v4", "v1"))).imported == 2
    assert set(tasks_of("chosen ids")) == {"v1", "v4"}
    assert push_served("guidance", path, "first two", selection=Selection(limit=2)).imported == 2
    assert set(tasks_of("first two")) == {"v0", "v1"}
    with pytest.raises(InputError, match="--ids names record.* the file does not hold: v9"):
        push_served("guidance", path, "bad ids", selection=Selection(ids=("v9",)))
    for bad in (Selection(limit=0), Selection(sample=2, limit=1), Selection(split="dev"), Selection(sample=9)):
        with pytest.raises(ConfigError):
            push_served("guidance", path, "bad selection", selection=bad)
    result = push_served("guidance", path, "spot check", selection=Selection(split="validation", sample=2, seed=7))
    assert result.imported == 2 and result.sample == {"sample_seed": 7, "sample_size": 2, "sample_population": 3,
                                                      "sample_split": "validation"}
    tasks = tasks_of("spot check")
    assert set(tasks) <= {"v1", "v3", "v5"} and all(t["data"]["sample_seed"] == 7 for t in tasks.values())
    again = push_served("guidance", path, "spot check 2", selection=Selection(split="validation", sample=2, seed=7))
    assert set(tasks_of("spot check 2")) == set(tasks) and again.imported == 2  # the same seed draws the same
    first = sorted(tasks)[0]
    for user in ("ann1", "ann2"):
        annotate(server, tasks[first]["id"], prediction(records[int(first[1:])], "guidance", FPS), users[user])
    done = cli(server, "annotate", "pull", "--project", "spot check", "--out", str(tmp_path / "pulled" / "g.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "2 of 3 guidance records of the validation split drawn uniformly at random (seed 7)" in done.stdout
    [sample] = read_json(tmp_path / "pulled" / "g.samples.json")["guidance"]
    assert sample["records"] == sorted(tasks) and (sample["verified"], sample["unverified"]) == (1, 1)
    assert read_json(tmp_path / "pulled" / "g.agreement.json")["guidance"]["overall"]["record_agreement"] == 1.0


def test_a_reviewer_resolves_a_named_disagreement_and_a_majority_decides(server, users, tmp_path):
    records, videos = guidance_records(2)
    write_jsonl(tmp_path / "videos.jsonl", videos)
    write_jsonl(tmp_path / "guidance.jsonl", records)
    push_served("guidance", tmp_path / "guidance.jsonl", "review")
    tasks = tasks_of("review")
    annotate(server, tasks["v0"]["id"], moved(records[0], "e1", frame=211), users["ann1"])   # mistake at 7 s
    annotate(server, tasks["v0"]["id"], moved(records[0], "e1", frame=451), users["ann2"])   # mistake at 15 s
    summary = pull("review", tmp_path / "p1.jsonl")
    assert summary.disagreements["v0"] == ("event e1 (mistake at 10s): t_s 7s (ann1@streamcue.test) vs 15s "
                                           "(ann2@streamcue.test), more than 1s apart")
    [v0, _] = read_jsonl(tmp_path / "p1.jsonl")
    assert v0["verification"]["status"] == "unverified" and "decided_by" not in v0["verification"]
    done = cli(server, "annotate", "pull", "--project", "review", "--out", str(tmp_path / "p2.jsonl"))
    assert "v0: annotators disagree: event e1 (mistake at 10s): t_s 7s" in done.stdout
    # the reviewer opens the task and decides: the mistake shows at 7.5 s
    annotate(server, tasks["v0"]["id"], moved(records[0], "e1", frame=226), users["rev"])
    with pytest.raises(ConfigError, match="--reviewer nobody@streamcue.test is no user"):
        pull("review", tmp_path / "p3.jsonl", reviewers=("nobody@streamcue.test",))
    summary = pull("review", tmp_path / "p3.jsonl", reviewers=("rev@streamcue.test",))
    [v0, v1] = read_jsonl(tmp_path / "p3.jsonl")
    assert v0["events"][1]["t_s"] == 7.5 and v0["events"][1]["time_source"] == "annotator"
    assert pulled_verification(v0) == {
        "status": "verified", "annotators": ["ann1@streamcue.test", "ann2@streamcue.test"], "checks": 2,
        "guideline": "guidance.v1", "decided_by": "reviewer", "reviewer": "rev@streamcue.test",
        "notes": ["disagreement: event e1 (mistake at 10s): t_s 7s (ann1@streamcue.test) vs 15s (ann2@streamcue.test), "
                  "more than 1s apart", "resolved: by reviewer rev@streamcue.test"],
        "content_sha256": content_sha256(v0)}
    assert summary.decided_by == {"reviewer": 1} and v1 == records[1]
    assert summary.agreement["reviewers"] == ["rev@streamcue.test"]
    assert summary.agreement["annotators"] == ["ann1@streamcue.test", "ann2@streamcue.test"]

    # a stated rule instead: three annotators, two agree
    push_served("guidance", tmp_path / "guidance.jsonl", "majority", checks=3)
    tasks = tasks_of("majority")
    for user, frame in (("ann1", 211), ("ann2", 451), ("ann3", 226)):  # 7 s, 15 s, 7.5 s
        annotate(server, tasks["v1"]["id"], moved(records[1], "e1", frame=frame), users[user])
    with pytest.raises(ConfigError, match="--majority needs --required 3 or more"):
        pull("majority", tmp_path / "m.jsonl", majority=True, required=2)
    assert pull("majority", tmp_path / "m.jsonl").states["disagreement"] == 1   # --required: the project's 3
    pull("majority", tmp_path / "m.jsonl", majority=True)
    v1 = read_jsonl(tmp_path / "m.jsonl")[1]
    assert v1["events"][1]["t_s"] == 7.0
    assert v1["verification"]["decided_by"] == "majority" and v1["verification"]["checks"] == 2
    assert v1["verification"]["notes"] == [
        "majority: 2 of 3 agree; dissent: event e1 (mistake at 10s): t_s 7s (ann1@streamcue.test) vs 15s "
        "(ann2@streamcue.test), more than 1s apart"]


def test_review_marks_what_the_annotators_disagree_on_and_replaces_its_prediction(server, users, tmp_path):
    """``annotate review``: a prediction per disputed task (the first annotator's regions, the one the other
    deleted marked), a count in the task data, a task the reviewer decided and an agreed one left alone; run
    again, one prediction per task; the marks are the prediction's region meta, never text: ``pull`` refuses a
    text that carries one and ignores the meta."""
    from streamcue.annotation.convert import DISPUTED
    from streamcue.annotation.review import MODEL_VERSION, review

    records, videos = guidance_records(4)
    write_jsonl(tmp_path / "videos.jsonl", videos)
    write_jsonl(tmp_path / "guidance.jsonl", records)
    push_served("guidance", tmp_path / "guidance.jsonl", "to review")
    tasks = tasks_of("to review")
    without_e2 = [r for r in moved(records[0], "e1", frame=211) if r["id"] != "e2"]
    annotate(server, tasks["v0"]["id"], moved(records[0], "e1", frame=211), users["ann1"])   # e1 at 7 s
    annotate(server, tasks["v0"]["id"], without_e2, users["ann2"])                           # and e2 deleted
    annotate(server, tasks["v1"]["id"], prediction(records[1], "guidance", FPS), users["ann1"])
    annotate(server, tasks["v1"]["id"], moved(records[1], "e1", frame=451), users["ann2"])
    for user in ("ann1", "ann2", "rev"):   # decided by the reviewer already
        annotate(server, tasks["v2"]["id"], moved(records[2], "e1", frame=211 if user == "ann1" else 451), users[user])
    for user in ("ann1", "ann2"):          # agreed
        annotate(server, tasks["v3"]["id"], prediction(records[3], "guidance", FPS), users[user])
    for _ in range(2):
        done = review("to review", reviewers=("rev@streamcue.test",))
    assert done.tasks == {"v0": 1, "v1": 1}
    conn = ls.connect()
    tasks = tasks_of("to review")
    assert tasks["v0"]["data"]["review_disagreements"] == 1 and "review_disagreements" not in tasks["v3"]["data"]
    [pred] = [p for p in conn.client.predictions.list(task=tasks["v0"]["id"]) if p.model_version == MODEL_VERSION]
    texts = {r["id"]: r["value"]["text"] for r in pred.result if r["from_name"] == "event_text"}
    marked = {r["id"]: r["meta"]["text"] for r in pred.result if r["from_name"] == "event_text" and "meta" in r}
    assert texts["e1"] == [records[0]["events"][1]["text"]] and "e1" not in marked   # both moved e1: no dispute
    assert marked == {"e2": [f"{DISPUTED}event e2 (finish at 10s): deleted by ann2@streamcue.test, kept by "
                             "ann1@streamcue.test"]}   # a field of the prediction's region...
    assert texts["e2"] == [records[0]["events"][2]["text"]]   # ...never in the text the reviewer keeps
    assert not [p for p in conn.client.predictions.list(task=tasks["v2"]["id"]) if p.model_version == MODEL_VERSION]
    [v1] = [p for p in conn.client.predictions.list(task=tasks["v1"]["id"]) if p.model_version == MODEL_VERSION]
    assert [t for r in v1.result if r["from_name"] == "event_text" for t in (r.get("meta") or {}).get("text", [])] \
        == [f"{DISPUTED}{tasks['v1']['data']['review_note']}"]
    assert not [t for r in v1.result for t in r["value"].get("text", []) if DISPUTED.strip() in t]
    assert tasks["v1"]["data"]["review_note"].startswith("event e1 (mistake at 10s): t_s 10s")
    # the reviewer duplicates the prediction and submits it as it is: the marks change nothing. The page sets the
    # annotation's parent_prediction to the prediction it started from, the review's
    r = httpx.post(f"{server.url}/api/tasks/{tasks['v0']['id']}/annotations/",
                   headers={"Authorization": f"Token {server.token}"},
                   json={"result": pred.result, "completed_by": users["rev"], "parent_prediction": pred.id})
    r.raise_for_status()
    summary = pull("to review", tmp_path / "pulled.jsonl", reviewers=("rev@streamcue.test",))
    # issue 46: stats agreement without --reviewer counted the reviewer as a third annotator (0.714, the card 0.80);
    # it now takes whoever started from the review's starting point as a reviewer, and gives the card's figures
    done = cli(server, "stats", "agreement", "--project", "to review", "--output", str(tmp_path / "figures.json"))
    assert done.returncode == 0, done.stderr
    assert "reviewers (started from annotate review's starting point" in done.stdout and "rev@streamcue.test" in \
        done.stdout
    figures, card = read_json(tmp_path / "figures.json"), json.loads(json.dumps(summary.agreement))
    assert figures["reviewers"] == ["rev@streamcue.test"] and "rev@streamcue.test" not in figures["annotators"]
    assert {k: v for k, v in figures.items() if k != "required"} == {k: v for k, v in card.items() if k != "required"}
    v0 = read_jsonl(tmp_path / "pulled.jsonl")[0]
    assert v0["events"][:2] == [records[0]["events"][0], {**records[0]["events"][1], "t_s": 7.0,
                                                          "time_source": "annotator"}]
    assert DISPUTED not in json.dumps(v0, ensure_ascii=False) and v0["verification"]["decided_by"] == "reviewer"
    # a reviewer who then copies the mark into the text is refused, naming the task and region (issue 46)
    kept = copy.deepcopy(pred.result)
    row(kept, "e2", "event_text")["value"]["text"] = [f"{records[0]['events'][2]['text']}\n{DISPUTED}kept by hand"]
    annotate(server, tasks["v0"]["id"], kept, users["rev"])
    with pytest.raises(InputError, match=rf"task {tasks['v0']['id']}, annotation \d+, region e2: its text carries the "
                                         "review mark"):
        pull("to review", tmp_path / "refused.jsonl", reviewers=("rev@streamcue.test",))
    assert not (tmp_path / "refused.jsonl").exists()


def test_agreement_for_interval_qa_and_guidance_per_pair(server, users, tmp_path):
    qa = copy.deepcopy(VALID["interval_qa"])
    write_jsonl(tmp_path / "videos.jsonl", [VALID["video"]])
    write_jsonl(tmp_path / "interval_qa.jsonl", [qa])
    push_served("interval_qa", tmp_path / "interval_qa.jsonl", "qa agreement", checks=3)
    task = tasks_of("qa agreement")["q1"]["id"]
    for user, end in (("ann1", 390), ("ann2", 390), ("ann3", 450)):  # a1 ends at 13 s, 13 s, 15 s
        result = prediction(qa, "interval_qa", FPS)
        row(result, "a1", "answers")["value"]["ranges"] = [{"start": 301, "end": end}]
        annotate(server, task, result, users[user])
    figures = pull("qa agreement", None).agreement
    assert figures["kind"] == "interval_qa" and figures["overall"]["records"] == 3
    pairs = {tuple(p["annotators"]): p for p in figures["pairs"]}
    same = pairs[("ann1@streamcue.test", "ann2@streamcue.test")]
    assert same["record_agreement"] == 1.0 and same["interval_iou"] == 1.0 and same["answer_text_same"] == 1.0
    apart = pairs[("ann1@streamcue.test", "ann3@streamcue.test")]
    assert apart["record_agreement"] == 0.0 and apart["interval_iou"] == pytest.approx(5 / 7)  # 2+3 s of 2+5 s
    assert figures["overall"]["record_agreement"] == pytest.approx(1 / 3)
    done = cli(server, "stats", "agreement", "--project", "qa agreement", "--output", str(tmp_path / "a.json"))
    assert done.returncode == 0, done.stderr
    assert "ann1@streamcue.test | ann3@streamcue.test" in done.stdout and "interval_iou" in done.stdout
    assert read_json(tmp_path / "a.json")["pairs"][1]["interval_iou"] == pytest.approx(5 / 7)

    records, videos = guidance_records(1)
    write_jsonl(tmp_path / "g" / "videos.jsonl", videos)
    write_jsonl(tmp_path / "g" / "guidance.jsonl", records)
    push_served("guidance", tmp_path / "g" / "guidance.jsonl", "guidance agreement")
    task = tasks_of("guidance agreement")["v0"]["id"]
    annotate(server, task, moved(records[0], "e1", frame=316, text="Add more water."), users["ann1"])  # 10.5 s
    annotate(server, task, moved(records[0], "e1", label="success"), users["ann2"])
    figures = pull("guidance agreement", None, tolerance_s=1.0).agreement
    overall = figures["overall"]
    assert overall["event_in_both"] == 1.0 and overall["time_within_tolerance"] == 1.0
    assert overall["type_same"] == pytest.approx(2 / 3) and overall["text_same"] == pytest.approx(2 / 3)
    assert overall["mean_abs_dt_s"] == pytest.approx(0.5 / 3)


def test_pull_into_the_build_writes_a_new_folder(server, users, tmp_path):
    build = tmp_path / "cc4d"
    run_builder(BUILDERS["captaincook4d"], captaincook4d.Config(annotations=CAPTAINCOOK4D,
                                                                recordings=("1_7", "1_10", "2_3")), build)
    records = {r["video_id"]: r for r in read_jsonl(build / "guidance.jsonl")}
    push_served("guidance", build / "guidance.jsonl", "cc4d merge", selection=Selection(ids=("1_10",)))
    task = tasks_of("cc4d merge")["1_10"]["id"]
    for user in ("ann1", "ann2"):
        annotate(server, task, prediction(records["1_10"], "guidance", FPS), users[user])
    out = tmp_path / "cc4d-v2"
    for bad_out, message in ((build, "is the input"), (build / "v2", "inside the input folder")):
        done = cli(server, "annotate", "pull", "--project", "cc4d merge", "--build", str(build), "--out", str(bad_out))
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    before = {p.name: p.read_bytes() for p in build.iterdir()}
    done = cli(server, "annotate", "pull", "--project", "cc4d merge", "--build", str(build), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in build.iterdir()} == before  # the build is untouched
    assert sorted(p.name for p in out.iterdir()) == sorted([*before, "agreement.json", "samples.json"])
    assert (out / "videos.jsonl").read_bytes() == before["videos.jsonl"]
    old, new = before["guidance.jsonl"].decode().splitlines(), (out / "guidance.jsonl").read_text().splitlines()
    changed = [json.loads(n)["video_id"] for o, n in zip(old, new) if o != n]
    assert changed == ["1_10"] and len(new) == len(old)  # every other record carried byte for byte
    merged = json.loads(new[[json.loads(n)["video_id"] for n in new].index("1_10")])
    assert merged["verification"]["status"] == "verified" and merged["verification"]["decided_by"] == "agreement"
    report = read_json(out / "build_report.json")
    assert report["builder"] == "captaincook4d" and report["counts"] == read_json(build / "build_report.json")["counts"]
    [entry] = report["annotation"]
    assert (entry["project"], entry["kind"], entry["replaced"], entry["states"]) == (
        "cc4d merge", "guidance", ["1_10"], {"verified": 1})
    assert entry["rule"] == {"required": 2, "tolerance_s": 1.0, "majority": False, "reviewers": []}
    assert read_json(out / "agreement.json")["guidance"]["overall"]["record_agreement"] == 1.0
    done = cli(server, "annotate", "pull", "--project", "cc4d merge", "--build", str(build), "--out", str(out))
    assert done.returncode == 2 and "already exists" in done.stderr
    # a build changed since the push: its verification would land on a record nobody saw
    changed_build = tmp_path / "changed"
    changed_build.mkdir()
    (changed_build / "videos.jsonl").write_bytes(before["videos.jsonl"])
    edited = [dict(r, activity="Something else") if r["video_id"] == "1_10" else r for r in records.values()]
    write_jsonl(changed_build / "guidance.jsonl", edited)
    done = cli(server, "annotate", "pull", "--project", "cc4d merge", "--build", str(changed_build), "--out",
               str(tmp_path / "v3"))
    assert done.returncode == 2 and "record video_id=1_10" in done.stderr and "changed in the build" in done.stderr
    assert not (tmp_path / "v3").exists() and not list(tmp_path.glob(".v3.*"))


def test_issue_25_annotate_cases(server, users, tmp_path):
    records, videos = guidance_records(1)
    write_jsonl(tmp_path / "videos.jsonl", videos)
    write_jsonl(tmp_path / "guidance.jsonl", records)
    path = str(tmp_path / "guidance.jsonl")
    served = ("--video-root", str(serve_videos(tmp_path / "videos.jsonl")))
    for bad in ("nan", "-1", "inf"):
        done = cli(server, "annotate", "pull", "--project", "x", "--out", str(tmp_path / "o.jsonl"), "--tolerance", bad)
        assert done.returncode == 2 and done.stderr.startswith("error: --tolerance must be a finite number")
        assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.jsonl").exists()
    # a title the server rejects: exit 2, one line, nothing created
    done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "x" * 60, *served)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: Label Studio at {server.url} refused the project title 'xxx")
    assert "title:" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # another --required: stated while nobody has annotated, refused after
    done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "overlap", *served)
    assert done.returncode == 0 and "2 annotator(s) per task" in done.stdout
    done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "overlap", *served,
               "--required", "3")
    assert done.returncode == 0
    assert "handed each task to 2 annotator(s); now 3 (nobody had annotated yet)" in done.stdout
    done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "overlap", *served)
    assert done.returncode == 0 and "3 annotator(s) per task" in done.stdout   # no option: the project's own
    annotate(server, tasks_of("overlap")["v0"]["id"], prediction(records[0], "guidance", FPS), users["ann1"])
    done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "overlap", *served,
               "--required", "2")
    assert done.returncode == 2 and "hands each task to 3 annotator(s) and has annotations" in done.stderr
    conn = ls.connect()
    assert ls.project_for(conn, "overlap")[0].maximum_annotations == 3


def test_push_refuses_videos_the_page_could_not_load(server, tmp_path):
    """The annotators' page would spin for ever: one line naming the first such video, exit 2, nothing pushed."""
    records, videos = guidance_records(3)
    write_jsonl(tmp_path / "videos.jsonl", videos)
    write_jsonl(tmp_path / "guidance.jsonl", records)
    path = str(tmp_path / "guidance.jsonl")
    root = serve_videos(tmp_path / "videos.jsonl", "refused")
    (root / "recorded" / "v1.mp4").unlink()
    for options, message in [((), "uri: 'recorded/v0.mp4' is a file path and no --video-root was given"),
                             (("--video-root", str(root)), f"uri: no video file {root / 'recorded' / 'v1.mp4'} "
                                                           f"under --video-root {root}")]:
        done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "refused",
                   *options)
        assert done.returncode == 2, done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
        assert "videos.jsonl" in done.stderr and "video_id=v" in done.stderr
    assert ls.find_project(ls.connect(), "refused") is None   # nothing reached the server
    # an http(s) URL is loaded by the browser itself: pushed as it is
    write_jsonl(tmp_path / "videos.jsonl", [dict(v, uri=f"{server.url}/static/v{i}.mp4") for i, v in enumerate(videos)])
    done = cli(server, "annotate", "push", "--kind", "guidance", "--records", path, "--project", "refused")
    assert done.returncode == 0, done.stderr
    assert tasks_of("refused")["v2"]["data"]["video"] == f"{server.url}/static/v2.mp4"
