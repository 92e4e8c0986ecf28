"""Licences per record: the release gate reads each recorded video's own licence and each record's benchmark, not
only the registry's licence of the source, and every release ships the notices its licences require (NOTICE.md).

Each case of the hostile-user probe (issue 35, item 3) is a test here: a build refused with one line naming file,
record and field, and the MIT notice present in a StreamingBench release.
"""

from __future__ import annotations


import pytest

from conftest import SHARED_DATA, VALID, cli_run

pytest.importorskip("datasets")

from test_release import _bench_records, recorded_set  # noqa: E402

from streamcue.anonymize.report import sha256_file  # noqa: E402
from streamcue.errors import InputError  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.registry import SOURCES  # noqa: E402
from streamcue.release.gates import video_licence_id, video_licence_problem  # noqa: E402
from streamcue.release.notice import TEXTS, licence_url, notice  # noqa: E402


def _with_video_licence(tmp_path, text):
    """The recorded release of tests/release/test_release.py, its video under ``text``."""
    rec, root = recorded_set(tmp_path)
    write_jsonl(rec / "videos.jsonl", [dict(VALID["video"], license=text)])
    return rec, root


def _refusal(tmp_path, records, licence, **kw):
    with pytest.raises(InputError) as err:
        build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d", license=licence, **kw))
    assert not (tmp_path / "d").exists()
    message = str(err.value)
    assert "\n" not in message
    return message


# --- a recorded video's own licence ------------------------------------------------------------------------

@pytest.mark.parametrize("text, licence, expected", [
    ("All rights reserved", "mit", "video v1 (All rights reserved): its owner grants no licence"),
    ("All Rights Reserved.", "cc-by-nc-sa-4.0", "its owner grants no licence"),
    ("CC BY-NC 4.0", "mit", "video v1 (CC BY-NC 4.0) does not allow a release under mit: release it under "
                            "--license cc-by-nc-4.0, or leave it out"),
    ("CC BY-SA 4.0", "mit", "video v1 (CC BY-SA 4.0) does not allow a release under mit: release it under "
                            "--license cc-by-sa-4.0, or leave it out"),
    ("CC-BY-SA-4.0", "cc-by-nc-sa-4.0", "release it under --license cc-by-sa-4.0"),
    ("CC BY-NC-SA 4.0", "cc-by-nc-4.0", "release it under --license cc-by-nc-sa-4.0"),
    ("Creative Commons, ask me", "apache-2.0", "is not a licence the gate can check: state it in the video's record "
                                               "as an SPDX or Hub licence id such as CC-BY-4.0"),
])
def test_a_recorded_video_whose_licence_does_not_allow_the_release_is_refused(tmp_path, text, licence, expected):
    """The registry's licence of ``recorded`` (CC-BY-4.0) is only a default: each video's own licence decides."""
    rec, root = _with_video_licence(tmp_path, text)
    message = _refusal(tmp_path, rec, licence, video_root=root)
    assert expected in message
    assert "videos.jsonl:1, record video_id=v1, field $.license" in message


@pytest.mark.parametrize("text, licence", [
    ("CC BY-NC 4.0", "cc-by-nc-4.0"), ("CC BY-NC 4.0", "cc-by-nc-sa-4.0"), ("CC BY-SA 4.0", "cc-by-sa-4.0"),
    ("CC BY 4.0", "mit"), ("cc0-1.0", "apache-2.0"), ("MIT License", "cc-by-nc-4.0"),
])
def test_a_recorded_video_whose_licence_allows_the_release_is_released(tmp_path, text, licence):
    rec, root = _with_video_licence(tmp_path, text)
    manifest = build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", license=licence,
                                           video_root=root))
    assert manifest["license"] == licence and manifest["configs"]["dense_caption"]["test"]["rows"] == 1


