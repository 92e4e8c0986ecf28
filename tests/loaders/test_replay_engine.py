"""The replay engine over its registries: every protocol x kind x strategy x memory that applies plays (against
the real stub server on 127.0.0.1, tiny records), every other combination is refused with one line naming what
applies; the command validates before any call, refuses outputs inside inputs, and decodes each video once."""

import json

import pytest

from conftest import VALID, cli_run
from strategy_models import WordEmbedder
from streamcue.errors import ConfigError
from streamcue.frame_memory import frames_until
from streamcue.llm import LLMSettings
from streamcue.loaders.engine import play
from streamcue.loaders.memory import MEMORIES, make_memory
from streamcue.loaders.protocols import PROTOCOLS, Protocol, protocol_for
from streamcue.loaders.strategies import STRATEGIES, applicable, make_strategy
from streamcue.loaders.strategies.oasis import OasisMemory
from streamcue.schemas import validate
from streamcue.testing.stub_llm import StubLLMServer, request_schema, schema_instance

pytestmark = pytest.mark.llm_server

SQA = {"schema_version": "1.0", "video_id": "v1", "benchmark": "streamingbench", "task": "Sequential Question "
       "Answering", "group": "sqa", "question": "Who serves?", "options": ["Ma", "Fan"], "answer": 1,
       "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"}}
PROACTIVE = {"schema_version": "1.0", "item_id": "p1", "video_id": "v1", "benchmark": "streamingbench",
             "task": "Proactive Output", "group": "proactive", "question": "Say when the ball lands.",
             "query_time_s": 2.0, "probes": [], "target": {"t_s": 3.0, "text": "now"},
             "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"}}


def tiny_records():
    """``{(protocol, kind): records}``: a few records of every kind each protocol plays, on a 6 s video."""
    qa = dict(VALID["interval_qa"], clip={"start_s": 0.0, "end_s": 6.0},
              answers=[{"start_s": 2.0, "end_s": 4.0, "text": "A red cup on the table."}])
    crr = dict(VALID["active_item"], item_id="ovo-3", task="CRR", question="What is in the cup?", activity=None,
               probes=[{"t_s": 2.0, "expected": "No"}, {"t_s": 4.0, "expected": "Yes"}])
    return {
        ("estp", "interval_qa"): [qa],
        ("vsas", "dense_caption"): [VALID["dense_caption"]],
        ("livecook", "guidance"): [VALID["guidance"]],
        ("ovo-bench", "mc_question"): [dict(VALID["mc_question"], query_time_s=5.0)],
        ("ovo-bench", "active_item"): [VALID["active_item"], crr],
        ("streamingbench", "mc_question"): [dict(SQA, question_id=f"s{n}", query_time_s=float(n),
                                                 context={"group_id": "g", "turn": n}) for n in (1, 2)],
        ("streamingbench", "active_item"): [PROACTIVE],
    }


def respond(body):
    """A valid answer to any request (its JSON schema says what is asked); yes to every yes/no question. A plain
    request (an official prompt, no schema) gets plain text."""
    schema = request_schema(body)
    if schema is None:
        return "Yes. The answer is B."
    answer = schema_instance(schema, json.dumps(body["messages"])[-200:])
    if "answer" in answer:
        answer["answer"] = "yes"
    if "speak" in answer:
        answer["speak"] = True
    return json.dumps(answer)




def memory_of(name, settings):
    if name == "OASIS":
        return OasisMemory(settings, embedder=WordEmbedder(32), short_k=2, event_frames=2)
    return make_memory(name, k=4, window_s=3.0)


COMBOS = [(p, k, s, m) for (p, k) in tiny_records() for s in STRATEGIES for m in MEMORIES]


@pytest.fixture(scope="module")
def server():
    with StubLLMServer(respond) as running:
        yield running


@pytest.mark.parametrize("protocol, kind", list(tiny_records()))
def test_every_applicable_strategy_and_memory_plays(server, protocol, kind):
    settings = LLMSettings(base_url=server.base_url, model="stub-vl")
    records = tiny_records()[(protocol, kind)]
    strategies = applicable(kind, protocol)
    assert strategies and PROTOCOLS[protocol].default_strategy[kind] in strategies
    for name in strategies:
        for memory in MEMORIES:
            model = make_strategy(name, settings, kind, protocol=protocol,
                                  **PROTOCOLS[protocol].defaults.get(name, {}))
            predictions, report = play(records, kind, strategy=model, protocol=PROTOCOLS[protocol],
                                       memory=memory_of(memory, settings), k=4, window_s=3.0,
                                       durations={"v1": 6.0})
            assert len(predictions) == len(records) and report["runs"] == len(records), (name, memory)
            for prediction in predictions:
                validate(prediction, f"{kind}_prediction")
            if name != "periodic":
                assert report["calls"] > 0, (name, memory)


@pytest.mark.parametrize("protocol, kind", list(tiny_records()))
def test_every_other_strategy_is_refused_with_one_line_naming_what_applies(protocol, kind):
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m")
    for name in set(STRATEGIES) - set(applicable(kind, protocol)):
        with pytest.raises(ConfigError) as refused:
            make_strategy(name, settings, kind, protocol=protocol)
        line = str(refused.value)
        assert "\n" not in line and f"strategy {name} plays" in line
        assert f"use {' or '.join(applicable(kind, protocol))}" in line
    with pytest.raises(ConfigError, match="unknown memory 'LRU'; known: SW, U, SW\\+U, window, OASIS"):
        make_memory("LRU", k=4)
    with pytest.raises(ConfigError, match="pass --window-s"):
        make_memory("window", k=4)


