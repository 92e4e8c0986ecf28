"""What a release promises about its people and its verification (issue 32 items 3-6, issue 35 items 2 and 4):
annotators as stable pseudonyms, no personal data or home path in any notation, a verification that holds
(content hash, double-check rule), a card that says what the records say, a default config that stays."""

from __future__ import annotations

import json
import re

import pytest

from conftest import VALID, cli, cli_run, signed

pytest.importorskip("datasets")
pytest.importorskip("pyarrow")

from streamcue.annotation.verify import content_sha256, verification_problem  # noqa: E402
from streamcue.errors import ConfigError, InputError  # noqa: E402
from streamcue.io import read_json, read_jsonl, write_json, write_jsonl  # noqa: E402
from streamcue.loaders import load  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.release.diff import changelog_lines, diff, read_release  # noqa: E402
from streamcue.release.gates import scan_published  # noqa: E402

REVIEWED = {"status": "verified", "annotators": ["ann2@lab.example.org", "ann1@lab.example.org"], "checks": 1,
            "decided_by": "reviewer", "reviewer": "rev@lab.example.org", "guideline": "dense_caption.v1",
            "notes": ["disagreement: caption c0 (second 0): text 'Cutting an onion.' (ann1@lab.example.org) vs "
                      "'Slicing.' (ann2@lab.example.org)", "resolved: by reviewer rev@lab.example.org"]}
AGREED = {"status": "verified", "annotators": ["ann1@lab.example.org", "ann2@lab.example.org"], "checks": 2,
          "decided_by": "agreement", "guideline": "dense_caption.v1"}


def caption(task_id: str, verification: dict, text: str = "Cutting an onion.") -> dict:
    record = json.loads(json.dumps(VALID["dense_caption"]))
    record.update(task_id=task_id, verification=dict(verification))
    record["captions"][0]["text"] = text
    return signed(record) if verification["status"] != "unverified" else record


def records_folder(path, records, figures=None):
    path.mkdir(parents=True)
    write_jsonl(path / "videos.jsonl", [dict(VALID["video"], source="captaincook4d", uri="cc4d/v1.mp4",
                                             license="MIT", anonymization={"status": "not_required", "report": None})])
    write_jsonl(path / "dense_caption.jsonl", records)
    if figures is not None:
        write_json(path / "agreement.json", figures)
    return path


def figures(*annotators: str) -> dict:
    """Agreement figures as ``annotate pull`` writes them (annotation/agreement.py)."""
    return {"dense_caption": {
        "project": "cc4d captions", "kind": "dense_caption", "tolerance_s": 1.0,
        "figures": ["record_agreement", "caption_text_same"],
        "overall": {"records": 3, "record_agreement": 2 / 3, "caption_text_same": 0.875},
        "pairs": [{"annotators": list(annotators[:2]), "records": 3, "record_agreement": 2 / 3,
                   "caption_text_same": 0.875}],
        "required": 2, "records": 3, "annotators": list(annotators), "reviewers": ["rev@lab.example.org"],
        "decided_by": {"agreement": 1, "reviewer": 1}}}


