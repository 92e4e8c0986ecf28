"""The ``streambench`` metric: StreamBench's LLM judge, yes/no and a 0-5 score per question, by class and overall.

Source: hmxiong/StreamChat (MIT; Xiong et al., ICLR 2025), commit fddd9edcdfd2ccc09950f58d48a6e2ba0bf73e00:
``eval_video_qa_with_llama3_ours.py`` asks a judge (LLaMA-3-8B-Instruct in the paper) to compare the
predicted with the correct answer and to reply with a Python dict ``{'llama_pred': 'yes'|'no',
'score': int}``; ``calculate_avg_score.py`` (commit 1509dad1426270b65405f03016680d16f695a9d7) then
reports, per question class c (SM, LM, SF, OS, KG, CI) with n_c questions,

    accuracy_c   = #{i in c : verdict_i = yes} / n_c
    mean_score_c = (1 / n_c) * sum_{i in c} score_i                 (score_i in 0..5)

and ``calculate_score.py`` the same two figures over all N questions (``overall.accuracy``,
``overall.mean_score``). The report adds the unweighted means over the classes present
(``class_mean_accuracy``, ``class_mean_score``), as ``calculate_class_score.py`` averages its groups.

The judge prompt is ``prompts/streambench_judge.v1.txt`` (the official system and user messages
word for word; config ``configs/streambench.v1.json`` names it). The judge's answer is read as
text and parsed by :func:`parse_judge_answer`: the last ``{...}`` that reads as a Python or JSON
dict with ``llama_pred`` and ``score``, else the two keys found by pattern; ``yes``/``no`` are read
case-insensitively, a score must be a finite number in 0..``score_max`` (4.8 stays 4.8; the whole number is
read, so ``1e999``, ``1e5``, ``NaN`` or ``3.5.2`` is no score, never its first digits).

Edge cases, each counted in ``overall`` and listed in the report, never a crash:

* a judge answer that cannot be parsed (``unparseable``; ids in ``judge_unparseable``) scores
  no and 0 -- the official script would keep the previous question's verdict or stop;
* an empty or null response (``no_answer``) scores no and 0 without a judge call;
* a question without a prediction (``missing``; ids in ``missing_predictions``) scores no and 0.

Verdicts are cached like every judge's (:class:`~streamcue.metrics.judges.JudgeRunner`): one call per
distinct (question, reference, response) and judge identity (endpoint, model, sampling, prompt
version, parser version); a re-run makes none.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamcue.concurrency import in_order
from streamcue.errors import ConfigError
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.metrics.bootstrap import Rows, pooled
from streamcue.metrics.configs import check_int_at_least
from streamcue.metrics.judges import JudgeRunner, llm_judge_options
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import make_report, read_pairs
from streamcue.metrics.verdict import Triple
from streamcue.prompts import Prompt, load_prompt

__all__ = ["StreamBenchVerdict", "StreamBenchJudge", "parse_judge_answer", "judge_messages", "read_streambench",
           "score_streambench", "run", "StreamBenchConfig", "example_predictions",
           "example_judge_reply", "units", "rows", "SCORE_ROW"]

#: The suffix of a class's score row in a run's task table (``SM (score)``).
SCORE_ROW = " (score)"


def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """A question's units: ``(class, yes, 1)`` and ``(class (score), score, score_max)``."""
    return [(item["task"], float(item["yes"]), 1.0),
            (item["task"] + SCORE_ROW, float(item["score"]), float(item.get("score_max", 5)))]


def rows(keys: Sequence[str], config: Mapping[str, Any]) -> tuple[Rows, Rows]:
    """Each class's accuracy_c and mean score_c (its pooled share times ``score_max``); the group rows
    ``accuracy`` (``overall.accuracy``: yes over every question) and ``score (0-N)`` (``overall.mean_score``)."""
    top = float(config.get("score_max", 5))
    scores = tuple(k for k in keys if k.endswith(SCORE_ROW))
    answers = tuple(k for k in keys if k not in scores)

    def scaled(mine: tuple[str, ...]) -> Any:
        share = pooled(mine)
        return lambda totals: None if share(totals) is None else top * share(totals)
    task = {k: ((k,), scaled((k,)) if k in scores else pooled((k,))) for k in keys}
    group = {"accuracy": (answers, pooled(answers)), f"score (0-{top:g})": (scores, scaled(scores))}
    return task, {name: row for name, row in group.items() if row[0]}


#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("streambench", "open_question", "streambench", higher_is_better=True, uses_judge=True,
                summary="StreamBench LLM judge: yes/no accuracy and mean 0-5 score per class",
                entry="streamcue.metrics.streambench:run", default_judge="streambench",
                config_class="streamcue.metrics.streambench:StreamBenchConfig", config_latest=1,
                units=units, rows=rows)

