"""ESTP-F1: answer quality and timing of proactive responses (ESTP-Bench, appendix B.3).

For one question with ground-truth answers ``g_k = (c_k, [s_k, e_k], o_k)``, k = 1..M, and the
model's responses ``p_i = (text_i, t_i)``, i = 1..N:

* optimal time ``o_k`` = the record's ``optimal_s`` when given; else ``s_k`` for task types
  OR, AP, TRU, OL, OFR, IFR, ORC; else the midpoint ``(s_k + e_k) / 2``;
* ``P_k`` = the valid matches of ``g_k`` under the ``anticipation-latency`` rule of
  :mod:`streamcue.metrics.timing` (anticipation ``a`` = 1 s, latency ``l`` = 2 s; one response can
  match several answers), which also gives ``FN`` and ``FP`` below;
* ``S(p, g_k) = (answer_score + time_score) / 10`` with ``answer_score`` in [1, 5] from the
  judge and ``time_score = 5 * (1 - min(1, |t - o_k| / scale))``,
  ``scale = max(1, e_k - s_k + a + l)`` (= ``e_k - s_k + 1 + 2`` with the defaults);
* ``S(g_k)`` = mean of ``S(p, g_k)`` over ``P_k`` (every valid match counts, not the best),
  0 when ``P_k`` is empty;
* ``FN`` = #{k : P_k empty} and ``FP`` as that rule counts them (repeats are penalised; one
  response matching two answers can make N smaller than the matched count);
* ``ESTP-F1 = 2 ΣS / (2 ΣS + FP + FN)``, with ``precision = ΣS / (ΣS + FP)`` and
  ``recall = ΣS / (ΣS + FN)`` (so F1 is their harmonic mean).
* **Saturation** (follows from eq. 11 as printed, kept as the paper defines it): when every
  interval has exactly one response in its window and there are no other responses, FP = FN = 0
  and ``ESTP-F1 = 2 ΣS / 2 ΣS = 1`` *whatever the answers' quality and timing* (as long as
  ΣS > 0, which always holds since the answer score is at least 1). The scores ``S`` only
  matter once some interval is missed or some response is extra; read ``precision`` and
  ``recall`` and the mean ``S`` in the per-question report beside F1.

Edge cases: M >= 1 always (records need an answer), so the F1 denominator is positive
(ΣS = 0 implies FN = M). With no responses, precision is 0/0 and is reported as 0.
Scores lie in [0, 1]; F1 = 1 exactly when FP = FN = 0 (see saturation above), so a response
at every ``o_k`` with answer score 5 scores 1, and so does any one in-window response per answer.

The score of the benchmark is the mean over questions, reported overall, per task type and
per proactive type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamcue.metrics.bootstrap import pooled_rows, record_units
from streamcue.metrics.judges import JudgeRunner
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import grouped, judge_runner, make_report, mean, read_pairs
from streamcue.metrics.timing import (Emission, Matching, TimingItem, TimingSpec, Trigger, anticipation_latency,
                                     emissions_of)
from streamcue.metrics.verdict import LLMTask, Verdict
from streamcue.schemas.taxonomy import OPTIMAL_AT_START, PROACTIVE_TYPE

__all__ = ["Answer", "Response", "QuestionScore", "optimal_time", "time_score", "match_sets", "score_question",
           "higher_is_better", "evaluate_estp", "run", "example_predictions", "EstpConfig"]


@dataclass(frozen=True)
class EstpConfig:
    """ESTP-F1 parameters: a response at t matches [s, e] when s - anticipation_s <= t <= e + latency_s."""

    version: int = 1
    anticipation_s: float = 1.0
    latency_s: float = 2.0


#: The ``llm`` judge's ESTP task: prompt ``estp_answer.v1`` returns ``{"score": 1-5}``; ``answer_score = score``,
#: ``rubric = round(3 * (score - 1) / 4)``, ``binary = score >= 3``.
LLM_TASK = LLMTask("estp", "estp_answer.v1",
                   {"type": "object", "required": ["score"], "additionalProperties": False,
                    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}},
                   lambda a: Verdict(a["score"] >= 3, int(round(3 * (a["score"] - 1) / 4)), float(a["score"])))

#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("estp-f1", "interval_qa", "estp_f1", higher_is_better=True, uses_judge=True,
                summary="ESTP-Bench answer + timing F1 (appendix B.3)", entry="streamcue.metrics.estp:run",
                config_class="streamcue.metrics.estp:EstpConfig", config_latest=1,
                units=record_units("f1"), rows=pooled_rows(), llm_task=LLM_TASK)

higher_is_better = True


@dataclass(frozen=True)
class Answer:
    start_s: float
    end_s: float
    text: str
    optimal_s: float | None = None


@dataclass(frozen=True)
class Response:
    t_s: float
    text: str


@dataclass
class QuestionScore:
    f1: float
    precision: float
    recall: float
    sum_s: float
    matched: int
    fp: int
    fn: int
    n_responses: int
    answer_scores: list[float] = field(default_factory=list)  # S(g_k) per answer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def optimal_time(task_type: str, answer: Answer) -> float:
    """``o_k``: explicit ``optimal_s``, else start (answer-at-first-sight types) or midpoint."""
    if answer.optimal_s is not None:
        return answer.optimal_s
    if task_type in OPTIMAL_AT_START:
        return answer.start_s
    return (answer.start_s + answer.end_s) / 2


def time_score(t: float, task_type: str, answer: Answer, config: EstpConfig) -> float:
    """``5 * (1 - min(1, |t - o| / max(1, e - s + a + l)))``, in [0, 5]."""
    scale = max(1.0, answer.end_s - answer.start_s + config.anticipation_s + config.latency_s)
    return 5.0 * (1.0 - min(1.0, abs(t - optimal_time(task_type, answer)) / scale))


def _matching(answers: Sequence[Answer], responses: Sequence[Response], config: EstpConfig) -> Matching:
    return anticipation_latency([Trigger(a.start_s, a.text, a.start_s, a.end_s) for a in answers],
                                [Emission(r.t_s, r.text) for r in responses], config.anticipation_s, config.latency_s)


def match_sets(answers: Sequence[Answer], responses: Sequence[Response], config: EstpConfig) -> list[list[int]]:
    """``P_k`` for every answer: indices of the responses inside its tolerant window."""
    return _sets(_matching(answers, responses, config), len(answers))


def _sets(matching: Matching, m: int) -> list[list[int]]:
    return [[i for k, i in matching.pairs if k == answer] for answer in range(m)]


def _timing_items(gt: Path, pred: Path, config: EstpConfig) -> dict[str, TimingItem]:
    """Each question for ``--timing-rule``: its answers as triggers at their optimal times ``o_k``, its responses."""
    records, preds = read_pairs(gt, pred, "interval_qa")
    items = {}
    for qa_id, r in records.items():
        answers = [Answer(a["start_s"], a["end_s"], a["text"], a.get("optimal_s")) for a in r["answers"]]
        triggers = tuple(Trigger(optimal_time(r["task_type"], a), a.text, a.start_s, a.end_s, r.get("query_time_s"))
                         for a in answers)
        items[qa_id] = TimingItem(triggers, emissions_of(preds.get(qa_id)), r["task_type"], qa_id in preds)
    return items


#: Its own timing rule and the items any rule reads (``streamcue evaluate estp-f1 --timing-rule NAME``).
TIMING = TimingSpec("anticipation-latency", lambda c: {"anticipation_s": c.anticipation_s, "latency_s": c.latency_s},
                    lambda gt, pred, config: _timing_items(gt, pred, config), group="task_type")


def score_question(task_type: str, answers: Sequence[Answer], responses: Sequence[Response],
                   answer_score: Mapping[tuple[int, int], float], config: EstpConfig) -> QuestionScore:
    """ESTP-F1 of one question; ``answer_score[(k, i)]`` in [1, 5] for every valid match (k, i)."""
    if not answers:
        raise ValueError("a question needs at least one ground-truth answer")
    matching = _matching(answers, responses, config)
    sets = _sets(matching, len(answers))
    per_answer = []
    for k, (answer, matched) in enumerate(zip(answers, sets)):
        if not matched:
            per_answer.append(0.0)
            continue
        total = 0.0
        for i in matched:
            score = answer_score[(k, i)]
            if not 1.0 <= score <= 5.0:
                raise ValueError(f"answer score {score} outside [1, 5]")
            total += (score + time_score(responses[i].t_s, task_type, answer, config)) / 10.0
        per_answer.append(total / len(matched))
    sum_s = sum(per_answer)
    matched, fn, fp = matching.tp, matching.fn, matching.fp
    precision = sum_s / (sum_s + fp) if sum_s + fp > 0 else 0.0
    recall = sum_s / (sum_s + fn) if sum_s + fn > 0 else 0.0
    f1 = 2 * sum_s / (2 * sum_s + fp + fn)
    return QuestionScore(f1, precision, recall, sum_s, matched, fp, fn, len(responses), per_answer)


def proactive_type(task_type: str) -> str:
    return PROACTIVE_TYPE.get(task_type, "unknown")


def evaluate_estp(gt: Mapping[str, dict], preds: Mapping[str, dict], runner: JudgeRunner, config: EstpConfig) -> dict:
    """ESTP-F1 over every question of ``gt`` (a missing prediction means no responses)."""
    questions = []
    triples, where = [], []
    for qa_id, record in gt.items():
        answers = [Answer(a["start_s"], a["end_s"], a["text"], a.get("optimal_s")) for a in record["answers"]]
        responses = [Response(r["t_s"], r["text"]) for r in preds.get(qa_id, {}).get("responses", [])]
        questions.append((qa_id, record, answers, responses))
        for k, matched in enumerate(match_sets(answers, responses, config)):
            for i in matched:
                triples.append((record.get("question", ""), answers[k].text, responses[i].text))
                where.append((qa_id, k, i))
    verdicts = runner.verdicts(triples, "estp")
    scores: dict[str, dict[tuple[int, int], float]] = {}
    for (qa_id, k, i), verdict in zip(where, verdicts):
        scores.setdefault(qa_id, {})[(k, i)] = verdict.answer_score
    per_item, by_task, by_proactive = {}, {}, {}
    for qa_id, record, answers, responses in questions:
        result = score_question(record["task_type"], answers, responses, scores.get(qa_id, {}), config)
        per_item[qa_id] = result.to_dict()
        by_task[qa_id] = record["task_type"]
        by_proactive[qa_id] = proactive_type(record["task_type"])
    keys = ["f1", "precision", "recall"]
    overall = {"n": len(per_item), **{k: mean([s[k] for s in per_item.values()]) for k in keys},
               "responses": sum(s["n_responses"] for s in per_item.values())}
    groups = {"task_type": grouped(per_item, by_task, keys), "proactive_type": grouped(per_item, by_proactive, keys)}
    missing = sorted(set(gt) - set(preds))
    return make_report("estp-f1", config, runner, overall, groups, per_item, missing)


def run(gt: str | Path, pred: str | Path, config: EstpConfig, context: EvalContext) -> dict:
    """Entry point of ``estp-f1`` (see :mod:`streamcue.metrics.registry`): read, judge, score."""
    gt_records, preds = read_pairs(gt, pred, "interval_qa")
    return evaluate_estp(gt_records, preds, judge_runner(context), config)


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tiny predictions for ground-truth ``interval_qa`` records (the contract tests score them): each
    question answered once, with its first answer's text at that answer's start."""
    return [{"qa_id": q["qa_id"], "responses": [{"t_s": q["answers"][0]["start_s"], "text": q["answers"][0]["text"]}]}
            for q in gt]
