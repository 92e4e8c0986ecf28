"""OVO-Bench accuracy (Li et al., 2025, Sec. 4.1; the official ``utils/OVOBenchScore.py``).

Each backward and real-time question scores 1 or 0 (:mod:`streamcue.metrics.choice_rules`);
each forward probe scores 1 or 0 and counts once: a forward task's accuracy is the mean over
all its probes pooled, not over items. A task's accuracy is the mean over its scored entries;
a group's (backward, realtime, forward) is the mean of its tasks' accuracies; ``total`` is the
mean of the group averages present (the figure the official scorer prints at the pinned commit:
the three shipped result folders reproduce it, while a mean over all task accuracies does not,
e.g. GPT 59.38 vs 62.19).

Predictions are streamcue's ``mc_question_prediction`` / ``active_item_prediction`` records or an
OVO-Bench results folder (``--pred-format ovo-results``: one model's ``*.json`` files, read as the
official ``score.py`` reads them).

>>> report = evaluate("out/ovo", "results/GPT", load_config("ovo_bench"), "ovo-results")  # doctest: +SKIP
>>> report["official_figures"]["total_avg"]                                               # doctest: +SKIP

``rules=official`` scores what the official scorer would: every entry of an OVO results folder
(a duplicated id counts each time, as there), items without a prediction left out.
``rules=strict`` scores every ground-truth item exactly once (the first entry of a duplicated
id; a missing one is wrong) and extracts the chosen letter, count or yes/no before comparing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import InputError
from streamcue.io import read_json
from streamcue.metrics.bench_readers import check_pred_format, letter, read_ground_truth, read_predictions
from streamcue.metrics.choice_rules import ovo_choice_correct, ovo_count_correct, ovo_yes_no_correct
from streamcue.metrics.registry import Metric
from streamcue.metrics.scoring import make_report

__all__ = ["Entry", "score_entry", "aggregate", "GROUP_TASKS", "percent", "official_figures", "evaluate", "run",
           "example_predictions"]

#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("ovo-bench", "mc_question", "ovo_bench", higher_is_better=True, uses_judge=False,
                summary="OVO-Bench accuracy per task and group, official or strict rules (Sec. 4.1)",
                entry="streamcue.metrics.ovo_bench:run", other_pred_formats=("ovo-results",))

GROUP_TASKS = {
    "backward": ("EPM", "ASI", "HLD"),
    "realtime": ("STU", "OJR", "ATR", "ACR", "OCR", "FPD"),
    "forward": ("REC", "SSR", "CRR"),
}


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
    """1/0 per scored unit: one for a question, one per probe for a forward item."""
    if entry.task in GROUP_TASKS["forward"]:
        if entry.task == "REC":
            return [int(ovo_count_correct(r, expected, rules)) for expected, r in entry.probes]
        return [int(ovo_yes_no_correct(r, expected, rules)) for expected, r in entry.probes]
    return [int(ovo_choice_correct(entry.response, entry.letter or "", entry.n_options, rules))]


def aggregate(entries: Iterable[Entry], rules: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(overall, task groups, per_item)`` over the entries (fractions, not percentages)."""
    units: dict[str, list[int]] = {}
    per_item: dict[str, Any] = {}
    for entry in entries:
        scores = score_entry(entry, rules)
        units.setdefault(entry.task, []).extend(scores)
        per_item[entry.item_id] = {"task": entry.task, "correct": sum(scores), "scored": len(scores)}
    tasks = {task: {"n": len(s), "correct": sum(s), "accuracy": sum(s) / len(s)} for task, s in units.items() if s}
    overall: dict[str, Any] = {}
    for group, names in GROUP_TASKS.items():
        accs = [tasks[t]["accuracy"] for t in names if t in tasks]
        overall[group] = sum(accs) / len(accs) if accs else None
    present = [overall[g] for g in GROUP_TASKS if overall[g] is not None]
    overall["total"] = sum(present) / len(present) if present else None
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
MISSING_SCORED_AS = {"official": "left out, as the official scorer does", "strict": "wrong"}


def _ovo_truth_entry(record: dict[str, Any], rid: str) -> Entry:
    if "probes" in record:
        return Entry(rid, record["task"], probes=[(p["expected"], None) for p in record["probes"]])
    return Entry(rid, record["task"], letter=letter(record["answer"]), n_options=len(record["options"]))


