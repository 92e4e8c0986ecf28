"""The seeds' strategies over real HTTP (stub server + scripted models) on records built from the shared data."""

import json
import math
import re

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import CAPTAINCOOK4D, GOALSTEP_VAL, VALID, cli as run_cli, cli_run
from strategy_models import GuidanceOracle, OracleTiming, WordEmbedder, now_of, system, user as user_text
from streamcue.dataset_builders import captaincook4d, ego4d
from streamcue.errors import ConfigError
from streamcue.llm import LLMSettings
from streamcue.loaders.replay import Frame, replay, select_frames
from streamcue.loaders.engine import play
from streamcue.loaders.strategies import make_strategy
from streamcue.loaders.strategies.oasis import EventNode, OasisMemory, _family, retrieve
from streamcue.loaders.strategies.response_in_last import parse_lines
from streamcue.schemas import validate
from streamcue.testing.stub_llm import StubLLMServer

pytestmark = pytest.mark.llm_server
VIDEO = "c2d06df7-5d3a-4116-9edb-f1c81a4f669b"


@pytest.fixture(scope="module")
def estp():
    """ESTP template questions from GoalStep val (one video): NAR questions with short spans."""
    out = {}
    for kind, record in ego4d.build(ego4d.Config(goalstep=GOALSTEP_VAL, videos=(VIDEO,))):
        out.setdefault(kind, []).append(record)
    nar = [r for r in out["interval_qa"] if r["task_type"] == "NAR"
           and r["answers"][-1]["end_s"] - r["query_time_s"] < 80]
    durations = {v["video_id"]: v["duration_s"] for v in out["video"]}
    return nar[:10], out["interval_qa"], durations


@pytest.fixture(scope="module")
def cooking():
    out = [r for kind, r in captaincook4d.build(captaincook4d.Config(annotations=CAPTAINCOOK4D, recordings=("1_7",)))
           if kind == "guidance"]
    return out[0]


def llm(server):
    return LLMSettings(base_url=server.base_url, model="scripted-vl")


def polls_in(start, end, fps, hz):
    """Polls a schedule of start + n / hz implies on frames start + i / fps (hz <= fps); the replay starts
    on the first sampled frame at or after the query time."""
    start = math.ceil(start * fps) / fps
    last = start + (int((end - start) * fps + 1e-9) - 1) / fps
    return math.floor((last - start) * hz + 1e-9) + 1


def test_polling_calls_match_the_schedule_and_the_yes_answers(estp):
    records, _, durations = estp
    with StubLLMServer(OracleTiming(records)) as server:
        model = make_strategy("polling", llm(server), "interval_qa", hz=1.0)
        predictions, report = play(records, "interval_qa", strategy=model, durations=durations, span="clip")
        polls = sum(polls_in(r["query_time_s"], r["answers"][-1]["end_s"] + 5, 1.0, 1.0) for r in records)
        yes = sum(len(p["responses"]) for p in predictions)
        assert report["strategy"]["ask_when"] == polls and report["strategy"]["ask_answer"] == yes > 0
        assert server.completions == polls + yes
        for p in predictions:
            validate(p, "interval_qa_prediction")
        # every call carried the dialogue: no interval is answered twice
        assert all(len(p["responses"]) == len(r["answers"]) for p, r in zip(predictions, records))


def estp_f1(tmp_path, records, predictions, name):
    gt, pred, out = tmp_path / f"{name}-gt.jsonl", tmp_path / f"{name}-pred.jsonl", tmp_path / f"{name}.json"
    gt.write_text("".join(json.dumps(r) + "\n" for r in records))
    pred.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    code, _, err = run_cli("evaluate", "estp-f1", "--gt", gt, "--pred", pred, "--judge", "exact", "--output", out)
    assert code == 0, err
    return json.loads(out.read_text())["overall"]["f1"]