def published_text(dist) -> str:
    """Every published string: the text files, and each Parquet file's rows as JSON."""
    import pyarrow.parquet as pq

    parts = []
    for path in sorted(p for p in dist.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            parts.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
        elif path.suffix != ".png":
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


# --- annotators stay private ------------------------------------------------------------------------

def test_annotators_are_published_as_pseudonyms_stable_across_versions(tmp_path):
    rec = records_folder(tmp_path / "rec", [caption("t1", REVIEWED), caption("t2", AGREED)],
                         figures("ann1@lab.example.org", "ann2@lab.example.org"))
    dist = tmp_path / "dist"
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=dist / "v1.0.0"))
    mapping = read_json(dist / "pseudonyms.json")  # the maintainer's, beside the release folders
    assert mapping == {"annotator": {"ann1@lab.example.org": "annotator-1", "ann2@lab.example.org": "annotator-2"},
                       "reviewer": {"rev@lab.example.org": "reviewer-1"}}
    loaded = [r.to_dict() for split in load("dense_caption", dist / "v1.0.0").values() for r in split]
    ver = {r["task_id"]: r["verification"] for r in loaded}
    assert ver["t1"]["annotators"] == ["annotator-2", "annotator-1"] and ver["t1"]["reviewer"] == "reviewer-1"
    assert ver["t1"]["notes"] == ["disagreement: caption c0 (second 0): text 'Cutting an onion.' (annotator-1) vs "
                                  "'Slicing.' (annotator-2)", "resolved: by reviewer reviewer-1"]
    assert ver["t1"]["status"] == ver["t2"]["status"] == "verified"   # the names are not part of what was verified
    text = published_text(dist / "v1.0.0")
    assert "lab.example.org" not in text and "ann1" not in text and "pseudonyms.json" not in {
        p.name for p in (dist / "v1.0.0").rglob("*")}
    card = (dist / "v1.0.0" / "README.md").read_text()
    assert "- Annotators: annotator-1, annotator-2; reviewers: reviewer-1 (pseudonyms" in card
    assert "| annotator-1 & annotator-2 | 3 | 0.6667 | 0.8750 |" in card

    # the next version: a new annotator whose name sorts first gets the next number; the others keep theirs
    newcomer = dict(AGREED, annotators=["aaa@lab.example.org", "ann1@lab.example.org"])
    rec2 = records_folder(tmp_path / "rec2", [caption("t1", REVIEWED), caption("t3", newcomer)])
    build_release(ReleaseConfig(records=rec2, version="1.1.0", out=dist / "v1.1.0", previous=dist / "v1.0.0"))
    assert read_json(dist / "pseudonyms.json")["annotator"] == {
        "ann1@lab.example.org": "annotator-1", "ann2@lab.example.org": "annotator-2",
        "aaa@lab.example.org": "annotator-3"}
    ver2 = {r.task_id: r.verification for split in load("dense_caption", dist / "v1.1.0").values() for r in split}
    assert ver2["t1"]["annotators"] == ["annotator-2", "annotator-1"] and ver2["t3"]["annotators"] == [
        "annotator-3", "annotator-1"]


def test_the_pseudonyms_file_never_goes_into_the_release(tmp_path):
    rec = records_folder(tmp_path / "rec", [caption("t2", AGREED)])
    with pytest.raises(ConfigError, match="inside the release folder"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d",
                                    pseudonyms=tmp_path / "d" / "names.json"))
    assert not (tmp_path / "d").exists()


def test_two_builds_sharing_a_pseudonyms_file_never_give_one_pseudonym_to_two_people(tmp_path):
    """issue 46: two release builds sharing one --pseudonyms file both succeeded and published two different people
    as annotator-1 (each read the file, each wrote it back). The file is written under a lock, and only over what
    the build read: the build that saves second is refused, one line, before anything is published; built again,
    its new person gets the next number."""
    from streamcue.annotation.pseudonyms import Pseudonyms

    path = tmp_path / "names.json"
    first, second = Pseudonyms.read(path), Pseudonyms.read(path)   # two builds start together
    first.add("annotator", ["alice@lab.example.org"])
    second.add("annotator", ["bob@lab.example.org"])
    assert first.of("annotator", "alice@lab.example.org") == second.of("annotator", "bob@lab.example.org") == \
        "annotator-1"
    second.save()
    with pytest.raises(ConfigError, match="another release build added people to this pseudonyms file") as caught:
        first.save()
    assert str(path) in str(caught.value) and len(str(caught.value).splitlines()) == 1
    assert read_json(path) == {"annotator": {"bob@lab.example.org": "annotator-1"}, "reviewer": {}}
    rec = records_folder(tmp_path / "rec", [caption("t2", dict(AGREED, annotators=["alice@lab.example.org",
                                                                                  "bob@lab.example.org"]))])
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", pseudonyms=path))  # built again
    assert read_json(path)["annotator"] == {"bob@lab.example.org": "annotator-1",
                                            "alice@lab.example.org": "annotator-2"}


