"""Issue 24's "done when", end to end with a real Label Studio server: build CaptainCook4D -> push 3 chosen
records -> two annotators (one disagreement) -> a reviewer resolves it -> pull into the build -> release
--only-verified -> load_dataset(folder) with no config name -> every field equals the record -> a second
version -> release diff names the changed field.

Every step is the command a maintainer types, run in this process (``cli``: no step reads the environment at
import); only the annotators' and the reviewer's clicks are made through Label Studio's API. The release half
needs ``release build --only-verified`` (issue 24's release side): without it the test stops there with a skip
that says so.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import CAPTAINCOOK4D, in_folder
from label_studio_server import executable, make_users

httpx = pytest.importorskip("httpx")
pytest.importorskip("label_studio_sdk")

from streamcue.annotation.convert import moment_to_frame, prediction  # noqa: E402
from streamcue.annotation.signing import KEY_ENV, load_key  # noqa: E402
from streamcue.io import read_json, read_jsonl, write_jsonl  # noqa: E402

pytestmark = [pytest.mark.label_studio, pytest.mark.slow,
              pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs it "
                                 "in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)")]
CHOSEN = ("1_25", "1_49", "1_43")  # three test-split recordings
FPS = 30.0


def test_build_verify_adjudicate_merge_release_load_and_diff(server, tmp_path):
    env = {"HOME": str(tmp_path), "COLUMNS": "200", "LABEL_STUDIO_URL": server.url,
           "LABEL_STUDIO_API_KEY": server.token, "STREAMCUE_NO_PROGRESS": "1",
           KEY_ENV: os.environ[KEY_ENV]}   # the maintainer's signing key: pull signs, release build checks

    streamcue = in_folder(tmp_path, env)  # each command in this process, from the maintainer's folder

    headers = {"Authorization": f"Token {server.token}"}
    users = make_users(server, ("ann1", "ann2", "rev"))

    # build CaptainCook4D (every recording), push three chosen records
    streamcue("build", "captaincook4d", "--annotations", CAPTAINCOOK4D, "--out", "out/cc4d")
    build = {r["video_id"]: r for r in read_jsonl(tmp_path / "out/cc4d/guidance.jsonl")}
    assert len(build) > 300 and set(CHOSEN) <= set(build)
    root = server.document_root / "cc4d"  # push refuses videos the annotators' page could not load
    for video in read_jsonl(tmp_path / "out/cc4d/videos.jsonl"):
        if video["video_id"] in CHOSEN:
            (root / video["uri"]).parent.mkdir(parents=True, exist_ok=True)
            (root / video["uri"]).write_bytes(b"a video file (this test never plays it)")
    out = streamcue("annotate", "push", "--kind", "guidance", "--records", "out/cc4d/guidance.jsonl",
                    "--project", "cc4d e2e", "--ids", ",".join(CHOSEN), "--video-root", root,
                    "--document-root", server.document_root)
    assert "3 tasks imported" in out
    tasks = {t["data"]["record_id"]: t["id"] for t in httpx.get(
        f"{server.url}/api/tasks/", headers=headers, params={"project": _project_id(server, "cc4d e2e"),
                                                            "page_size": 100}).json()["tasks"]}

    def submit(rid, user, shift_s=None, text=None):
        record = build[rid]
        result = prediction(record, "guidance", FPS)
        if shift_s is not None:
            frame = moment_to_frame(record["events"][1]["t_s"] + shift_s, FPS)
            next(r for r in result if r["id"] == "e1" and r["from_name"] == "events")["value"]["ranges"] = [
                {"start": frame, "end": frame}]
        if text is not None:
            next(r for r in result if r["id"] == "e1" and r["from_name"] == "event_text")["value"]["text"] = [text]
        httpx.post(f"{server.url}/api/tasks/{tasks[rid]}/annotations/", headers=headers,
                   json={"result": result, "completed_by": users[user]}).raise_for_status()

    # two annotators: they agree on two records and disagree on when 1_49's second event happens
    for rid in ("1_25", "1_43"):
        submit(rid, "ann1")
        submit(rid, "ann2")
    submit("1_49", "ann1", shift_s=3.0)
    submit("1_49", "ann2", shift_s=8.0)
    out = streamcue("annotate", "pull", "--project", "cc4d e2e", "--out", "pulled/guidance.jsonl")
    assert "1_49: annotators disagree: event e1 (" in out and "t_s" in out
    # a reviewer resolves it in Label Studio
    submit("1_49", "rev", shift_s=3.5)
    streamcue("annotate", "pull", "--project", "cc4d e2e", "--build", "out/cc4d", "--out", "out/cc4d-v2",
              "--reviewer", "rev@e2e.test")
    merged = {r["video_id"]: r for r in read_jsonl(tmp_path / "out/cc4d-v2/guidance.jsonl")}
    assert merged.keys() == build.keys()
    assert {rid: merged[rid]["verification"]["status"] for rid in CHOSEN} == dict.fromkeys(CHOSEN, "verified")
    assert merged["1_49"]["verification"]["decided_by"] == "reviewer"
    assert merged["1_49"]["verification"]["reviewer"] == "rev@e2e.test"
    [moved] = [e for e in merged["1_49"]["events"] if e["time_source"] == "annotator"]  # events stay in time order
    assert moved["t_s"] == pytest.approx(build["1_49"]["events"][1]["t_s"] + 3.5, abs=1 / FPS)
    assert moved["text"] == build["1_49"]["events"][1]["text"]
    assert all(merged[rid] == build[rid] for rid in build if rid not in CHOSEN)
    report = read_json(tmp_path / "out/cc4d-v2/build_report.json")
    assert report["annotation"][0]["replaced"] == sorted(CHOSEN, key=list(build).index)
    agreement = read_json(tmp_path / "out/cc4d-v2/agreement.json")["guidance"]
    assert agreement["overall"]["records"] == 3 and agreement["overall"]["record_agreement"] == pytest.approx(2 / 3)

    # the release half: issue 24's release side
    if "--only-verified" not in streamcue("release", "build", "--help"):
        pytest.skip("awaits release build --only-verified (issue 24, release side): the annotation half passed")
    streamcue("release", "build", "--records", "out/cc4d-v2", "--only-verified", "--version", "1.0.0",
              "--out", "dist/v1.0.0")
    from datasets import load_dataset
    from release_checks import same

    loaded = load_dataset(str(tmp_path / "dist/v1.0.0"))
    rows = [row for split in loaded.values() for row in split]
    assert sorted(row["video_id"] for row in rows) == sorted(CHOSEN)
    # annotators and the reviewer are published as pseudonyms (issue 32 item 3); the mapping stays beside dist/
    pseudonyms = read_json(tmp_path / "dist/pseudonyms.json")
    assert pseudonyms == {"annotator": {"ann1@e2e.test": "annotator-1", "ann2@e2e.test": "annotator-2"},
                          "reviewer": {"rev@e2e.test": "reviewer-1"}}
    swap = {**pseudonyms["annotator"], **pseudonyms["reviewer"]}
    key = load_key(os.environ[KEY_ENV])
    for row in rows:  # every field, with its type (a struct key the record lacks reads as null: Arrow structs)
        record = json.loads(json.dumps(merged[row["video_id"]]))
        ver = record["verification"]
        ver["annotators"] = [swap[n] for n in ver["annotators"]]
        if "reviewer" in ver:
            ver["reviewer"] = swap[ver["reviewer"]]
        if "notes" in ver:
            ver["notes"] = [_swapped(n, swap) for n in ver["notes"]]
        assert key.problem(row) is None   # signed again by the build, with the annotators' pseudonyms
        ver["signature"] = row["verification"]["signature"]
        same(record, row, row["video_id"])
    published = [p for p in (tmp_path / "dist/v1.0.0").rglob("*") if p.is_file() and p.suffix != ".png"]
    assert not [p for p in published if "e2e.test" in p.read_bytes().decode("utf-8", "replace")]
    import pyarrow.parquet as pq

    assert not [p for p in published if p.suffix == ".parquet" and "e2e.test" in json.dumps(
        pq.read_table(p).to_pylist(), default=str)]
    # the card's agreement equals pull's figures (issue 32 item 4), every figure, all pairs and per pair
    card = (tmp_path / "dist/v1.0.0/README.md").read_text()
    names = agreement["figures"]

    def row_of(label, figures):
        cells = ["-" if figures.get(n) is None else f"{figures[n]:.4f}" for n in names]
        return f"| {label} | {figures['records']} | " + " | ".join(cells) + " |"

    assert row_of("all pairs", agreement["overall"]) in card
    for pair in agreement["pairs"]:
        assert row_of(" & ".join(swap[n] for n in pair["annotators"]), pair) in card
    assert "guidance.v1 (3)" in card and "| guidance | guidance.v1 (3) | 2 | 0 | 1 |" in card
    assert "not measured" not in card and "not recorded" not in card

    # a verified record edited by hand afterwards is not published as verified (issue 32 item 5)
    import shutil

    shutil.copytree(tmp_path / "out/cc4d-v2", tmp_path / "out/cc4d-hand")
    hand = read_jsonl(tmp_path / "out/cc4d-hand/guidance.jsonl")
    next(r for r in hand if r["video_id"] == "1_25")["events"][0]["text"] = "Edited by hand."
    write_jsonl(tmp_path / "out/cc4d-hand/guidance.jsonl", hand)
    out = streamcue("release", "build", "--records", "out/cc4d-hand", "--only-verified", "--version", "1.0.0",
                    "--out", "dist-hand/v1.0.0")
    assert "1_25: marked verified, counted as unverified: edited after verification" in out
    assert sorted(load_dataset(str(tmp_path / "dist-hand/v1.0.0"))["test"]["video_id"]) == ["1_43", "1_49"]

    # a second version: the reviewer edits 1_49's text, a second pull into the merged build, a new release
    submit("1_49", "rev", shift_s=3.5, text="Check the recipe before this step.")
    streamcue("annotate", "pull", "--project", "cc4d e2e", "--build", "out/cc4d-v2", "--out", "out/cc4d-v3",
              "--reviewer", "rev@e2e.test")
    streamcue("release", "build", "--records", "out/cc4d-v3", "--only-verified", "--version", "1.1.0",
              "--out", "dist/v1.1.0", "--previous", "dist/v1.0.0")
    out = streamcue("release", "diff", "dist/v1.0.0", "dist/v1.1.0")
    line = next(line for line in out.splitlines() if "1_49" in line)
    assert "events" in line, out
    assert json.loads(json.dumps(read_jsonl(tmp_path / "out/cc4d-v3/guidance.jsonl")))  # still valid JSON lines


def _swapped(note, swap):
    for name, pseudonym in swap.items():
        note = note.replace(name, pseudonym)
    return note


def _project_id(server, title):
    projects = httpx.get(f"{server.url}/api/projects/", headers={"Authorization": f"Token {server.token}"},
                         params={"title": title}).json()
    return next(p["id"] for p in projects["results"] if p["title"] == title)
