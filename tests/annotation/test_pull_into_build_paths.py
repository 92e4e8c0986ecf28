"""``annotate pull --build B --out O`` writes O anywhere: a video's anonymization report named relative to B still
names the same report from O (a newcomer's pull into a folder one level deeper lost every report)."""

import json

from conftest import VALID

from streamcue.annotation.merge import merge_into_build
from streamcue.annotation.roundtrip import PullResult
from streamcue.io import read_jsonl, write_jsonl


def test_a_relative_report_path_names_the_same_report_from_a_folder_at_another_depth(tmp_path):
    reports = tmp_path / "anonymized"
    reports.mkdir()
    (reports / "v1.anonymization.json").write_text("{}")
    build = tmp_path / "out" / "recorded"
    build.mkdir(parents=True)
    relative = dict(VALID["video"], anonymization={"status": "passed",
                                                   "report": "../../anonymized/v1.anonymization.json"})
    absolute = dict(VALID["video"], video_id="v2", anonymization={
        "status": "passed", "report": str(reports / "v1.anonymization.json")})
    write_jsonl(build / "videos.jsonl", [relative, absolute])
    write_jsonl(build / "dense_caption.jsonl", [dict(VALID["dense_caption"], verification={"status": "unverified"})])
    before = (build / "videos.jsonl").read_bytes()

    for out in (tmp_path / "out" / "deep" / "recorded-v2", tmp_path / "out" / "recorded-v3"):
        merge_into_build(build, out, PullResult(records=0, kind="dense_caption"), project="p", rule={})
        rows = read_jsonl(out / "videos.jsonl")
        named = [out / row["anonymization"]["report"] for row in rows]
        assert all(path.resolve() == (reports / "v1.anonymization.json").resolve() for path in named), named
        assert rows[1] == absolute  # an absolute path is the same from anywhere
        assert json.loads((out / "videos.jsonl").read_text().splitlines()[1]) == absolute
    assert (build / "videos.jsonl").read_bytes() == before  # the build is never written through its hard link