@pytest.mark.parametrize("options, message", [
    (["--pseudonyms", "d", "--out", "d"], "error: --out and --pseudonyms would both be written to d"),
    (["--pseudonyms", "rec/agreement.json", "--out", "d"], "error: output rec/agreement.json lies inside the input"),
    (["--pseudonyms", "fig.json", "--annotation-figures", "fig.json", "--out", "d"],
     "error: output fig.json is the input fig.json"),
])
def test_colliding_options_are_refused_before_anything_is_written(tmp_path, monkeypatch, options, message):
    """issue 46: ``--pseudonyms`` given the ``--out`` path left a file of annotators' e-mails there (the two paths
    were one key of a mapping, so the check saw one output); the figures file could be overwritten by the mapping."""
    rec = records_folder(tmp_path / "rec", [caption("t2", AGREED)], figures("ann1@lab.example.org", "ann2@x.org"))
    (tmp_path / "fig.json").write_bytes((rec / "agreement.json").read_bytes())
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("release", "build", "--records", "rec", "--version", "1.0.0", *options)
    assert code == 2 and err.startswith(message) and len(err.strip().splitlines()) == 1, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "fig.json").read_bytes() == (rec / "agreement.json").read_bytes()


def test_an_account_name_left_in_a_record_is_refused(tmp_path):
    """A name the pseudonyms replace in verification but that also stands in the text is refused, by kind."""
    named = dict(AGREED, annotators=["bobsmith", "carol.k"])
    rec = records_folder(tmp_path / "rec", [caption("t2", named, text="bobsmith cuts an onion.")])
    with pytest.raises(InputError, match=r"captions\[\]\.text: a published file holds an annotator's or reviewer's "
                                         r"account name") as err:
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "dist" / "v1"))
    assert "bobsmith" not in str(err.value)
    rec2 = records_folder(tmp_path / "rec2", [caption("t2", AGREED, text="Ask ann9@lab.example.org.")])
    with pytest.raises(InputError, match="holds an e-mail address"):
        build_release(ReleaseConfig(records=rec2, version="1.0.0", out=tmp_path / "dist" / "v2"))


#: Every notation the hostile probe published (issue 35), and personal data.
REFUSED = {
    "~bob/": "see ~bob/clips/a.mp4", "UNC path": r"\\fileserver\share\bob\a.mp4",
    "after +": "a+/home/bob/a.mp4", "after #": "#/home/bob/a", "after !": "!/home/bob/a", "after @": "@/home/bob/a",
    "after &": "&/home/bob/a", "after )": "(see)/home/bob/a", "-i": "ffmpeg -i/home/bob/a.mp4",
    "no-break space": "file\u00a0/home/bob/a.mp4", "Unicode brackets": "\u300c/home/bob/a.mp4\u300d",
    "full-width parenthesis": "\uff08/srv/data/a\uff09", "escape in YAML": "\t/home/bob/a",
    "${HOME}": "${HOME}/a", "e-mail": "mail rev@lab.example.org", "account id": "by user:17",
    # the re-run of the probe (issue 35): Windows' home variables, a long UNC path, internationalized e-mail
    "%USERPROFILE%": r"%USERPROFILE%\clips\a.mp4", "%HOMEPATH%": r"see %HOMEPATH%\a.mp4",
    "long UNC path": r"\\?\C:\Users\bob\a.mp4", "IDN e-mail": "mail bob@bücher.example",
    "non-ASCII e-mail": "mail müller@lab.example.org", "punycode e-mail": "bob@xn--bcher-kva.example",
}
PASSES = ["1/2 cup", "and/or", "./data/x", "~5/10 minutes", "10:30", "https://a.org/b/c", "data/guidance/x.parquet",
          "@misc{streamcue,", "100% sure, 50%", "a@b"]  # "Café@home" is refused since issue 46 (hosts without a dot)


