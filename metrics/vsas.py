"""VSAS-Bench accuracy and consistency of per-second streaming answers (VSAS-Bench, Sec. 3.3).

A task has ground truth ``G_0 .. G_{N_t-1}``, one text per second.

* Extrapolation: timestep ``i`` takes the text of the latest response emitted at or before
  ``i``: a response at time ``t`` counts from timestep ``floor(t)``; of several in one second
  the last one (latest ``t``; equal times: later in the list) wins; before the first response,
  the empty string. Responses at ``t >= N_t`` are ignored.
* Accuracy ``A_t = (1/N_t) Σ_i Judge(G_i, R_i)`` with a binary judge verdict; the mean 0-3
  rubric score is reported beside it. An empty response never matches a non-empty truth and
  two empty texts match (rubric 3) without calling the judge.
* Consistency ``C_t = (1/N_t) Σ_{i=1}^{N_t-1} (1 - D(R_i, R_{i+1}) + D(G_i, G_{i+1}))``
  (written here for timesteps 0..N_t-1), with ``D(a, b) = 1 - L(a, b) / max(|a|, |b|)``
  (0 when both are empty), ``L`` the length in characters of the longest common substring
  (default) or subsequence. The paper says "per-task consistency scores are clipped between
  0 and 1" (VSAS-Bench Sec. 3.3): config **v2** (the default since 2026-11-23) clips the
  per-task mean ``C_t`` only (``clip="total"``), so a term above 1 (stable answers where the
  truth changes) can offset a term below 0 elsewhere in the task; **v1** clipped each term
  (``clip="term"``), which reads the paper more strictly than it is written; the two differ
  wherever a term leaves [0, 1] (on random 2-8 s tasks by as much as 0.5). With ``denominator="n"`` (as
  written) a perfect run scores ``(N_t - 1)/N_t``; ``denominator="pairs"`` divides by N_t - 1.
* Benchmark scores are means over tasks; the inverse-category and inverse-task-type
  reweightings of the paper (each task weighted by 1 / size of its group, i.e. the mean of
  group means) are reported too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from streamcue.errors import ConfigError
from streamcue.metrics.bootstrap import pooled, pooled_rows, record_units
from streamcue.metrics.estp import Response
from streamcue.metrics.judges import JudgeRunner
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import grouped, judge_runner, make_report, mean, read_pairs
from streamcue.metrics.verdict import LLMTask, Verdict

__all__ = ["extrapolate", "longest_common_substring", "longest_common_subsequence", "distance", "consistency",
           "group_mean", "higher_is_better", "evaluate_vsas", "run", "units", "rows", "CONSISTENCY", "VsasConfig"]


@dataclass(frozen=True)
class VsasConfig:
    """VSAS consistency parameters (the paper leaves these open).

    ``common``: ``substring`` (longest common substring) or ``subsequence``.
    ``clip``: clip each term to [0, 1] (``term``, v1) or only the final mean (``total``, v2: the
    paper's reading, "per-task consistency scores are clipped between 0 and 1", VSAS-Bench Sec. 3.3).
    ``denominator``: ``n`` divides the N_t - 1 terms by N_t as written; ``pairs`` by N_t - 1.
    """

    version: int = 1
    common: str = "substring"
    clip: str = "term"
    denominator: str = "n"

    def __post_init__(self) -> None:
        for name, allowed in (("common", ("substring", "subsequence")), ("clip", ("term", "total")),
                              ("denominator", ("n", "pairs"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"vsas {name} must be one of {allowed}, got {getattr(self, name)!r}")


#: The ``llm`` judge's VSAS task (also every task no metric declares): prompt ``vsas_judge.v1`` returns
#: ``{"score": 0-3, "match": bool}``; ``binary = match``, ``rubric = score``, ``answer_score = 1 + 4 * score / 3``.
LLM_TASK = LLMTask("vsas", "vsas_judge.v1",
                   {"type": "object", "required": ["score", "match"], "additionalProperties": False,
                    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 3},
                                   "match": {"type": "boolean"}}},
                   lambda a: Verdict(bool(a["match"]), int(a["score"]), 1 + 4 * a["score"] / 3), fallback=True)

#: The unit key of a task's consistency (its accuracy's key is its task type).
CONSISTENCY = "consistency"
_accuracy_units = record_units("accuracy")


def units(item: Mapping[str, object], record: Mapping[str, object]) -> list[tuple[str, float, float]]:
    """A task's units: ``(task type, accuracy, 1)`` and ``("consistency", consistency, 1)``."""
    return [*_accuracy_units(item, record), (CONSISTENCY, float(item.get("consistency") or 0.0), 1.0)]


def rows(keys: Sequence[str], config: Mapping[str, object]) -> tuple[dict, dict]:
    """Task rows: each task type's accuracy; group rows: ``mean`` accuracy over every task and ``consistency``, the
    mean of the tasks' consistency (the metric's overall figures, :func:`evaluate_vsas`)."""
    task, group = pooled_rows()([k for k in keys if k != CONSISTENCY], config)
    return task, {**group, **({CONSISTENCY: ((CONSISTENCY,), pooled((CONSISTENCY,)))} if CONSISTENCY in keys else {})}

#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("vsas", "dense_caption", "vsas", higher_is_better=True, uses_judge=True,
                summary="VSAS-Bench accuracy and consistency (Sec. 3.3)", entry="streamcue.metrics.vsas:run",
                config_class="streamcue.metrics.vsas:VsasConfig", config_latest=2,  # v2 since 2026-11-23
                units=units, rows=rows, llm_task=LLM_TASK)

