"""The anonymization check against the session's real Label Studio (issue 45): one task per anonymized video
showing its contact sheet, a person's verdict submitted through Label Studio's API pulled back tied to the bytes of
the video and its report, and the docs' commands run as written, up to the release that requires the check."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
from pathlib import Path

import pytest

from conftest import REPO, SIGNING_KEY, VALID, cli
from contact_sheets import HIDDEN, READABLE, anonymized_folder, check_tasks, served_videos, verdict
from label_studio_server import executable, make_users

pytest.importorskip("label_studio_sdk")
httpx = pytest.importorskip("httpx")

from streamcue.annotation import client as ls  # noqa: E402
from streamcue.annotation.anonymization_check import read_checks, video_check  # noqa: E402
from streamcue.anonymize.report import sha256_file  # noqa: E402
from streamcue.seal import seal  # noqa: E402
from streamcue.io import read_json, write_jsonl  # noqa: E402

pytestmark = [pytest.mark.label_studio, pytest.mark.slow, pytest.mark.usefixtures("connected"),
              pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs it "
                                 "in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)")]
_names = itertools.count()


@pytest.fixture(scope="module")
def people(server):
    return make_users(server, ("ann1", "ann2"), "streamcue.test", username="{}")


def fresh(what: str) -> str:
    return f"{what}-{next(_names)}"


def test_the_check_project_has_one_task_per_video_showing_its_contact_sheet(server):
    """push: one task per report of the folder, its sheet served through local files (the page loads it: the URL
    gives the sheet's bytes), tied to the SHA-256 of the video and of the report; the guideline shown before the
    first task, one person per sheet; pushing again adds nothing."""
    folder = served_videos(fresh("anonymized"), ("v1", "v2"))
    project = fresh("anonymization check")
    code, out, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", project)
    assert code == 0, err
    assert "2 contact sheet(s) imported" in out and "guideline anonymization.v2; 1 person(s) per sheet" in out
    tasks = check_tasks(project)
    assert sorted(tasks) == ["v1.mp4", "v2.mp4"]
    for name, task in tasks.items():
        data, stem = task["data"], name.removesuffix(".mp4")
        assert data["video_sha256"] == read_json(folder / f"{stem}.anonymization.json")["output"]["sha256"]
        assert data["report_sha256"] == sha256_file(folder / f"{stem}.anonymization.json")
        assert data["contact_sheet_sha256"] == sha256_file(folder / f"{stem}.contact.jpg")
        served = httpx.get(server.url + data["sheet"], headers={"Authorization": f"Token {server.token}"})
        assert served.status_code == 200 and served.content == (folder / f"{stem}.contact.jpg").read_bytes()
    found = ls.find_project(ls.connect(), project)
    assert "streamcue guideline anonymization.v2" in found.expert_instruction and found.show_instruction
    assert found.maximum_annotations == 1 and "streamcue:anonymization:v1" in found.label_config
    code, out, _ = cli("annotate", "anonymization", "push", "--reports", folder, "--project", project)
    assert code == 0 and "0 contact sheet(s) imported" in out and "2 already there" in out


def test_verdicts_submitted_in_label_studio_come_back_tied_to_the_bytes_they_were_made_on(server, people,
                                                                                          tmp_path):
    """v1 ticked; v2 ticked by one person and found readable by another (the readable one wins, with its note);
    v3 untouched (pending). Each check names the SHA-256 of the video, report and sheet pushed, the people by their
    Label Studio e-mail (the file stays with the maintainer), and is signed with the maintainer's key: it ticks
    exactly those bytes and that sheet (a tick of another sheet is stale). A records pull, status or review of the
    check project is refused in one line. Then a re-push supersedes the older tasks (``superseded_on_a_re_push``)."""
    folder = served_videos(fresh("anonymized"), ("v1", "v2", "v3"))
    project = fresh("anonymization check")
    assert cli("annotate", "anonymization", "push", "--reports", folder, "--project", project)[0] == 0
    tasks = check_tasks(project)
    verdict(server, tasks["v1.mp4"]["id"], people["ann1"], HIDDEN)
    verdict(server, tasks["v2.mp4"]["id"], people["ann1"], HIDDEN)
    verdict(server, tasks["v2.mp4"]["id"], people["ann2"], READABLE, "0.5 s: plate bottom left readable")
    code, out, err = cli("annotate", "anonymization", "pull", "--project", project, "--out", tmp_path / "checks.json")
    assert code == 0, err
    assert "3 check(s)" in out and "1 pending, 1 rejected, 1 ticked" in out
    assert "v2.mp4: rejected (something readable: 0.5 s: plate bottom left readable)" in out
    checks = {c["video"]: c for c in read_checks(tmp_path / "checks.json")}
    assert {v: c["state"] for v, c in checks.items()} == {"v1.mp4": "ticked", "v2.mp4": "rejected",
                                                          "v3.mp4": "pending"}
    assert checks["v1.mp4"]["checked_by"] == ["ann1@streamcue.test"]
    assert checks["v2.mp4"]["checked_by"] == ["ann1@streamcue.test", "ann2@streamcue.test"]
    assert checks["v1.mp4"]["guideline"] == "anonymization.v2" and checks["v1.mp4"]["required"] == 1
    assert checks["v1.mp4"]["label_studio"]["task"] == tasks["v1.mp4"]["id"]
    report = folder / "v1.anonymization.json"
    sha = read_json(report)["output"]["sha256"]
    state, check, _ = video_check(list(checks.values()), "v1.mp4", sha, sha256_file(report), SIGNING_KEY)
    assert state == "ticked" and check["video_sha256"] == sha
    v3 = folder / "v3.anonymization.json"
    assert video_check(list(checks.values()), "v3.mp4", read_json(v3)["output"]["sha256"], sha256_file(v3),
                       SIGNING_KEY)[0] == "pending"
    # the tick is bound to the sheet the person saw (its SHA-256, stated by the report and held by the task)
    seen = sha256_file(folder / "v1.contact.jpg")
    assert checks["v1.mp4"]["contact_sheet_sha256"] == seen == read_json(report)["contact_sheet"]["sha256"]
    state, _, why = video_check(list(checks.values()), "v1.mp4", sha, sha256_file(report), SIGNING_KEY, "f" * 64)
    assert state == "stale"
    assert why.startswith(f"ticked on another contact sheet (the check's contact_sheet_sha256 {seen[:12]}")
    for command in (("pull", "--out", tmp_path / "records.jsonl"), ("status",), ("review",)):
        code, _, err = cli("annotate", command[0], "--project", project, *command[1:])
        assert code == 2 and "is an anonymization check of contact sheets" in err and "Traceback" not in err
    superseded_on_a_re_push(folder, project, tasks, tmp_path)


def superseded_on_a_re_push(folder: Path, project: str, tasks: dict, tmp_path: Path) -> None:
    """All three anonymized again (a re-run: same bytes, new reports) and pushed again: v3's untouched task is
    deleted, v1's and v2's are marked superseded (the page says so); pull reads v1's tick as superseded, so v1 is
    pending on its new report, while v2's rejection still holds for its bytes: push names it, and pull
    writes v2's new task rejected, naming the superseded task."""
    for name in ("v1", "v2", "v3"):  # a re-run: a new report, sealed as the anonymizer seals it
        report = folder / f"{name}.anonymization.json"
        report.write_text(json.dumps(seal({**read_json(report), "wall_s": read_json(report)["wall_s"] + 1})))
    code, out, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", project)
    assert code == 0, err
    assert "3 contact sheet(s) imported" in out and "3 older task(s) superseded" in out
    [told] = [line for line in out.splitlines() if "already rejected" in line]
    assert told.startswith(f"v2.mp4: already rejected (something readable in this project (task "
                           f"{tasks['v2.mp4']['id']}, v2.mp4): 0.5 s: plate bottom left readable); pushed all the "
                           "same, but pull keeps its bytes rejected")
    server = ls.connect()
    kept = {t["id"]: t for t in ls.export_tasks(server, ls.find_project(server, project).id)}
    old = {name: kept[t["id"]] for name, t in tasks.items() if t["id"] in kept}
    assert sorted(old) == ["v1.mp4", "v2.mp4"]  # v3's, which nobody annotated, is gone
    assert all(t["data"]["superseded"] and t["data"]["about"].startswith("SUPERSEDED") for t in old.values())
    code, out, err = cli("annotate", "anonymization", "pull", "--project", project, "--out", tmp_path / "again.json")
    assert code == 0 and "5 check(s)" in out and "2 pending, 1 rejected; 2 superseded (their ticks do not count)" \
        in out, out  # v2's new task: its bytes were found readable on its superseded task
    assert f"v2.mp4: rejected (something readable in this project (task {tasks['v2.mp4']['id']}, v2.mp4, " \
        "superseded): 0.5 s: plate bottom left readable)" in out
    assert out.count("v2.mp4: rejected") == 1, out  # the rejection once: not again as its superseded task's own
    checks, states = read_checks(tmp_path / "again.json"), {}
    for name in ("v1", "v2", "v3"):
        report = folder / f"{name}.anonymization.json"
        states[name] = video_check(checks, f"{name}.mp4", read_json(report)["output"]["sha256"], sha256_file(report),
                                   SIGNING_KEY, sha256_file(folder / f"{name}.contact.jpg"))[0]
    assert states == {"v1": "pending", "v2": "rejected", "v3": "pending"}


def test_a_task_of_the_same_bytes_with_no_choice_in_another_check_project_stops_the_pull_in_one_line(
        server, people, tmp_path):
    """A video pushed into two check projects; in the first, someone submits only a note, no choice (an API
    submission the page would not allow): whether it rejects the video's bytes cannot be told, so the second's pull
    stops in one line naming the first project, its task and annotation, and writes nothing (an unread rejection
    would be a tick let through)."""
    folder = served_videos(fresh("anonymized"), ("v1",))
    first, second = fresh("anonymization check"), fresh("anonymization check")
    for project in (first, second):
        assert cli("annotate", "anonymization", "push", "--reports", folder, "--project", project)[0] == 0
    task = check_tasks(first)["v1.mp4"]["id"]
    note = {"id": "m", "from_name": "missed", "to_name": "sheet", "type": "textarea", "value": {"text": ["plate?"]}}
    r = httpx.post(f"{server.url}/api/tasks/{task}/annotations/", headers={"Authorization": f"Token {server.token}"},
                   json={"completed_by": people["ann1"], "result": [note]})
    r.raise_for_status()
    code, out, err = cli("annotate", "anonymization", "pull", "--project", second, "--out", tmp_path / "checks.json")
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert f"Label Studio project {first!r}, record video=v1.mp4: task {task}, annotation {r.json()['id']}: no " \
        "single choice" in line, line
    assert "Traceback" not in err and "@" not in err and not (tmp_path / "checks.json").exists()


def replace_sheet(sheet: Path) -> None:
    """Another contact sheet under the same name (a sheet drawn again, or swapped by hand): a real JPEG, mirrored."""
    import cv2

    assert cv2.imwrite(str(sheet), cv2.imread(str(sheet))[:, ::-1])


def test_push_refuses_a_report_a_release_would_refuse_or_a_folder_the_page_cannot_load(tmp_path):
    """Before anything reaches the server: a report that is not ``passed``, whose sheet is not the one it states
    (replaced after the anonymizer drew it), or that has no contact sheet (made before sheets), is one line naming
    the report; a folder outside the local-files document root is one line too; and
    pull never writes its --out over the key it reads."""
    folder = served_videos(fresh("anonymized"), ("v1",))
    report = json.loads((folder / "v1.anonymization.json").read_text())
    (folder / "v1.anonymization.json").write_text(json.dumps({**report, "status": "unmeasured"}))
    code, _, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", fresh("refused"))
    assert code == 2 and "v1.anonymization.json: $.status: status 'unmeasured'" in err
    (folder / "v1.anonymization.json").write_text(json.dumps(report))
    replace_sheet(folder / "v1.contact.jpg")  # another sheet than the one the report states (the person would see)
    code, _, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", fresh("refused"))
    assert code == 2 and "v1.anonymization.json: $.contact_sheet.sha256: the contact sheet v1.contact.jpg is " \
        "not the one the anonymizer drew" in err and len(err.strip().splitlines()) == 1
    (folder / "v1.anonymization.json").write_text(json.dumps({k: v for k, v in report.items() if k != "contact_sheet"}))
    code, _, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", fresh("refused"))
    assert code == 2 and "it holds no contact_sheet, which the anonymizer writes" in err  # the seal's check
    (folder / "v1.anonymization.json").write_text(json.dumps(seal({**report, "contact_sheet": {"frames": []}})))
    code, _, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", fresh("refused"))
    # resealed: the sheet's own check
    assert code == 2 and "v1.anonymization.json: $.contact_sheet.path: no contact sheet" in err
    outside = tmp_path / "anonymized"
    outside.mkdir()
    (outside / "v1.mp4").write_bytes((folder / "v1.mp4").read_bytes())
    (outside / "v1.contact.jpg").write_bytes((anonymized_folder() / "v1.contact.jpg").read_bytes())  # as drawn
    (outside / "v1.anonymization.json").write_text(json.dumps(report))
    code, _, err = cli("annotate", "anonymization", "push", "--reports", outside, "--project", fresh("refused"))
    assert code == 2 and "must be a subfolder of the document root" in err
    key = tmp_path / "key.pem"
    key.write_bytes(b"the maintainer's key")
    code, _, err = cli("annotate", "anonymization", "pull", "--project", "any", "--out", key, "--key", key)
    assert code == 2 and "refusing to overwrite an input" in err and key.read_bytes() == b"the maintainer's key"
    assert "Traceback" not in err


CHECK_EXAMPLE = "anonymization-check-example: run by tests/annotation/test_anonymization_check.py"
TICK_EXAMPLE = "anonymization-tick-example: run by tests/annotation/test_anonymization_check.py"


def documented_tick() -> str:
    """The Python of docs/annotation.md's block under the ``anonymization-tick-example`` marker, as written."""
    text = (REPO / "docs" / "annotation.md").read_text(encoding="utf-8")
    return text.split(f"<!-- {TICK_EXAMPLE} -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def documented_check() -> list[str]:
    """The commands of docs/annotation.md's block under the ``anonymization-check-example`` marker, as written
    (backslash-continued lines joined, comments dropped)."""
    text = (REPO / "docs" / "annotation.md").read_text(encoding="utf-8")
    block = text.split(f"<!-- {CHECK_EXAMPLE} -->", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line for line in (re.sub(r"\s+#.*$", "", raw).strip() for raw in joined.splitlines())
            if line and not line.startswith("#")]


def test_the_documented_check_runs_as_written_and_the_release_says_so(server, tmp_path, monkeypatch):
    """docs/annotation.md's commands, as written, in order: push the anonymizer's folder, a person ticks the sheet
    in Label Studio (here through its API, by the docs' Python as written, with the session's token), pull the checks
    into the records folder, and release build
    --only-verified --require-anonymization-check publishes the video; the card and manifest say the check was
    required and that 1 of 1 was ticked, naming the person by a pseudonym only."""
    push, pull, build = documented_check()
    folder = Path(os.environ["LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT"]) / "anonymized"
    served_videos("anonymized", ("v1",))
    monkeypatch.chdir(tmp_path)
    records = tmp_path / "out" / "recorded"
    records.mkdir(parents=True)
    write_jsonl(records / "videos.jsonl", [dict(VALID["video"], uri="v1.mp4", anonymization={
        "status": "passed", "report": str(folder / "v1.anonymization.json")})])
    write_jsonl(records / "dense_caption.jsonl", [VALID["dense_caption"]])

    def run(command):
        assert command.startswith("streamcue ")
        code, out, err = cli(*shlex.split(os.path.expandvars(command))[1:])
        assert code == 0, f"{command}\n{err}"
        return out

    run(push)
    exec(compile(documented_tick(), "docs/annotation.md (anonymization-tick-example)", "exec"), {})
    assert [a["result"][0]["value"]["choices"] for a in check_tasks("anonymization check")["v1.mp4"][
        "annotations"]] == [[HIDDEN]]
    assert "1 check(s)" in run(pull) and (records / "anonymization_checks.json").is_file()
    out = run(build)
    assert "anonymization check required: 1 of 1 published video(s) ticked" in out
    dist = tmp_path / "dist" / "v1.0.0"
    manifest = read_json(dist / "manifest.json")
    stated = manifest["anonymization_check"]
    assert stated["required"] is True and stated["videos"] == 1 and stated["ticked"] == 1
    assert stated["checks"]["v1"]["video_sha256"] == sha256_file(dist / "videos" / "v1.mp4")
    assert re.fullmatch(r"annotator-\d+", stated["checks"]["v1"]["checked_by"][0])
    card = (dist / "README.md").read_text()
    assert "An anonymization check by a person was required: 1 of 1 published video(s) were ticked" in card
    published = "\n".join(p.read_text(errors="replace") for p in dist.rglob("*") if p.suffix in (".md", ".json"))
    assert "ann1" not in published and "@streamcue.test" not in published
