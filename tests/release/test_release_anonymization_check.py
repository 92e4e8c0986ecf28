"""``release build --require-anonymization-check`` (issue 45): a published video needs a person's ticked contact-sheet
check of its exact bytes. The checks are real: sheets pushed to the session's Label Studio, verdicts submitted
through its API, pulled back with ``annotate anonymization pull``; the release build is the real one."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import VALID, cli
from contact_sheets import HIDDEN, READABLE, check_tasks, served_videos, verdict
from label_studio_server import executable, make_users

pytest.importorskip("label_studio_sdk")
pytest.importorskip("datasets")

from streamcue.annotation import client as ls  # noqa: E402
from streamcue.anonymize.report import sha256_file  # noqa: E402
from streamcue.io import read_json, write_jsonl  # noqa: E402
from streamcue.seal import seal  # noqa: E402

pytestmark = [pytest.mark.label_studio, pytest.mark.slow,
              pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs it "
                                 "in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)")]


@pytest.fixture(scope="module")
def checked(server, tmp_path_factory):
    """Three anonymized videos pushed to one check project: v1 ticked, v2 found readable, v3 not looked at yet;
    the checks pulled to a file. Returns the anonymizer's folder and the checks file."""
    people = make_users(server, ("ann1", "ann2"), "streamcue.test", username="{}")
    checks = tmp_path_factory.mktemp("checks") / "anonymization_checks.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LABEL_STUDIO_URL", server.url)
        env.setenv("LABEL_STUDIO_API_KEY", server.token)
        env.setenv("LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT", str(server.document_root))
        folder = served_videos("release-anonymized", ("v1", "v2", "v3"))
        assert cli("annotate", "anonymization", "push", "--reports", folder, "--project", "release check")[0] == 0
        tasks = check_tasks("release check")
        verdict(server, tasks["v1.mp4"]["id"], people["ann1"], HIDDEN)
        verdict(server, tasks["v2.mp4"]["id"], people["ann2"], READABLE, "0.3 s: a face top right, sharp")
        code, _, err = cli("annotate", "anonymization", "pull", "--project", "release check", "--out", checks)
        assert code == 0, err
    return folder, checks


def records(tmp_path, folder, name, checks=None):
    """A records folder whose one (verified) caption is on the anonymized video ``name`` of ``folder``."""
    rec = tmp_path / "rec"
    rec.mkdir(parents=True)
    write_jsonl(rec / "videos.jsonl", [dict(VALID["video"], uri=f"{name}.mp4", anonymization={
        "status": "passed", "report": str(folder / f"{name}.anonymization.json")})])
    write_jsonl(rec / "dense_caption.jsonl", [VALID["dense_caption"]])
    if checks is not None:
        shutil.copyfile(checks, rec / "anonymization_checks.json")
    return rec


def build(rec, folder, out, *extra):
    return cli("release", "build", "--records", rec, "--video-root", folder, "--version", "1.0.0", "--out", out,
               "--only-verified", *extra)


def test_a_ticked_check_of_the_exact_bytes_lets_the_video_out_and_the_card_says_so(checked, tmp_path):
    folder, checks = checked
    code, out, err = build(records(tmp_path, folder, "v1"), folder, tmp_path / "d", "--require-anonymization-check",
                           "--anonymization-checks", checks)
    assert code == 0, err
    assert "anonymization check required: 1 of 1 published video(s) ticked on their contact sheet" in out
    stated = read_json(tmp_path / "d" / "manifest.json")["anonymization_check"]
    assert (stated["required"], stated["videos"], stated["ticked"]) == (True, 1, 1)
    assert stated["checks"]["v1"]["report_sha256"] == {c["video"]: c for c in read_json(checks)["checks"]}[
        "v1.mp4"]["report_sha256"]
    assert "1 of 1 published video(s) were ticked" in (tmp_path / "d" / "README.md").read_text()
    # the sheet the report names is published beside it (the reference holds), the one that was ticked
    dist = tmp_path / "d"
    published = read_json(dist / "videos" / "v1.anonymization.json")["contact_sheet"]
    sheet = dist / "videos" / published["path"]
    assert sheet.read_bytes() == (folder / "v1.contact.jpg").read_bytes()
    assert stated["checks"]["v1"]["contact_sheet"] == "videos/v1.contact.jpg"
    assert read_json(dist / "manifest.json")["files"]["videos/v1.contact.jpg"] == published["sha256"] == stated[
        "checks"]["v1"]["contact_sheet_sha256"]