higher_is_better = True


def extrapolate(responses: Sequence[Response], n: int) -> list[str]:
    """The response text in force at each of the ``n`` timesteps."""
    latest: dict[int, tuple[float, int, str]] = {}
    for order, r in enumerate(responses):
        step = math.floor(r.t_s)
        if 0 <= step < n and (step not in latest or (r.t_s, order) >= latest[step][:2]):
            latest[step] = (r.t_s, order, r.text)
    out, current = [], ""
    for i in range(n):
        if i in latest:
            current = latest[i][2]
        out.append(current)
    return out


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


@lru_cache(maxsize=65536)
def longest_common_substring(a: str, b: str) -> int:
    """Length of the longest common substring, vectorised over the diagonals of the match matrix.

    Row ``i`` of the equality matrix is shifted right by ``i`` so every diagonal becomes a
    column; the longest run of matches down a column is the answer. O(|a| (|a| + |b|)) work
    in numpy, no Python loop over characters.
    """
    if not a or not b:
        return 0
    if a == b:
        return len(a)
    if len(a) > len(b):
        a, b = b, a
    x, y = _codes(a), _codes(b)
    n, m = len(x), len(y)
    equal = x[:, None] == y[None, :]
    skewed = np.zeros((n, n + m - 1), dtype=np.int32)
    rows = np.arange(n)[:, None]
    skewed[rows, np.arange(m)[None, :] + (n - 1 - rows)] = equal
    counts = np.cumsum(skewed, axis=0)
    resets = np.maximum.accumulate(np.where(skewed == 0, counts, 0), axis=0)
    return int((counts - resets).max())


def longest_common_subsequence(a: str, b: str) -> int:
    """Length of the longest common subsequence (rapidfuzz's bit-parallel implementation)."""
    from rapidfuzz.distance import LCSseq

    return int(LCSseq.similarity(a, b))


def distance(a: str, b: str, common: str = "substring") -> float:
    """``D(a, b) = 1 - L(a, b) / max(|a|, |b|)``; 0 for two empty strings."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 0.0
    if a == b:
        return 0.0
    length = longest_common_substring(a, b) if common == "substring" else longest_common_subsequence(a, b)
    return 1.0 - length / longest


def consistency(truth: Sequence[str], responses: Sequence[str], config: VsasConfig) -> float:
    """``C_t`` of one task (see the module docstring); 1.0 for a single-second task."""
    n = len(truth)
    if n != len(responses):
        raise ValueError("truth and responses must have one text per timestep")
    if n < 2:
        return 1.0
    terms = [1.0 - distance(responses[i], responses[i + 1], config.common)
             + distance(truth[i], truth[i + 1], config.common)
             for i in range(n - 1)]
    if config.clip == "term":
        terms = [min(1.0, max(0.0, t)) for t in terms]
    value = sum(terms) / (n if config.denominator == "n" else n - 1)
    return min(1.0, max(0.0, value))


def group_mean(values: Sequence[float], groups: Sequence[str]) -> float:
    """Mean with each item weighted by 1 / size of its group (the mean of group means)."""
    by_group: dict[str, list[float]] = {}
    for value, group in zip(values, groups):
        by_group.setdefault(group, []).append(value)
    return sum(sum(v) / len(v) for v in by_group.values()) / len(by_group) if by_group else 0.0


def evaluate_vsas(gt: Mapping[str, dict], preds: Mapping[str, dict], runner: JudgeRunner, config: VsasConfig) -> dict:
    """VSAS accuracy (binary and rubric) and consistency per task, then means over tasks.

    A task without any response (no prediction, or an empty list) scores consistency 0: the
    formula would give an empty answer held throughout ``(N-1)/N``, the score of a perfect run.
    """
    tasks = []
    triples: list[tuple[str, str, str]] = []
    for task_id, record in gt.items():
        truth = [c["text"] for c in record["captions"]]
        responses = extrapolate([Response(r["t_s"], r["text"])
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
            "accuracy": mean(binary),
            "rubric": mean(rubric),
            # no response at all is not a stable answer: it earns no consistency (else (N-1)/N, as a perfect run)
            "consistency": consistency(truth, responses, config) if answered else 0.0,
            "seconds": len(truth),
        }
    keys = ["accuracy", "rubric", "consistency"]
    ids = list(per_item)
    task_types = [gt[i]["task_type"] for i in ids]
    categories = [gt[i].get("category", "") for i in ids]
    accuracies = [per_item[i]["accuracy"] for i in ids]
    overall = {
        "n": len(ids),
        **{k: mean([per_item[i][k] for i in ids]) for k in keys},
        "accuracy_inverse_category": group_mean(accuracies, categories),
        "accuracy_inverse_task_type": group_mean(accuracies, task_types),
    }
    groups = {"task_type": grouped(per_item, dict(zip(ids, task_types)), keys),
              "category": grouped(per_item, dict(zip(ids, categories)), keys)}
    return make_report("vsas", config, runner, overall, groups, per_item, sorted(set(gt) - set(preds)))


def run(gt: str | Path, pred: str | Path, config: VsasConfig, context: EvalContext) -> dict:
    """Entry point of ``vsas``: read, judge, score."""
    gt_records, preds = read_pairs(gt, pred, "dense_caption")
    return evaluate_vsas(gt_records, preds, judge_runner(context), config)
