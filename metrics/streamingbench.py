"""StreamingBench accuracy (Lin et al., 2024, Sec. 4; the official ``src/data/count.py``).

Multiple choice (real, omni, sqa): accuracy per ``task_type`` = correct / counted, and a pooled
accuracy over every counted question (count.py's ``total`` row). Proactive Output: the ``window`` rule of
:mod:`streamcue.metrics.timing` with ``w = time_window_s`` (2 s) on the last turn of the model's dialogue
(``time_accuracy``) and, for ``answer_accuracy``, that turn also contains the ground-truth output.

``rules=official`` counts what count.py counts: a question without the model's answer, or whose
answer has no first element (``""``, ``[]``, None: count.py skips or crashes on them), is left out;
the correct letter is the one in the answered file. ``rules=strict`` counts every ground-truth
question of the subsets answered (missing and empty answers are wrong) and extracts the chosen
letter (:func:`streamcue.metrics.choice_rules.choice_letter`).

The report adds two views of the same counts. ``paper_groups``: the paper's three categories (Table 1:
real-time visual understanding, omni-source understanding, contextual understanding, where the omni
file's Misleading and Anomaly Context Understanding, SQA and Proactive Output go) and ``overall``,
each ``accuracy = correct / n`` pooled over its counted questions, a proactive item counting as
correct when its answer is (right time and output; ``answer_accuracy``). ``count_py``: per questions
file (``subset``) what count.py writes for it, ``{task: {total, correct, accuracy}}`` plus its
``total`` row (proactive: ``total, time_correct, time_accuracy, answer_correct, answer_accuracy``; the
SQA file, counted with ``--task sqa``, has no ``total`` row).

Predictions are streamcue's ``mc_question_prediction`` / ``active_item_prediction`` records or a
model's answered copy of one ``questions_*.json`` (``--pred-format streamingbench``, ``--model NAME``:
the key its answers are stored under, as count.py reads them).

>>> report = evaluate("out/sb", "real_output.json", load_config("streamingbench"), "streamingbench",
...                   model="MiniCPM-V")                                                    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.bench_sources import parse_time
from streamcue.dataset_builders.streamingbench import CONTEXTUAL, PAPER_GROUP, TASKS, iter_questions
from streamcue.errors import ConfigError, InputError
from streamcue.io import read_json, write_json
from streamcue.metrics.bench_readers import (Problems, check_pred_format, export_name, letter, read_ground_truth,
                                             read_predictions, RunPlayed)
from streamcue.metrics.bootstrap import Rows, pooled
from streamcue.metrics.choice_rules import as_text, choice_letter, first_element, is_object_answer
from streamcue.metrics.registry import Metric
from streamcue.metrics.scoring import make_report
from streamcue.metrics.timing import Emission, TimingItem, TimingSpec, Trigger, emissions_of, window_last

__all__ = ["evaluate", "run", "Tally", "PROACTIVE", "example_predictions", "export", "paper_figures",
           "count_py_figures", "count_py_task", "units", "rows", "StreamingBenchConfig",
           "streamingbench_choice_correct"]

def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """A question's unit ``(task, correct, 1)``; a proactive item's answer unit and its ``<task> (time)`` unit."""
    if "correct" in item:
        return [(item["task"], float(item["correct"]), 1.0)]
    return [(item["task"], float(item["answer_correct"]), 1.0), (f"{item['task']} (time)", float(item["time_correct"]),
                                                                 1.0)]


def rows(keys: Sequence[str], config: Mapping[str, Any]) -> tuple[Rows, Rows]:
    """Each task's accuracy (a task type, a proactive task's answer, ``<task> (time)`` its time); the group rows are
    the paper's categories and ``overall`` as :func:`paper_figures` (pooled over the questions; a proactive item by
    its answer), then ``proactive answer`` and ``proactive time`` pooled over the proactive items."""
    category = {task: "contextual understanding" if task in CONTEXTUAL else PAPER_GROUP[group]
                for group, tasks in TASKS.items() for task in tasks}
    answers = [k for k in keys if not k.endswith(" (time)")]
    groups = {name: tuple(k for k in answers if category.get(k) == name)
              for name in dict.fromkeys(PAPER_GROUP.values())}
    groups["overall"] = tuple(answers)
    groups["proactive time"] = tuple(k for k in keys if k.endswith(" (time)"))
    groups["proactive answer"] = tuple(k.removesuffix(" (time)") for k in groups["proactive time"])
    task = {k: ((k,), pooled((k,))) for k in keys}
    return task, {name: (mine, pooled(mine)) for name, mine in groups.items() if mine}


@dataclass(frozen=True)
class StreamingBenchConfig:
    """StreamingBench scoring rules and the proactive time window (count.py: 2 s either side)."""

    version: int = 1
    rules: str = "official"
    time_window_s: float = 2.0

    def __post_init__(self) -> None:
        if self.rules not in ("official", "strict"):
            raise ConfigError(f"streamingbench rules must be official or strict, got {self.rules!r}")
        if isinstance(self.time_window_s, bool) or not isinstance(self.time_window_s, (int, float)) \
                or not 0 <= self.time_window_s < float("inf"):
            raise ConfigError(f"streamingbench time_window_s must be a number >= 0, got {self.time_window_s!r}")


def streamingbench_choice_correct(answer: Any, letter: str, n_options: int, rules: str = "official") -> bool:
    if rules == "strict":
        return choice_letter(answer, n_options) == letter
    return first_element(answer) == letter


#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("streamingbench", "mc_question", "streamingbench", higher_is_better=True, uses_judge=False,
                summary="StreamingBench accuracy per task type; proactive time and answer accuracy",
                entry="streamcue.metrics.streamingbench:run",
                config_class="streamcue.metrics.streamingbench:StreamingBenchConfig", config_latest=1,
                other_pred_formats=("streamingbench",),
                keyed_pred_formats=("streamingbench",), units=units, rows=rows,
                read_choice=lambda raw, n: first_element(raw),
                option_help={"--pred-format": "streamcue or streamingbench (an answered questions file)"})

PROACTIVE = "Proactive Output"


def _timing_items(gt: Path, pred: Path, config: Any) -> dict[str, TimingItem]:
    """The proactive items for ``--timing-rule``: the gold output at its time as the trigger, the model's turns."""
    records = read_ground_truth(gt, "streamingbench")
    preds, _ = read_predictions(pred, records)
    return {rid: TimingItem((Trigger(r["target"]["t_s"], r["target"]["text"], asked_s=r["query_time_s"]),),
                            emissions_of(preds.get(rid)), r["task"], rid in preds)
            for rid, r in records.items() if "target" in r}