#: Version of :func:`parse_judge_answer`: part of the judge identity, so a change re-judges nothing stale.
PARSER_VERSION = 2
_SECTION = re.compile(r"^=== (system|user) ===\n", re.M)
_BRACES = re.compile(r"\{[^{}]*\}")
_PRED = re.compile(r"""['"]?llama_pred['"]?\s*[:=]\s*['"]?\s*(yes|no)\b""", re.I)
_SCORE = re.compile(r"""['"]?score['"]?\s*[:=]\s*['"]?\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?![\w.]*\d)""", re.I)


@dataclass(frozen=True)
class StreamBenchConfig:
    """StreamBench judge rules: the judge prompt file and the top of its 0..score_max scale (metrics/streambench.py)."""

    version: int = 1
    judge_prompt: str = "streambench_judge.v1"
    score_max: int = 5

    def __post_init__(self) -> None:
        check_int_at_least(self.score_max, 1, "streambench score_max")


@dataclass(frozen=True)
class StreamBenchVerdict:
    """The judge's verdict on one answer: ``yes`` and ``score`` (None when its answer could not be parsed)
    and its answer as given (``raw``), kept for the audit."""

    yes: bool | None
    score: float | None
    raw: str

    @property
    def parsed(self) -> bool:
        return self.yes is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _yes_no(value: Any) -> bool | None:
    word = str(value).strip().strip(".!'\"").strip().lower() if isinstance(value, str) else None
    return {"yes": True, "no": False}.get(word)


def _number(value: Any, score_max: int) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0 <= value <= score_max else None


def _as_dict(text: str) -> Any:
    for reader in (json.loads, ast.literal_eval):
        try:
            return reader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def parse_judge_answer(text: str | None, score_max: int = 5) -> tuple[bool, float] | None:
    """``(yes, score)`` from the judge's answer, or None when it holds no usable verdict.

    The official code takes the last ``{...}`` of the answer through ``ast.literal_eval``; here the last
    one that reads as a dict (Python or JSON) with both keys wins, then the keys found by pattern anywhere.
    """
    text = text or ""
    for candidate in reversed(_BRACES.findall(text)):
        found = _as_dict(candidate)
        if isinstance(found, dict) and "llama_pred" in found and "score" in found:
            yes, score = _yes_no(found["llama_pred"]), _number(found["score"], score_max)
            if yes is not None and score is not None:
                return yes, score
    pred, score = _PRED.search(text), _SCORE.search(text)
    if pred and score:
        value = _number(score.group(1), score_max)
        if value is not None:
            return pred.group(1).lower() == "yes", value
    return None


def judge_messages(prompt: Prompt, question: str, answer: str, prediction: str) -> tuple[dict[str, str], ...]:
    """The system and user messages of the judge prompt file, the user one filled in."""
    parts = _SECTION.split(prompt.text)
    sections = dict(zip(parts[1::2], parts[2::2]))
    if set(sections) != {"system", "user"}:
        raise ConfigError(f"judge prompt {prompt.name} needs a '=== system ===' and a '=== user ===' section")
    user = sections["user"].rstrip("\n").format(question=question, answer=answer, prediction=prediction)
    return {"role": "system", "content": sections["system"].rstrip("\n")}, {"role": "user", "content": user}


class _TextClient(LLMClient):
    """The client whose answers are read as text: StreamBench's judge replies with a Python dict, not JSON,
    so a reply that is not valid JSON must reach the parser instead of failing the call."""

    def texts(self, requests: Sequence[Request]) -> list[str]:
        return in_order(self._call, requests, self.settings.max_concurrency)


@dataclass
class StreamBenchJudge:
    """An OpenAI-compatible chat model judges answers with StreamBench's prompt (see the module docstring).

    With structured output (``json_schema``, ``json_object``) the endpoint is asked for the dict as JSON;
    with ``none`` the model answers as the official judge does, in free text. Either way it is parsed here.
    """

    client: _TextClient
    prompt: str = "streambench_judge.v1"
    score_max: int = 5
    name: str = "streambench"
    verdict_type = StreamBenchVerdict

    @classmethod
    def from_options(cls, prompt: str = "streambench_judge.v1", score_max: int = 5, **options: Any) -> StreamBenchJudge:
        # JudgeRunner caches the verdicts; the client's own cache is not needed twice.
        return cls(_TextClient(LLMSettings.resolve(**options), use_cache=False), prompt, score_max)

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, **self.client.identity(),  # endpoint, model, sampling
                "prompt": load_prompt("streamcue.metrics", self.prompt).version, "score_max": self.score_max,
                "parser": PARSER_VERSION}

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "required": ["llama_pred", "score"], "additionalProperties": False,
                "properties": {"llama_pred": {"type": "string", "enum": ["yes", "no"]},
                               "score": {"type": "integer", "minimum": 0, "maximum": self.score_max}}}

    def judge(self, triples: Sequence[Triple], task: str) -> list[StreamBenchVerdict]:
        prompt = load_prompt("streamcue.metrics", self.prompt)
        requests = [Request(judge_messages(prompt, q, ref, res), self.schema(), prompt.version, "streambench_verdict")
                    for q, ref, res in triples]
        verdicts = []
        for text in self.client.texts(requests):
            parsed = parse_judge_answer(text, self.score_max)
            verdicts.append(StreamBenchVerdict(*(parsed or (None, None)), raw=text))
        return verdicts


