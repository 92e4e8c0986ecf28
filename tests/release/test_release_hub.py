"""What a Hub user gets: every field of every kind back with the record's type through the real
``datasets.load_dataset``, a default config, the card (sections, YAML checked by huggingface_hub), a
release of verified records only, field-level diffs, and issue 25's release cases."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from release_checks import same
from conftest import CAPTAINCOOK4D, GOALSTEP_VAL, REPO, SHARED_DATA, VALID, cli_run, signed

datasets = pytest.importorskip("datasets")
hub = pytest.importorskip("huggingface_hub")

from streamcue.dataset_builders import BuildReport, captaincook4d, ego4d, get_builder, run_builder  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.errors import ConfigError, InputError  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.release.card import CONFIG_NAMES  # noqa: E402
from streamcue.release.diff import diff, read_release  # noqa: E402
from streamcue.schemas import ID_FIELDS  # noqa: E402
from streamcue.schemas.features import RELEASE_KINDS, decode, encode, typed  # noqa: E402

datasets.disable_progress_bars()


def release(records_dir, out, **options):
    build_release(ReleaseConfig(records=records_dir, version=options.pop("version", "1.0.0"), out=out,
                                **{"allow_unverified": True, "license": "mit", **options}))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Real builder output (CaptainCook4D, Ego4D templates, StreamingBench) and the conftest examples for the
    kinds no cheap builder makes (dense_caption, open_question)."""
    base = tmp_path_factory.mktemp("built")
    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D)), base / "cc4d")
    write_outputs(ego4d.build(ego4d.Config(goalstep=GOALSTEP_VAL), BuildReport("ego4d")), base / "ego4d")
    builder = get_builder("streamingbench")
    run_builder(builder, builder.load().example_config(SHARED_DATA), base / "sb")
    other = base / "examples"
    other.mkdir()
    write_jsonl(other / "videos.jsonl", [dict(VALID["video"], source="streambench", uri="streambench/v1.mp4",
                                              anonymization={"status": "not_required", "report": None})])
    write_jsonl(other / "dense_caption.jsonl", [VALID["dense_caption"]])
    write_jsonl(other / "open_question.jsonl", [VALID["open_question"]])
    return {name: base / name for name in ("cc4d", "ego4d", "sb", "examples")}