def test_polling_at_1hz_beats_0175hz_for_a_model_right_only_near_the_best_moment(estp, tmp_path):
    records, _, durations = estp
    scores = {}
    with StubLLMServer(OracleTiming(records, reach_s=0.5)) as server:
        for hz in (1.0, 0.175):
            model = make_strategy("polling", llm(server), "interval_qa", hz=hz)
            predictions, report = play(records, "interval_qa", strategy=model, durations=durations, span="clip")
            scores[hz] = estp_f1(tmp_path, records, predictions, f"hz{hz}")
            assert report["strategy"]["ask_when"] == sum(
                polls_in(r["query_time_s"], r["answers"][-1]["end_s"] + 5, 1.0, hz) for r in records)
    assert scores[1.0] == 1.0 > scores[0.175]  # 1 Hz never misses a half-second-wide moment, 0.175 Hz does


def last_responder(text):
    def respond(body):
        assert "[0]" in body["messages"][-1]["content"][1]["text"]
        return json.dumps({"text": text})
    return respond


def test_response_in_last_maps_frame_indices_through_the_sampling_rate():
    qa = dict(VALID["interval_qa"], clip={"start_s": 4.0, "end_s": 20.0}, query_time_s=4.0)
    lines = "[6] a cup\nno brackets here\n[2] the kettle\n[99] past the clip\n\n[x] bad index"
    with StubLLMServer(last_responder(lines)) as server:
        model = make_strategy("response-in-last", llm(server), "interval_qa")
        predictions, report = play([qa], "interval_qa", strategy=model, durations={"v1": 30.0}, span="clip")
        assert server.completions == 1 and report["strategy"]["ask_last"] == 1  # one call per clip
        assert predictions[0]["responses"] == [{"t_s": 6.0, "text": "the kettle"}, {"t_s": 10.0, "text": "a cup"}]
        assert report["strategy"]["malformed_lines"] == 2 and report["strategy"]["out_of_range_lines"] == 1
        model = make_strategy("response-in-last", llm(server), "interval_qa")
        predictions, _ = play([qa], "interval_qa", strategy=model, durations={"v1": 30.0}, span="clip", fps=2.0)
        assert predictions[0]["responses"][1] == {"t_s": 7.0, "text": "a cup"}  # [6] at 2 fps: 3 s after the start


def test_response_in_last_one_call_per_record_on_real_records(estp, tmp_path):
    records, _, durations = estp
    with StubLLMServer(lambda body: json.dumps({"text": "[0] now\n[3] later"})) as server:
        model = make_strategy("response-in-last", llm(server), "interval_qa")
        predictions, _ = play(records, "interval_qa", strategy=model, durations=durations, span="clip")
        assert server.completions == len(records)
        assert [p["responses"][0]["t_s"] for p in predictions] == [math.ceil(r["query_time_s"]) for r in records]
    assert 0.0 <= estp_f1(tmp_path, records, predictions, "last") <= 1.0


def test_parse_lines_never_fails():
    assert parse_lines("[1] a\n [ 2 ]  b  \n\n]3[ c\n[4]") == ([(1, "a"), (2, "b")], 2)


