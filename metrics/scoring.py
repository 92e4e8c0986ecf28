"""Read ground truth and predictions, run a metric, and build its report.

Each ``evaluate_*`` works in explicit phases: read and check the inputs, collect every judge
request, judge them in one batch (deduplicated, cached), compute per-item scores, then
aggregate. Reports have the same shape for every metric::

    {"metric", "config_version" (e.g. "livecook.v2"), "config", "judge", "overall",
     "groups": {group name: {value: scores}}, "per_item": {id: scores}, "missing_predictions": [ids],
     "streamcue_version"}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamcue.errors import InputError, RecordValidationError
from streamcue.io import iter_jsonl
from streamcue.metrics import estp, livecook, vsas
from streamcue.metrics.configs import EstpConfig, LiveCookConfig, VsasConfig
from streamcue.metrics.judges import JudgeRunner, make_judge
from streamcue.metrics.registry import METRICS, EvalContext
from streamcue.schemas import ID_FIELDS, check_records
from streamcue.version import __version__

__all__ = ["read_pairs", "evaluate_estp", "evaluate_vsas", "evaluate_livecook", "run_estp", "run_vsas", "run_livecook"]


def read_pairs(gt_path: str | Path, pred_path: str | Path, kind: str) -> tuple[dict[str, dict], dict[str, dict]]:
    """Ground truth (full or minimal records of ``kind``) and predictions keyed by id, both checked.

    A prediction for an id that is not in the ground truth is an error.
    """
    id_field = ID_FIELDS[kind]
    gt_lines = list(iter_jsonl(gt_path))
    if not gt_lines:
        raise InputError("no ground-truth records: nothing to score", file=gt_path)
    full = all("schema_version" in r for _, r in gt_lines) and gt_lines
    gt_kind = kind if full else f"{kind}_minimal"
    report = check_records(gt_lines, gt_kind, file=str(gt_path))
    if not report.ok:
        raise RecordValidationError(report.violations)
    pred_lines = list(iter_jsonl(pred_path))
    report = check_records(pred_lines, f"{kind}_prediction", file=str(pred_path))
    if not report.ok:
        raise RecordValidationError(report.violations)
    gt = {r[id_field]: r for _, r in gt_lines}
    preds = {}
    for line, r in pred_lines:
        if r[id_field] not in gt:
            raise InputError(f"unknown {id_field} (not in the ground truth {gt_path})", file=pred_path, line=line,
                             record=str(r[id_field]), field=id_field)
        preds[r[id_field]] = r
    return gt, preds


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _grouped(per_item: Mapping[str, Mapping[str, float]], group_of: Mapping[str, str],
             keys: list[str]) -> dict[str, dict]:
    groups: dict[str, list[str]] = {}
    for item_id, group in group_of.items():
        groups.setdefault(group, []).append(item_id)
    return {g: {"n": len(ids), **{k: _mean([per_item[i][k] for i in ids]) for k in keys}}
            for g, ids in sorted(groups.items())}


def _report(metric: str, config: Any, runner: JudgeRunner | None, overall: dict, groups: dict, per_item: dict,
            missing: list[str]) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "metric": metric,
        "config_version": f"{METRICS[metric].config}.v{config.version}",
        "config": asdict(config),
        "judge": runner.report() if runner is not None else None,
        "overall": overall,
        "groups": groups,
        "per_item": per_item,
        "missing_predictions": missing,
        "streamcue_version": __version__,
    }


def evaluate_estp(gt: Mapping[str, dict], preds: Mapping[str, dict], runner: JudgeRunner, config: EstpConfig) -> dict:
    """ESTP-F1 over every question of ``gt`` (a missing prediction means no responses)."""
    questions = []
    triples, where = [], []
    for qa_id, record in gt.items():
        answers = [estp.Answer(a["start_s"], a["end_s"], a["text"], a.get("optimal_s")) for a in record["answers"]]
        responses = [estp.Response(r["t_s"], r["text"]) for r in preds.get(qa_id, {}).get("responses", [])]
        questions.append((qa_id, record, answers, responses))
        for k, matched in enumerate(estp.match_sets(answers, responses, config)):
            for i in matched:
                triples.append((record.get("question", ""), answers[k].text, responses[i].text))
                where.append((qa_id, k, i))
    verdicts = runner.verdicts(triples, "estp")
    scores: dict[str, dict[tuple[int, int], float]] = {}
    for (qa_id, k, i), verdict in zip(where, verdicts):
        scores.setdefault(qa_id, {})[(k, i)] = verdict.answer_score
    per_item, by_task, by_proactive = {}, {}, {}
    for qa_id, record, answers, responses in questions:
        result = estp.score_question(record["task_type"], answers, responses, scores.get(qa_id, {}), config)
        per_item[qa_id] = result.to_dict()
        by_task[qa_id] = record["task_type"]
        by_proactive[qa_id] = estp.proactive_type(record["task_type"])
    keys = ["f1", "precision", "recall"]
    overall = {"n": len(per_item), **{k: _mean([s[k] for s in per_item.values()]) for k in keys},
               "responses": sum(s["n_responses"] for s in per_item.values())}
    groups = {"task_type": _grouped(per_item, by_task, keys), "proactive_type": _grouped(per_item, by_proactive, keys)}
    missing = sorted(set(gt) - set(preds))
    return _report("estp-f1", config, runner, overall, groups, per_item, missing)


def evaluate_vsas(gt: Mapping[str, dict], preds: Mapping[str, dict], runner: JudgeRunner, config: VsasConfig) -> dict:
    """VSAS accuracy (binary and rubric) and consistency per task, then means over tasks.

    A task without any response (no prediction, or an empty list) scores consistency 0: the
    formula would give an empty answer held throughout ``(N-1)/N``, the score of a perfect run.
    """
    tasks = []
    triples: list[tuple[str, str, str]] = []
    for task_id, record in gt.items():
        truth = [c["text"] for c in record["captions"]]
        responses = vsas.extrapolate([estp.Response(r["t_s"], r["text"])
                                      for r in preds.get(task_id, {}).get("responses", [])], len(truth))
        tasks.append((task_id, record, truth, responses))
        prompt = record.get("prompt", "")
        triples.extend((prompt, g, r) for g, r in zip(truth, responses) if g.strip() and r.strip())
    verdicts = iter(runner.verdicts(triples, "vsas"))
    per_item = {}
    for task_id, record, truth, responses in tasks:
        binary, rubric = [], []
        for g, r in zip(truth, responses):
            if g.strip() and r.strip():
                v = next(verdicts)
                binary.append(float(v.binary))
                rubric.append(float(v.rubric))
            else:  # decided without a judge: two empty texts match, one empty text does not
                same = not g.strip() and not r.strip()
                binary.append(float(same))
                rubric.append(3.0 if same else 0.0)
        answered = bool(preds.get(task_id, {}).get("responses"))
        per_item[task_id] = {
            "accuracy": _mean(binary),
            "rubric": _mean(rubric),
            # no response at all is not a stable answer: it earns no consistency (else (N-1)/N, as a perfect run)
            "consistency": vsas.consistency(truth, responses, config) if answered else 0.0,
            "seconds": len(truth),
        }
    keys = ["accuracy", "rubric", "consistency"]
    ids = list(per_item)
    task_types = [gt[i]["task_type"] for i in ids]
    categories = [gt[i].get("category", "") for i in ids]
    accuracies = [per_item[i]["accuracy"] for i in ids]
    overall = {
        "n": len(ids),
        **{k: _mean([per_item[i][k] for i in ids]) for k in keys},
        "accuracy_inverse_category": vsas.group_mean(accuracies, categories),
        "accuracy_inverse_task_type": vsas.group_mean(accuracies, task_types),
    }
    groups = {"task_type": _grouped(per_item, dict(zip(ids, task_types)), keys),
              "category": _grouped(per_item, dict(zip(ids, categories)), keys)}
    return _report("vsas", config, runner, overall, groups, per_item, sorted(set(gt) - set(preds)))


def _ic_hits(truth: list, predicted: list, config: LiveCookConfig) -> list[bool]:
    """Per ground-truth success: detected? (v1: any success in the window; v2: its own step, one-to-one)."""
    if config.success_matching == "any":
        return livecook.ic_hits(truth, predicted, config.window_s)
    matched = {i for i, _ in livecook.ic_matches(truth, predicted, config.window_s)}
    return [i in matched for i, e in enumerate(truth) if e.type == "success"]


def evaluate_livecook(gt: Mapping[str, dict], preds: Mapping[str, dict], config: LiveCookConfig, *,
                      bertscore_model: str | None = None, bertscore: bool = True) -> dict:
    """IC-Acc and mistake P/R/F1 pooled over recordings; ROUGE-L and BERTScore on true positives."""
    per_item = {}
    hits_total = successes_total = tp_total = pred_total = true_total = 0
    refs: list[str] = []
    cands: list[str] = []
    for video_id, record in gt.items():
        truth = [livecook.Event(e["t_s"], e["type"], e["text"], e.get("plan_index")) for e in record["events"]]
        predicted = [livecook.Event(e["t_s"], e["type"], e["text"], e.get("plan_index"))
                     for e in preds.get(video_id, {}).get("events", [])]
        hits = _ic_hits(truth, predicted, config)
        pairs = (livecook.match_mistakes_maximum if config.mistake_matching == "maximum"
                 else livecook.match_mistakes)(truth, predicted, config.window_s)
        n_pred = sum(e.type == "mistake" for e in predicted)
        n_true = sum(e.type == "mistake" for e in truth)
        p, r, f = livecook.prf(len(pairs), n_pred, n_true)
        per_item[video_id] = {"ic_acc": _mean([float(h) for h in hits]), "successes": len(hits),
                              "precision": p, "recall": r, "f1": f, "tp": len(pairs),
                              "predicted_mistakes": n_pred, "true_mistakes": n_true}
        hits_total += sum(hits)
        successes_total += len(hits)
        tp_total += len(pairs)
        pred_total += n_pred
        true_total += n_true
        refs.extend(truth[i].text for i, _ in pairs)
        cands.extend(predicted[j].text for _, j in pairs)
    p, r, f = livecook.prf(tp_total, pred_total, true_total)
    rouge = livecook.rouge_l(refs, cands, config.rouge_use_stemmer)
    overall = {
        "n": len(per_item),
        "ic_acc": hits_total / successes_total if successes_total else 0.0,
        "precision": p, "recall": r, "f1": f,
        "rouge_l": _mean(rouge),
        "bertscore": None,
        "feedback_pairs": len(refs),
    }
    bert_info = None
    if bertscore:
        from streamcue.metrics.bertscore import bertscore_f1

        values, bert_info = bertscore_f1(refs, cands, bertscore_model, config.bertscore_num_layers)
        overall["bertscore"] = _mean(values)
    report = _report("livecook", config, None, overall, {}, per_item, sorted(set(gt) - set(preds)))
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


def _runner(context: EvalContext) -> JudgeRunner:
    return JudgeRunner(make_judge(context.judge, **context.judge_options), use_cache=context.use_cache)


def run_estp(gt: str | Path, pred: str | Path, config: EstpConfig, context: EvalContext) -> dict:
    """Entry point of ``estp-f1`` (see :mod:`streamcue.metrics.registry`): read, judge, score."""
    gt_records, preds = read_pairs(gt, pred, "interval_qa")
    return evaluate_estp(gt_records, preds, _runner(context), config)


def run_vsas(gt: str | Path, pred: str | Path, config: VsasConfig, context: EvalContext) -> dict:
    """Entry point of ``vsas``: read, judge, score."""
    gt_records, preds = read_pairs(gt, pred, "dense_caption")
    return evaluate_vsas(gt_records, preds, _runner(context), config)


def run_livecook(gt: str | Path, pred: str | Path, config: LiveCookConfig, context: EvalContext) -> dict:
    """Entry point of ``livecook`` (no judge): read and score."""
    gt_records, preds = read_pairs(gt, pred, "guidance")
    return evaluate_livecook(gt_records, preds, config, bertscore=context.bertscore,
                             bertscore_model=context.bertscore_model)