def test_the_video_licence_refusal_is_one_line_from_the_cli(tmp_path):
    rec, root = _with_video_licence(tmp_path, "All rights reserved")
    done = cli_run("release", "build", "--records", rec, "--version", "1.0.0", "--out", tmp_path / "d", "--license",
                   "mit", "--video-root", root)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "videos.jsonl:1, record video_id=v1, field $.license" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("text, expected", [
    ("CC BY 4.0", "cc-by-4.0"), ("CC BY-NC 4.0", "cc-by-nc-4.0"), ("cc_by_nc_sa_4.0", "cc-by-nc-sa-4.0"),
    ("CC-BY-SA-4.0", "cc-by-sa-4.0"), ("MIT License", "mit"), ("Apache 2.0", "apache-2.0"),
    ("BSD-3-Clause", "bsd-3-clause"), ("CC0-1.0", "cc0-1.0"),
    ("All rights reserved", None), ("proprietary", None), ("CC BY", None), ("", None),
])
def test_how_a_video_licence_is_read(text, expected):
    assert video_licence_id(text) == expected


def test_a_video_licence_is_judged_like_a_source_licence():
    video = dict(VALID["video"], license="CC BY-NC 4.0")
    assert video_licence_problem(video, "cc-by-nc-4.0") is None
    assert video_licence_problem(video, "cc-by-nc-nd-4.0") is None  # NonCommercial under another NC licence
    assert "release it under --license cc-by-nc-4.0" in video_licence_problem(video, "cc-by-4.0")
    assert video_licence_problem(dict(video, license="CC BY 4.0"), "mit") is None


# --- a record's benchmark against its video's source ---------------------------------------------------------

def test_ovo_bench_records_on_videos_relabelled_streamingbench_are_refused(tmp_path):
    """The probe: OVO-Bench's records (CC BY-NC-SA, never released) with ``source: streamingbench`` in videos.jsonl
    went out under Apache-2.0 while each record still said ``benchmark: ovo-bench``."""
    records = _bench_records(tmp_path, "ovo-bench")
    videos = read_jsonl(records / "videos.jsonl")
    write_jsonl(records / "videos.jsonl", [dict(v, source="streamingbench") for v in videos])
    first = read_jsonl(records / "mc_question.jsonl")[0]
    message = _refusal(tmp_path, records, "apache-2.0", allow_unverified=True)
    assert message.startswith(f"{records / 'mc_question.jsonl'}:1, record question_id={first['question_id']}, "
                              "field $.benchmark: benchmark ovo-bench on video "), message
    assert "whose source is streamingbench (videos.jsonl:" in message
    assert "ovo-bench records come from ovo-bench" in message


def test_a_benchmark_record_on_a_video_of_its_own_source_passes(tmp_path):
    records = _bench_records(tmp_path, "streamingbench")
    build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "ok", allow_unverified=True))
    mc = read_jsonl(records / "mc_question.jsonl")
    write_jsonl(records / "mc_question.jsonl", [dict(mc[0], benchmark="ovo-bench"), *mc[1:]])
    message = _refusal(tmp_path, records, "apache-2.0", allow_unverified=True)
    assert f"mc_question.jsonl:1, record question_id={mc[0]['question_id']}, field $.benchmark" in message


# --- the notices each licence requires ------------------------------------------------------------------------

def test_a_streamingbench_release_ships_its_mit_notice(tmp_path):
    """The probe: a StreamingBench release shipped no MIT notice, although MIT keeps its notice."""
    records = _bench_records(tmp_path, "streamingbench")
    manifest = build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp_path / "d",
                                           allow_unverified=True))
    text = (tmp_path / "d" / "NOTICE.md").read_text()
    official = (SHARED_DATA / "streamingbench" / "LICENSE").read_text()
    assert "## StreamingBench (`streamingbench`): MIT" in text and "https://github.com/THUNLP-MT/StreamingBench" in text
    assert "```text\n" + official.removeprefix("MIT License\n\n") in text  # copyright line and licence, verbatim
    assert manifest["files"]["NOTICE.md"] == sha256_file(tmp_path / "d" / "NOTICE.md")
    assert "`NOTICE.md`" in (tmp_path / "d" / "README.md").read_text()