def test_turn_loop_events_name_the_right_plan_step_and_score(cooking, tmp_path):
    from streamcue.metrics import evaluate

    duration = max(a["end_s"] for s in cooking["plan"] for a in s["actions"]) + 10
    with StubLLMServer(GuidanceOracle(cooking)) as server:
        hint = {cooking["plan"][0]["text"]: "Too much spray makes the egg slide."}
        model = make_strategy("turn-loop", llm(server), "guidance", hints=hint)
        predictions, report = play([cooking], "guidance", strategy=model, durations={cooking["video_id"]: duration})
        assert any("Typical mistakes for this instruction: Too much spray" in user_text(body)
                   for body in server.requests)
        events = predictions[0]["events"]
        validate(predictions[0], "guidance_prediction")
        ticks = [e for e in range(5, int(duration), 5)]
        finished_at = next(e["t_s"] for e in events if e["type"] == "finish")
        assert server.completions == 2 * sum(1 for t in ticks if t <= finished_at)
        assert report["strategy"]["ask_completed"] == report["strategy"]["ask_mistake"]
        for e in events:
            if e["type"] == "success":  # the step whose last action ended in the 5 s before
                end = max(a["end_s"] for a in cooking["plan"][e["plan_index"]]["actions"])
                assert end <= e["t_s"] < end + 5
            if e["type"] == "mistake":
                gold = [m for m in cooking["events"] if m["type"] == "mistake" and m["text"] == e["text"]]
                assert gold and gold[0]["plan_index"] == e["plan_index"]
        assert [e["plan_index"] for e in events if e["type"] == "success"] == list(range(len(cooking["plan"])))
    (tmp_path / "gt.jsonl").write_text(json.dumps(cooking) + "\n")
    (tmp_path / "pred.jsonl").write_text(json.dumps(predictions[0]) + "\n")
    scored = evaluate("livecook", tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", bertscore=False)
    assert scored["overall"]["ic_acc"] == 1.0


def test_self_check_answers_again_only_when_the_last_answer_no_longer_holds(tmp_path):
    from streamcue.metrics import evaluate

    changes = {0.0: "cutting", 3.0: "frying", 6.0: "plating"}

    def respond(body):
        now = now_of(body)
        current = changes[max(t for t in changes if t <= now)]
        if '"yes" or "no"' in system(body):
            last = body["messages"][-1]["content"][-1]["text"].removeprefix("Your latest answer: ")
            return json.dumps({"answer": "yes" if last == current else "no"})
        return json.dumps({"text": current})

    task = dict(VALID["dense_caption"])
    with StubLLMServer(respond) as server:
        model = make_strategy("self-check", llm(server), "dense_caption")
        predictions, report = play([task], "dense_caption", strategy=model, durations={"v1": 9.0})
        assert [(r["t_s"], r["text"]) for r in predictions[0]["responses"]] == [
            (0.0, "cutting"), (3.0, "frying"), (6.0, "plating")]
        # 1 first answer + 8 checks (seconds 1-8) + 2 new answers
        assert server.completions == 11 and report["strategy"]["ask_check"] == 8
    (tmp_path / "gt.jsonl").write_text(json.dumps(dict(task, captions=[
        {"t_s": t, "text": changes[max(c for c in changes if c <= t)]} for t in range(9)])) + "\n")
    (tmp_path / "pred.jsonl").write_text(json.dumps(predictions[0]) + "\n")
    scored = evaluate("vsas", tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", judge="exact")
    assert scored["overall"]["accuracy"] == 1.0  # silence carries the last answer forward


def test_strategies_refuse_kinds_and_bad_options():
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ConfigError, match="plays guidance records"):
        make_strategy("turn-loop", settings, "interval_qa")
    with pytest.raises(ConfigError, match="polling frequency"):
        make_strategy("polling", settings, "interval_qa", hz=0)
    with pytest.raises(ConfigError, match="unknown strategy"):
        make_strategy("oracle", settings, "interval_qa")


# --- replay options: context window, gold turns ----------------------------------------------

class Recorder:
    latency_s = 0.0

    def __init__(self):
        self.calls = []

    def respond(self, frames, prompt, history, now):
        self.calls.append(([f.t_s for f in frames], prompt, list(history)))
        return f"own {now:.0f}"


def test_window_keeps_only_the_last_seconds():
    model = Recorder()
    replay(model, duration_s=10, fps=2, prompts=[(0, "go")], k=100, memory="U", window_s=2.0)
    assert model.calls[-1][0] == [8.0, 8.5, 9.0, 9.5]
    with pytest.raises(ConfigError, match="context window"):
        replay(model, 1, 1, [], window_s=0)


def test_multi_turn_with_gold_or_own_answers():
    first = dict(VALID["interval_qa"], qa_id="q1", task_type="ORC", proactive_type="contextual",
                 context={"group_id": "g", "turn": 1}, query_time_s=0.0, question="Where is the cup?")
    second = dict(first, qa_id="q2", context={"group_id": "g", "turn": 2}, query_time_s=12.0, question="And now?")
    gold, own = Recorder(), Recorder()
    play([first, second], "interval_qa", strategy=gold, durations={"v1": 13.0}, history="gold")
    play([first, second], "interval_qa", strategy=own, durations={"v1": 13.0})
    history = gold.calls[-1][2]
    assert (2.0, "assistant", "A red cup on the table.") in history
    assert not any(text.startswith("own") for _, _, text in history)
    assert any(text == "own 11" for _, _, text in own.calls[-1][2])
    with pytest.raises(ConfigError, match="unknown history"):
        play([first], "interval_qa", strategy=own, durations={"v1": 13.0}, history="silver")


# --- OASIS event memory ------------------------------------------------------------------------

@st.composite
def forest(draw):
    """A random event forest built like OASIS's: leaves merged in fanout groups."""
    leaves = draw(st.integers(1, 40))
    fanout = draw(st.integers(2, 4))
    nodes, roots = [], []
    for i in range(leaves):
        nodes.append(EventNode(len(nodes), i, i + 1, 0, f"e{i}"))
        roots.append(nodes[-1].id)
        while len(roots) >= fanout and len({nodes[r].level for r in roots[-fanout:]}) == 1:
            kids = roots[-fanout:]
            parent = EventNode(len(nodes), nodes[kids[0]].start_s, nodes[kids[-1]].end_s, nodes[kids[0]].level + 1,
                               "p", children=list(kids))
            nodes.append(parent)
            for c in kids:
                nodes[c].parent = parent.id
            roots = roots[:-fanout] + [parent.id]
    sims = draw(st.lists(st.floats(-1, 1), min_size=len(nodes), max_size=len(nodes)))
    return nodes, sims


@hsettings(max_examples=200, deadline=None)
@given(forest(), st.integers(0, 6), st.floats(0, 1))
def test_retrieval_takes_distinct_branches_and_at_most_k_f(drawn, k_f, weight):
    nodes, sims = drawn
    picked = retrieve(nodes, sims, k_f, weight)
    assert len(picked) <= k_f and len(set(picked)) == len(picked)
    for i in picked:
        assert not (_family(nodes, i) - {i}) & set(picked)  # no ancestor or descendant of a picked node
    if picked:  # the first pick is the best score
        top = max(n.level for n in nodes) or 1
        scores = [weight * sims[n.id] + (1 - weight) * n.level / top for n in nodes]
        assert scores[picked[0]] == max(scores)


def test_retrieval_golden_case():
    leaves = [EventNode(i, i, i + 1, 0, f"e{i}") for i in range(4)]
    p01, p23 = EventNode(4, 0, 2, 1, "a", children=[0, 1]), EventNode(5, 2, 4, 1, "b", children=[2, 3])
    root = EventNode(6, 0, 4, 2, "r", children=[4, 5])
    for c, p in ((0, 4), (1, 4), (2, 5), (3, 5), (4, 6), (5, 6)):
        (leaves + [p01, p23, root])[c].parent = p
    nodes = leaves + [p01, p23, root]
    sims = [0.9, 0.1, 0.8, 0.2, 0.5, 0.5, 0.3]
    # pure similarity: leaf 0, then its ancestors 4 and 6 are out, leaf 2 next
    assert retrieve(nodes, sims, 2, weight=1.0) == [0, 2]
    # pure level: the root, then nothing is left (everything is its descendant)
    assert retrieve(nodes, sims, 2, weight=0.0) == [6]




def memory_responder(body):
    text = "first frame " + " ".join(f"word{i}" for i in range(500))  # longer than any bound
    return json.dumps({"text": text})


def test_oasis_context_is_bounded_as_the_video_grows_while_u_grows():
    sizes = {}
    with StubLLMServer(memory_responder) as server:
        for seconds in (60, 240, 480):
            memory = OasisMemory(llm(server), embedder=WordEmbedder(), short_k=8, event_frames=16, max_words=40,
                                 k_f=2, k_q=1)
            frames = [Frame(i, float(i)) for i in range(seconds)]
            shown, context = memory.view(frames, 64, seconds - 1.0, "what happened first?",
                                         [(0.0, "user", "q0"), (1.0, "assistant", "a0 " * 100)])
            u = select_frames(frames, seconds, "U")  # U keeping one frame per second of video
            sizes[seconds] = (len(shown), len(context.split()), len(memory.nodes), len(u))
            assert len(shown) == 8 and len(context.split()) <= (2 + 2 * 1) * 40 + 20
            leaves = (seconds - 8) // 16
            assert memory.stats["ask_event"] == leaves and memory.stats["summaries_cut"] > 0
    assert sizes[60][1] <= sizes[480][1] <= (2 + 2) * 40 + 20 and sizes[480][3] == 8 * sizes[60][3]


def test_oasis_is_a_memory_policy_beside_sw_u_and_feeds_text_context(estp):
    records, _, durations = estp
    seen = []

    def respond(body):
        if "keep the memory" in system(body):
            return json.dumps({"text": "the person kneads dough on the table"})
        seen.append(body["messages"][-1]["content"])
        return json.dumps({"answer": "no"})

    with StubLLMServer(respond) as server:
        memory = OasisMemory(llm(server), embedder=WordEmbedder(), short_k=4, event_frames=8)
        model = make_strategy("polling", llm(server), "interval_qa", hz=1.0)
        play(records[:1], "interval_qa", strategy=model, durations=durations, span="clip", memory=memory, k=64)
        last = seen[-1]
        assert sum(p["text"].startswith("Frame at") for p in last if p["type"] == "text") == 4
        assert any(p["text"].startswith("Memory of earlier events:\n[") for p in last if p["type"] == "text")
        assert memory.stats["ask_event"] >= 2 and memory.stats["ask_merge"] >= 1


# --- the streamcue replay command ----------------------------------------------------------------

def cli(*args, cache=None):
    """The command in this process (STREAMCUE_CACHE_DIR is read when a command opens its cache)."""
    return cli_run(*args, env={"STREAMCUE_CACHE_DIR": cache} if cache else None)


@pytest.mark.slow
def test_replay_command_writes_predictions_and_report_and_resumes_from_the_cache(estp, tmp_path):
    records, _, durations = estp
    qa = tmp_path / "interval_qa.jsonl"
    qa.write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    (tmp_path / "videos.jsonl").write_text(json.dumps(dict(VALID["video"], video_id=VIDEO, source="ego4d",
                                                           duration_s=durations[VIDEO])) + "\n")
    with StubLLMServer(OracleTiming(records)) as server:
        args = [qa, "--out", tmp_path / "run", "--strategy", "polling", "--poll-hz", "1", "--no-video",
                "--llm-base-url", server.base_url, "--llm-model", "scripted-vl"]
        done = cli("replay", *args, cache=tmp_path / "cache")
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / "run" / "replay_report.json").read_text())
        calls = server.completions
        assert report["endpoint"]["endpoint_calls"] == calls == report["endpoint"]["requests"] > 0
        assert report["endpoint"]["cache_hits"] == 0 and report["endpoint"]["prompt_tokens"] > 0
        assert report["kinds"]["interval_qa"]["options"] == {"hz": 1.0} and str(tmp_path) not in json.dumps(report)
        assert report["kinds"]["interval_qa"]["strategy"] == "polling" and report["k"] == 16
        again = cli("replay", *args, cache=tmp_path / "cache")  # its own finished folder: nothing to do
        assert again.returncode == 0 and server.completions == calls and "nothing to do" in again.stdout
        args[2] = tmp_path / "again"
        again = cli("replay", *args, cache=tmp_path / "cache")
        assert again.returncode == 0 and server.completions == calls  # a re-run makes no new call
        assert json.loads((tmp_path / "again" / "replay_report.json").read_text())["endpoint"]["cache_hits"] == calls
        scored = cli("evaluate", "estp-f1", "--gt", qa, "--pred", tmp_path / "run" / "predictions.jsonl")
        assert scored.returncode == 0, scored.stderr