#: Its own timing rule and the items any rule reads (``streamcue evaluate streamingbench --timing-rule NAME``).
TIMING = TimingSpec("window", lambda c: {"window_s": c.time_window_s},
                    lambda gt, pred, config: _timing_items(gt, pred, config), group="task",
                    notes=("--timing-rule reads streamcue predictions of the proactive items only",))


class Tally:
    """Counted and correct answers per task type."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, int]] = {}
        self.per_item: dict[str, dict[str, Any]] = {}

    def choice(self, rid: str, task: str, correct: bool) -> None:
        t = self.tasks.setdefault(task, {"n": 0, "correct": 0})
        t["n"] += 1
        t["correct"] += int(correct)
        self.per_item[rid] = {"task": task, "correct": int(correct)}

    def proactive(self, rid: str, task: str, time_ok: bool, answer_ok: bool) -> None:
        t = self.tasks.setdefault(task, {"n": 0, "time_correct": 0, "answer_correct": 0})
        t["n"] += 1
        t["time_correct"] += int(time_ok)
        t["answer_correct"] += int(time_ok and answer_ok)
        self.per_item[rid] = {"task": task, "time_correct": int(time_ok), "answer_correct": int(time_ok and answer_ok)}

    def summary(self) -> tuple[dict[str, Any], dict[str, Any]]:
        groups: dict[str, dict[str, Any]] = {}
        n = correct = 0
        pro = {"n": 0, "time_correct": 0, "answer_correct": 0}
        for task, t in sorted(self.tasks.items()):
            if "correct" in t:
                groups[task] = {**t, "accuracy": t["correct"] / t["n"]}
                n, correct = n + t["n"], correct + t["correct"]
            else:
                groups[task] = {**t, "time_accuracy": t["time_correct"] / t["n"],
                                "answer_accuracy": t["answer_correct"] / t["n"]}
                for key in pro:
                    pro[key] += t[key]
        overall: dict[str, Any] = {"n": n, "accuracy": correct / n if n else None}
        if pro["n"]:
            overall.update(proactive_n=pro["n"], time_accuracy=pro["time_correct"] / pro["n"],
                           answer_accuracy=pro["answer_correct"] / pro["n"])
        return overall, {"task_type": groups}


def _proactive_ok(last_t: float | None, last_text: Any, record: Mapping[str, Any], window: float) -> tuple[bool, bool]:
    if last_t is None:
        return False, False
    target = record["target"]
    time_ok = window_last([Trigger(target["t_s"])], [Emission(last_t)], window).tp == 1
    text = as_text(last_text) or ""
    return time_ok, target["text"] in text


def _match_subset(data: Any, file: Path, gt: Mapping[str, dict[str, Any]]) -> tuple[str, list]:
    """The ground-truth subset whose questions file this answered file is (same positions and texts)."""
    subsets = sorted({r["subset"] for r in gt.values() if r.get("subset")})
    for subset in subsets:
        rows = list(iter_questions(data, subset, file))
        if rows and all(qid in gt and gt[qid]["question"] == q.get("question") for qid, _, _, _, q in rows):
            return subset, rows
    raise InputError(f"does not match any questions file of the ground truth (subsets: {', '.join(subsets)}); "
                     "pass the model's answered copy of one questions_*.json", file=file)


def evaluate(gt_path: str | Path, pred_path: str | Path, config: Any, pred_format: str = "streamcue",
             model: str | None = None) -> dict[str, Any]:
    """Score ``pred_path`` (streamcue predictions or an answered questions file) against the builder's ``gt_path``."""
    check_pred_format("streamingbench", pred_format)
    gt = read_ground_truth(gt_path, "streamingbench")
    pred_path = Path(pred_path)
    rules, window = config.rules, config.time_window_s
    tally = Tally()
    problems = Problems(pred_path)
    extra: dict[str, Any] = {"rules": rules, "pred_format": pred_format}
    unscored: list[str] = []  # multiple choice without a first element: left out under the official rule
    empty_dialogues: list[str] = []  # proactive answers with no turn: wrong (count.py crashes on them)
    gold_letter: dict[str, str] = {}
    if pred_format == "streamingbench":
        answers, scope, duplicates = _answered_file(pred_path, gt, model, problems, extra, gold_letter)
    else:
        answers, scope, duplicates = _streamcue_answers(pred_path, gt, problems, extra)
    for rid in list(answers):
        if "target" not in gt[rid] and is_object_answer(answers[rid]):
            problems.add("object_answers", rid)
            del answers[rid]
    problems.named("duplicates", sorted(set(duplicates)), "the first kept")
    problems.raise_if_strict(rules)
    order = {rid: i for i, rid in enumerate(gt)}
    for rid in sorted(scope, key=order.__getitem__):
        record = gt[rid]
        if rid not in answers and rules == "official":
            continue
        answer = answers.get(rid)
        if record["task"] == PROACTIVE or "target" in record:
            if _score_proactive(tally, rid, record, answer, rid in answers, pred_path, window):
                empty_dialogues.append(rid)
            continue
        correct = gold_letter.get(rid, letter(record["answer"]))
        if rules == "official" and not first_element(answer):
            unscored.append(rid)
            continue
        tally.choice(rid, record["task"], streamingbench_choice_correct(answer, correct, len(record["options"]), rules))
    overall, groups = tally.summary()
    missing = sorted(rid for rid in scope if rid not in answers)
    out = make_report("streamingbench", config, None, overall, groups, tally.per_item, missing)
    out.update(paper_groups=paper_figures(tally.per_item, gt), count_py=count_py_figures(tally.per_item, gt))
    out.update(extra, duplicates=sorted(set(duplicates)), unscored=unscored, empty_dialogues=empty_dialogues,
               missing_scored_as="left out, as count.py does" if rules == "official" else "wrong",
               **problems.report())
    return out