@pytest.mark.parametrize("name", sorted(REFUSED))
@pytest.mark.parametrize("where", ["value", "key", "parquet value", "parquet field name", "card header"])
def test_the_scan_refuses_every_notation_in_values_keys_and_cards(tmp_path, name, where):
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = REFUSED[name]
    if where == "value":
        write_json(tmp_path / "manifest.json", {"title": text})
    elif where == "key":
        write_json(tmp_path / "manifest.json", {"layout": {text: 1}})
    elif where == "parquet value":
        pq.write_table(pa.table({"captions": [[{"t_s": 0, "text": text}]]}), tmp_path / "data.parquet")
    elif where == "parquet field name":
        pq.write_table(pa.table({"provenance": [{text: 1}]}), tmp_path / "data.parquet")
    else:
        import yaml

        (tmp_path / "README.md").write_text("---\n" + yaml.safe_dump({"pretty_name": text}) + "---\n\nA card.\n")
    with pytest.raises(InputError, match="home directory|e-mail|account id"):
        scan_published(tmp_path)


def test_the_scan_passes_ordinary_text(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_json(tmp_path / "manifest.json", {"notes": PASSES, **{p: 1 for p in PASSES}})
    pq.write_table(pa.table({"text": PASSES}), tmp_path / "data.parquet")
    scan_published(tmp_path)


def test_a_title_with_an_escaped_home_path_is_refused(tmp_path):
    rec = records_folder(tmp_path / "rec", [caption("t2", AGREED)])
    with pytest.raises(InputError, match=r"home directory \(/home/\.\.\.\)"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", title="\t/home/bob/data"))
    assert not (tmp_path / "d").exists()


# --- verification that holds ------------------------------------------------------------------------

def test_the_content_hash_covers_everything_but_the_verification():
    record = caption("t2", AGREED)
    assert record["verification"]["content_sha256"] == content_sha256(record)
    assert content_sha256(dict(record, verification={"status": "unverified"})) == content_sha256(record)
    edited = json.loads(json.dumps(record))
    edited["captions"][1]["text"] = "Peeling an onion."
    assert "edited after verification" in verification_problem(edited)
    assert verification_problem(record) is None
    one = caption("t3", dict(AGREED, annotators=["ann1@lab.example.org"], checks=1))
    assert "double-check rule needs two" in verification_problem(one)
    alone = caption("t4", dict(REVIEWED, annotators=[]))
    assert "reviewer alone" in verification_problem(alone)


def edited(record: dict) -> dict:
    record = json.loads(json.dumps(record))
    record["captions"][1]["text"] = "Peeling an onion, edited by hand."
    return record


def test_an_edited_or_single_checked_record_is_not_published_as_verified(tmp_path):
    one = dict(AGREED, annotators=["ann1@lab.example.org"], checks=1)
    records = [caption("t1", REVIEWED), edited(caption("t2", AGREED)), caption("t3", one)]
    rec = records_folder(tmp_path / "rec", records)
    with pytest.raises(InputError, match=r"task_id=t2, field \$\.verification\.status: unverified record in the test "
                                         r"split \(not verified: edited after verification"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "dist" / "a"))
    manifest = build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "dist" / "v1",
                                           only_verified=True))
    assert manifest["unverified_left_out"] == {"dense_caption": 2}
    assert manifest["verified"]["dense_caption"]["test"] == {"verified": 1, "records": 3}
    assert set(manifest["verification_not_held"]["dense_caption"]) == {"t2", "t3"}
    assert [r.task_id for split in load("dense_caption", tmp_path / "dist" / "v1").values() for r in split] == ["t1"]
    card = (tmp_path / "dist" / "v1" / "README.md").read_text()
    assert "`t2` (edited after verification" in card and "`t3` (checked by 1 annotator(s)" in card


