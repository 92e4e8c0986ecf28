"""PhoStream: the builder's counts, the metric and its judge against the official scorer (run as a subprocess) on
crafted answers and on a `streamcue run`'s, the export,
the schedules."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamcue.io import read_jsonl, write_json, write_jsonl
from streamcue.loaders.protocols.phostream import PROTOCOL, SCHEDULES, call_seconds, question_text
from streamcue.metrics.bench_readers import seal_results
from streamcue.metrics.configs import load_config
from streamcue.metrics.phostream import CATEGORY_ROWS, clock, run
from phostream_runs import SHORT_S, clock_seconds, leaking_runs, needs_data, now_of, run_short
from conftest import SHARED_DATA

DATA = SHARED_DATA / "phostream"
OFFICIAL = DATA / "official"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The page's build command, run."""
    out = tmp_path_factory.mktemp("phostream") / "built"
    subprocess.run([sys.executable, "-m", "streamcue", "build", "phostream", "--annotations",
                    str(DATA / "phostream_annotations.json"), "--out", str(out)], check=True, capture_output=True,
                   timeout=300)
    return json.loads((out / "build_report.json").read_text()), out


@needs_data
def test_the_build_has_the_sources_videos_and_questions(built):
    report, _ = built
    assert report["counts"] == {"active_item": 5572, "video": 578}
    details = report["details"]
    assert details["videos"] == 578
    assert details["by_time_type"] == {"instant": 1647, "backward": 1123, "forward": 2802}
    assert details["by_capability"] == {
        "UI & Digital Interface Navigation": 1235, "Action & Activity Recognition": 1032,
        "Audio-Visual Association": 968, "Fine-grained Visual Perception": 861, "Physical & Causal Reasoning": 360,
        "Visual Text Understanding (OCR)": 352, "Scene & Context Understanding": 253,
        "Temporal & Procedural Understanding": 225, "Social & Emotional Intelligence": 222,
        "Entity & Knowledge Retrieval": 64}


def _crafted(record: dict, k: int) -> list[dict]:
    """Responses that reach every branch of the official rule, chosen by the question's position ``k``."""
    t_q, t_a = record["query_time_s"], record["target"]["t_s"]
    cases = [
        [{"t_s": t_q, "text": "Got it, I'll let you know at that moment."}, {"t_s": t_a + 0.7, "text": "now"}],
        [{"t_s": t_q, "text": "an answer at question time"}],                     # forward: the acknowledgement
        [{"t_s": max(t_q, t_a - 1), "text": "early"}, {"t_s": t_a + 1, "text": "second"}],
        [{"t_s": t_a, "text": "Silent"}, {"t_s": t_a, "text": " OK "}],            # placeholders only
        [{"t_s": t_a + 2, "text": "at the window's end"}],                         # late unless forward
        [{"t_s": t_a + 3, "text": "after the window"}],
        [{"t_s": t_a, "text": record["target"]["text"]}, {"t_s": t_a, "text": "a second one, same second"}],
        [],
    ]
    return cases[k % len(cases)]


def _run_folder(tmp: Path, built_out: Path, videos: int) -> Path:
    """A run folder (the files ``streamcue export`` reads) of the first ``videos`` videos, with crafted answers;
    the last video's items have no prediction."""
    items = read_jsonl(built_out / "active_item.jsonl")
    kept = list(dict.fromkeys(r["video_id"] for r in items))[:videos]
    played = [r for r in items if r["video_id"] in kept]
    run_dir = tmp / "run"
    write_jsonl(run_dir / "played" / "active_item.jsonl", played)
    write_jsonl(run_dir / "played" / "videos.jsonl",
                [v for v in read_jsonl(built_out / "videos.jsonl") if v["video_id"] in kept])
    preds = [{"item_id": r["item_id"], "responses": _crafted(r, k)} for k, r in enumerate(played)
             if r["video_id"] != kept[-1]]
    write_jsonl(run_dir / "predictions.jsonl", preds)
    write_json(run_dir / "results.json", _crafted_results(len(played)))
    return run_dir


