"""The ``reasoning`` metric: MiRA rubric scores of reasoning traces (AVP appendix B.1; MINERVA).

AVP scores the reasoning a model gives, not only its answer, with MINERVA's MiRA rubric: an LLM
judge compares the model's trace with a human reference trace along four axes

* perceptual correctness (objects, actions, events, speech, text are the right ones),
* temporal localisation (the right moments and ranges, in the right order),
* logical reasoning (steps follow and lead to the answer),
* completeness (every step the reference needs is there).

For item i and axis a the judge returns an integer r_{i,a} in 1..R (``scale_max``, 3 in config v1),
normalised as

    m_{i,a} = (r_{i,a} - 1) / (R - 1)          in [0, 1]
    MiRA_i  = (1/4) * sum_a m_{i,a}            (the total: the mean of the four axes)

and the report's figures are means over items: ``mira_total`` = mean_i MiRA_i and one mean per
axis. ``answer_accuracy`` = share of items whose answer equals the reference after SQuAD
normalisation (:func:`~streamcue.metrics.text.normalize_answer`); with ``options``, an option's
letter (A, B, ...) and its text count as the same answer.

Edge cases: an item without a prediction, or with an empty trace, scores the floor (every axis
0, answer wrong) without a judge call and is listed in ``missing_predictions`` when it has no
prediction. Judge verdicts are cached like every judge's (:class:`~streamcue.metrics.judges.JudgeRunner`):
one call per distinct (question, reference, response), a re-run makes none.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.llm_pool import make_client
from streamcue.metrics.configs import check_int_at_least
from streamcue.metrics.judges import JudgeRunner, llm_judge_options
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import make_report, read_pairs
from streamcue.metrics.text import normalize_answer
from streamcue.metrics.verdict import Triple
from streamcue.prompts import load_prompt

__all__ = ["AXES", "MiraVerdict", "MiraJudge", "same_answer", "score_reasoning", "read_reasoning", "run_reasoning",
           "ReasoningConfig"]


@dataclass(frozen=True)
class ReasoningConfig:
    """MiRA reasoning-trace parameters: the judge rates each axis from 1 to ``scale_max``."""

    version: int = 1
    scale_max: int = 3

    def __post_init__(self) -> None:
        check_int_at_least(self.scale_max, 2, "reasoning scale_max")


#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("reasoning", "reasoning_trace", "reasoning", higher_is_better=True, uses_judge=True,
                summary="MiRA rubric of reasoning traces (AVP B.1)", entry="streamcue.metrics.mira:run_reasoning",
                config_class="streamcue.metrics.mira:ReasoningConfig", config_latest=1,
                default_judge="mira")

AXES = ("perceptual_correctness", "temporal_localization", "logical_reasoning", "completeness")
PROMPT = "mira_judge.v1"


@dataclass(frozen=True)
class MiraVerdict:
    """The judge's 1..R rating on each axis."""

    perceptual_correctness: int
    temporal_localization: int
    logical_reasoning: int
    completeness: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def pack(answer: str, trace: str) -> str:
    """One string holding an answer and its trace (the unit a triple carries and the cache keys on)."""
    return json.dumps({"answer": answer, "trace": trace}, ensure_ascii=False, sort_keys=True)


@dataclass
class MiraJudge:
    """An OpenAI-compatible chat model rates traces on the four axes with prompt ``mira_judge.v1``."""

    client: LLMClient
    scale_max: int = 3
    name: str = "mira"
    verdict_type = MiraVerdict

    @classmethod
    def from_options(cls, scale_max: int = 3, **options: Any) -> MiraJudge:
        # JudgeRunner caches the verdicts; the client's own cache is not needed twice.
        return cls(make_client(LLMSettings.resolve(**options), use_cache=False), scale_max)

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, **self.client.identity(),  # endpoint, model, sampling
                "prompt": load_prompt("streamcue.metrics", PROMPT).version, "scale_max": self.scale_max}

    def judge(self, triples: Sequence[Triple], task: str) -> list[MiraVerdict]:
        prompt = load_prompt("streamcue.metrics", PROMPT)
        axis = {"type": "integer", "minimum": 1, "maximum": self.scale_max}
        schema = {"type": "object", "required": list(AXES), "additionalProperties": False,
                  "properties": {name: axis for name in AXES}}
        requests = []
        for question, reference, response in triples:
            ref, res = json.loads(reference), json.loads(response)
            text = prompt.render(scale_max=str(self.scale_max), question=question, reference_answer=ref["answer"],
                                 reference_trace=ref["trace"], answer=res["answer"] or "(none)",
                                 trace=res["trace"] or "(none)")
            requests.append(Request(({"role": "user", "content": text},), schema, prompt.version, "mira_verdict"))
        return [MiraVerdict(**{name: int(a[name]) for name in AXES}) for a in self.client.complete_many(requests)]


