"""StreamBench end to end: the builder on the real file, the judge's parser, golden scores, a real LLM judge.

The judge runs against the real OpenAI-compatible stub server on 127.0.0.1; its responder reads only
what a judge is sent (the question, the correct and the predicted answer in the prompt), never the
ground-truth files.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from conftest import SHARED_DATA

from streamcue.dataset_builders import BUILDERS, run_builder
from streamcue.dataset_builders.streambench import CLASSES, Config
from streamcue.errors import ConfigError, InputError
from streamcue.io import read_jsonl, write_jsonl
from streamcue.metrics import evaluate
from streamcue.metrics.streambench import StreamBenchVerdict, parse_judge_answer, score_streambench
from streamcue.metrics.text import token_f1
from streamcue.prompts import load_prompt
from streamcue.schemas import validate_file
from streamcue.testing.stub_llm import StubLLMServer, message_text

SOURCE = SHARED_DATA / "streambench" / "eval_streambench.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("streambench")
    result, report = run_builder(BUILDERS["streambench"], Config(SOURCE), out)
    return out, result, report


# --- builder -----------------------------------------------------------------------------------------------------

def test_build_on_the_real_file_counts(built):
    out, result, report = built
    details = report.details
    assert details["entries"] == 307  # video entries in the file
    assert result.counts == {"open_question": 1838, "video": 275}  # 275 distinct video files
    questions = read_jsonl(out / "open_question.jsonl")
    assert Counter(q["task"] for q in questions) == {"SM": 339, "LM": 303, "SF": 302, "OS": 299, "KG": 298, "CI": 297}
    assert set(CLASSES) == {q["task"] for q in questions}
    assert Counter(q["group"] for q in questions) == {"WebVideo": 1035, "Ego": 599, "Movie": 204}
    assert details["quirks"] == {"breakpoints_not_in_time_order": 1, "no_video_name": 107, "repeated_entry": 31,
                                 "repeated_question": 2, "untrimmed_text": 32, "video_in_two_entries": 32,
                                 "video_name_differs": 2}
    assert details["quirk_examples"]["breakpoints_not_in_time_order"] == ["#118"]
    assert details["dropped"] == {}
    validate_file(out / "open_question.jsonl", "open_question")
    videos = read_jsonl(out / "videos.jsonl")
    assert {v["source"] for v in videos} == {"streambench"} and len({v["uri"] for v in videos}) == 275


def test_records_keep_the_source_as_given(built):
    out, _, _ = built
    first = read_jsonl(out / "open_question.jsonl")[0]
    assert first == {
        "group": "Ego", "category": "Cooking", "schema_version": "1.0", "question_id": "streambench-0-0",
        "video_id": "StreamBench:Ego:0ed64065-e6a2-4b84-b703-d8f339e1b685", "benchmark": "streambench", "task": "SF",
        "question": "I put the chopped green vegetables in a bowl. Is it on the table in front of me?",
        "answer": "Yes, I can see the bowl with the chopped green vegetables is on the table in front of you.",
        "query_time_s": 28.0, "context": {"group_id": "streambench-0", "turn": 1},
        "provenance": {"builder": "streambench", "version": first["provenance"]["version"],
                       "source": "eval_streambench.json"},
        "verification": {"status": "unverified"}}
    # entry 118 asks at 15, 85, 260, 145, 190, 230 s: turns follow the stream's order, not the file's
    turns = {q["question_id"]: q["context"]["turn"] for q in read_jsonl(out / "open_question.jsonl")
             if q["context"]["group_id"] == "streambench-118"}
    assert [turns[f"streambench-118-{k}"] for k in range(6)] == [1, 2, 6, 3, 4, 5]


def test_repeated_entries_can_be_dropped(tmp_path):
    result, report = run_builder(BUILDERS["streambench"], Config(SOURCE, drop_repeated_entries=True), tmp_path)
    assert result.counts == {"open_question": 1652, "video": 275}
    assert report.details["dropped"] == {"entries": 31, "open_question": 186}


def _entry(**breakpoint_changes):
    bp = {"question": "Where is the pot?", "answer": "On the stove.", "class": "OS", "time": 12, "type": "open_ended"}
    bp.update(breakpoint_changes)
    return {"info": {"video_path": "StreamBench/Ego/a.mp4", "video_name": "a", "class_1": "Ego", "class_2": "Cooking",
                     "dataset": "streambench"}, "breakpoint": [bp]}


@pytest.mark.parametrize("data, field, words", [
    ([], None, "no video entries"),
    ({"a": 1}, None, "expected a JSON list"),
    ([_entry(**{"class": "XX"})], "breakpoint[0].class", "unknown class 'XX'"),
    ([_entry(type="multiple_choice")], "breakpoint[0].type", "expected type 'open_ended'"),
    ([_entry(answer="  ")], "breakpoint[0].answer", "empty answer"),
    ([_entry(time="soon")], "breakpoint[0].time", "expected seconds"),
    ([_entry(time=-3)], "breakpoint[0].time", "expected a time >= 0"),
    ([{**_entry(), "info": {**_entry()["info"], "dataset": "ovo"}}], "info.dataset", "not a StreamBench entry"),
    ([{**_entry(), "info": {**_entry()["info"], "video_path": "../a.mp4"}}], "info.video_path", "not relative"),
])
def test_source_checks_name_file_record_and_field(tmp_path, data, field, words):
    source = tmp_path / "eval_streambench.json"
    source.write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape(words)) as caught:
        run_builder(BUILDERS["streambench"], Config(source), tmp_path / "out")
    assert caught.value.file == source and caught.value.field == field
    assert caught.value.record == (None if field is None else "#0")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# --- the judge's answer ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("{'llama_pred': 'yes', 'score': 4}", (True, 4.0)),
    ('{"llama_pred": "no", "score": 1}', (False, 1.0)),
    ("Sure! Here is my evaluation: {'llama_pred': 'Yes', 'score': 4.8}.", (True, 4.8)),  # the prompt's own example
    ("{'llama_pred': 'no', 'score': 0} ... on second thought {'llama_pred': 'yes', 'score': 3}", (True, 3.0)),
    ("{'llama_pred': 'yes', 'score': '5'}", (True, 5.0)),
    ("llama_pred: no, score: 2", (False, 2.0)),
    ("```python\n{'llama_pred': 'no', 'score': 1}\n```", (False, 1.0)),
    ("{'llama_pred': 'maybe', 'score': 3}", None),
    ("{'llama_pred': 'yes', 'score': 7}", None),
    ("{'llama_pred': 'yes'}", None),
    ("The answers match.", None),
    ("", None),
    (None, None),
    ("{'llama_pred': 'yes', 'score': __import__('os')}", None),
    # a hostile or broken judge (issue #35): a score that is no finite number in 0..5 is no score, never its first digit
    ('{"llama_pred": "yes", "score": 1e999}', None), ("{'llama_pred': 'yes', 'score': 1e999}", None),
    ("llama_pred: yes, score: 1e999", None), ("llama_pred: yes, score: 1e5", None),
    ('{"llama_pred": "yes", "score": NaN}', None), ("llama_pred: yes, score: NaN", None),
    ('{"llama_pred": "yes", "score": "1e999"}', None), ("llama_pred: no, score: 3.5.2", None),
    ("llama_pred: yes, score: 4.8e0", (True, 4.8)), ("llama_pred: no, score: 2.", (False, 2.0)),
])
def test_parse_judge_answer(text, expected):
    assert parse_judge_answer(text) == expected


def test_the_judge_prompt_names_its_source():
    """The official judge prompt names where it comes from (its hash is pinned in tests/data/prompt_hashes.json)."""
    prompt = load_prompt("streamcue.metrics", "streambench_judge.v1")
    assert "hmxiong/StreamChat" in prompt.text and "MIT" in prompt.text


# --- golden scores ------------------------------------------------------------------------------------------------

def _q(qid, task, group="Ego"):
    return {"question_id": qid, "task": task, "group": group, "question": f"q {qid}", "answer": f"a {qid}"}


def test_golden_scores_by_hand():
    gt = {r["question_id"]: r for r in [_q("q1", "SM"), _q("q2", "SM"), _q("q7", "SM", "Movie"), _q("q3", "KG"),
                                         _q("q4", "KG"), _q("q5", "CI"), _q("q6", "CI")]}
    preds = {qid: {"question_id": qid, "response": "something"} for qid in ("q1", "q2", "q3", "q4", "q7")}
    preds["q6"] = {"question_id": "q6", "response": "   "}  # no answer; q5 has no prediction at all
    verdicts = {"q1": StreamBenchVerdict(True, 5.0, "..."), "q2": StreamBenchVerdict(False, 1.0, "..."),
                "q3": StreamBenchVerdict(True, 4.8, "..."), "q4": StreamBenchVerdict(None, None, "no idea"),
                "q7": StreamBenchVerdict(True, 3.0, "...")}
    overall, groups, per_item = score_streambench(gt, preds, verdicts)
    # SM: yes, no, yes -> 2/3; scores 5, 1, 3 -> 3.0.  KG: yes, unparseable -> 1/2; 4.8, 0 -> 2.4.  CI: 0, 0.
    assert groups["class"] == {"CI": {"n": 2, "accuracy": 0.0, "mean_score": 0.0},
                               "KG": {"n": 2, "accuracy": 0.5, "mean_score": 2.4},
                               "SM": {"n": 3, "accuracy": pytest.approx(2 / 3), "mean_score": 3.0}}
    assert groups["domain"]["Movie"] == {"n": 1, "accuracy": 1.0, "mean_score": 3.0}
    # overall: 3 yes of 7; (5 + 1 + 3 + 4.8) / 7; class means: (2/3 + 1/2 + 0) / 3 and (3 + 2.4 + 0) / 3
    assert overall == {"n": 7, "accuracy": pytest.approx(3 / 7), "mean_score": pytest.approx(13.8 / 7),
                       "class_mean_accuracy": pytest.approx(7 / 18), "class_mean_score": pytest.approx(1.8),
                       "judged": 4, "unparseable": 1, "no_answer": 1, "missing": 1}
    assert per_item["q4"] == {"task": "KG", "group": "Ego", "status": "unparseable", "yes": False, "score": 0.0,
                              "score_max": 5, "judge_answer": "no idea"}
    assert per_item["q5"]["status"] == "missing" and per_item["q6"]["status"] == "no_answer"


# --- a real LLM judge ---------------------------------------------------------------------------------------------

_FIELDS = re.compile(r"Correct Answer: (.*)\nPredicted Answer: (.*)\n\n", re.S)


def judge_responder(body):
    """A judge that reads only its prompt: yes when the answers share most words (token F1 >= 0.5), score 5 * F1,
    answered as the official judge does (a Python dict in text); it rambles when the prediction says so."""
    correct, predicted = _FIELDS.search(message_text(body["messages"][-1])).groups()
    if "RAMBLE" in predicted:
        return "Both answers talk about a kitchen, so I would say they are somewhat related."
    f1 = token_f1(correct, predicted)
    return f"{{'llama_pred': '{'yes' if f1 >= 0.5 else 'no'}', 'score': {round(5 * f1)}}}"


@pytest.fixture(scope="module")
def judge():
    with StubLLMServer(judge_responder) as server:
        yield server


def _score(built, tmp_path, predictions, judge, **options):
    write_jsonl(tmp_path / "pred.jsonl", predictions)
    return evaluate("streambench", built[0] / "open_question.jsonl", tmp_path / "pred.jsonl",
                    judge_options={"base_url": judge.base_url, "model": "stub-judge", **options})


@pytest.mark.slow
@pytest.mark.llm_server
def test_a_blind_baseline_scores_nothing_and_the_reference_answers_score_full(built, tmp_path, judge):
    questions = read_jsonl(built[0] / "open_question.jsonl")
    blind = _score(built, tmp_path, [{"question_id": q["question_id"], "response": "I cannot see the video."}
                                     for q in questions], judge, structured="none")
    # No blind answer shares half its words with a reference (all no); a few share a word or two (score 1 or 2).
    assert blind["overall"]["n"] == 1838 and blind["overall"]["accuracy"] == 0.0
    assert blind["overall"]["mean_score"] == pytest.approx(0.1746, abs=1e-4) and blind["overall"]["unparseable"] == 0
    # each distinct (question, reference, response) is judged once: the 31 repeated entries (186 questions) and 7
    # questions that another video asks with the same reference answer are not sent twice
    assert blind["judge"]["distinct"] == 1645 and blind["judge"]["calls"] == 1645
    assert all(c["accuracy"] == 0.0 for c in blind["groups"]["class"].values())
    oracle = _score(built, tmp_path, [{"question_id": q["question_id"], "response": q["answer"]}
                                      for q in questions[:60]], judge)
    first60 = {q["question_id"] for q in questions[:60]}
    judged = {k: v for k, v in oracle["per_item"].items() if k in first60}
    assert all(v["yes"] and v["score"] == 5.0 for v in judged.values())
    assert oracle["overall"]["judged"] == 60 and oracle["overall"]["missing"] == 1838 - 60
    assert oracle["overall"]["accuracy"] == pytest.approx(60 / 1838)


@pytest.mark.llm_server
def test_the_judge_is_cached_and_an_unparseable_answer_is_counted(built, tmp_path, judge):
    questions = read_jsonl(built[0] / "open_question.jsonl")[:6]
    write_jsonl(tmp_path / "gt.jsonl", questions)
    preds = [{"question_id": q["question_id"], "response": q["answer"] if i % 2 else "RAMBLE on"}
             for i, q in enumerate(questions)]
    write_jsonl(tmp_path / "pred.jsonl", preds)
    options = {"base_url": judge.base_url, "model": "stub-judge", "structured": "none"}
    before = judge.completions
    report = evaluate("streambench", tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", judge_options=options)
    assert judge.completions - before == 6
    assert report["overall"]["unparseable"] == 3 and report["overall"]["accuracy"] == 0.5
    assert report["judge_unparseable"] == [q["question_id"] for q in questions[::2]]
    assert report["per_item"][questions[0]["question_id"]]["judge_answer"].startswith("Both answers")
    assert report["judge"]["prompt"].startswith("streambench_judge.v1@")
    assert report["config_version"] == "streambench.v1"
    again = evaluate("streambench", tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", judge_options=options)
    assert judge.completions - before == 6 and again["judge"]["cache_hits"] == 6  # cached: no new call
    assert again["overall"] == report["overall"]


@pytest.mark.llm_server
def test_the_judge_gets_the_official_messages(built, tmp_path, judge):
    question = read_jsonl(built[0] / "open_question.jsonl")[0]
    _score(built, tmp_path, [{"question_id": question["question_id"], "response": "A bowl."}], judge)
    system, user = judge.requests[-1]["messages"]
    assert system["role"] == "system" and system["content"].startswith("You are an intelligent chatbot")
    assert user["content"] == (
        "Please evaluate the following video-based question-answer pair:\n\n"
        f"Question: {question['question']}\nCorrect Answer: {question['answer']}\nPredicted Answer: A bowl.\n\n"
        "Provide your evaluation only as a yes/no and score where the score is an integer value between 0 and 5, "
        "with 5 indicating the highest meaningful match. Please generate the response in the form of a Python "
        "dictionary string with keys 'llama_pred' and 'score', where value of 'llama_pred' is  a string of 'yes' or "
        "'no' and value of 'score' is in INTEGER, not STRING.DO NOT PROVIDE ANY OTHER OUTPUT TEXT OR EXPLANATION. "
        "Only provide the Python dictionary string. For example, your response should look like this: "
        "{'llama_pred': 'yes', 'score': 4.8}.")


def test_another_judge_is_refused(built, tmp_path):
    write_jsonl(tmp_path / "pred.jsonl", [])
    with pytest.raises(ConfigError, match="judge streambench"):
        evaluate("streambench", built[0] / "open_question.jsonl", tmp_path / "pred.jsonl", judge="token-f1")


# --- protocol (loaders/protocols/streambench.py, on the replay engine's protocol interface) -------------------------

NOTION = "DO NOT OUTPUT ANY EXPLANATORY TEXT THAT IS UNCERTAIN ABOUT THE CURRENT QUESTION."
MEMORY = ("\n    Based on the current user's question, the most relevant historical contextual conversation records "
          "are: \"\n{}\n\".\n    \n")


def test_the_protocol_asks_each_question_at_its_time_after_the_earlier_turns(built):
    """The official prompt set (the default): StreamChat's instruction line after the question and, once the video
    has earlier turns, its memory sentence before it (every earlier turn, own or gold answers); one plain turn."""
    from streamcue.loaders import protocols
    from streamcue.loaders.protocols.streambench import PROTOCOL, StreamBench
    from streamcue.schemas import validate

    questions = [q for q in read_jsonl(built[0] / "open_question.jsonl") if q["context"]["group_id"] == "streambench-0"]
    third = questions[2]
    groups = {"streambench-0": questions}
    own = protocols.Context(history="own", groups=groups, own={questions[0]["question_id"]: "Yes, it is.",
                                                               questions[1]["question_id"]: "On the shelf."})
    assert PROTOCOL.prompt_set == "official" and PROTOCOL.complete_prompts
    (first,) = PROTOCOL.turns(questions[0], own)
    assert first.text == questions[0]["question"] + NOTION and first.dialogue == ()
    (turn,) = PROTOCOL.turns(third, own)
    memories = (f"[|User|]: {questions[0]['question'].strip()}; [|AI|]: Yes, it is.\n"
                f"[|User|]: {questions[1]['question'].strip()}; [|AI|]: On the shelf.")
    assert turn.text == MEMORY.format(memories) + "From which ingredient is sesame oil extracted?" + NOTION
    assert (turn.t_s, turn.form, turn.role, turn.prompt) == (88.0, "open", "user", "streambench_official_question.v1")
    assert turn.plain is not None and turn.plain("raw  text") == "raw  text" and turn.dialogue == ()
    (gold,) = PROTOCOL.turns(third, protocols.Context(history="gold", groups=groups))
    assert f"[|AI|]: {questions[0]['answer'].strip()}\n" in gold.text

    mine = StreamBench("streamcue")  # streamcue's: the question alone, earlier turns as dialogue
    (turn,) = mine.turns(third, own)
    assert (turn.t_s, turn.text, turn.form, turn.plain) == (88.0, "From which ingredient is sesame oil extracted?",
                                                           "open", None)
    assert turn.dialogue == ((28.0, "user", questions[0]["question"]), (28.0, "assistant", "Yes, it is."),
                             (54.0, "user", questions[1]["question"]), (54.0, "assistant", "On the shelf."))
    assert mine.prompts == () and PROTOCOL.with_options(prompt_set="streamcue").prompt_set == "streamcue"
    assert PROTOCOL.kinds == ("open_question",) and PROTOCOL.mode == {"open_question": "ask"}
    prediction = PROTOCOL.prediction(third, [{"t_s": 88.0, "text": "Sesame seeds.", "turn": 0}])
    assert prediction == {"question_id": third["question_id"], "response": "Sesame seeds.", "t_s": 88.0}
    silent = PROTOCOL.prediction(third, [])
    assert silent["response"] is None
    for p in (prediction, silent):
        validate(p, "open_question_prediction")


def test_the_official_prompts_name_their_source():
    from streamcue.loaders.protocols.streambench import OFFICIAL_PROMPTS

    for name in OFFICIAL_PROMPTS:
        text = load_prompt("streamcue.loaders", name).text
        head = "# official prompt of hmxiong/StreamChat, commit f8bcd22ef68cb69f59bcae29ed9fe93f75c077be"
        assert text.startswith(head)
        assert "\n---\n" in text


@pytest.mark.slow
@pytest.mark.llm_server
def test_a_run_sends_the_official_text_alone_and_its_tables_give_accuracy_and_the_score(built, tmp_path):
    """``streamcue run streambench`` (first video, six questions) against the stub server: each question goes as
    StreamChat's text alone (one user message: no system prompt, no response format), later ones with the
    model's own earlier answers; the run's group rows (the metric's own units and rows) give the report's accuracy
    and 0-5 score."""
    import subprocess
    import sys

    asked = []

    def model(body):
        if body["messages"][0]["role"] == "system":  # the judge, reading only its prompt: odd answers right
            odd = int(re.search(r"Answer number (\d+)", message_text(body["messages"][-1])).group(1)) % 2
            return "{'llama_pred': 'yes', 'score': 4}" if odd else "{'llama_pred': 'no', 'score': 1}"
        asked.append(body)
        return f"Answer number {len(asked)}."

    with StubLLMServer(model, model="vl") as stub:
        done = subprocess.run([sys.executable, "-m", "streamcue", "run", "streambench", str(built[0]), "--out",
                               str(tmp_path / "run"), "--limit", "6", "--no-video", "--llm-base-url", stub.base_url,
                               "--llm-model", "vl"], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "STREAMCUE_NO_PROGRESS": "1",
                                   "STREAMCUE_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert len(asked) == 6
    texts = [body["messages"][0]["content"][-1]["text"] for body in asked]
    for body in asked:
        assert [m["role"] for m in body["messages"]] == ["user"] and "response_format" not in body
    assert all(t.endswith("DO NOT OUTPUT ANY EXPLANATORY TEXT THAT IS UNCERTAIN ABOUT THE CURRENT QUESTION.")
               for t in texts)
    assert "records are" not in texts[0] and "[|AI|]: Answer number 1.\n" in texts[1]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["protocol"]["prompt_set"] == "official"
    report = results["report"]
    tables = results["tables"]
    out = {**tables["task"], **tables["group"]}
    assert report["overall"]["n"] == 6 and report["overall"]["accuracy"] == 0.5
    assert report["overall"]["mean_score"] == 2.5
    assert out["accuracy"]["estimate"] == report["overall"]["accuracy"]
    assert out["score (0-5)"]["estimate"] == report["overall"]["mean_score"]
    for name, figures in report["groups"]["class"].items():
        assert (out.get(name) or {"estimate": figures["accuracy"]})["estimate"] == figures["accuracy"]