def _crafted_results(n: int) -> dict:
    """A results.json as every reader checks it (sealed, valid against its schema) of ``n`` crafted answers."""
    from streamcue.metrics.bootstrap import BootstrapSettings
    from streamcue.metrics.run import EFFICIENCY, RESULTS_VERSION

    return seal_results({
        "results_version": RESULTS_VERSION, "benchmark": {"name": "phostream", "title": "", "records": "",
                                                          "files_sha256": {}, "version": ""},
        "protocol": {"name": "phostream"}, "model": {"name": "crafted", "endpoint": None}, "generation": {},
        "frames": {}, "prompts": {}, "metric": {"name": "phostream", "config_version": "", "config": {}},
        "streamcue_version": "", "started_at": "", "finished_at": "", "n_benchmark": n, "n_played": n, "videos": [],
        "counts": {"asked": n, "answered": 0, "unparseable": 0}, "unparseable": [],
        "efficiency": {**dict.fromkeys(EFFICIENCY), "real_time_basis": "", "concurrency": 1},
        "bootstrap": BootstrapSettings().to_dict(True),
        "tables": {"task": {}, "group": {}}, "report": {"metric": "phostream", "config_version": "", "overall": {},
                                                        "per_item": {}}, "replay": {}})


def _official(response_file: Path, out: Path, judge_url: str | None = None) -> tuple[dict, list[dict]]:
    """The official scorer on ``response_file``: score-only, or with its judge at ``judge_url`` (its config.yaml
    reads the judge's address and model from the environment): its summary and per-question rows.

    It runs as its own ``__main__`` in a subprocess, unchanged but for its waits between asks of an unreadable reply
    (``time.sleep``: 2, 4, 8 and 16 s, 30 s a reply), which change no figure."""
    import os

    judge = ["--disable-llm-judge"] if judge_url is None else []
    env = {**os.environ, "STREAMEVAL_JUDGER_API_BASE": judge_url or "", "STREAMEVAL_JUDGER_MODEL": "stub-judge"}
    script = OFFICIAL / "run_stream_eval.py"
    without_waits = ("import runpy, sys, time; time.sleep = lambda seconds: None; sys.argv = sys.argv[1:]; "
                     "sys.path.insert(0, str(__import__('pathlib').Path(sys.argv[0]).parent)); "
                     "runpy.run_path(sys.argv[0], run_name='__main__')")
    subprocess.run([sys.executable, "-c", without_waits, str(script), "--model-name", "m", "--run-id", "r",
                    "--skip-inference", "--model-output", str(response_file), *judge, "--output-dir", str(out)],
                   check=True, capture_output=True, timeout=300, env=env)
    scoring = out / "m_r" / "scoring"
    summary = json.loads((scoring / "result_summary.json").read_text())
    summary.pop("model_name")
    return summary, read_jsonl(scoring / "result_details.jsonl")


@needs_data
def test_the_metric_agrees_with_the_official_scorer_on_crafted_answers(built, tmp_path):
    run_dir = _run_folder(tmp_path, built[1], videos=12)
    exported = tmp_path / "exported"
    subprocess.run([sys.executable, "-m", "streamcue", "export", str(run_dir), "--out", str(exported)], check=True,
                   capture_output=True, timeout=300)
    written = json.loads((exported / "export.json").read_text())
    assert written["files"] == ["crafted.jsonl"] and "--disable-llm-judge" in written["official_command"]
    summary, details = _official(exported / "crafted.jsonl", tmp_path / "official")

    report = run(run_dir / "played" / "active_item.jsonl", run_dir / "predictions.jsonl", load_config("phostream"),
                 None)
    _agree(report, summary, details)
    categories = {item["category"] for item in report["per_item"].values()}
    assert categories == {"EarlyResponse", "NoResponse", "LateResponse", "Error (no LLM)"}, "a branch is not reached"


