"""The evidence pre-check (plan, observe, reflect) on real GoalStep records, real video files and real HTTP."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

pytest.importorskip("imageio_ffmpeg")

from streamcue.annotation.evidence import EvidenceConfig, verify_records  # noqa: E402
from streamcue.dataset_builders import ego4d  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.errors import ConfigError  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402
from streamcue.llm import LLMClient, LLMSettings  # noqa: E402
from streamcue.loaders import video_path  # noqa: E402
from streamcue.loaders.frames import SpanFrames  # noqa: E402
from streamcue.schemas import validate, validate_file  # noqa: E402
from streamcue.testing.stub_llm import StubLLMServer  # noqa: E402

from conftest import GOALSTEP_VAL, cli_run  # noqa: E402
from evidence_responder import scripted_model, shifted_records, write_test_videos  # noqa: E402

pytestmark = [pytest.mark.llm_server, pytest.mark.video]

#: GoalStep val videos up to this long (9 videos, 38 s to 5 min): small generated files stand in for them.
MAX_DURATION_S = 300


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Template records of real GoalStep videos, and a generated video file for each at its uri."""
    out = tmp_path_factory.mktemp("ego")
    full = tmp_path_factory.mktemp("ego-all")
    write_outputs(ego4d.build(ego4d.Config(goalstep=GOALSTEP_VAL)), full)
    videos = {v["video_id"]: v for v in read_jsonl(full / "videos.jsonl") if v["duration_s"] <= MAX_DURATION_S}
    records = [r for r in read_jsonl(full / "interval_qa.jsonl") if r["video_id"] in videos]
    write_jsonl(out / "videos.jsonl", videos.values())
    write_jsonl(out / "interval_qa.jsonl", records)
    root = tmp_path_factory.mktemp("videos")
    write_test_videos(videos.values(), root)
    return out, root, videos, records


@pytest.fixture(scope="module")
def checked_all(built, tmp_path_factory):
    """Every record checked once by the model that knows the truth, with a cache of its own (a rerun with it makes
    no call): the checked records, the report, the client, the model and the cache folder."""
    cache = tmp_path_factory.mktemp("evidence-cache")
    model = model_for(built, built[3])
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STREAMCUE_CACHE_DIR", str(cache))
        checked, report, client = _run(built[3], built, model)
    return SimpleNamespace(checked=checked, report=report, client=client, model=model, cache=cache)


def model_for(built, records, what=None):
    return scripted_model(built[2], records, what)


def _run(records, built, model, config=EvidenceConfig(), port=0, **kw):
    _, root, videos, _ = built
    frames = SpanFrames({vid: video_path(v, root) for vid, v in videos.items()}, side=64)
    with StubLLMServer(model, port=port) as server:
        client = LLMClient(LLMSettings(base_url=server.base_url, model="scripted-vlm"), **kw)
        checked, report = verify_records(records, {vid: v["duration_s"] for vid, v in videos.items()}, frames,
                                         client, config)
    return checked, report, client


def _long_nar(records):
    return next(r for r in records
                if r["task_type"] == "NAR" and r["answers"][0]["end_s"] - r["answers"][0]["start_s"] > 20)


def test_a_confirmed_record_is_supported_in_one_round(built):
    record = _long_nar(built[3])
    model = model_for(built, [record])
    [checked], report, _ = _run([record], built, model)
    check = checked["provenance"].pop("evidence_check")
    assert checked == record  # the record itself is unchanged
    assert (check["verdict"], check["rounds"], check["calls"]) == ("supported", 1, 3)
    assert check["confidence"] == 0.9 and check["model"] == "scripted-vlm"
    assert check["evidence"] and all(record["answers"][0]["start_s"] <= e["start_s"] for e in check["evidence"])
    assert set(check["prompts"]) == {"plan", "observe", "reflect"}
    assert model.calls == {"evidence_plan": 1, "evidence_observe": 1, "evidence_reflect": 1}
    assert report["verdicts"] == {"supported": 1, "unsupported": 0, "unsure": 0}


def test_a_contradicted_record_is_unsupported(built):
    record = _long_nar(built[3])
    model = model_for(built, [record], what="the person washes the dishes")
    [checked], _, _ = _run([record], built, model)
    check = checked["provenance"]["evidence_check"]
    assert (check["verdict"], check["rounds"], check["calls"]) == ("unsupported", 1, 3)


def test_evidence_found_only_in_round_two_takes_two_rounds(built):
    record = copy.deepcopy(_long_nar(built[3]))
    start = record["answers"][0]["start_s"]
    record["answers"] = [{**record["answers"][0], "end_s": start + 3.0}]  # 3 s: one frame at 0.25 fps at most
    model = model_for(built, [record])
    [checked], _, _ = _run([record], built, model)
    check = checked["provenance"]["evidence_check"]
    assert (check["verdict"], check["rounds"], check["calls"]) == ("supported", 2, 6)
    assert model.calls == {"evidence_plan": 2, "evidence_observe": 2, "evidence_reflect": 2}


def test_no_evidence_within_the_round_limit_is_unsure(built):
    record = _long_nar(built[3])
    model = model_for(built, [])  # the model never recognises anything
    [checked], _, _ = _run([record], built, model, EvidenceConfig(max_rounds=2))
    check = checked["provenance"]["evidence_check"]
    assert (check["verdict"], check["rounds"], check["calls"], check["evidence"]) == ("unsure", 2, 6, [])