@pytest.mark.slow
def test_replay_command_refuses_with_one_line(estp, tmp_path):
    records, _, _ = estp
    qa = tmp_path / "interval_qa.jsonl"
    qa.write_text(json.dumps(records[0]) + "\n")
    (tmp_path / "videos.jsonl").write_text(json.dumps(dict(VALID["video"], video_id=VIDEO, duration_s=4000)) + "\n")
    # no retries: a closed port is refused at once (the retries against it are test_llm.py's)
    base = ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--no-video", "--llm-retries", "0"]
    cases = [
        (["--strategy", "oracle"], 2, "unknown strategy 'oracle'"),
        (["--strategy", "turn-loop"], 2, "plays guidance records, not interval_qa"),
        (["--memory", "LRU"], 2, "unknown memory 'LRU'"),
        (["--poll-hz", "0"], 2, "polling frequency"),
        (["--fps", "nan"], 2, "--fps must be a positive number"),
        (["--fps", "1000"], 2, "--fps must be a positive number"),
        (["--kind", "guidance"], 2, "interval_qa.jsonl:1"),
        ([], 4, "cannot reach the LLM server http://127.0.0.1:9/v1 (after 0 retries)"),
    ]
    for extra, code, message in cases:
        done = cli("replay", qa, "--out", tmp_path / "run", *base, *extra)
        assert done.returncode == code and message in done.stderr, (extra, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    done = cli("replay", qa, "--out", tmp_path, *base)  # predictions.jsonl beside the input is fine, the input is not
    assert done.returncode == 4
    (tmp_path / "predictions.jsonl").write_text(json.dumps(records[0]) + "\n")
    done = cli("replay", tmp_path / "predictions.jsonl", "--out", tmp_path, *base)
    assert done.returncode == 2 and "refusing to overwrite an input" in done.stderr
    assert json.loads((tmp_path / "predictions.jsonl").read_text()) == records[0]
    (tmp_path / "hints.json").write_text("[1, 2]")
    done = cli("replay", qa, "--out", tmp_path / "run", "--strategy", "polling", "--mistake-hints",
               tmp_path / "hints.json", *base)
    assert done.returncode == 2 and "--mistake-hints is for --strategy turn-loop" in done.stderr
    done = cli("replay", tmp_path / "missing.jsonl", "--out", tmp_path / "run", *base)
    assert done.returncode == 2 and "no such records file" in done.stderr


@pytest.mark.embedding
def test_oasis_retrieves_the_event_the_question_is_about_with_minilm():
    """Real sentence embeddings (packaged all-MiniLM-L6-v2): the question finds its event among others."""
    pytest.importorskip("sentence_transformers")
    scenes = [(0, "The person chops an onion on a wooden board."),
              (16, "The person washes plates and a pan in the sink."),
              (32, "The person waters the plants on the balcony."),
              (48, "The person ties their shoes by the door.")]

    def respond(body):
        if "keep the memory" not in system(body):
            return json.dumps({"answer": "no"})
        times = [float(t) for t in re.findall(r"Frame at ([\d.]+) s", user_text(body))]
        if not times:  # a merge: keep both children's sentences
            return json.dumps({"text": " ".join(re.findall(r"\] (.*)", user_text(body)))})
        return json.dumps({"text": next(text for start, text in reversed(scenes) if times[0] >= start)})

    with StubLLMServer(respond) as server:
        memory = OasisMemory(llm(server), short_k=4, event_frames=16, k_f=1, weight=1.0)
        frames = [Frame(i, float(i)) for i in range(64 + 4)]
        _, context = memory.view(frames, 8, 67.0, "Where did I wash the dishes?", [])
        assert memory.stats["ask_event"] == 4 and memory.stats["ask_merge"] == 3
        assert context.count("\n") == 0 and "sink" in context and "onion" not in context


@pytest.mark.slow
def test_replay_command_turn_loop_with_livecook_mistake_summaries(tmp_path):
    (tmp_path / "guidance.jsonl").write_text(json.dumps(VALID["guidance"]) + "\n")
    (tmp_path / "videos.jsonl").write_text(json.dumps(VALID["video"]) + "\n")
    (tmp_path / "summaries.jsonl").write_text(json.dumps(VALID["mistake_summary"]) + "\n")
    with StubLLMServer(GuidanceOracle(VALID["guidance"])) as server:
        done = cli("replay", tmp_path / "guidance.jsonl", "--out", tmp_path / "run", "--strategy", "turn-loop",
                   "--mistake-hints", tmp_path / "summaries.jsonl", "--no-video", "--llm-base-url", server.base_url,
                   "--llm-model", "scripted-vl", cache=tmp_path / "cache")
        assert done.returncode == 0, done.stderr
        mistake_prompts = [user_text(b) for b in server.requests if "made a mistake" in system(b)]
        assert mistake_prompts and all("Typical mistakes for this instruction: Too little water." in p
                                       for p in mistake_prompts)
    events = json.loads((tmp_path / "run" / "predictions.jsonl").read_text())["events"]
    validate({"video_id": "v1", "events": events}, "guidance_prediction")
    assert [(e["type"], e.get("plan_index")) for e in events] == [
        ("instruction", 0), ("mistake", 0), ("success", 0), ("finish", None)]
