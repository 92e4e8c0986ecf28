"""LiveCook guidance metrics (LiveCook, Sec. 3): IC-Acc, mistake precision/recall/F1, feedback fluency.

Per recording, with ground-truth events and predicted events (each ``(t_s, type, text)``) and a
window ``w`` (default 15 s, i.e. a 30 s window centred on the true time):

* **IC-Acc**: the share of ground-truth ``success`` events (instruction completions) for which
  the model emits at least one ``success`` event with ``|t_pred - t_gt| <= w``. Predictions are
  not consumed (the paper counts detections, not one-to-one matches). Pooled over the whole set:
  hits / ground-truth successes.
* **Mistake detection**: predicted and ground-truth ``mistake`` events are matched one to one
  within the window, closest pairs first (ties: earlier ground truth, then earlier prediction).
  ``precision = TP / predicted``, ``recall = TP / true``, ``F1 = 2PR / (P + R)``, pooled over
  the whole set (0 when undefined).
* **Feedback fluency** on the true-positive pairs only: ROUGE-L F-measure (``rouge-score``)
  and BERTScore F1 (``bert-score``) of the predicted feedback against the true feedback, with
  the number of pairs and the BERTScore model and layer named in the report (scores from
  different models are not comparable).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Event", "ic_hits", "match_mistakes", "prf", "rouge_l", "higher_is_better"]

higher_is_better = True


@dataclass(frozen=True)
class Event:
    t_s: float
    type: str
    text: str


def ic_hits(truth: Sequence[Event], predicted: Sequence[Event], window_s: float) -> list[bool]:
    """For each ground-truth success: is there a predicted success within the window?"""
    times = sorted(e.t_s for e in predicted if e.type == "success")
    hits = []
    for event in (e for e in truth if e.type == "success"):
        j = bisect.bisect_left(times, event.t_s - window_s)
        hits.append(j < len(times) and times[j] <= event.t_s + window_s)
    return hits


def match_mistakes(truth: Sequence[Event], predicted: Sequence[Event], window_s: float) -> list[tuple[int, int]]:
    """One-to-one closest-first matching of mistake events: ``(truth index, prediction index)`` pairs.

    Indices refer to the positions in ``truth`` and ``predicted``.
    """
    t_idx = [i for i, e in enumerate(truth) if e.type == "mistake"]
    p_idx = [j for j, e in enumerate(predicted) if e.type == "mistake"]
    candidates = sorted((abs(predicted[j].t_s - truth[i].t_s), truth[i].t_s, predicted[j].t_s, i, j)
                        for i in t_idx for j in p_idx if abs(predicted[j].t_s - truth[i].t_s) <= window_s)
    used_t, used_p, pairs = set(), set(), []
    for _, _, _, i, j in candidates:
        if i not in used_t and j not in used_p:
            used_t.add(i)
            used_p.add(j)
            pairs.append((i, j))
    return sorted(pairs)


def prf(tp: int, n_pred: int, n_true: int) -> tuple[float, float, float]:
    """Precision, recall, F1 (each 0 when undefined)."""
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_true if n_true else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def rouge_l(references: Sequence[str], candidates: Sequence[str], use_stemmer: bool = True) -> list[float]:
    """ROUGE-L F-measure of each candidate against its reference (Google's rouge-score)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    return [scorer.score(ref, cand)["rougeL"].fmeasure for ref, cand in zip(references, candidates)]