def read_streambench(gt_path: str | Path, pred_path: str | Path) -> tuple[dict[str, dict], dict[str, dict]]:
    """Ground truth (``open_question``) and predictions (``open_question_prediction``) keyed by id, both checked."""
    return read_pairs(gt_path, pred_path, "open_question")


def _answered(pred: Mapping[str, Any] | None) -> bool:
    return pred is not None and isinstance(pred.get("response"), str) and bool(pred["response"].strip())


def _figures(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(items)
    return {"n": n, "accuracy": sum(i["yes"] for i in items) / n if n else 0.0,
            "mean_score": sum(i["score"] for i in items) / n if n else 0.0}


def score_streambench(gt: Mapping[str, dict], preds: Mapping[str, dict], verdicts: Mapping[str, StreamBenchVerdict],
                      score_max: int = 5) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(overall, groups, per_item)`` from the judge's verdicts (keyed by question id; see the module docstring);
    each item records the top of the judge's scale (``score_max``) its score is on."""
    per_item: dict[str, Any] = {}
    for qid, record in gt.items():
        verdict = verdicts.get(qid)
        if qid not in preds:
            status = "missing"
        elif not _answered(preds[qid]):
            status = "no_answer"
        else:
            status = "judged" if verdict is not None and verdict.parsed else "unparseable"
        ok = status == "judged"
        per_item[qid] = {"task": record["task"], "group": record.get("group"), "status": status,
                         "yes": bool(verdict.yes) if ok else False, "score": verdict.score if ok else 0.0,
                         "score_max": score_max,
                         "judge_answer": verdict.raw if verdict is not None else None}
    by: dict[str, dict[str, list[dict[str, Any]]]] = {"class": {}, "domain": {}}
    for item in per_item.values():
        by["class"].setdefault(item["task"], []).append(item)
        if item["group"] is not None:
            by["domain"].setdefault(item["group"], []).append(item)
    groups = {name: {value: _figures(items) for value, items in sorted(values.items())}
              for name, values in by.items() if values}
    classes = list(groups["class"].values())
    statuses = [item["status"] for item in per_item.values()]
    overall = {**_figures(list(per_item.values())),
               "class_mean_accuracy": sum(c["accuracy"] for c in classes) / len(classes),
               "class_mean_score": sum(c["mean_score"] for c in classes) / len(classes),
               **{status: statuses.count(status) for status in ("judged", "unparseable", "no_answer", "missing")}}
    return overall, groups, per_item


def run(gt: str | Path, pred: str | Path, config: StreamBenchConfig, context: EvalContext) -> dict[str, Any]:
    """Entry point of ``streambench`` (see :mod:`streamcue.metrics.registry`): read, judge, score."""

    if context.judge != "streambench":
        raise ConfigError(f"StreamBench answers are scored by its LLM judge (judge streambench), not {context.judge!r}:"
                          " give the judge's --llm-base-url and model")
    gt_records, preds = read_streambench(gt, pred)
    options = llm_judge_options(context.judge_options, "structured", "max_concurrency")
    runner = JudgeRunner(StreamBenchJudge.from_options(config.judge_prompt, config.score_max, **options),
                         use_cache=context.use_cache)
    asked = {qid: (r["question"], r["answer"], preds[qid]["response"]) for qid, r in gt_records.items()
             if _answered(preds.get(qid))}
    verdicts = dict(zip(asked, runner.verdicts(list(asked.values()), "streambench")))
    overall, groups, per_item = score_streambench(gt_records, preds, verdicts, config.score_max)
    report = make_report("streambench", config, runner, overall, groups, per_item, sorted(set(gt_records) - set(preds)))
    report["judge_unparseable"] = sorted(qid for qid, item in per_item.items() if item["status"] == "unparseable")
    if report["judge_unparseable"]:
        report["notes"] = [f"{len(report['judge_unparseable'])} judge answers could not be parsed (scored no, 0): "
                           "see judge_unparseable and per_item.judge_answer"]
    return report


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Predictions for the contract test: the same short answer to every question (a blind baseline)."""
    return [{"question_id": q["question_id"], "response": "a cup"} for q in gt]


def example_judge_reply(body: dict[str, Any]) -> str:
    """What the contract test's stub judge answers: the official dict, a constant verdict (reads no ground truth)."""
    return "{'llama_pred': 'no', 'score': 1}"