def _stale(tmp_path, folder, name="v1"):
    """``name`` anonymized again after its check: a re-run gives the same video bytes and sheet and a new report
    (its wall time)."""
    again = tmp_path / "again"
    again.mkdir()
    for suffix in (".mp4", ".contact.jpg"):
        shutil.copyfile(folder / f"{name}{suffix}", again / f"{name}{suffix}")
    report = json.loads((folder / f"{name}.anonymization.json").read_text())
    (again / f"{name}.anonymization.json").write_text(json.dumps(seal({**report, "wall_s": report["wall_s"] + 1.5})))
    return again


def _edited(tmp_path, checks):
    """The checks file with v3's pending check turned into a tick by hand."""
    data = read_json(checks)
    for check in data["checks"]:
        if check["video"] == "v3.mp4":
            check["state"] = "ticked"
    (tmp_path / "edited.json").write_text(json.dumps(data))
    return tmp_path / "edited.json"


@pytest.mark.parametrize("state, name, message", [
    ("missing", "v1", "no check of its contact sheet"),
    ("rejected", "v2", "something readable: 0.3 s: a face top right, sharp: anonymize it again"),
    ("pending", "v3", "nobody has ticked its contact sheet yet"),
    ("stale", "v1", "checked on other bytes (the check's video_sha256 "),
    ("rejected", "v2 again", "something readable: 0.3 s: a face top right, sharp"),
    ("unsigned", "v3", "not signed with key"),
], ids=["missing", "rejected", "pending", "stale", "rejected-under-a-new-report", "unsigned"])
def test_a_missing_rejected_pending_stale_or_forged_check_is_refused_in_one_line(checked, tmp_path, state, name,
                                                                                  message):
    folder, checks = checked
    if name.endswith(" again"):  # a new report beside the same bytes: a rejection still holds (a newcomer's probe)
        name = name.removesuffix(" again")
        folder = _stale(tmp_path, folder, name)
    elif state == "stale":
        folder = _stale(tmp_path, folder)
    rec = records(tmp_path, folder, name, None if state == "missing" else
                  _edited(tmp_path, checks) if state == "unsigned" else checks)
    code, out, err = build(rec, folder, tmp_path / "d", "--require-anonymization-check")
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert f"videos.jsonl:1, record video_id=v1: $.anonymization: anonymization check {state}: " in line, line
    assert message in line and "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_every_video_without_a_ticked_check_is_named_in_one_run(checked, tmp_path):
    """Issue 45: of v1 (ticked), v2 (found readable) and v3 (never looked at), the build names v2 and v3, one line
    each with its check's state, exit 2, no traceback; nothing is written."""
    folder, checks = checked
    rec = records(tmp_path, folder, "v1", checks)
    write_jsonl(rec / "videos.jsonl", [dict(VALID["video"], video_id=n, uri=f"{n}.mp4", anonymization={
        "status": "passed", "report": str(folder / f"{n}.anonymization.json")}) for n in ("v1", "v2", "v3")])
    code, out, err = cli("release", "build", "--records", rec, "--video-root", folder, "--version", "1.0.0", "--out",
                         tmp_path / "d", "--allow-unverified", "--require-anonymization-check")
    assert code == 2 and "Traceback" not in err, out + err
    rejected, pending = err.strip().splitlines()
    assert "videos.jsonl:2, record video_id=v2: $.anonymization: anonymization check rejected: something readable: " \
        "0.3 s: a face top right, sharp" in rejected, rejected
    assert "videos.jsonl:3, record video_id=v3: $.anonymization: anonymization check pending: nobody has ticked" \
        in pending, pending
    assert not (tmp_path / "d").exists() and not list(tmp_path.glob("d.*"))