def _answered_file(pred_path: Path, gt: Mapping[str, Any], model: str | None, problems: Problems,
                   extra: dict[str, Any], gold_letter: dict[str, str]) -> tuple[dict[str, Any], set[str], list[str]]:
    """``(answers, ids in scope, duplicates)`` of an answered questions file (the answers under ``model``); the
    file's own gold letters go into ``gold_letter``."""
    if not model:
        raise ConfigError("--pred-format streamingbench needs --model NAME (the key each answer is stored under)")
    subset, rows = _match_subset(read_json(pred_path), pred_path, gt)
    scope = {rid for rid, r in gt.items() if r.get("subset") == subset}
    extra.update(subsets=[subset], model=model)
    answers: dict[str, Any] = {}
    mismatches = []
    for qid, _, _, _, question in rows:
        if "answer" in question:
            gold_letter[qid] = question["answer"]
            if question["answer"] != letter(gt[qid]["answer"]):
                mismatches.append(qid)
        if model in question:
            answers[qid] = question[model]
    extra["ground_truth_mismatches"] = mismatches
    problems.named("ground_truth_mismatches", mismatches, "the file's letter kept, as count.py reads it", error=False)
    if not answers:
        problems.named("no_predictions", [str(pred_path)], f"no question holds an answer under {model!r}")
    return answers, scope, []


