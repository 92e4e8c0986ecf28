"""OVO-Bench accuracy (Li et al., 2025, Sec. 4.1; the official ``utils/OVOBenchScore.py``).

Each backward and real-time question scores 1 or 0 (:mod:`streamcue.metrics.choice_rules`);
each forward probe scores 1 or 0 and counts once: a forward task's accuracy is the mean over
all its probes pooled, not over items. A task's accuracy is the mean over its scored entries;
a group's (backward, realtime, forward) is the mean of its tasks' accuracies; ``total`` follows
the config's ``total``: ``groups`` (v2's default), the mean of the group averages present, what
score.py prints at commit c34093f (the three shipped result folders reproduce it), or ``tasks``,
the mean of all task accuracies, what commit 19677d2 printed (GPT 59.38 vs 62.19).

Predictions are streamcue's ``mc_question_prediction`` / ``active_item_prediction`` records, an
OVO-Bench results folder (``--pred-format ovo-results``: one model's ``*.json`` files, read as the
official ``score.py`` reads them) or lmms-eval sample logs (``--pred-format lmms-eval``:
:func:`lmms_entry` says what is assumed of their lines). The last two may be scored without the
records (``gt_path`` None): their own gold answers are then used, and the report says so.

>>> report = evaluate("out/ovo", "results/GPT", load_config("ovo_bench"), "ovo-results")  # doctest: +SKIP
>>> report["official_figures"]["total_avg"]                                               # doctest: +SKIP

``rules=official`` scores what the official scorer would: every entry of an OVO results folder
(a duplicated id counts each time, as there), the file's gold letters, items without a
prediction left out. ``rules=lmms-eval`` is lmms-eval's copy of the scorer: the same, except that
forward probes without a response are skipped, not counted wrong. ``rules=strict`` scores every
ground-truth item exactly once (the first entry of a duplicated id; a missing one is wrong)
against the records' gold answers, and extracts the chosen letter, count or yes/no first.

Prediction problems (:data:`~streamcue.metrics.bench_readers.PROBLEMS`: responses without a probe
index, a probe out of range or answered twice, a prediction of the wrong kind, answers given as
objects, gold letters that differ from the records') are counted and named in the report's
``problems`` and ``warnings`` (shown on the terminal); under ``rules=strict`` each is an error.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.io import iter_jsonl, read_json, write_json
from streamcue.metrics.bench_readers import (Problems, check_pred_format, export_name, letter, read_ground_truth,
                                             read_predictions, RunPlayed)
from streamcue.metrics.bootstrap import Rows, Statistic, Totals, mean_of_present, pooled
from streamcue.metrics.choice_rules import as_text, choice_letter, is_object_answer, stated_number, stated_yes_no
from streamcue.metrics.registry import Metric
from streamcue.metrics.scoring import make_report

__all__ = ["Entry", "score_entry", "aggregate", "units", "rows", "GROUP_TASKS", "percent", "official_figures",
           "evaluate", "run", "example_predictions", "lmms_entry", "PRED_FORMATS", "export", "OvoBenchConfig",
           "ovo_choice_correct", "ovo_count_correct", "ovo_yes_no_correct"]

GROUP_TASKS = {
    "backward": ("EPM", "ASI", "HLD"),
    "realtime": ("STU", "OJR", "ATR", "ACR", "OCR", "FPD"),
    "forward": ("REC", "SSR", "CRR"),
}


def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """One unit per scored item: ``(task, correct, scored)`` (a forward item's probes pooled)."""
    return [(item["task"], float(item["correct"]), float(item["scored"]))] if item["scored"] else []


def rows(keys: Sequence[str], config: Mapping[str, Any]) -> tuple[Rows, Rows]:
    """The figures of the module docstring as statistics of the units' totals: each task's accuracy, each group's
    mean of its tasks present, and ``total`` by the config's ``total`` rule (``aggregate`` computes the report's
    figures with the same statistics)."""
    task = {k: ((k,), pooled((k,))) for names in GROUP_TASKS.values() for k in names if k in keys}
    group: Rows = {}
    for name, names in GROUP_TASKS.items():
        mine = tuple(k for k in names if k in keys)
        if mine:
            group[name] = (mine, mean_of_present(mine))
    if group:
        group["total"] = (tuple(k for mine, _ in group.values() for k in mine),
                          _total(config.get("total", "groups"), [stat for _, stat in group.values()], keys))
    return task, group


def _total(rule: str, groups: Sequence[Statistic], keys: Sequence[str]) -> Statistic:
    """``tasks``: the mean of all task accuracies present (in ``keys``' order); ``groups``: the mean of the group
    averages present."""
    if rule == "tasks":
        return mean_of_present(keys)

    def statistic(totals: Totals) -> float | None:
        values = [v for v in (s(totals) for s in groups) if v is not None]
        return sum(values) / len(values) if values else None
    return statistic


@dataclass(frozen=True)
class OvoBenchConfig:
    """OVO-Bench scoring rules: ``official`` (the leaderboard's, quirks included), ``strict`` or ``lmms-eval``
    (official, but forward probes without a response are skipped); ``total``: ``groups`` or ``tasks``.

    See :mod:`streamcue.metrics.ovo_bench` and :mod:`streamcue.metrics.choice_rules`.
    """

    version: int = 1
    rules: str = "official"
    total: str = "groups"

    def __post_init__(self) -> None:
        if self.rules not in ("official", "strict", "lmms-eval"):
            raise ConfigError(f"ovo-bench rules must be official, strict or lmms-eval, got {self.rules!r}")
        if self.total not in ("groups", "tasks"):
            raise ConfigError(f"ovo-bench total must be groups (mean of the three group averages, commit c34093f) "
                              f"or tasks (mean of the task accuracies, commit 19677d2), got {self.total!r}")


def ovo_choice_correct(response: Any, letter: str, n_options: int, rules: str = "official") -> bool:
    if rules == "strict":
        return choice_letter(response, n_options) == letter
    text = as_text(response)
    return bool(text) and letter in text


def ovo_count_correct(response: Any, count: str, rules: str = "official") -> bool:
    if rules == "strict":
        return stated_number(response) == int(count)
    text = as_text(response)
    return text is not None and "".join(re.findall(r"\d+", text)) == count


def ovo_yes_no_correct(response: Any, expected: str, rules: str = "official") -> bool:
    if rules == "strict":
        return stated_yes_no(response) == expected
    text = as_text(response)
    if text is None:
        return False
    return text == expected[0] or expected in text


#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("ovo-bench", "mc_question", "ovo_bench", higher_is_better=True, uses_judge=False,
                summary="OVO-Bench accuracy per task and group, official or strict rules (Sec. 4.1)",
                entry="streamcue.metrics.ovo_bench:run",
                config_class="streamcue.metrics.ovo_bench:OvoBenchConfig", config_latest=2,
                other_pred_formats=("ovo-results", "lmms-eval"),
                gold_pred_formats=("ovo-results", "lmms-eval"), units=units, rows=rows, option_help={
                    "--gt": "to re-score an OVO-Bench results folder or lmms-eval logs by the gold answers they "
                            "carry",
                    "--pred-format": "streamcue, ovo-results (a results folder) or lmms-eval (lmms-eval sample "
                                     "logs: a samples_*.jsonl file or a folder of them)"})