@pytest.mark.slow
def test_calls_are_three_per_round_and_a_rerun_makes_none(built, checked_all, monkeypatch):
    records = built[3]
    first, report, client, model = checked_all.checked, checked_all.report, checked_all.client, checked_all.model
    rounds = sum(r["provenance"]["evidence_check"]["rounds"] for r in first)
    # Identical requests (the same question, claims and evidence on two videos) are answered once.
    assert client.usage.calls == sum(model.calls.values())
    assert client.usage.calls + client.usage.cache_hits == 3 * rounds
    assert all(r["provenance"]["evidence_check"]["calls"] == 3 * r["provenance"]["evidence_check"]["rounds"]
               for r in first)
    assert report["calls_per_record"] == 3 * rounds / len(records)
    for record in first:
        validate(record, "interval_qa")
    again = model_for(built, records)
    port = urlsplit(client.settings.base_url).port  # the same endpoint and cache: the cache key holds the endpoint
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(checked_all.cache))
    second, _, client = _run(records, built, again, port=port)
    assert client.usage.calls == 0 and sum(again.calls.values()) == 0
    assert client.usage.cache_hits == 3 * rounds
    assert second == first


@pytest.mark.slow
def test_shifted_intervals_are_flagged(built, checked_all):
    _, _, videos, records = built
    durations = {vid: v["duration_s"] for vid, v in videos.items()}
    shifted = shifted_records(records, durations)
    assert len(shifted) >= 15
    model = model_for(built, records)
    checked, report, _ = _run(shifted, built, model)
    # the same records unshifted, as the module's check of every record found them (each record is checked alone)
    originals = [r for r in checked_all.checked if r["qa_id"] in {s["qa_id"] for s in shifted}]
    assert len(originals) == len(shifted)
    flagged = sum(r["provenance"]["evidence_check"]["verdict"] != "supported" for r in checked) / len(checked)
    supported = sum(r["provenance"]["evidence_check"]["verdict"] == "supported" for r in originals) / len(originals)
    print(f"shifted records flagged: {flagged:.2f} of {len(checked)}; unshifted supported: {supported:.2f}")
    # A shift can land on another occurrence of the same step (TU lists every step of a goal): then the
    # claim is true, and "supported" is right.
    assert flagged >= 0.9 and supported == 1.0
    assert report["verdicts"]["unsupported"] >= 1


def test_config_is_checked():
    with pytest.raises(ConfigError):
        EvidenceConfig(confidence=1.5)
    with pytest.raises(ConfigError):
        EvidenceConfig(max_rounds=0)


def _cli(*args):
    return cli_run("verify-evidence", *args)


@pytest.mark.slow
def test_cli_writes_checked_records_and_refuses_bad_input(built, tmp_path):
    out_dir, root, _, records = built
    model = model_for(built, records)
    with StubLLMServer(model) as server:
        common = ["--video-root", root, "--llm-base-url", server.base_url, "--llm-model", "scripted-vlm"]
        done = _cli("--records", out_dir / "interval_qa.jsonl", "--out", tmp_path / "checked", *common)
        assert done.returncode == 0, done.stderr
        assert validate_file(tmp_path / "checked" / "interval_qa.jsonl", "interval_qa").records == len(records)
        report = json.loads((tmp_path / "checked" / "evidence_report.json").read_text())
        assert report["verdicts"]["supported"] == len(records) and str(tmp_path) not in json.dumps(report)
        same = _cli("--records", out_dir / "interval_qa.jsonl", "--out", out_dir, *common)
        assert same.returncode == 2 and "refusing to overwrite an input" in same.stderr
        assert len(same.stderr.strip().splitlines()) == 1
        write_jsonl(tmp_path / "one.jsonl", records[:1])
        missing = _cli("--records", tmp_path / "one.jsonl", "--videos", out_dir / "videos.jsonl", "--out",
                       tmp_path / "o2", "--video-root", tmp_path, "--llm-base-url", server.base_url,
                       "--llm-model", "m")
        assert missing.returncode == 2 and "not found under --video-root" in missing.stderr
        assert len(missing.stderr.strip().splitlines()) == 1 and not (tmp_path / "o2").exists()


def test_agreement_of_annotators_with_the_verdicts(built, tmp_path):
    records = built[3][:4]
    checked = []
    for record, verdict in zip(records, ("supported", "supported", "unsupported", "unsure")):
        r = copy.deepcopy(record)
        r["provenance"]["evidence_check"] = {"verdict": verdict, "confidence": 0.9, "evidence": [], "rounds": 1,
                                             "calls": 3, "model": "m", "prompts": {}}
        checked.append(r)
    verified = copy.deepcopy(records)
    verified[0]["verification"] = {"status": "verified", "annotators": ["1", "2"], "checks": 2}   # confirmed: agrees
    verified[1]["verification"] = {"status": "verified", "annotators": ["1", "2"], "checks": 2}   # corrected: disagrees
    verified[1]["answers"][0]["end_s"] += 5
    verified[2]["verification"] = {"status": "rejected", "annotators": ["1", "2"], "checks": 2}   # rejected: agrees
    write_jsonl(tmp_path / "checked.jsonl", checked)
    write_jsonl(tmp_path / "verified.jsonl", verified)
    done = cli_run("stats", "evidence", "--checked", tmp_path / "checked.jsonl", "--verified",
                   tmp_path / "verified.jsonl", "--output", tmp_path / "a.json")
    assert done.returncode == 0, done.stderr
    figures = json.loads((tmp_path / "a.json").read_text())
    assert figures["by_verdict"]["supported"] == {"confirmed": 1, "corrected": 1, "rejected": 0, "pending": 0}
    assert figures["by_verdict"]["unsure"]["pending"] == 1
    assert figures["decided"] == 3 and figures["agreement"] == pytest.approx(2 / 3)