@pytest.fixture(scope="module")
def releases(built, tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    return {name: release(folder, dist / name) for name, folder in built.items()}


@pytest.mark.slow
def test_every_field_of_every_kind_loads_with_the_records_type(built, releases):
    """Record vs ``load_dataset`` row, field by field, for every kind a release publishes."""
    seen = set()
    for name, folder in built.items():
        for kind in RELEASE_KINDS:
            path = folder / ("videos.jsonl" if kind == "video" else f"{kind}.jsonl")
            if not path.is_file():
                continue
            records = read_jsonl(path)
            videos = {v["video_id"]: v["split"] for v in read_jsonl(folder / "videos.jsonl")}
            for split in ("train", "validation", "test"):
                expected = [r for r in records if videos[r["video_id"]] == split]
                if not expected:
                    continue
                rows = datasets.load_dataset(str(releases[name]), CONFIG_NAMES[kind], split=split).to_list()
                assert len(rows) == len(expected), (name, kind, split)
                for record, row in zip(expected, rows):
                    same(record, row, f"{name}/{kind}/{split}/{record[ID_FIELDS[kind]]}")
            seen.add(kind)
        manifest = json.loads((releases[name] / "manifest.json").read_text())
        assert all(not layout["json"] for layout in manifest["layout"].values()), manifest["layout"]
    assert seen == set(RELEASE_KINDS)
    guidance = datasets.load_dataset(str(releases["cc4d"]), "guidance", split="test")[0]
    assert isinstance(guidance["activity_id"], int) and isinstance(guidance["plan"][0]["step_ids"][0], int)
    assert isinstance(guidance["provenance"], dict) and isinstance(guidance["verification"], dict)


def test_ovo_bench_records_load_with_their_types_through_the_parquet_path(tmp_path):
    """OVO-Bench (CC BY-NC-SA, not redistributable) never gets a release: the licence gate refuses it (see
    test_release.py). Its records go through the same typing, Parquet and real load_dataset ("parquet")."""
    builder = get_builder("ovo-bench")
    out, _ = run_builder(builder, builder.load().example_config(SHARED_DATA), tmp_path / "ovo")
    for kind in ("mc_question", "active_item"):
        records = read_jsonl(out.out / f"{kind}.jsonl")
        node, shape = typed(kind, records)
        path = tmp_path / f"{kind}.parquet"
        datasets.Dataset.from_list([encode(r, kind, shape) for r in records],
                                   features=datasets.Features(node.feature())).to_parquet(str(path))
        rows = datasets.load_dataset("parquet", data_files=str(path), split="train").to_list()
        for record, row in zip(records, rows, strict=True):
            same(record, row, f"ovo/{kind}/{record[ID_FIELDS[kind]]}")
            assert decode(row, kind, shape) == record


def test_mixed_types_fall_back_to_json_text_named_in_the_manifest(built, tmp_path):
    """activity_id 1 in one record and 'a1' in another: no single Arrow type, so JSON text, stated."""
    records = tmp_path / "rec"
    records.mkdir()
    for path in built["cc4d"].glob("*.jsonl"):
        rows = read_jsonl(path)
        if path.name == "guidance.jsonl":
            rows[0]["activity_id"] = "a1"
        write_jsonl(records / path.name, rows)
    dist = release(records, tmp_path / "d")
    manifest = json.loads((dist / "manifest.json").read_text())
    assert manifest["layout"]["guidance"]["json"] == ["activity_id"]
    assert "mix types across records and are stored as JSON text (guidance: `activity_id`)" in (
        dist / "README.md").read_text()
    _, keyed = read_release(dist)
    original = {r["video_id"]: r for r in read_jsonl(records / "guidance.jsonl")}
    assert all(rec == original[key.split("/", 1)[1]] for key, rec in keyed["guidance"].items())
    from streamcue.loaders import load

    assert {r.video_id: r.activity_id for split in load("guidance", dist).values() for r in split}[
        read_jsonl(records / "guidance.jsonl")[0]["video_id"]] == "a1"


def test_integer_times_load_back_as_integers(built, tmp_path):
    """issue 46: recorded guidance's integer times loaded back as floats, though every field keeps the record's
    type. A ``number`` whose values are all integers is an int64 column; integers mixed with fractions are JSON
    text (named in the manifest, as any mixed position): the loaded record is the record, type for type."""
    from streamcue.loaders import load

    records = tmp_path / "rec"
    records.mkdir()
    for path in built["cc4d"].glob("*.jsonl"):
        rows = read_jsonl(path)
        if path.name == "guidance.jsonl":
            rows = rows[:3]
            for row in rows:  # every action start an integer; one event time an integer among fractions
                for step in row["plan"]:
                    for action in step["actions"]:
                        action["start_s"] = int(action["start_s"])
            rows[0]["events"][0]["t_s"] = int(rows[0]["events"][0]["t_s"])
        write_jsonl(records / path.name, rows)
    dist = release(records, tmp_path / "d")
    assert json.loads((dist / "manifest.json").read_text())["layout"]["guidance"]["json"] == ["events[].t_s"]
    original = {r["video_id"]: r for r in read_jsonl(records / "guidance.jsonl")}
    loaded = {r.video_id: r.to_dict() for split in load("guidance", dist).values() for r in split}
    assert loaded.keys() == original.keys()
    for video_id, record in original.items():
        same(record, loaded[video_id], f"guidance/{video_id}")
    first = loaded[read_jsonl(records / "guidance.jsonl")[0]["video_id"]]
    assert type(first["events"][0]["t_s"]) is int and type(first["events"][1]["t_s"]) is float
    assert type(first["plan"][0]["actions"][0]["start_s"]) is int


def test_load_dataset_without_a_config_name_gives_the_default_config(releases):
    ds = datasets.load_dataset(str(releases["cc4d"]), split="test")
    assert ds.num_rows == 109 and "events" in ds.column_names
    card = (releases["cc4d"] / "README.md").read_text()
    assert "- config_name: guidance\n  default: true" in card


# --- the card ------------------------------------------------------------------------------------

SECTIONS = ["## Summary", "## Load it", "## Score a model", "## Configs and splits", "## Fields",
            "## Annotation process", "## Personal and sensitive information", "## Licence and citation",
            "## Limitations", "## Statistics", "## Changes"]


@pytest.mark.parametrize("name", ["cc4d", "ego4d", "sb", "examples"])
def test_the_card_has_every_section_and_its_yaml_validates(releases, name):
    text = (releases[name] / "README.md").read_text()
    for section in SECTIONS:
        if section == "## Score a model" and name == "examples":
            continue  # conftest examples on a streambench video: dense_caption has no streambench benchmark
        assert section in text, section
    header = yaml.safe_load(text.split("---\n")[1])
    data = hub.DatasetCardData(**header)
    assert data.license == "mit" and data.annotations_creators and data.source_datasets
    assert set(data.annotations_creators) <= {"found", "crowdsourced", "expert-generated", "machine-generated",
                                               "no-annotation", "other"}
    assert hub.DatasetCard(text).data.to_dict()["configs"] == header["configs"]
    assert sum(1 for c in header["configs"] if c.get("default")) == 1
    assert "An example instance" in text and "| field | type | required | description |" in text


def test_the_card_names_the_metric_and_its_config_version_and_every_citation(releases):
    text = (releases["cc4d"] / "README.md").read_text()
    assert "| LiveCook | `guidance` | `livecook` | `livecook.v2` |" in text
    assert "@inproceedings{peddi2024captaincook4d," in text and "@inproceedings{bhattacharyya2025livecook," in text
    assert "| `activity_id` | int64 | no |" in text
    assert "Inter-annotator agreement: not measured for this release" in text
    assert "extended|other-captaincook4d" in text.split("---\n")[1]


def test_the_card_reads_the_agreement_figures_pull_wrote(built, tmp_path):
    records = tmp_path / "rec"
    records.mkdir()
    for path in built["cc4d"].glob("*.jsonl"):
        write_jsonl(records / path.name, read_jsonl(path))
    (records / "agreement.json").write_text(json.dumps({"guidance": {
        "project": "cc4d", "kind": "guidance", "tolerance_s": 1.0, "required": 2, "records": 3,
        "figures": ["record_agreement", "time_within_tolerance"], "annotators": ["ann1@x.org", "ann2@x.org"],
        "reviewers": ["rev@x.org"], "decided_by": {"agreement": 2},
        "overall": {"records": 3, "record_agreement": 0.92, "time_within_tolerance": None},
        "pairs": [{"annotators": ["ann1@x.org", "ann2@x.org"], "records": 3, "record_agreement": 0.92,
                   "time_within_tolerance": None}]}}))
    text = (release(records, tmp_path / "d") / "README.md").read_text()
    assert "| all pairs | 3 | 0.9200 | - |" in text and "| annotator-1 & annotator-2 | 3 | 0.9200 | - |" in text
    assert "x.org" not in text


# --- --only-verified, diff, changelog -------------------------------------------------------------

def verified_copy(src, dst, ids, edit=None):
    dst.mkdir(parents=True)
    for path in src.glob("*.jsonl"):
        rows = read_jsonl(path)
        if path.name == "guidance.jsonl":
            if edit:
                edit(rows)
            for row in rows:
                if row["video_id"] in ids:  # a verification that holds: of exactly this content, by two annotators
                    row["verification"] = signed(dict(row, verification={
                        "status": "verified", "annotators": ["ann1", "ann2"], "checks": 2}))["verification"]
        write_jsonl(dst / path.name, rows)
    return dst


@pytest.fixture(scope="module")
def verified_releases(built, tmp_path_factory):
    base = tmp_path_factory.mktemp("verified")
    videos = read_jsonl(built["cc4d"] / "videos.jsonl")
    test_ids = [v["video_id"] for v in videos if v["split"] == "test"][:2]
    train_id = next(v["video_id"] for v in videos if v["split"] == "train")
    v1 = verified_copy(built["cc4d"], base / "rec1", {*test_ids, train_id})
    build_release(ReleaseConfig(records=v1, version="1.0.0", out=base / "v1", only_verified=True, license="mit"))

    def move(rows):
        row = next(r for r in rows if r["video_id"] == test_ids[0])
        row["events"][3]["text"] = "Now crack the egg."

    extra = [v["video_id"] for v in videos if v["split"] == "test"][2]
    v2 = verified_copy(built["cc4d"], base / "rec2", {*test_ids, train_id, extra}, move)
    build_release(ReleaseConfig(records=v2, version="1.1.0", out=base / "v2", only_verified=True, license="mit",
                                previous=base / "v1"))
    return base, test_ids, train_id, extra


def test_only_verified_publishes_verified_records_and_their_videos(verified_releases):
    base, test_ids, train_id, _ = verified_releases
    manifest = json.loads((base / "v1" / "manifest.json").read_text())
    assert {s: i["rows"] for s, i in manifest["configs"]["guidance"].items()} == {"train": 1, "test": 2}
    assert {s: i["rows"] for s, i in manifest["configs"]["videos"].items()} == {"train": 1, "test": 2}
    assert manifest["verified"]["guidance"]["test"] == {"verified": 2, "records": 109}
    assert manifest["unverified_left_out"] == {"guidance": 384 - 3}
    ds = datasets.load_dataset(str(base / "v1"), split="test")  # the default config, no name
    assert sorted(ds["video_id"]) == sorted(test_ids)
    card = (base / "v1" / "README.md").read_text()
    assert "**Released with `--only-verified`:**" in card
    assert "| guidance | test | 2 | 109 | 1.8% |" in card and "| guidance | validation | 0 | 62 | 0.0% |" in card
    assert "expert-generated" in card.split("---\n")[1]


def test_diff_names_the_changed_field_and_the_changelog_the_newly_verified(verified_releases):
    base, test_ids, _, extra = verified_releases
    changes = diff(read_release(base / "v1")[1], read_release(base / "v2")[1])
    old = _text(base, test_ids[0])
    assert changes["guidance"].fields[f"test/{test_ids[0]}"] == [
        f"events[3].text {old!r} -> 'Now crack the egg.'" if len(repr(old)) <= 40 else
        f"events[3].text {repr(old)[:37]}... -> 'Now crack the egg.'"]
    assert changes["guidance"].newly_verified == [f"test/{extra}"]
    changelog = (base / "v2" / "CHANGELOG.md").read_text()
    assert f"  - newly verified: `test/{extra}`" in changelog
    assert f"  - modified: `test/{test_ids[0]}`: events[3].text" in changelog
    done = subprocess.run([sys.executable, "-m", "streamcue", "release", "diff", str(base / "v1"), str(base / "v2")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"modified: test/{test_ids[0]}: events[3].text" in done.stdout and "-> 'Now crack the egg.'" in done.stdout
    assert "videos" in done.stdout and "video " not in done.stdout.replace("video_id", "")


def _text(base, video_id):
    row = next(r for r in read_jsonl(base / "rec1" / "guidance.jsonl") if r["video_id"] == video_id)
    return row["events"][3]["text"]


def test_only_verified_with_nothing_verified_is_refused(built, tmp_path):
    with pytest.raises(InputError, match="--only-verified: no verified record to release"):
        build_release(ReleaseConfig(records=built["cc4d"], version="1.0.0", out=tmp_path / "d", only_verified=True,
                                    license="mit"))
    with pytest.raises(ConfigError, match="contradict"):
        build_release(ReleaseConfig(records=built["cc4d"], version="1.0.0", out=tmp_path / "d", only_verified=True,
                                    allow_unverified=True, license="mit"))
    assert not (tmp_path / "d").exists()


# --- issue 25: paths anywhere in a string, report paths, licences, endpoints ------------------------

def cli(*args):
    """The command in this process: its refusals come before any Hub is asked (no Hub client's environment)."""
    return cli_run(*args)


def test_a_path_after_a_brace_in_the_citation_is_refused(built, tmp_path):
    bib = tmp_path / "cite.bib"
    bib.write_text("@misc{x,\n  title = {X},\n  note={/home/bob/data/cc4d}\n}\n")
    done = cli("release", "build", "--records", built["examples"], "--version", "1.0.0", "--out", tmp_path / "d",
               "--license", "mit", "--citation", bib, "--allow-unverified")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "README.md" in done.stderr and "(/home/...)" in done.stderr and "bob" not in done.stderr
    assert not (tmp_path / "d").exists()


def test_a_path_after_a_colon_in_a_record_text_is_refused(built, tmp_path):
    records = tmp_path / "rec"
    records.mkdir()
    write_jsonl(records / "videos.jsonl", read_jsonl(built["examples"] / "videos.jsonl"))
    write_jsonl(records / "open_question.jsonl", [dict(VALID["open_question"], answer="see:/home/bob/x")])
    with pytest.raises(InputError, match=r"data/open_question/test-.*field answer: .*\(/home/\.\.\.\)"):
        release(records, tmp_path / "d")
    assert not (tmp_path / "d").exists()


def test_a_published_report_path_with_dotdot_is_refused(built, tmp_path):
    records = tmp_path / "rec"
    records.mkdir()
    video = dict(read_jsonl(built["examples"] / "videos.jsonl")[0],
                 anonymization={"status": "not_required", "report": "../elsewhere/report.json"})
    write_jsonl(records / "videos.jsonl", [video])
    write_jsonl(records / "open_question.jsonl", [VALID["open_question"]])
    with pytest.raises(InputError, match=r"videos.jsonl:1, record video_id=v1: \$.anonymization.report: an "
                       r"anonymization report path that leaves the records folder"):
        release(records, tmp_path / "d")


def test_a_recorded_report_path_with_dotdot_is_published_inside_the_release(tmp_path):
    """The recorded builder writes ``../blurred/x.anonymization.json``: the release publishes the report itself."""
    from test_release import recorded_set

    rec, root = recorded_set(tmp_path)
    (rec.parent / "blurred").mkdir()
    for name in ("v1.json", "v1.contact.jpg"):
        (rec / "reports" / name).rename(rec.parent / "blurred" / name)
    write_jsonl(rec / "videos.jsonl", [dict(VALID["video"], anonymization={"status": "passed",
                                                                           "report": "../blurred/v1.json"})])
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", video_root=root))
    row = datasets.load_dataset(str(tmp_path / "d"), "videos", split="test")[0]
    assert row["anonymization"] == {"status": "passed", "report": "videos/recorded/v1.anonymization.json"}
    assert (tmp_path / "d" / "videos/recorded/v1.anonymization.json").is_file()


@pytest.mark.parametrize("licence, message", [
    ("not-a-licence", "is not a Hub licence id"),
    ("MIT", "lower case; use --license mit"),
    ("other", "a release names its licence"),
])
def test_a_licence_that_is_not_a_hub_licence_id_is_refused(built, tmp_path, licence, message):
    done = cli("release", "build", "--records", built["examples"], "--version", "1.0.0", "--out", tmp_path / "d",
               "--license", licence)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "d").exists()


def test_a_source_licence_that_forbids_the_release_licence_is_refused(tmp_path):
    """CC BY-NC-SA data under Apache-2.0 (the registry's licence, with the gate's rule)."""
    from dataclasses import replace

    from streamcue.registry import SOURCES
    from streamcue.release.gates import licence_problem

    cc = replace(SOURCES["ovo-bench"], redistributable=True)
    assert "does not allow a release under apache-2.0" in licence_problem(cc, "apache-2.0")


@pytest.mark.parametrize("endpoint", ["ftp://example.org", "example.org", "http://"])
def test_push_to_an_endpoint_that_is_not_http_is_a_bad_option(releases, endpoint):
    done = cli("release", "push", "--dist", releases["examples"], "--repo", "ORG/NAME", "--endpoint", endpoint)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--endpoint" in done.stderr, done.stderr


# --- the publish example of docs/release.md runs as written --------------------------------------------

@pytest.mark.slow
def test_the_publish_example_in_the_docs_runs_as_written(tmp_path):
    text = (REPO / "docs" / "release.md").read_text()
    block = re.search(r"<!-- publish-example: run by tests/release/test_release_hub.py -->\n```bash\n(.*?)```", text,
                      re.S)
    assert block, "docs/release.md has no publish example"
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert (work / "hub-mirror" / "datasets" / "ORG" / "NAME" / ".git").is_dir()
    assert "guidance" in done.stdout and "num_rows: 109" in done.stdout


def test_the_local_hub_recipe_in_the_docs_runs_and_a_published_video_decodes(tmp_path):
    """docs/release.md's local-Hub recipe, as written, on a release of a recorded video: push to a git mirror,
    serve it with olah, load_dataset(ORG/NAME, revision=v1.0.0) of the default config and of video_files; the
    video it wrote decodes (one frame)."""
    from hub_server import free_port
    from test_release import assert_file_decodes, recorded_set

    text = (REPO / "docs" / "release.md").read_text()
    block = re.search(r"<!-- local-hub-example: run by tests/release/test_release_hub.py -->\n```bash\n(.*?)```\n",
                      text,
                      re.S)
    assert block, "docs/release.md has no local-Hub recipe"
    rec, root = recorded_set(tmp_path)
    work = tmp_path / "work"
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=work / "dist" / "v1.0.0", video_root=root,
                                repo="ORG/NAME"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PORT": str(free_port()), "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "0",
           "HF_DATASETS_OFFLINE": "0"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "num_rows: 1" in done.stdout and "'video'" in done.stdout
    assert (work / "first.mp4").read_bytes() == (root / "recorded" / "v1.mp4").read_bytes()
    assert_file_decodes(work / "first.mp4")