def evaluate(gt_path: str | Path, pred_path: str | Path, config: Any, pred_format: str = "streamcue") -> dict[str, Any]:
    """Score ``pred_path`` (streamcue predictions or an OVO-Bench results folder) against the builder's ``gt_path``."""
    check_pred_format("ovo-bench", pred_format)
    gt = read_ground_truth(gt_path, "ovo-bench")
    pred_path = Path(pred_path)
    rules = config.rules
    extra: dict[str, Any] = {"rules": rules, "pred_format": pred_format}
    if pred_format == "ovo-results":
        entries, duplicates, mismatches = _ovo_results(pred_path, gt)
        extra["ground_truth_mismatches"] = mismatches
    else:
        preds, duplicates = read_predictions(pred_path, gt)
        entries = []
        for rid, pred in preds.items():
            entry = _ovo_truth_entry(gt[rid], rid)
            if entry.probes:
                by_probe = {r["probe"]: r.get("text") for r in pred.get("responses", []) if "probe" in r}
                entry.probes = [(expected, by_probe.get(i)) for i, (expected, _) in enumerate(entry.probes)]
            else:
                entry.response = pred.get("response")
            entries.append(entry)
    seen = {e.item_id for e in entries}
    missing = sorted(set(gt) - seen)
    if rules == "strict":
        first: dict[str, Entry] = {}
        for entry in entries:
            first.setdefault(entry.item_id, entry)
        entries = [first.get(rid) or _ovo_truth_entry(record, rid) for rid, record in gt.items()]
    overall, groups, per_item = aggregate(entries, rules)
    extra["duplicates"] = sorted(set(duplicates))
    extra["official_figures"] = official_figures(overall, groups["task"])
    report = make_report("ovo-bench", config, None, overall, groups, per_item, missing)
    report.update(extra, missing_scored_as=MISSING_SCORED_AS[rules])
    return report


def _ovo_results(folder: Path, gt: Mapping[str, dict[str, Any]]) -> tuple[list[Entry], list[str], list[str]]:
    """Every entry of every JSON file of an OVO-Bench results folder, as the official score.py reads them."""
    if not folder.is_dir():
        raise InputError("expected an OVO-Bench results folder (one model's *.json files)", file=folder)
    files = sorted(p for p in folder.glob("*.json"))
    if not files:
        raise InputError("no *.json result files", file=folder)
    entries: list[Entry] = []
    counts: Counter = Counter()
    mismatches: list[str] = []
    for file in files:
        data = read_json(file)
        groups = ("backward", "realtime", "forward")
        if not isinstance(data, dict) or not all(isinstance(data.get(g), list) for g in groups):
            raise InputError("expected an object with backward, realtime and forward lists", file=file)
        for group in ("backward", "realtime", "forward"):
            for n, item in enumerate(data[group]):
                entry = _ovo_result_entry(item, f"{group}[{n}]", file, gt, mismatches)
                counts[entry.item_id] += 1
                entries.append(entry)
    return entries, [rid for rid, c in counts.items() if c > 1], sorted(set(mismatches))


def _ovo_result_entry(item: Any, where: str, file: Path, gt: Mapping[str, dict[str, Any]],
                      mismatches: list[str]) -> Entry:
    if not isinstance(item, dict) or "id" not in item or "task" not in item:
        raise InputError("expected an object with id and task", file=file, record=where)
    rid = f"ovo-{item['id']}"
    record = gt.get(rid)
    if record is None:
        raise InputError(f"unknown id {item['id']!r} (not in the ground truth)", file=file, record=where, field="id")
    if item["task"] != record["task"]:
        raise InputError(f"task {item['task']!r} but the ground truth says {record['task']}", file=file,
                         record=f"id={item['id']}", field="task")
    if "probes" in record:
        test_info = item.get("test_info")
        if not isinstance(test_info, list):
            raise InputError("expected a test_info list", file=file, record=f"id={item['id']}", field="test_info")
        probes = []
        for i, probe in enumerate(test_info):
            if not isinstance(probe, dict):
                raise InputError("expected an object", file=file, record=f"id={item['id']}", field=f"test_info[{i}]")
            if record["task"] == "REC":
                expected = str(probe.get("count"))
            else:
                expected = "Yes" if probe.get("type") == 1 else "No"
            if i >= len(record["probes"]) or record["probes"][i]["expected"] != expected:
                mismatches.append(rid)
            probes.append((expected, probe.get("response")))
        return Entry(rid, record["task"], probes=probes)
    given = item.get("ground_truth")
    if given != letter(record["answer"]):
        mismatches.append(rid)
    return Entry(rid, record["task"], letter=str(given), n_options=len(record["options"]),
                           response=item.get("response"))


def run(gt: str | Path, pred: str | Path, config: Any, context: Any) -> dict[str, Any]:
    """Entry point of ``ovo-bench`` (see :mod:`streamcue.metrics.registry`)."""
    return evaluate(gt, pred, config, context.pred_format)


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tiny predictions for ground-truth ``mc_question`` records (the contract tests score them): every other
    answer right."""
    return [{"question_id": q["question_id"], "response": q["options"][i % 2]} for i, q in enumerate(gt)]