def _streamcue_answers(pred_path: Path, gt: Mapping[str, Any], problems: Problems,
                       extra: dict[str, Any]) -> tuple[dict[str, Any], set[str], list[str]]:
    """``(answers, ids in scope, duplicates)`` of streamcue predictions: a proactive item's responses as count.py's
    ``dialog_history``."""
    preds, duplicates = read_predictions(pred_path, gt)
    if not preds:
        problems.named("no_predictions", [str(pred_path)], "nothing scored; rules=strict refuses it")
    subsets = sorted({gt[rid].get("subset") or "" for rid in preds})
    scope = {rid for rid, r in gt.items() if (r.get("subset") or "") in subsets}
    extra["subsets"] = subsets
    answers: dict[str, Any] = {}
    for rid, pred in preds.items():
        if ("responses" in pred) != ("target" in gt[rid]):
            problems.add("wrong_kind", rid)
            continue
        if "responses" in pred:
            said = [r for r in pred["responses"] if r.get("role", "assistant") == "assistant"]
            answers[rid] = {"dialog_history": [{"time": r["t_s"], "content": r.get("text")} for r in said]}
        else:
            answers[rid] = pred["response"]
    return answers, scope, duplicates


def _score_proactive(tally: Tally, rid: str, record: Mapping[str, Any], answer: Any, answered: bool,
                     pred_path: Path, window: float) -> bool:
    """Tally a proactive item by its dialogue's last turn; True when the dialogue is empty."""
    history = answer.get("dialog_history") if isinstance(answer, dict) else None
    if answered and not isinstance(history, list):
        raise InputError("a proactive answer needs a dialog_history list", file=pred_path, record=rid)
    last = history[-1] if history else None
    last_t = _time(last.get("time"), pred_path, rid) if isinstance(last, dict) else None
    time_ok, answer_ok = _proactive_ok(last_t, last.get("content") if isinstance(last, dict) else None,
                                       record, window)
    tally.proactive(rid, record["task"], time_ok, answer_ok)
    return last is None