def test_a_rejection_in_one_check_project_holds_in_another(checked, connected, tmp_path):
    """The same anonymized videos pushed into a second check project: push names v2, found readable in the first
    ("release check"), in one line; someone ticks v2 in the second all the same; the second's checks file holds v2
    rejected, naming the first project and task, and the release reading it refuses v2 in one line naming that
    rejection (before the fix it published v2 from the second project's tick)."""
    folder, _ = checked
    ann1 = make_users(connected, ("ann1",), "streamcue.test", username="{}")["ann1"]
    server = ls.connect()
    first, task = ls.find_project(server, "release check"), check_tasks("release check")["v2.mp4"]["id"]
    where = f"in check project 'release check' (id {first.id}, task {task}, v2.mp4): 0.3 s: a face top right, sharp"
    code, out, err = cli("annotate", "anonymization", "push", "--reports", folder, "--project", "release check 2")
    assert code == 0, err
    assert [line for line in out.splitlines() if "rejected" in line] == [
        f"v2.mp4: already rejected (something readable {where}); pushed all the same, but pull keeps its bytes "
        "rejected whatever is chosen here: anonymize it again"]
    verdict(connected, check_tasks("release check 2")["v2.mp4"]["id"], ann1, HIDDEN)
    checks = tmp_path / "second.json"
    code, out, err = cli("annotate", "anonymization", "pull", "--project", "release check 2", "--out", checks)
    assert code == 0 and "3 check(s)" in out and "2 pending, 1 rejected" in out, out + err
    check = {c["video"]: c for c in read_json(checks)["checks"]}["v2.mp4"]
    assert (check["state"], check["checked_by"]) == ("rejected", ["ann1@streamcue.test"])
    assert check["rejected_elsewhere"] == [{"project": "release check", "project_id": first.id, "task": task,
                                            "video": "v2.mp4", "checked_by": ["ann2@streamcue.test"]}]
    code, out, err = build(records(tmp_path, folder, "v2", checks), folder, tmp_path / "d",
                           "--require-anonymization-check")
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert (f"record video_id=v1: $.anonymization: anonymization check rejected: something readable {where}: "
            "anonymize it again") in line, line
    assert "@" not in out + err and "Traceback" not in err and not (tmp_path / "d").exists()


def _sheet_changed(tmp_path, folder, change):
    """``folder``'s v1 (video, report, sheet) in a new folder, its sheet changed by ``change(path)``."""
    changed = tmp_path / "changed"
    changed.mkdir()
    for suffix in (".mp4", ".anonymization.json", ".contact.jpg"):
        shutil.copyfile(folder / f"v1{suffix}", changed / f"v1{suffix}")
    change(changed / "v1.contact.jpg")
    return changed