def test_release_diff_names_a_record_edited_after_verification(tmp_path):
    rec1 = records_folder(tmp_path / "rec1", [caption("t1", REVIEWED), caption("t2", AGREED)])
    build_release(ReleaseConfig(records=rec1, version="1.0.0", out=tmp_path / "dist" / "v1"))
    rec2 = records_folder(tmp_path / "rec2", [caption("t1", REVIEWED), edited(caption("t2", AGREED))])
    build_release(ReleaseConfig(records=rec2, version="1.1.0", out=tmp_path / "dist" / "v2", allow_unverified=True,
                                previous=tmp_path / "dist" / "v1"))
    _, old = read_release(tmp_path / "dist" / "v1")
    _, new = read_release(tmp_path / "dist" / "v2")
    changes = diff(old, new)["dense_caption"]
    assert changes.no_longer_verified == {"test/t2": "edited after verification (its content no longer matches "
                                                     "verification.content_sha256)"}
    assert any("no longer verified: `test/t2` (edited after verification" in line for line in changelog_lines(
        {"dense_caption": changes}))
    changelog = (tmp_path / "dist" / "v2" / "CHANGELOG.md").read_text()
    assert "1 no longer verified" in changelog and "`test/t2` (edited after verification" in changelog


def test_a_record_left_out_because_an_edit_unverified_it_is_removed_with_the_reason(tmp_path, monkeypatch):
    """issue 46: under --only-verified, a record an edit un-verified is left out, and release diff and the
    changelog said only ``removed:``; the docs promise the reason. Both now give it, from the new manifest."""
    rec1 = records_folder(tmp_path / "rec1", [caption("t1", REVIEWED), caption("t2", AGREED)])
    build_release(ReleaseConfig(records=rec1, version="1.0.0", out=tmp_path / "dist" / "v1", only_verified=True))
    rec2 = records_folder(tmp_path / "rec2", [caption("t1", REVIEWED), edited(caption("t2", AGREED))])
    build_release(ReleaseConfig(records=rec2, version="1.1.0", out=tmp_path / "dist" / "v2", only_verified=True,
                                previous=tmp_path / "dist" / "v1"))
    why = "removed: `test/t2` (left out, not verified: edited after verification"
    assert why in (tmp_path / "dist" / "v2" / "CHANGELOG.md").read_text()
    code, out, err = cli("release", "diff", tmp_path / "dist" / "v1", tmp_path / "dist" / "v2")
    assert code == 0, err
    assert why.replace("`", "") in " ".join(out.split())


# --- the card tells what the records say ------------------------------------------------------------

def test_the_card_states_agreement_guidelines_and_decisions_from_the_records(tmp_path):
    figs = figures("ann1@lab.example.org", "ann2@lab.example.org")
    rec = records_folder(tmp_path / "rec", [caption("t1", REVIEWED), caption("t2", AGREED)], figs)
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "dist" / "v1"))
    card = (tmp_path / "dist" / "v1" / "README.md").read_text()
    assert "| dense_caption | dense_caption.v1 (2) | 1 | 0 | 1 |" in card
    assert "records decided by agreement: 1, by reviewer: 1" in card
    overall = figs["dense_caption"]["overall"]
    assert (f"| all pairs | 3 | {overall['record_agreement']:.4f} | {overall['caption_text_same']:.4f} |"
            in card)
    assert "not measured" not in card and "not recorded" not in card
    # --annotation-figures names another file: the card follows it
    other = tmp_path / "elsewhere.json"
    write_json(other, {"dense_caption": dict(figs["dense_caption"], overall={
        "records": 5, "record_agreement": 0.2, "caption_text_same": None})})
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "dist" / "v2", annotation_figures=other))
    assert "| all pairs | 5 | 0.2000 | - |" in (tmp_path / "dist" / "v2" / "README.md").read_text()


def test_without_figures_the_card_says_agreement_was_not_measured(tmp_path):
    rec = records_folder(tmp_path / "rec", [caption("t2", AGREED)])
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d" / "v1"))
    card = (tmp_path / "d" / "v1" / "README.md").read_text()
    assert re.search(r"Inter-annotator agreement: not measured for this release \(no `agreement.json`", card)