def _paper_group(record: Mapping[str, Any]) -> str:
    if record.get("paper_group"):
        return str(record["paper_group"])
    return "contextual understanding" if record["task"] in CONTEXTUAL else PAPER_GROUP[str(record.get("group"))]


def paper_figures(per_item: Mapping[str, Mapping[str, Any]], gt: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{category: {n, correct, accuracy}}`` over the counted items, the paper's three categories then ``overall``
    (a proactive item: its ``answer_correct``)."""
    rows: dict[str, dict[str, Any]] = {}
    for rid, item in per_item.items():
        right = item["correct"] if "correct" in item else item["answer_correct"]
        for name in (_paper_group(gt[rid]), "overall"):
            row = rows.setdefault(name, {"n": 0, "correct": 0})
            row["n"] += 1
            row["correct"] += right
    order = [*dict.fromkeys(PAPER_GROUP.values()), "overall"]
    return {name: {**rows[name], "accuracy": rows[name]["correct"] / rows[name]["n"]} for name in order
            if name in rows}


def count_py_task(subset: str) -> str:
    """count.py's ``--task`` for a questions file: ``proactive`` for a proactive file, else the subset's name (the
    nested SQA file is ``sqa``; any other name is counted as real and omni are)."""
    return "proactive" if subset.split("_")[0] == "proactive" else subset


def count_py_figures(per_item: Mapping[str, Mapping[str, Any]],
                     gt: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per questions file (``subset``): count.py's stats of it (see the module docstring)."""
    files: dict[str, dict[str, dict[str, int]]] = {}
    for rid, item in per_item.items():
        subset = str(gt[rid].get("subset"))
        stats = files.setdefault(subset, {})
        keys = ("correct",) if "correct" in item else ("time_correct", "answer_correct")
        rows = (item["task"], "total") if count_py_task(subset) not in ("sqa", "proactive") else (item["task"],)
        for name in rows:
            row = stats.setdefault(name, {"total": 0, **{k: 0 for k in keys}})
            row["total"] += 1
            for key in keys:
                row[key] += item[key]
    for stats in files.values():
        for row in stats.values():
            for key in [k for k in row if k != "total"]:
                row[key.replace("correct", "accuracy")] = row[key] / row["total"]
    return files


def _time(value: Any, file: Path, rid: str) -> float:
    if isinstance(value, str):
        return parse_time(value, file, rid, "dialog_history[-1].time")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a time in seconds, got {value!r}", file=file, record=rid,
                         field="dialog_history[-1].time")
    return float(value)