def test_the_default_schedule_reads_no_gold_time():
    record = {"query_time_s": 10.0, "group": "forward", "target": {"t_s": 30.0, "text": "x"}, "question": "q?"}
    moved = {**record, "target": {"t_s": 50.0, "text": "x"}}
    assert call_seconds(record, 60.0) == call_seconds(moved, 60.0) == list(range(10, 61))
    assert call_seconds(record, 60.0, "official-sparse") == [10, 11, 30, 31]
    assert call_seconds(moved, 60.0, "official-sparse") == [10, 11, 50, 51]
    assert call_seconds({**record, "target": {"t_s": 11.0, "text": "x"}}, 60.0, "official-sparse") == [10, 11, 12]
    assert call_seconds({**record, "group": "instant"}, 60.0, "official-sparse") == [10]
    assert PROTOCOL.schedule == "every-chunk" and set(SCHEDULES) == {"every-chunk", "official-sparse"}
    assert question_text(record) == "Question: q?\n"


def test_the_schedule_is_a_declared_protocol_option():
    """``schedule`` is PhoStream's option: recorded with its prompt versions, checked by the protocol, refused in one
    line by a protocol that does not declare it (naming the one that does)."""
    from streamcue.errors import ConfigError
    from streamcue.loaders.protocols import PROTOCOLS
    from streamcue.loaders.replay_config import protocol_options, with_options

    sparse = with_options(PROTOCOL, {"schedule": "official-sparse", "prompt_set": None})
    assert sparse.settings() == {"schedule": "official-sparse"} and PROTOCOL.schedule == "every-chunk"
    assert protocol_options(sparse)["schedule"] == "official-sparse"
    assert protocol_options(sparse)["prompt_versions"][0].startswith("phostream_official_system.v1@")
    record = {"query_time_s": 3.0, "group": "forward", "target": {"t_s": 9.0, "text": "x"}, "question": "q?"}
    assert sparse.moments(record, 0.0, 20.0) == [3.0, 4.0, 9.0, 10.0]
    assert PROTOCOL.moments(record, 0.0, 6.5) == [3.0, 4.0, 5.0, 6.0]
    with pytest.raises(ConfigError, match="unknown PhoStream schedule 'sometimes'"):
        PROTOCOL.with_options(schedule="sometimes")
    with pytest.raises(ConfigError, match="--schedule is for phostream records, not ovo-bench"):
        with_options(PROTOCOLS["ovo-bench"], {"schedule": "every-chunk"})
    from streamcue.loaders.strategies.chunked import Chunked

    for name, words in (("../../../etc/passwd", "is not a prompt file's name"), ("nope.v1", "no such prompt file")):
        with pytest.raises(ConfigError, match=words):
            Chunked(None, prompt=name, placeholder="Silent")