@pytest.mark.parametrize("source, licence_file", [
    ("captaincook4d", "captaincook4d/LICENSE"), ("ego4d", "ego4d_goalstep/LICENSE"),
    ("streamingbench", "streamingbench/LICENSE"), ("streambench", "streambench/LICENSE_OASIS_MIT"),
])
def test_every_notice_of_a_source_is_its_licence_file_verbatim(source, licence_file):
    """Each MIT source's notice is its licence file as ../shared holds it (copyright line and text)."""
    official = (SHARED_DATA / licence_file).read_text().removeprefix("MIT License\n\n")
    copyright_line, text = official.split("\n\n", 1)
    assert copyright_line in SOURCES[source].copyright and TEXTS["mit"] == text
    assert "```text\n" + "\n".join(SOURCES[source].copyright) + "\n\n" + text in notice("t", "mit", [
        dict(VALID["video"], source=source)])


def test_every_redistributable_source_whose_licence_keeps_a_notice_has_one():
    for source in SOURCES.values():
        if source.redistributable and source.licence.lower() in TEXTS:
            assert source.copyright, f"{source.name}: its {source.licence} notice needs its copyright lines"


def test_bsd_texts_match_a_bsd_3_clause_licence_file():
    """BSD-3-Clause as click ships it (words compared: its file wraps and indents differently); BSD-2-Clause is
    the same less the third condition."""
    import importlib.metadata as md

    shipped = next(f for f in md.distribution("click").files if f.name.startswith("LICENSE"))
    words = " ".join(shipped.read_text().split()).split(" ", 3)[3]  # after "Copyright 2014 Pallets"
    assert " ".join(TEXTS["bsd-3-clause"].split()) == words
    third = next(p for p in TEXTS["bsd-3-clause"].split("\n\n") if p.startswith("3. "))
    assert TEXTS["bsd-3-clause"].replace("\n\n" + third, "") == TEXTS["bsd-2-clause"]


def test_recorded_videos_are_listed_with_their_own_licences(tmp_path):
    rec, root = _with_video_licence(tmp_path, "CC BY-NC 4.0")
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d", license="cc-by-nc-4.0",
                                video_root=root, title="Kitchen clips"))
    text = (tmp_path / "d" / "NOTICE.md").read_text()
    assert "## Videos recorded for Kitchen clips: each under its own licence" in text
    assert "- `v1`: CC BY-NC 4.0, https://creativecommons.org/licenses/by-nc/4.0/" in text
    assert "credit them as \"Kitchen clips, video <id>\"" in text


def test_notice_lists_every_video_licence_and_each_text_once():
    videos = [dict(VALID["video"], video_id=f"v{i}", license=text)
              for i, text in enumerate(["MIT", "CC BY 4.0", "MIT License", "BSD-3-Clause"])]
    text = notice("T", "mit", videos)
    assert text.count("Permission is hereby granted") == 1 and text.count("Neither the name") == 1
    assert "- `v1`: CC BY 4.0, https://creativecommons.org/licenses/by/4.0/" in text
    assert "- `v2`: MIT License, https://spdx.org/licenses/MIT.html" in text


@pytest.mark.parametrize("licence, url", [
    ("CC-BY-NC-SA-4.0", "https://creativecommons.org/licenses/by-nc-sa/4.0/"),
    ("cc0-1.0", "https://creativecommons.org/publicdomain/zero/1.0/"),
    ("MIT", "https://spdx.org/licenses/MIT.html"), ("bsd-3-clause", "https://spdx.org/licenses/BSD-3-Clause.html"),
    ("odbl", "https://huggingface.co/docs/hub/repositories-licenses"),
])
def test_licence_urls(licence, url):
    assert licence_url(licence) == url