def run(gt: str | Path, pred: str | Path, config: Any, context: Any) -> dict[str, Any]:
    """Entry point of ``streamingbench`` (see :mod:`streamcue.metrics.registry`)."""
    return evaluate(gt, pred, config, context.pred_format, context.model)


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tiny predictions for ground-truth ``mc_question`` records (the contract tests score them): every other
    answer right."""
    return [{"question_id": q["question_id"], "response": q["options"][i % 2]} for i, q in enumerate(gt)]


# ------------------------------------------------------------------------------------------ export

def export(played: RunPlayed, out: Path, model: str | None = None) -> dict[str, Any]:
    """Write the run ``played`` (a run folder read by :func:`~streamcue.metrics.bench_readers.read_run`) as
    StreamingBench answered question files: ``out/questions_<subset>.json``.

    Each file is in the layout of its questions file (SQA's list of lists where the ids say so), rebuilt from
    the played records (positions as in the ids, only the questions played), with the model's answer stored on
    each question under the model's name, as ``count.py`` reads it: the raw response of a multiple-choice
    question (``answer`` is the gold letter), ``{"dialog_history": [{role, content, time}]}`` (the model's
    turns) for a proactive item. An answer ``count.py`` cannot read -- a response without a first character
    (streamcue's official rule leaves it out too) or a dialogue with no turn (streamcue scores it wrong,
    count.py stops on it) -- is not written; the latter are listed in ``not_written``.
    """
    name = export_name(model or played.results.get("model", {}).get("name"))
    files: dict[str, dict[tuple[int, ...], dict[str, Any]]] = {}
    not_written = []
    for rid, record in played.records.items():
        position = tuple(int(p) for p in rid.removeprefix(f"{record['subset']}-").split("-"))
        entry = files.setdefault(record["subset"], {}).setdefault(position[:-1], {
            "video_path": played.videos.get(record["video_id"], {}).get("uri"),
            **({"time": _span_text(record["clip"])} if record.get("clip") else {}), "questions": {}})
        question = _exported_question(record)
        answer = _exported_answer(record, played.predictions.get(rid))
        if answer is not None:
            question[name] = answer
        elif "target" in record and rid in played.predictions:
            not_written.append(rid)
        entry["questions"][position[-1]] = question
    written = []
    for subset, entries in files.items():
        write_json(out / f"questions_{subset}.json", _layout(entries))
        written.append({"file": f"questions_{subset}.json", "count_py_task": count_py_task(subset),
                        "questions": sum(len(e["questions"]) for e in entries.values())})
    return {"format": "streamingbench", "model": name, "files": written, "not_written": sorted(not_written),
            "official_command": f"python count.py --model {name} --task TASK --src {out}/FILE"}


def _layout(entries: Mapping[tuple[int, ...], dict[str, Any]]) -> list[Any]:
    """The entries in file order: a flat list, or a list of lists where positions have two numbers (SQA)."""
    def entry(key: tuple[int, ...]) -> dict[str, Any]:
        item = entries[key]
        return {**item, "questions": [item["questions"][k] for k in sorted(item["questions"])]}
    if all(len(key) == 1 for key in entries):
        return [entry(key) for key in sorted(entries)]
    outer: dict[int, list[dict[str, Any]]] = {}
    for key in sorted(entries):
        outer.setdefault(key[0], []).append(entry(key))
    return [outer[i] for i in sorted(outer)]


def _clock(t_s: float, rid: str) -> str:
    """``H:MM:SS`` of a whole number of seconds (how the files write times; count.py reads whole seconds)."""
    if t_s != int(t_s):
        raise InputError(f"{t_s} s is not a whole second: count.py reads whole seconds only", record=rid)
    seconds = int(t_s)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _span_text(clip: Mapping[str, float]) -> str:
    def clock(t: float) -> str:
        return f"{int(t) // 3600}:{int(t) // 60 % 60:02d}:{int(t) % 60:02d}"
    return f"[{clock(clip['start_s'])} - {clock(clip['end_s'])}]"


def _exported_question(record: Mapping[str, Any]) -> dict[str, Any]:
    rid = str(record.get("item_id", record.get("question_id")))
    t_s = record["query_time_s"]
    question = {"task_type": record["task"], "question": record["question"],
                "time_stamp": _clock(t_s, rid) if t_s == int(t_s) else t_s,
                "required_ability": record.get("required_ability")}
    if "target" in record:
        return {**question, "ground_truth_time_stamp": _clock(record["target"]["t_s"], rid),
                "ground_truth_output": record["target"]["text"]}
    return {**question, "options": [f"{letter(i)}. {text}" for i, text in enumerate(record["options"])],
            "answer": letter(record["answer"])}


def _exported_answer(record: Mapping[str, Any], pred: Mapping[str, Any] | None) -> Any:
    """The model's answer as count.py reads it, or None when it has none count.py can read."""
    if pred is None:
        return None
    if "target" in record:
        said = [{"role": "assistant", "content": r.get("text") or "", "time": r["t_s"]}
                for r in pred.get("responses", []) if r.get("role", "assistant") == "assistant"]
        return {"dialog_history": said} if said else None
    response = pred.get("response")
    return response if first_element(response) else None