def _with_comment(path):
    """A JPEG comment segment (what an editor may leave) naming a home path, right after the start of image."""
    data = path.read_bytes()
    text = b"edited in /home/ann1/sheets"
    path.write_bytes(data[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + data[2:])


@pytest.mark.parametrize("change, flag, field, message", [
    (lambda p: p.write_bytes(p.read_bytes() + b"\0"), True, "$.contact_sheet.sha256",
     "the contact sheet v1.contact.jpg is not the one the anonymizer drew"),
    (lambda p: p.unlink(), False, "$.contact_sheet.path", "the contact sheet the report names (v1.contact.jpg) is not "
     "beside it"),
], ids=["replaced", "missing"])
def test_a_replaced_or_missing_contact_sheet_is_refused_in_one_line(checked, tmp_path, change, flag, field, message):
    """The report names its sheet and states its SHA-256: a sheet replaced since (a person ticked another one), or
    missing (the release would name a file it lacks), refuses the build, with the check required or not, in one line
    naming the report and field; nothing is written."""
    folder, checks = checked
    changed = _sheet_changed(tmp_path, folder, change)
    code, out, err = build(records(tmp_path, changed, "v1", checks), changed, tmp_path / "d",
                           *(["--require-anonymization-check"] if flag else []))
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert f"v1.anonymization.json, record video_id=v1: {field}: {message}" in line, line
    assert not (tmp_path / "d").exists()


def test_two_reports_naming_one_published_sheet_are_refused(checked, tmp_path):
    """v3's report names v1's sheet (videos renamed after anonymizing): both would be published as one file, one
    replacing the other; the build is refused in one line naming v3's report, before anything is copied."""
    folder, _ = checked
    changed = _sheet_changed(tmp_path, folder, lambda p: None)
    shutil.copyfile(folder / "v3.mp4", changed / "v3.mp4")
    report = json.loads((folder / "v3.anonymization.json").read_text())
    (changed / "v3.anonymization.json").write_text(json.dumps(
        {**report, "contact_sheet": {**report["contact_sheet"], "path": "v1.contact.jpg"}}))
    rec = records(tmp_path, changed, "v1")
    write_jsonl(rec / "videos.jsonl", [dict(VALID["video"], video_id=n, uri=f"{n}.mp4", anonymization={
        "status": "passed", "report": str(changed / f"{n}.anonymization.json")}) for n in ("v1", "v3")])
    code, out, err = cli("release", "build", "--records", rec, "--video-root", changed, "--version", "1.0.0", "--out",
                         tmp_path / "d", "--allow-unverified")
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert "v3.anonymization.json, record video_id=v3: $.contact_sheet.path: its contact sheet would be " \
        "published as videos/v1.contact.jpg, as video_id=v1's" in line, line
    assert not (tmp_path / "d").exists()


def test_a_contact_sheet_whose_jpeg_metadata_names_a_home_path_is_not_published(checked, tmp_path):
    """The published sheet is scanned like every published file: a JPEG comment naming a home path (the report
    restating the sheet's new SHA-256, so only the scan can catch it) refuses the build, naming the file and
    segment."""
    folder, checks = checked
    changed = _sheet_changed(tmp_path, folder, _with_comment)
    report = json.loads((changed / "v1.anonymization.json").read_text())
    report["contact_sheet"]["sha256"] = sha256_file(changed / "v1.contact.jpg")
    (changed / "v1.anonymization.json").write_text(json.dumps(seal(report)))  # resealed, as a forger would
    code, out, err = build(records(tmp_path, changed, "v1", checks), changed, tmp_path / "d")
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert "videos/v1.contact.jpg, field JPEG segment 0xFE: a published file names a local absolute path" in line
    assert "/home/ann1" not in line and not (tmp_path / "d").exists()


def test_without_the_flag_the_release_is_built_as_before(checked, tmp_path, monkeypatch):
    """v2's check says something is readable, but nothing asked for the check: the build is today's, its manifest
    and card say nothing of it; --anonymization-checks alone, or the flag without a signing key, is refused."""
    folder, checks = checked
    rec = records(tmp_path, folder, "v2", checks)
    code, _, err = build(rec, folder, tmp_path / "d1", "--anonymization-checks", checks)
    assert code == 2 and "--anonymization-checks is read only with --require-anonymization-check" in err
    code, _, err = build(rec, folder, tmp_path / "d")
    assert code == 0, err
    assert "anonymization_check" not in read_json(tmp_path / "d" / "manifest.json")
    assert (tmp_path / "d" / "videos" / "v2.contact.jpg").is_file()  # the report's sheet goes with it all the same
    assert "anonymization check by a person" not in (tmp_path / "d" / "README.md").read_text()
    monkeypatch.delenv("STREAMCUE_SIGNING_KEY")
    code, _, err = cli("release", "build", "--records", records(tmp_path / "k", folder, "v1", checks), "--video-root",
                       folder, "--version", "1.0.0", "--out", tmp_path / "d2", "--allow-unverified",
                       "--require-anonymization-check")
    assert code == 2 and "pass --key or set STREAMCUE_SIGNING_KEY" in err