@needs_data
def test_streamcue_run_plays_phostream_and_records_its_schedule(short, tmp_path):
    """An honest server (it reads the frames' times, never a gold time) through ``streamcue run phostream``: the
    official system prompt alone as the system message, one plain call per chunk of the default schedule, the
    schedule in replay_report.json, results.json and on the page; ``compare`` refuses a run of the other schedule."""
    from streamcue.prompts import load_prompt
    from streamcue.testing.stub_llm import StubLLMServer
    from conftest import cli

    with StubLLMServer(lambda body: "A test pattern." if int(now_of(body)) % 5 == 0 else "Silent") as server:
        results = run_short(short, tmp_path / "every", server.base_url)
        asked = [r for r in server.requests if r.get("_answered")]
        sparse = run_short(short, tmp_path / "sparse", server.base_url, "--schedule", "official-sparse")
    assert results["protocol"]["schedule"] == "every-chunk" and sparse["protocol"]["schedule"] == "official-sparse"
    # the videos.jsonl of the build gives no lengths: the run read them from the files, and says so
    assert all(abs(v["duration_s"] - SHORT_S) < 0.6 for v in results["videos"]) and len(results["videos"]) == 3
    assert results["efficiency"]["media_s"] == sparse["efficiency"]["media_s"]
    assert results["protocol"]["kinds"]["active_item"]["strategy"] == "chunked"
    report = json.loads((tmp_path / "every" / "replay_report.json").read_text())
    assert report["kinds"]["active_item"]["schedule"] == "every-chunk"
    assert "phostream (span=clip, timing=synchronous, schedule=every-chunk)" in \
        (tmp_path / "every" / "report.html").read_text()

    items = {r["item_id"]: r for r in read_jsonl(short / "built" / "active_item.jsonl")}
    calls = [json.loads(line) for line in (tmp_path / "every" / "samples.jsonl").read_text().splitlines()]
    last_frame = SHORT_S - 1  # 1 fps: frames at 0 .. 49 s
    for sample in calls:
        record = items[sample["id"]]
        assert [t for t, _ in sample["parsed_answer"]] == \
               [float(t) for t in call_seconds(record, last_frame) if t % 5 == 0]
    system = load_prompt("streamcue.loaders", "phostream_official_system.v1").text.partition("\n---\n")[2]
    assert len(asked) == sum(len(call_seconds(r, last_frame)) for r in items.values())
    assert all(r["messages"][0] == {"role": "system", "content": system} and "response_format" not in r
               for r in asked)
    done = cli("compare", tmp_path / "every", tmp_path / "sparse")
    assert done[0] == 2 and "protocol.schedule: every-chunk vs official-sparse" in done[2]


@needs_data
def test_only_the_official_schedule_lets_a_leaking_model_answer_on_time(short, tmp_path):
    """The leaking model (:func:`leaking_runs`): under ``official-sparse`` every forward question is answered on
    time; under the default ``every-chunk`` (no pause: the schedule reads no gold time) none is."""
    from conftest import cli

    on_time = {}
    for schedule, results in leaking_runs(short, tmp_path).items():
        categories = [item["category"] for item in results["report"]["per_item"].values()]
        on_time[schedule] = categories.count("Error (no LLM)") / len(categories)
        # issue 49: the categories are rows of the run's tables and page, not only of its report
        shares = {row: results["tables"]["group"][row]["estimate"] for row in CATEGORY_ROWS.values()}
        assert shares["on-time share"] == on_time[schedule] and sum(shares.values()) == pytest.approx(1.0)
        assert shares["early share"] == categories.count("EarlyResponse") / len(categories)
        assert "on-time share" in (tmp_path / schedule / "report.html").read_text()
    assert on_time == {"every-chunk": 0.0, "official-sparse": 1.0}
    code, out, err = cli("compare", tmp_path / "every-chunk", tmp_path / "official-sparse", "--leak", "--output",
                         tmp_path / "leak.json")
    assert code == 0, err
    rows = json.loads((tmp_path / "leak.json").read_text())["tables"]["group"]
    assert rows["on-time share"]["estimate"] == 1.0  # the leak shows in the categories, in compare too
    assert "on-time" in out