@dataclass
class Entry:
    """One scored answer: a multiple-choice response, or a forward item's responses per probe."""

    item_id: str
    task: str
    letter: str | None = None                  # multiple choice: the correct letter
    n_options: int = 4
    response: Any = None
    probes: list[tuple[str, Any]] = field(default_factory=list)  # forward: (expected, response)


def score_entry(entry: Entry, rules: str) -> list[int]:
    """1/0 per scored unit: one for a question, one per probe for a forward item.

    ``rules=lmms-eval`` leaves out forward probes without a response (lmms-eval's copy of the scorer);
    ``official`` counts them wrong.
    """
    if entry.task in GROUP_TASKS["forward"]:
        probes = [(e, r) for e, r in entry.probes if r is not None] if rules == "lmms-eval" else entry.probes
        if entry.task == "REC":
            return [int(ovo_count_correct(r, expected, rules)) for expected, r in probes]
        return [int(ovo_yes_no_correct(r, expected, rules)) for expected, r in probes]
    return [int(ovo_choice_correct(entry.response, entry.letter or "", entry.n_options, rules))]


def aggregate(entries: Iterable[Entry], rules: str,
              total: str = "groups") -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(overall, task groups, per_item)`` over the entries (fractions, not percentages).

    ``total``: ``groups``, the mean of the group averages present (score.py at c34093f), or ``tasks``,
    the mean of all task accuracies (commit 19677d2).
    """
    scored: dict[str, list[int]] = {}
    per_item: dict[str, Any] = {}
    for entry in entries:
        scores = score_entry(entry, rules)
        scored.setdefault(entry.task, []).extend(scores)
        per_item[entry.item_id] = {"task": entry.task, "correct": sum(scores), "scored": len(scores)}
    tasks = {task: {"n": len(s), "correct": sum(s), "accuracy": sum(s) / len(s)} for task, s in scored.items() if s}
    totals = Totals(list(tasks), [t["correct"] for t in tasks.values()], [t["n"] for t in tasks.values()])
    _, group_rows = rows(list(tasks), {"total": total})
    overall: dict[str, Any] = {group: group_rows[group][1](totals) if group in group_rows else None
                               for group in GROUP_TASKS}
    overall["total"] = group_rows["total"][1](totals) if "total" in group_rows else None
    overall["tasks"] = len(tasks)
    ordered = {t: tasks[t] for names in GROUP_TASKS.values() for t in names if t in tasks}
    return overall, {"task": ordered}, per_item


def percent(value: float | None) -> float | None:
    """As the official scorer prints it: a percentage with two decimals."""
    return None if value is None else float(f"{100 * value:.2f}")


def official_figures(overall: Mapping[str, Any], tasks: Mapping[str, Any]) -> dict[str, float | None]:
    """The figures in the form of ``official_scores.json``: per task and group averages, percent."""
    out: dict[str, float | None] = {task: percent(v["accuracy"]) for task, v in tasks.items()}
    for group in GROUP_TASKS:
        if overall[group] is not None:
            out[f"{group}_avg"] = percent(overall[group])
    out["total_avg"] = percent(overall["total"])
    return out


#: What a missing prediction counts as under each rule (the report and its warning say it).
MISSING_SCORED_AS = {"official": "left out, as the official scorer does", "strict": "wrong",
                     "lmms-eval": "left out, as lmms-eval does"}
#: Prediction formats besides streamcue's records: an OVO-Bench results folder, lmms-eval sample logs.
PRED_FORMATS = METRIC.other_pred_formats


def _ovo_truth_entry(record: dict[str, Any], rid: str) -> Entry:
    if "probes" in record:
        return Entry(rid, record["task"], probes=[(p["expected"], None) for p in record["probes"]])
    return Entry(rid, record["task"], letter=letter(record["answer"]), n_options=len(record["options"]))


def evaluate(gt_path: str | Path | None, pred_path: str | Path, config: Any,
             pred_format: str = "streamcue") -> dict[str, Any]:
    """Score ``pred_path`` (streamcue predictions, an OVO-Bench results folder or lmms-eval sample logs).

    ``gt_path`` is the builder's output; it may be None for a results folder or sample logs under the
    official or lmms-eval rules: the gold answers are then those in the file (the report says so).
    """
    check_pred_format("ovo-bench", pred_format, PRED_FORMATS)
    rules, total = config.rules, getattr(config, "total", "groups")
    if gt_path is None and (pred_format == "streamcue" or rules == "strict"):
        raise ConfigError("--gt is needed: streamcue predictions and rules=strict are scored against the built "
                          "records (only official or lmms-eval re-scoring of a results folder or sample logs can "
                          "take the gold answers from the file)")
    gt = read_ground_truth(gt_path, "ovo-bench") if gt_path is not None else None
    pred_path = Path(pred_path)
    problems = Problems(pred_path)
    extra: dict[str, Any] = {"rules": rules, "total_rule": total, "pred_format": pred_format,
                             "gold_source": "records" if gt is not None else "file"}
    if pred_format == "streamcue":
        assert gt is not None
        preds, duplicates = read_predictions(pred_path, gt)
        entries = [_prediction_entry(gt[rid], rid, pred, problems) for rid, pred in preds.items()]
    else:
        items = _results_items(pred_path) if pred_format == "ovo-results" else _lmms_items(pred_path)
        entries, duplicates, mismatches = _result_entries(items, gt, rules)
        extra["ground_truth_mismatches"] = mismatches
        problems.named("ground_truth_mismatches", [m["id"] for m in mismatches],
                       "scored against the records'" if rules == "strict"
                       else "the file's kept, as the official scorer reads them; rules=strict uses the records'",
                       error=False)
        for entry in entries:
            _check_entry(entry, problems)
        if gt is None:
            extra["notes"] = ["no records given (--gt): the gold answers were taken from the file, unchecked"]
    missing = sorted(set(gt) - {e.item_id for e in entries}) if gt is not None else []
    if rules == "strict":
        assert gt is not None
        first: dict[str, Entry] = {}
        for entry in entries:
            first.setdefault(entry.item_id, entry)
        entries = [first.get(rid) or _ovo_truth_entry(record, rid) for rid, record in gt.items()]
    problems.named("duplicates", sorted(set(duplicates)),
                   "the first scored" if rules == "strict" else "each counted, as the official scorer does",
                   error=pred_format == "streamcue")
    overall, groups, per_item = aggregate(entries, rules, total)
    problems.raise_if_strict(rules)
    extra["duplicates"] = sorted(set(duplicates))
    extra["official_figures"] = official_figures(overall, groups["task"])
    report = make_report("ovo-bench", config, None, overall, groups, per_item, missing)
    report.update(extra, missing_scored_as=MISSING_SCORED_AS[rules], **problems.report())
    return report


def _prediction_entry(record: dict[str, Any], rid: str, pred: Mapping[str, Any], problems: Problems) -> Entry:
    """A streamcue prediction as an entry; every problem with it counted and named in ``problems``."""
    entry = _ovo_truth_entry(record, rid)
    if entry.probes:
        if "responses" not in pred:
            problems.add("wrong_kind", rid)
            return entry
        by_probe: dict[int, Any] = {}
        for response in pred.get("responses", []):
            if "probe" not in response:
                problems.add("responses_without_probe", rid)
                continue
            index = response["probe"]
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(entry.probes):
                problems.add("probe_out_of_range", rid)
                continue
            if index in by_probe:
                problems.add("probe_answered_twice", rid)
            by_probe[index] = response.get("text")
        entry.probes = [(expected, by_probe.get(i)) for i, (expected, _) in enumerate(entry.probes)]
    elif "response" not in pred:
        problems.add("wrong_kind", rid)
    else:
        entry.response = pred.get("response")
    _check_entry(entry, problems)
    return entry


def _check_entry(entry: Entry, problems: Problems) -> None:
    """Answers no rule can read (objects): counted and named; they score as wrong."""
    said = [r for _, r in entry.probes] if entry.probes else [entry.response]
    if any(is_object_answer(r) for r in said):
        problems.add("object_answers", entry.item_id)
        entry.response = None if is_object_answer(entry.response) else entry.response
        entry.probes = [(e, None if is_object_answer(r) else r) for e, r in entry.probes]


def _results_items(folder: Path) -> list[tuple[Any, str, Path]]:
    """Every entry of every JSON file of an OVO-Bench results folder, as the official score.py reads them."""
    if not folder.is_dir():
        raise InputError("expected an OVO-Bench results folder (one model's *.json files)", file=folder)
    files = sorted(p for p in folder.glob("*.json"))
    if not files:
        raise InputError("no *.json result files", file=folder)
    items: list[tuple[Any, str, Path]] = []
    for file in files:
        data = read_json(file)
        groups = ("backward", "realtime", "forward")
        if not isinstance(data, dict) or not all(isinstance(data.get(g), list) for g in groups):
            raise InputError("expected an object with backward, realtime and forward lists", file=file)
        for group in groups:
            items += [(item, f"{group}[{n}]", file) for n, item in enumerate(data[group])]
    return items


def _lmms_items(path: Path) -> list[tuple[Any, str, Path]]:
    """lmms-eval sample logs of the ovobench tasks as OVO-Bench result entries (see :func:`lmms_entry`).

    ``path`` is one ``samples_*.jsonl`` file or a folder of them (``--log_samples`` writes one per task:
    ovo_backward, ovo_realtime, ovo_forward).
    """
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise InputError("no *.jsonl sample logs in the folder", file=path)
    items: list[tuple[Any, str, Path]] = []
    for file in files:
        for line, sample in iter_jsonl(file):
            items.append((lmms_entry(sample, file, line), f"line {line}", file))
    if not items:
        raise InputError("no samples: nothing to score", file=path)
    return items


def lmms_entry(sample: Any, file: Path, line: int) -> dict[str, Any]:
    """One lmms-eval sample line as an OVO-Bench results entry.

    What is assumed of the line (lmms-eval's ``--log_samples`` output for ``lmms_eval/tasks/ovobench``):
    ``doc`` is the OVO-Bench annotation (``id``, ``task``, ``gt``, ``options``; forward: ``test_info``
    with ``count`` or ``type``); the task's ``process_results`` output is kept under its metric name,
    ``back_real_acc`` (``{id, task, question, response, ground_truth}``) or ``forward_acc`` (the doc
    with each ``test_info[i].response``), and is used when present; otherwise the answer is
    ``filtered_resps[0]`` (else ``resps[0]``): a string for a question, a list of per-probe answers for
    a forward item (a nested list's first element is taken, as ``process_results`` does).
    """
    where = {"file": file, "line": line}
    if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
        raise InputError("expected an lmms-eval sample with a doc object", field="doc", **where)
    doc = sample["doc"]
    if "id" not in doc or "task" not in doc:
        raise InputError("expected doc.id and doc.task (an OVO-Bench annotation)", field="doc", **where)
    for key in ("back_real_acc", "forward_acc"):
        if isinstance(sample.get(key), dict):
            return sample[key]
    said = sample.get("filtered_resps", sample.get("resps"))
    if isinstance(said, list) and said and isinstance(said[0], list) and doc["task"] not in GROUP_TASKS["forward"]:
        said = said[0]
    answer = said[0] if isinstance(said, list) and said else None
    if doc["task"] in GROUP_TASKS["forward"]:
        if isinstance(answer, list) and answer and isinstance(answer[0], list):
            answer = answer[0]
        test_info = doc.get("test_info")
        if not isinstance(test_info, list):
            raise InputError("expected doc.test_info, a list", field="doc.test_info", **where)
        answers = answer if isinstance(answer, list) else []
        probes = [{**p, "response": answers[i] if i < len(answers) else None} if isinstance(p, dict) else p
                  for i, p in enumerate(test_info)]
        return {"id": doc["id"], "task": doc["task"], "test_info": probes}
    gt = doc.get("gt")
    if isinstance(gt, bool) or not isinstance(gt, int):
        raise InputError(f"expected doc.gt, an option index, got {gt!r}", field="doc.gt", **where)
    return {"id": doc["id"], "task": doc["task"], "response": answer, "ground_truth": letter(gt)}


def _result_entries(items: list[tuple[Any, str, Path]], gt: Mapping[str, dict[str, Any]] | None,
                    rules: str) -> tuple[list[Entry], list[str], list[dict[str, Any]]]:
    entries: list[Entry] = []
    counts: Counter = Counter()
    mismatches: list[dict[str, Any]] = []
    for item, where, file in items:
        entry = _ovo_result_entry(item, where, file, gt, mismatches, rules)
        counts[entry.item_id] += 1
        entries.append(entry)
    return entries, [rid for rid, c in counts.items() if c > 1], mismatches


def _ovo_result_entry(item: Any, where: str, file: Path, gt: Mapping[str, dict[str, Any]] | None,
                      mismatches: list[dict[str, Any]], rules: str) -> Entry:
    if not isinstance(item, dict) or "id" not in item or "task" not in item:
        raise InputError("expected an object with id and task", file=file, record=where)
    rid = f"ovo-{item['id']}"
    task = item["task"]
    record = gt.get(rid) if gt is not None else None
    if gt is not None and record is None:
        raise InputError(f"unknown id {item['id']!r} (not in the ground truth)", file=file, record=where, field="id")
    if record is not None and task != record["task"]:
        raise InputError(f"task {task!r} but the ground truth says {record['task']}", file=file,
                         record=f"id={item['id']}", field="task")
    if task not in {t for names in GROUP_TASKS.values() for t in names}:
        raise InputError(f"unknown task {task!r}", file=file, record=f"id={item['id']}", field="task")
    if task in GROUP_TASKS["forward"]:
        test_info = item.get("test_info")
        if not isinstance(test_info, list):
            raise InputError("expected a test_info list", file=file, record=f"id={item['id']}", field="test_info")
        probes = []
        for i, probe in enumerate(test_info):
            if not isinstance(probe, dict):
                raise InputError("expected an object", file=file, record=f"id={item['id']}", field=f"test_info[{i}]")
            expected = str(probe.get("count")) if task == "REC" else ("Yes" if probe.get("type") == 1 else "No")
            if record is not None:
                theirs = record["probes"][i]["expected"] if i < len(record["probes"]) else None
                if theirs != expected:
                    mismatches.append({"id": rid, "file": str(file), "field": f"test_info[{i}]",
                                       "file_gold": expected, "records_gold": theirs})
                    if rules == "strict" and theirs is not None:
                        expected = theirs
            probes.append((expected, probe.get("response")))
        return Entry(rid, task, probes=probes)
    given = item.get("ground_truth")
    n_options = len(record["options"]) if record is not None else 26
    if record is not None and given != letter(record["answer"]):
        mismatches.append({"id": rid, "file": str(file), "field": "ground_truth", "file_gold": given,
                           "records_gold": letter(record["answer"])})
        if rules == "strict":
            given = letter(record["answer"])
    if not isinstance(given, str) or not given:
        raise InputError(f"expected the correct letter, got {given!r}", file=file, record=f"id={item['id']}",
                         field="ground_truth")
    return Entry(rid, task, letter=given, n_options=n_options, response=item.get("response"))


def run(gt: str | Path, pred: str | Path, config: Any, context: Any) -> dict[str, Any]:
    """Entry point of ``ovo-bench`` (see :mod:`streamcue.metrics.registry`)."""
    return evaluate(gt, pred, config, context.pred_format)


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tiny predictions for ground-truth ``mc_question`` records (the contract tests score them): every other
    answer right."""
    return [{"question_id": q["question_id"], "response": q["options"][i % 2]} for i, q in enumerate(gt)]


# ------------------------------------------------------------------------------------------ export

#: The model name an export uses by default: ``score.py`` scores only the model names it lists (any other stops it
#: with "Unsupported model"), all of them by the one offline rule; GPT is one of them.
SCORER_MODEL = "GPT"


def export(played: RunPlayed, out: Path, model: str | None = None) -> dict[str, Any]:
    """Write the run ``played`` (a run folder read by :func:`~streamcue.metrics.bench_readers.read_run`) as an OVO-Bench
    results folder: ``out/<MODEL>/<MODEL>_<TASK>_offline.json``.

    Each file holds ``backward``, ``realtime`` and ``forward`` lists, entries as the official inference writes
    them: ``id``, ``video``, ``task``, the question, and ``response`` (the model's raw answer) with
    ``ground_truth`` (the gold letter), or for a forward item ``test_info`` (per probe ``realtime``, ``count``
    (REC) or ``type`` (1: yes), ``response``). Records without a prediction are left out, as the official scorer
    leaves them. ``model`` names the folder and files (default :data:`SCORER_MODEL`, so that the printed
    ``score.py`` command runs as printed; the run's model is ``run_model``). Returns what was written (``score.py``'s
    command line among it).
    """
    name = export_name(model) if model else SCORER_MODEL
    group_of = {task: group for group, names in GROUP_TASKS.items() for task in names}
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    left_out = []
    for rid, record in played.records.items():
        pred = played.predictions.get(rid)
        if pred is None:
            left_out.append(rid)
            continue
        entry = {"id": int(rid.removeprefix("ovo-")), "video": played.videos.get(record["video_id"], {}).get("uri"),
                 "task": record["task"], **_exported_answer(record, pred)}
        files = by_task.setdefault(record["task"], {"backward": [], "realtime": [], "forward": []})
        files[group_of[record["task"]]].append(entry)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for task, data in by_task.items():
        write_json(folder / f"{name}_{task}_offline.json", data)
        written.append(f"{name}/{name}_{task}_offline.json")
    return {"format": "ovo-results", "model": name, "run_model": played.results.get("model", {}).get("name"),
            "files": sorted(written),
            "entries": sum(len(v) for d in by_task.values() for v in d.values()), "left_out": sorted(left_out),
            "official_command": f"python score.py --mode offline --model {name} --result_dir {out}"}


def _exported_answer(record: Mapping[str, Any], pred: Mapping[str, Any]) -> dict[str, Any]:
    """The question and the answer of one entry of an OVO-Bench results file."""
    if "probes" not in record:
        return {"question": record["question"], "response": pred.get("response"),
                "ground_truth": letter(record["answer"])}
    said: dict[int, Any] = {}
    for response in pred.get("responses", []):
        if isinstance(response.get("probe"), int):
            said[response["probe"]] = response.get("text")  # the last answer of a probe kept, as the scorer does
    rec = record["task"] == "REC"
    gold = [{"count": int(p["expected"])} if rec else {"type": int(p["expected"] == "Yes")} for p in record["probes"]]
    probes = [{"realtime": p["t_s"], **gold[i], "response": said.get(i)} for i, p in enumerate(record["probes"])]
    text = {"activity": record.get("activity")} if rec else {"question": record.get("question")}
    return {**text, "test_info": probes}
