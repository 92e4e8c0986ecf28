"""LiveCook guidance metrics (LiveCook, Sec. 3): IC-Acc, mistake precision/recall/F1, feedback fluency.

Per recording, with ground-truth events and predicted events (each ``(t_s, type, text)``, and
optionally the ``plan_index`` of the plan step the event is about) and a window ``w``
(default 15 s, i.e. a 30 s window centred on the true time). Two config versions:

**v2** (``livecook.v2.json``, the default since 2026-11-23). The paper defines IC-Acc as the
share of instructions for which "the model provides the correct instruction, the user
completes it, and the model identifies this completion" (LiveCook, Sec. 3), so a success
must be *about* the step it completes:

* **IC-Acc**: each ground-truth ``success`` event of plan step ``s`` is matched to at most one
  predicted ``success`` of the same step ``s`` with ``|t_pred - t_gt| <= w``, and each prediction
  completes at most one ground-truth success (a maximum one-to-one matching per step, see
  below). ``IC-Acc = matched ground-truth successes / ground-truth successes``, pooled over the
  set (the same denominator as v1, so the versions compare). A plan step of k parallel actions
  carries k ground-truth successes: a model acknowledges each action to score all k. The step
  of an event is its ``plan_index`` when given; otherwise the turn-based loop of the paper
  decides (:func:`plan_steps`): an event belongs to the step of the latest ``instruction``
  before it in the list (step k after the (k+1)-th instruction; before any
  instruction, to no step); in a list without any instruction the k-th success (k = 0, 1, ...)
  belongs to step k (each acknowledgement closes the current step and moves on).
* **Mistake detection**: predicted and ground-truth ``mistake`` events are matched by a
  *maximum* one-to-one matching within the window (the largest number of pairs; among those,
  the smallest total ``|t_pred - t_gt|``; ``scipy.optimize.linear_sum_assignment``). Truth
  mistakes at 10 s and 30 s with predictions at 22 s and 40 s give two true positives.

**v1** (``livecook.v1.json``, kept for comparison with earlier reports). A ground-truth success
counts as detected when *any* predicted success lies within the window, whatever step it was
for, and predictions are not consumed; mistakes are matched closest pairs first (ties: earlier
ground truth, then earlier prediction), which can miss pairs a maximum matching finds. A model
that sees nothing and says "success" every 30 s scores IC-Acc 0.979 on the 384 CaptainCook4D
recordings under v1 and 0.036 under v2 (``perf/bench_baselines.py``, asserted in
``tests/metrics/test_baselines.py``).

For both versions: ``precision = TP / predicted``, ``recall = TP / true``,
``F1 = 2PR / (P + R)``, pooled over the whole set (0 when undefined). **Feedback fluency** on
the true-positive mistake pairs only: ROUGE-L F-measure (``rouge-score``) and BERTScore F1
(``bert-score``) of the predicted feedback against the true feedback, with the number of pairs
and the BERTScore model and layer named in the report (scores from different models are not
comparable).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.io import iter_jsonl
from streamcue.metrics.bootstrap import Rows, Totals, pooled
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import make_report, mean, read_pairs
from streamcue.metrics.timing import (Emission, TimingItem, TimingSpec, Trigger, greedy_pairs, near,
                                     window_matching)

__all__ = ["Event", "ic_hits", "match_mistakes", "plan_steps", "window_matching", "ic_matches",
           "match_mistakes_maximum", "prf", "rouge_l", "higher_is_better", "evaluate_livecook", "run",
           "example_predictions", "LiveCookConfig"]

#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """A recording's units: IC-Acc ``(hits, successes)`` and the mistake counts ``(tp, predicted)``, ``(tp, true)``."""
    return [("IC-Acc", float(item["ic_acc"]) * item["successes"], float(item["successes"])),
            ("mistake precision", float(item["tp"]), float(item["predicted_mistakes"])),
            ("mistake recall", float(item["tp"]), float(item["true_mistakes"]))]


def rows(keys: Sequence[str], config: Mapping[str, Any]) -> tuple[Rows, Rows]:
    """IC-Acc and mistake precision and recall pooled over recordings, and the pooled mistake F1 (:func:`prf`)."""
    task: Rows = {k: ((k,), pooled((k,))) for k in keys}
    if "mistake precision" not in keys:
        return task, {}

    def f1(totals: Totals) -> float | None:
        tp, predicted = totals["mistake precision"]
        return prf(int(tp), int(predicted), int(totals["mistake recall"][1]))[2]
    return task, {"mistake F1": (("mistake precision",), f1)}  # n and videos counted once (it reads recall too)