def _letter(text: str) -> str | None:
    """``B`` for "B", "b)", "(B)", "B." and the like; None for anything else."""
    stripped = text.strip().strip("().:").strip()
    return stripped.upper() if len(stripped) == 1 and stripped.upper() in string.ascii_uppercase else None


def same_answer(reference: str, answer: str, options: Sequence[str] | None = None) -> bool:
    """Equal after normalisation; with options, a letter and its option's text are the same answer."""
    def canonical(text: str) -> str:
        letter = _letter(text)
        if letter is not None and options and ord(letter) - 65 < len(options):
            return normalize_answer(options[ord(letter) - 65])
        return normalize_answer(text) if letter is None else letter
    return canonical(reference) == canonical(answer)


def read_reasoning(gt_path: str | Path, pred_path: str | Path) -> tuple[dict[str, dict], dict[str, dict]]:
    """Ground truth (``reasoning_trace``) and predictions (``reasoning_trace_prediction``) keyed by id, checked."""
    return read_pairs(gt_path, pred_path, "reasoning_trace")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _summary(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"n": len(items), "answer_accuracy": _mean([float(i["answer_correct"]) for i in items]),
            "mira_total": _mean([i["mira_total"] for i in items]),
            **{name: _mean([i[name] for i in items]) for name in AXES}}


def score_reasoning(gt: Mapping[str, dict], preds: Mapping[str, dict], runner: JudgeRunner,
                    config: ReasoningConfig) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(overall, groups, per_item)``: per-item axes normalised to [0, 1], then the means."""
    judged = {i: (g["question"], pack(g["answer"], g["reference_trace"]), pack(preds[i]["answer"], preds[i]["trace"]))
              for i, g in gt.items() if i in preds and preds[i]["trace"].strip()}
    verdicts = dict(zip(judged, runner.verdicts(list(judged.values()), "mira")))
    per_item: dict[str, Any] = {}
    for item_id, g in gt.items():
        pred = preds.get(item_id)
        verdict = verdicts.get(item_id)
        axes = {name: (getattr(verdict, name) - 1) / (config.scale_max - 1) if verdict else 0.0 for name in AXES}
        per_item[item_id] = {
            "answer_correct": bool(pred) and same_answer(g["answer"], pred["answer"], g.get("options")),
            **axes, "mira_total": sum(axes.values()) / len(AXES)}
    overall = _summary(list(per_item.values()))
    by_type: dict[str, list[dict]] = {}
    for item_id, g in gt.items():
        if "task_type" in g:
            by_type.setdefault(g["task_type"], []).append(per_item[item_id])
    groups = {"task_type": {t: _summary(items) for t, items in sorted(by_type.items())}} if by_type else {}
    return overall, groups, per_item


def run_reasoning(gt: str | Path, pred: str | Path, config: ReasoningConfig, context: EvalContext) -> dict[str, Any]:
    """Entry point of ``reasoning`` (see :mod:`streamcue.metrics.registry`): read, judge with ``mira``, score."""
    if context.judge != "mira":
        raise ConfigError(f"reasoning traces are scored by the mira judge (an LLM rubric), not {context.judge!r}")
    gt_records, preds = read_reasoning(gt, pred)
    options = llm_judge_options(context.judge_options)
    runner = JudgeRunner(MiraJudge.from_options(scale_max=config.scale_max, **options), use_cache=context.use_cache)
    overall, groups, per_item = score_reasoning(gt_records, preds, runner, config)
    return make_report("reasoning", config, runner, overall, groups, per_item, sorted(set(gt_records) - set(preds)))