def test_the_official_sparse_schedule_is_the_official_runners(tmp_path):
    """The official runner itself (its inference loop, against a stub server on 127.0.0.1; no video is needed: it
    plays a missing file's 1 s chunks as paths) asks in the seconds ``call_seconds(..., "official-sparse")`` gives;
    the metric scores its responses as the official scorer does."""
    import yaml

    from streamcue.testing.stub_llm import StubLLMServer

    annotations = [{"video_path": "v/one.mp4", "verified_responses": [
        {"user_query": "When the kettle boils, tell me.", "timestamp_question": "00:05", "time_type": "forward",
         "response": "It is boiling now.", "capability": "Action & Activity Recognition",
         "timestamp_proactive": "00:20"},
        {"user_query": "What colour is the cup?", "timestamp_question": "00:12", "time_type": "instant",
         "response": "Red.", "capability": "Fine-grained Visual Perception"},
        {"user_query": "Remind me when the toast pops.", "timestamp_question": "00:25", "time_type": "forward",
         "response": "The toast is up.", "capability": "Action & Activity Recognition",
         "timestamp_proactive": "00:26"}]}]
    write_json(tmp_path / "ann.json", annotations)
    built = tmp_path / "built"
    subprocess.run([sys.executable, "-m", "streamcue", "build", "phostream", "--annotations",
                    str(tmp_path / "ann.json"), "--out", str(built)], check=True, capture_output=True, timeout=300)
    items = read_jsonl(built / "active_item.jsonl")
    replies = iter(["Silent", "Got it.", "Red.", "It is boiling now.", "ok", "The toast is up."] * 10)
    with StubLLMServer(lambda body: next(replies)) as server:
        config = yaml.safe_load((OFFICIAL / "config.yaml").read_text())
        config["benchmarks"] = {"phostream": {"path": str(tmp_path / "ann.json")}}
        config["models"] = {"stub": {"backend": "openai_compatible", "api_base": server.base_url, "api_key": "",
                                     "model": "stub-model", "video_transport": "path", "max_new_tokens": 16,
                                     "timeout": 30, "max_retries": 1}}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
        subprocess.run([sys.executable, str(OFFICIAL / "run_stream_eval.py"), "--config", str(tmp_path / "config.yaml"),
                        "--model-name", "stub", "--run-id", "r", "--disable-llm-judge", "--output-dir",
                        str(tmp_path / "official"), "--video-root", str(tmp_path), "--chunk-cache-root",
                        str(tmp_path / "chunks")], check=True, capture_output=True, timeout=300)
    root = tmp_path / "official" / "stub_r"
    played = read_jsonl(root / "inference" / "all_benchmarks.jsonl")[0]["responses"]
    asked = sorted(clock_seconds(r["timestamp"]) for r in played)
    duration = max(r["query_time_s"] for r in items) + 10  # the runner's duration of a video it cannot probe
    assert asked == sorted({t for r in items for t in call_seconds(r, duration, "official-sparse")})

    preds = [{"item_id": items[0]["item_id"],
              "responses": [{"t_s": clock_seconds(r["timestamp"]), "text": r["response"]} for r in played]}]
    write_jsonl(tmp_path / "gt.jsonl", items)
    write_jsonl(tmp_path / "pred.jsonl", preds)
    report = run(tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", load_config("phostream"), None)
    summary = json.loads((root / "scoring" / "result_summary.json").read_text())
    summary.pop("model_name")
    assert report["overall"]["official"] == summary
    details = read_jsonl(root / "scoring" / "result_details.jsonl")
    assert [d["category"] for d in details] == [i["category"] for i in report["per_item"].values()]


def _agree(report: dict, summary: dict, details: list[dict]) -> None:
    """Every figure of the official summary and every per-question row equal the report's."""
    assert report["overall"]["official"] == summary
    items = list(report["per_item"].values())
    assert len(details) == len(items)
    for row, item in zip(details, items):
        assert (row["category"], row["score"], row["response_time"], row["response"]) == \
               (item["category"], item["score"], clock(item["response_time_s"]), item["response"])


@pytest.mark.slow
@needs_data
def test_the_official_scorer_agrees_with_a_streamcue_run(short, tmp_path):
    """``streamcue run phostream`` against a stub server (it answers in some seconds, "Silent" in the others),
    ``streamcue export`` of its run folder, the official scorer on the exported file: in score-only mode, and with
    its judge at a stub judge server when the run was scored with ``--judge llm`` at the same stub; every figure of
    its summary and every row equal the run's results.json."""
    from streamcue.testing.stub_llm import StubLLMServer
    from conftest import cli

    with StubLLMServer(lambda body: "A test pattern." if int(now_of(body)) % 3 == 0 else "Silent") as server, \
            StubLLMServer(_judge_reply) as judge:
        results = {"plain": run_short(short, tmp_path / "plain", server.base_url),
                   "judged": run_short(short, tmp_path / "judged", server.base_url, "--judge", "llm",
                                  "--judge-llm-base-url", judge.base_url, "--judge-llm-model", "stub-judge")}
        for name, url in (("plain", None), ("judged", judge.base_url)):
            code, _, err = cli("export", tmp_path / name, "--out", tmp_path / f"{name}-exported")
            assert code == 0, err
            summary, details = _official(tmp_path / f"{name}-exported" / "stub.jsonl", tmp_path / f"{name}-official",
                                         url)
            _agree(results[name]["report"], summary, details)
    categories = [i["category"] for i in results["judged"]["report"]["per_item"].values()]
    assert "PartlyCorrect" in categories and len(set(categories)) >= 2, "the run reaches one category only"
    assert results["plain"]["report"]["judge"] is None
    assert results["judged"]["report"]["judge"]["prompt"].startswith("phostream_judge.v1@")


def _judge_reply(body: dict) -> str:
    """The stub judge: a reply chosen by the answer it is asked about (the crafted answers of ``_crafted``), among
    them replies the official parser clips, reads from a string and cannot read."""
    from streamcue.testing.stub_llm import message_text

    answer = re.search(r"Predicted Answer: (.*)\nCorrect Answer:", message_text(body["messages"][-1]), re.S)[1]
    return {"now": '{"explanation": "on time", "score": 4}', "second": ' {"score": "3", "explanation": 1} ',
            "at the window's end": '{"score": 9}', "a second one, same second": '{"score": -2}',
            "early": '{"score": 2.5}', "UNREADABLE": "Score: 5 (no JSON)"}.get(answer, '{"score": 1}')


@pytest.mark.slow
@needs_data
def test_the_official_judge_agrees_with_streamcues(built, tmp_path):
    """The official scorer with its judge (pointed at a stub judge server on 127.0.0.1 through its config's
    STREAMEVAL_JUDGER_API_BASE) and ``streamcue evaluate phostream --judge llm`` against the same stub agree on every
    figure; both send the official prompt, word for word; the unreadable reply scores 0 in both, and streamcue counts
    it (``judge_unparseable``); a second evaluation takes every verdict from the cache."""
    import yaml

    from streamcue.testing.stub_llm import StubLLMServer, message_text
    from conftest import cli

    run_dir = _run_folder(tmp_path, built[1], videos=6)
    preds = read_jsonl(run_dir / "predictions.jsonl")
    first = next(p for p in preds if p["responses"] and p["responses"][-1]["text"] == "now")
    first["responses"][-1]["text"] = "UNREADABLE"  # one unreadable reply: the official judge asks 5 times
    write_jsonl(run_dir / "predictions.jsonl", preds)
    subprocess.run([sys.executable, "-m", "streamcue", "export", str(run_dir), "--out", str(tmp_path / "exported")],
                   check=True, capture_output=True, timeout=300)
    evaluate = ("evaluate", "phostream", "--gt", run_dir / "played" / "active_item.jsonl", "--pred",
                run_dir / "predictions.jsonl", "--judge", "llm", "--llm-model", "stub-judge")
    with StubLLMServer(_judge_reply) as server:
        summary, details = _official(tmp_path / "exported" / "crafted.jsonl", tmp_path / "official", server.base_url)
        official_prompts = {message_text(r["messages"][-1]) for r in server.requests}
        server.requests.clear()
        code, _, err = cli(*evaluate, "--llm-base-url", server.base_url, "--output", tmp_path / "report.json")
        assert code == 0, err
        ours = [r for r in server.requests if r.get("_answered")]
        again = cli(*evaluate, "--llm-base-url", server.base_url, "--output", tmp_path / "again.json")
        assert again[0] == 0 and len(server.requests) == len(ours)
    report = json.loads((tmp_path / "report.json").read_text())
    _agree(report, summary, details)
    assert {message_text(r["messages"][-1]) for r in ours} == official_prompts
    assert all(r["messages"][0]["role"] == "user" and len(r["messages"]) == 1 and "response_format" not in r
               and r["max_tokens"] == 256 for r in ours)
    template = yaml.safe_load((OFFICIAL / "config.yaml").read_text())["judger"]["prompt_template"]
    on_time = [i for i in report["per_item"].values() if i["category"] == "PartlyCorrect"]
    assert {template.format(question=r["question"], model_output=r["response"], reference_answer=r["answer"])
            for r in details if r["category"] == "PartlyCorrect"} == official_prompts
    assert {i["score"] for i in on_time} == {80.0, 50.0, 100.0, 0.0, 20.0}  # 4, 2.5, 9 clipped, -2 and "no JSON", 1
    unreadable = [rid for rid, i in report["per_item"].items() if i["response"] == "UNREADABLE"]
    assert report["judge_unparseable"] == unreadable and report["overall"]["judge_unparseable"] == 1
    assert report["per_item"][unreadable[0]]["score"] == 0.0 and "could not be read" in report["notes"][0]
    assert report["judge"]["judge"] == "phostream-llm" and report["judge"]["prompt"].startswith("phostream_judge.v1@")
    assert json.loads((tmp_path / "again.json").read_text())["judge"]["cache_hits"] == report["judge"]["distinct"]


def _official_parse(replies: list[str]) -> list[float | None]:
    """The official judge's parser (``LLMJudger._parse_response``, run in a subprocess on the stripped reply, as
    ``LLMJudger.judge`` calls it) on each reply: its score, or None where it raises (the official judge would ask
    again, then give 0)."""
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import run_stream_eval as r\n"
              "def read(t):\n"
              "    try: return r.LLMJudger(None, '')._parse_response(t.strip())['score']\n"
              "    except Exception: return None\n"
              "print(json.dumps([read(t) for t in json.load(sys.stdin)]))")
    done = subprocess.run([sys.executable, "-c", script, str(OFFICIAL)], input=json.dumps(replies), check=True,
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


def test_the_judge_reads_replies_as_the_official_parser():
    """Crafted replies read by streamcue's parser and by the official one (here without ``json_repair``, which this
    environment does not install: the official parser then reads plain JSON): the score clipped to [0, 5], a number
    in a string read, anything else unreadable. One difference, by design: a score that is not finite is unreadable
    here (the official clip makes NaN or Infinity a 5)."""
    from streamcue.metrics.phostream import parse_judge_reply

    replies = ['{"score": 4, "explanation": "x"}', '{"score": 1' + '0' * 400 + '}', ' {"score": "2.5"}\n',
               '{"score": 11}', '{"score": -3}',
               '{"score": true}', '{"explanation": "no score"}', "4", "[4]", '```json\n{"score": 4}\n```',
               '{"score": "four"}', '{"score": null}', "", "Score: 5 (no JSON)"]
    ours = [parse_judge_reply(text) for text in replies]
    assert ours == _official_parse(replies)
    assert ours == [4.0, None, 2.5, 5.0, 0.0, 1.0, None, None, None, None, None, None, None, None]
    not_finite = ['{"score": NaN}', '{"score": Infinity}']
    assert _official_parse(not_finite) == [5.0, 5.0]
    assert [parse_judge_reply(text) for text in not_finite] == [None, None]


def test_a_judge_other_than_the_official_is_refused(tmp_path):
    from conftest import cli

    write_jsonl(tmp_path / "gt.jsonl", [])
    write_jsonl(tmp_path / "pred.jsonl", [{"item_id": "x", "responses": []}])
    code, _, err = cli("evaluate", "phostream", "--gt", tmp_path / "gt.jsonl", "--pred", tmp_path / "pred.jsonl",
                       "--judge", "exact")
    assert code != 0 and "official LLM judge (--judge llm)" in err and "Traceback" not in err


def test_a_judge_the_metric_does_not_take_is_refused_before_any_call():
    from streamcue.errors import ConfigError
    from streamcue.metrics.run_config import RunConfig

    with pytest.raises(ConfigError, match="phostream's metric scores with --judge llm or no --judge, not 'exact'"):
        RunConfig(records="x", benchmark="phostream", judge="exact")
    assert RunConfig(records="x", benchmark="phostream", judge="llm", llm_model="m").judge == "llm"