@dataclass(frozen=True)
class LiveCookConfig:
    """LiveCook parameters: a prediction at t matches a ground-truth event at g when |t - g| <= window_s.

    ``success_matching``: ``any`` (v1: any predicted success in the window detects a completion)
    or ``plan_step`` (v2: a success counts only for its own plan step, one completion each).
    ``mistake_matching``: ``closest_first`` (v1, greedy) or ``maximum`` (v2, a maximum
    one-to-one matching, ties by smallest total offset). See :mod:`streamcue.metrics.livecook`.
    """

    version: int = 1
    window_s: float = 15.0
    rouge_use_stemmer: bool = True
    bertscore_num_layers: int = 4
    success_matching: str = "any"
    mistake_matching: str = "closest_first"

    def __post_init__(self) -> None:
        for name, allowed in (("success_matching", ("any", "plan_step")),
                              ("mistake_matching", ("closest_first", "maximum"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"livecook {name} must be one of {allowed}, got {getattr(self, name)!r}")


METRIC = Metric("livecook", "guidance", "livecook", higher_is_better=True, uses_judge=False,
                summary="LiveCook IC-Acc, mistake P/R/F1, ROUGE-L, BERTScore", entry="streamcue.metrics.livecook:run",
                config_class="streamcue.metrics.livecook:LiveCookConfig", config_latest=2,  # v2 since 2026-11-23
                units=units, rows=rows, option_help={
                    "--bertscore": "compute BERTScore (needs the embed extra)",
                    "--bertscore-model": "local BERTScore model folder (default: packaged MiniLM, layer 4)"})

higher_is_better = True


@dataclass(frozen=True)
class Event:
    t_s: float
    type: str
    text: str
    plan_index: int | None = None


def ic_hits(truth: Sequence[Event], predicted: Sequence[Event], window_s: float) -> list[bool]:
    """v1: for each ground-truth success, is there a predicted success (any step) within the window?"""
    times = sorted(e.t_s for e in predicted if e.type == "success")
    hits = []
    for event in (e for e in truth if e.type == "success"):
        j = bisect.bisect_left(times, event.t_s - window_s)
        hits.append(j < len(times) and times[j] <= event.t_s + window_s)
    return hits


def match_mistakes(truth: Sequence[Event], predicted: Sequence[Event], window_s: float) -> list[tuple[int, int]]:
    """v1: one-to-one closest-first matching of mistake events (:func:`streamcue.metrics.timing.greedy_pairs`; ties:
    earlier truth time, then earlier prediction): ``(truth index, prediction index)`` pairs.

    Indices refer to the positions in ``truth`` and ``predicted``.
    """
    t_idx = [i for i, e in enumerate(truth) if e.type == "mistake"]
    p_idx = [j for j, e in enumerate(predicted) if e.type == "mistake"]
    return sorted(greedy_pairs((abs(predicted[j].t_s - truth[i].t_s), truth[i].t_s, predicted[j].t_s, i, j)
                               for i in t_idx for j in p_idx if near(predicted[j].t_s, truth[i].t_s, window_s)))


def plan_steps(events: Sequence[Event]) -> list[int | None]:
    """The plan step of each event: its ``plan_index``, else the paper's turn-based loop.

    Without a ``plan_index`` an event belongs to the step of the latest instruction before it in
    the list (the first instruction opens step 0); before any instruction, to no step (None).
    In a list without instructions the k-th success belongs to step k.
    """
    has_instructions = any(e.type == "instruction" for e in events)
    steps: list[int | None] = []
    instructions = successes = 0
    for e in events:
        if e.plan_index is not None:
            steps.append(e.plan_index)
        elif has_instructions:
            steps.append(instructions if e.type == "instruction" else (instructions - 1 if instructions else None))
        else:
            steps.append(successes if e.type == "success" else None)
        instructions += e.type == "instruction"
        successes += e.type == "success"
    return steps


def ic_matches(truth: Sequence[Event], predicted: Sequence[Event], window_s: float) -> list[tuple[int, int]]:
    """v2: ``(truth index, prediction index)`` pairs of successes of the same plan step within the window.

    One maximum matching (:func:`streamcue.metrics.timing.window_matching`) per plan step; a success of no
    step matches nothing.
    """
    def by_step(events: Sequence[Event]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for i, (e, step) in enumerate(zip(events, plan_steps(events))):
            if e.type == "success" and step is not None:
                out.setdefault(step, []).append(i)
        return out

    truth_steps, pred_steps = by_step(truth), by_step(predicted)
    pairs = []
    for step, t_idx in truth_steps.items():
        p_idx = pred_steps.get(step, [])
        matched = window_matching([truth[i].t_s for i in t_idx], [predicted[j].t_s for j in p_idx], window_s)
        pairs.extend((t_idx[a], p_idx[b]) for a, b in matched)
    return sorted(pairs)


def match_mistakes_maximum(truth: Sequence[Event], predicted: Sequence[Event],
                           window_s: float) -> list[tuple[int, int]]:
    """v2: a maximum one-to-one matching of mistake events within the window
    (:func:`streamcue.metrics.timing.window_matching`)."""
    t_idx = [i for i, e in enumerate(truth) if e.type == "mistake"]
    p_idx = [j for j, e in enumerate(predicted) if e.type == "mistake"]
    matched = window_matching([truth[i].t_s for i in t_idx], [predicted[j].t_s for j in p_idx], window_s)
    return sorted((t_idx[a], p_idx[b]) for a, b in matched)


def _timing_items(gt: Path, pred: Path, config: LiveCookConfig) -> dict[str, TimingItem]:
    """Each recording for ``--timing-rule``: its mistake events as triggers, the predicted mistakes as emissions."""
    records, preds = read_pairs(gt, pred, "guidance")

    def mistakes(record: Mapping[str, Any] | None) -> list[tuple[float, str]]:
        return sorted((float(e["t_s"]), e.get("text") or "") for e in (record or {}).get("events", [])
                      if e.get("type") == "mistake")

    return {vid: TimingItem(tuple(Trigger(t, text) for t, text in mistakes(r)),
                            tuple(Emission(t, text) for t, text in mistakes(preds.get(vid))), "mistake", vid in preds)
            for vid, r in records.items()}


#: Its own timing rule (v2's mistake matching) and the items any rule reads (``--timing-rule NAME``): the mistakes.
TIMING = TimingSpec("window-maximum", lambda c: {"window_s": c.window_s},
                    lambda gt, pred, config: _timing_items(gt, pred, config), group="events",
                    notes=("re-scored under a timing rule: the mistake events only (IC-Acc and feedback fluency are "
                           "the metric's own figures)",))


def prf(tp: int, n_pred: int, n_true: int) -> tuple[float | None, float | None, float | None]:
    """Precision ``tp / n_pred``, recall ``tp / n_true`` and F1 ``2 tp / (n_pred + n_true)``.

    A ratio whose denominator is 0 is undefined and returned as None, never as 0: precision
    with no predicted mistakes, recall on a set with no true mistakes, F1 when there are
    neither. Where precision and recall are both defined, F1 is their harmonic mean.
    """
    p = tp / n_pred if n_pred else None
    r = tp / n_true if n_true else None
    return p, r, (2 * tp / (n_pred + n_true) if n_pred + n_true else None)


def rouge_l(references: Sequence[str], candidates: Sequence[str], use_stemmer: bool = True) -> list[float]:
    """ROUGE-L F-measure of each candidate against its reference (Google's rouge-score)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    return [scorer.score(ref, cand)["rougeL"].fmeasure for ref, cand in zip(references, candidates)]


def _ic_hits(truth: list, predicted: list, config: LiveCookConfig) -> list[bool]:
    """Per ground-truth success: detected? (v1: any success in the window; v2: its own step, one-to-one)."""
    if config.success_matching == "any":
        return ic_hits(truth, predicted, config.window_s)
    matched = {i for i, _ in ic_matches(truth, predicted, config.window_s)}
    return [i in matched for i, e in enumerate(truth) if e.type == "success"]


def evaluate_livecook(gt: Mapping[str, dict], preds: Mapping[str, dict], config: LiveCookConfig, *,
                      bertscore_model: str | None = None, bertscore: bool = True) -> dict:
    """IC-Acc and mistake P/R/F1 pooled over recordings; ROUGE-L and BERTScore on true positives."""
    per_item = {}
    hits_total = successes_total = tp_total = pred_total = true_total = 0
    refs: list[str] = []
    cands: list[str] = []
    for video_id, record in gt.items():
        truth = [Event(e["t_s"], e["type"], e["text"], e.get("plan_index")) for e in record["events"]]
        predicted = [Event(e["t_s"], e["type"], e["text"], e.get("plan_index"))
                     for e in preds.get(video_id, {}).get("events", [])]
        hits = _ic_hits(truth, predicted, config)
        pairs = (match_mistakes_maximum if config.mistake_matching == "maximum"
                 else match_mistakes)(truth, predicted, config.window_s)
        n_pred = sum(e.type == "mistake" for e in predicted)
        n_true = sum(e.type == "mistake" for e in truth)
        p, r, f = prf(len(pairs), n_pred, n_true)
        per_item[video_id] = {"ic_acc": mean([float(h) for h in hits]), "successes": len(hits),
                              "precision": p, "recall": r, "f1": f, "tp": len(pairs),
                              "predicted_mistakes": n_pred, "true_mistakes": n_true}
        hits_total += sum(hits)
        successes_total += len(hits)
        tp_total += len(pairs)
        pred_total += n_pred
        true_total += n_true
        refs.extend(truth[i].text for i, _ in pairs)
        cands.extend(predicted[j].text for _, j in pairs)
    p, r, f = prf(tp_total, pred_total, true_total)
    rouge = rouge_l(refs, cands, config.rouge_use_stemmer)
    overall = {
        "n": len(per_item),
        "ic_acc": hits_total / successes_total if successes_total else 0.0,
        "precision": p, "recall": r, "f1": f,
        "rouge_l": mean(rouge),
        "bertscore": None,
        "feedback_pairs": len(refs),
    }
    bert_info = None
    if bertscore:
        from streamcue.metrics.bertscore import bertscore_f1

        values, bert_info = bertscore_f1(refs, cands, bertscore_model, config.bertscore_num_layers)
        overall["bertscore"] = mean(values)
    report = make_report("livecook", config, None, overall, {}, per_item, sorted(set(gt) - set(preds)))
    report["bertscore_model"] = bert_info
    report["notes"] = _undefined_notes(pred_total, true_total)
    return report


def _undefined_notes(n_pred: int, n_true: int) -> list[str]:
    """Why a mistake score is null: its denominator is 0, so it is undefined (not 0)."""
    notes = []
    if not n_pred:
        notes.append("precision is null: no mistake was predicted (undefined, not 0)")
    if not n_true:
        notes.append("recall is null: the ground truth has no mistake (undefined, not 0)")
    if not n_pred and not n_true:
        notes.append("f1 is null: no mistake predicted or annotated")
    return notes


def _check_plan_indices(gt: Mapping[str, dict], pred: str | Path) -> None:
    """A predicted event's ``plan_index`` names a step of its recording's plan (``plan_index`` 999 on a
    12-step plan would fall in no step's window and be scored as a miss without a word); checked where the
    ground truth carries its plan, naming the prediction file, line, record and field."""
    for line, record in iter_jsonl(pred):
        plan = gt.get(record.get("video_id"), {}).get("plan")
        if plan is None:
            continue
        for j, event in enumerate(record.get("events") or ()):
            index = event.get("plan_index") if isinstance(event, Mapping) else None
            if index is not None and not 0 <= index < len(plan):
                raise InputError(f"plan_index {index} is not a step of the plan ({len(plan)} steps, 0 to "
                                 f"{len(plan) - 1})", file=pred, line=line, record=f"video_id={record['video_id']}",
                                 field=f"events[{j}].plan_index")


def run(gt: str | Path, pred: str | Path, config: LiveCookConfig, context: EvalContext) -> dict:
    """Entry point of ``livecook`` (no judge): read and score."""
    gt_records, preds = read_pairs(gt, pred, "guidance")
    _check_plan_indices(gt_records, pred)
    return evaluate_livecook(gt_records, preds, config, bertscore=context.bertscore,
                             bertscore_model=context.bertscore_model)


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tiny predictions for ground-truth ``guidance`` records (the contract tests score them): each
    recording's first three events, said 2 s late."""
    return [{"video_id": r["video_id"], "events": [{"t_s": e["t_s"] + 2.0, "type": e["type"], "text": e["text"]}
                                                   for e in r["events"][:3]]} for r in gt]