def test_registries_agree():
    for protocol in PROTOCOLS.values():
        assert isinstance(protocol, Protocol) and set(protocol.mode) == set(protocol.kinds)
        for kind in protocol.kinds:
            assert protocol_for(kind, {"benchmark": protocol.name}) is protocol
    for name, cls in STRATEGIES.items():
        assert cls.name == name and cls.help and all(o.help for o in cls.options)
    with pytest.raises(ConfigError, match="pass --benchmark"):
        protocol_for("mc_question", {})


def test_one_window_rule():
    """At 1 fps a 60 s window is 60 frames, for a question at 60 s or any time."""
    assert len(frames_until(60.0, 1.0, 60.0)) == 60 and len(frames_until(90.5, 1.0, 60.0)) == 60
    assert [f.t_s for f in frames_until(9.5, 2.0, 2.0)] == [8.0, 8.5, 9.0, 9.5]
    assert len(frames_until(12.3, 1.0)) == 13


# --- the command ------------------------------------------------------------------------------

def cli(*args, cache=None):
    """The command in this process (STREAMCUE_CACHE_DIR is read when a command opens its cache)."""
    return cli_run(*args, env={"STREAMCUE_CACHE_DIR": cache} if cache else None)


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.slow
def test_replay_command_plays_mc_question_files_and_refuses_with_one_line(tmp_path, server):
    ovo = tmp_path / "ovo"
    mc = write(ovo / "mc_question.jsonl", [dict(VALID["mc_question"], question_id=f"ovo-{i}") for i in range(3)])
    write(ovo / "active_item.jsonl", [VALID["active_item"]])
    write(ovo / "videos.jsonl", [dict(VALID["video"], duration_s=None)])
    llm = ["--llm-base-url", server.base_url, "--llm-model", "stub-vl"]
    done = cli("replay", mc, "--out", tmp_path / "run", "--limit", "2", "--no-video", *llm, cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr  # was a TypeError
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert [p["question_id"] for p in predictions] == ["ovo-0", "ovo-1"]  # --limit: the first N records in total
    done = cli("replay", ovo, "--out", tmp_path / "all", "--limit", "4", "--no-video", *llm, cache=tmp_path / "cache")
    report = json.loads((tmp_path / "all" / "replay_report.json").read_text())
    assert done.returncode == 0 and {k: v["played"] for k, v in report["kinds"].items()} == {
        "mc_question": 3, "active_item": 1}
    bad = write(tmp_path / "bad" / "mc_question.jsonl", [{k: v for k, v in VALID["mc_question"].items()
                                                         if k != "question"}])
    cases = [
        ([mc, "--strategy", "polling"], "strategy polling plays interval_qa records, dense_caption records and "
                                        "active_item records of streamingbench only, not mc_question records of "
                                        "ovo-bench; for those use single-call"),
        ([mc, "--memory", "LRU"], "unknown memory 'LRU'"),
        ([mc, "--history", "silver"], "--history must be gold"),
        ([mc, "--poll-hz", "2"], "--poll-hz is for --strategy polling, not single-call (mc_question)"),
        ([bad, "--out", tmp_path / "b"], "mc_question.jsonl:1"),
        ([ovo, "--out", ovo / "run"], "lies inside the input folder"),
        ([mc, "--out", tmp_path / "x", "--memory", "window"], "pass --window-s"),
    ]
    for args, words in cases:
        args = args if "--out" in args else [*args, "--out", tmp_path / "r"]
        done = cli("replay", *args, *llm)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "question" in cli("replay", bad, "--out", tmp_path / "b", *llm).stderr  # names the field
    assert not (ovo / "run").exists() and not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.video
def test_each_video_is_decoded_once_for_all_its_questions(tmp_path, server):
    pytest.importorskip("imageio_ffmpeg")
    from streamcue.anonymize.synthetic import write_clip

    (tmp_path / "videos" / "recorded").mkdir(parents=True)
    write_clip(tmp_path / "videos" / "recorded" / "v1.mp4", width=160, height=120, fps=5, seconds=6)
    sb = tmp_path / "sb"
    turns = [dict(SQA, question_id=f"s{n}", query_time_s=float(n), context={"group_id": "g", "turn": n})
             for n in (1, 2, 3)]
    write(sb / "mc_question.jsonl", turns)
    write(sb / "active_item.jsonl", [PROACTIVE])
    write(sb / "videos.jsonl", [VALID["video"]])
    done = cli("replay", sb, "--out", tmp_path / "run", "--video-root", tmp_path / "videos", "--llm-base-url",
               server.base_url, "--llm-model", "stub-vl", cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "run" / "replay_report.json").read_text())
    assert report["videos_decoded"] == {"v1": 1}
    assert any(p["type"] == "image_url" for p in server.requests[-1]["messages"][-1]["content"])
    (tmp_path / "videos" / "recorded" / "v1.mp4").unlink()
    done = cli("replay", sb, "--out", tmp_path / "run2", "--video-root", tmp_path / "videos", "--llm-base-url",
               server.base_url, "--llm-model", "stub-vl")
    assert done.returncode == 2 and "video file missing under the video root" in done.stderr