# --- stable loading across versions -----------------------------------------------------------------

def test_the_default_config_stays_unless_the_maintainer_changes_it_and_then_diff_and_changelog_say_so(tmp_path):
    import datasets

    from streamcue.release.diff import default_config

    dist = tmp_path / "dist"
    rec1 = records_folder(tmp_path / "rec1", [caption("t2", AGREED)])
    build_release(ReleaseConfig(records=rec1, version="1.0.0", out=dist / "v1"))
    rec2 = records_folder(tmp_path / "rec2", [caption("t2", AGREED)])
    write_jsonl(rec2 / "guidance.jsonl", [VALID["guidance"]])   # guidance comes first in DEFAULT_ORDER
    build_release(ReleaseConfig(records=rec2, version="1.1.0", out=dist / "v2", previous=dist / "v1",
                                allow_unverified=True))
    assert default_config(dist / "v1") == default_config(dist / "v2") == "dense_caption"
    assert datasets.load_dataset(str(dist / "v2"), split="test")["task_id"] == ["t2"]   # no config name: the same
    assert "default config" not in (dist / "v2" / "CHANGELOG.md").read_text()
    card = (dist / "v2" / "README.md").read_text()
    assert '| `guidance` | `load_dataset("ORG/NAME", "guidance", split="test", revision="v1.1.0")` |' in card
    assert "| `dense_caption` (default) |" in card
    for config in ("videos", "guidance", "dense_caption"):   # every config loads by its name
        assert datasets.load_dataset(str(dist / "v2"), config, split="test").num_rows == 1

    manifest = build_release(ReleaseConfig(records=rec2, version="2.0.0", out=dist / "v3", previous=dist / "v2",
                                           allow_unverified=True, default_config="guidance"))
    assert manifest["default_config"] == "guidance" == default_config(dist / "v3")
    assert "- default config: `dense_caption` -> `guidance`" in (dist / "v3" / "CHANGELOG.md").read_text()
    done = cli_run("release", "diff", dist / "v2", dist / "v3", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "default config: dense_caption -> guidance" in done.stdout

    rec4 = tmp_path / "rec4"
    rec4.mkdir()
    write_jsonl(rec4 / "videos.jsonl", read_jsonl(rec2 / "videos.jsonl"))
    write_jsonl(rec4 / "guidance.jsonl", [VALID["guidance"]])
    with pytest.raises(ConfigError, match="the previous version's default config dense_caption is not in this "
                                          "release: name the new default with --default-config"):
        build_release(ReleaseConfig(records=rec4, version="1.2.0", out=dist / "v4", previous=dist / "v2",
                                    allow_unverified=True))
    with pytest.raises(ConfigError, match="--default-config interval_qa: not a config of this release"):
        build_release(ReleaseConfig(records=rec4, version="1.2.0", out=dist / "v4", previous=dist / "v2",
                                    allow_unverified=True, default_config="interval_qa"))



@pytest.mark.parametrize("annotators", [["ann", "ann "], ["Ann@x.org", "ann@x.org"], ["a", "a\u200b"],
                                        ["ann", "\u0430nn"], ["", " "], ["ann", "ANN"]],
                         ids=["trailing space", "case", "zero-width", "Cyrillic a", "empty", "upper case"])
def test_two_spellings_of_one_person_are_not_two_people(annotators):
    """Issue 46: the double-check rule compares identities (NFKC, trimmed, case-folded, look-alikes read as Latin;
    zero-width, mixed-script and empty names refused), for annotators and reviewers alike."""
    ver = dict(AGREED, annotators=annotators)
    assert verification_problem(caption("t9", ver)) is not None
    reviewer = dict(REVIEWED, annotators=["a"], reviewer="a ", checks=1)
    assert verification_problem(caption("t9", reviewer)) is not None
    assert verification_problem(caption("t9", dict(AGREED, annotators=["ann", "bob"]))) is None
