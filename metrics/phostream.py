"""The ``phostream`` metric: PhoStream's timing categories and score, as its official scorer (score-only, or judged).

Source: Lucky-Lance/PhoStream (MIT), commit ed7543d6f580278db795e618c22730ca56a9807b,
``run_stream_eval.py`` (``evaluate_sample``, ``build_summary``, ``LLMJudger``) with ``config.yaml``'s placeholder
list and judge prompt, run as ``run_stream_eval.py --skip-inference --model-output F`` with
``--disable-llm-judge`` (the default here) or with its judge (``--judge llm`` here). Times are whole seconds: a
response at ``t_s`` counts at ``floor(t_s)``, as the official runner stamps it.

A video's responses R are the responses of its items' predictions (``role`` user left out), in time order.
Its questions are taken in file order; question q, asked at ``t_q``, answered by its gold time ``t_a``
(``target.t_s``; ``t_a = t_q`` unless the question is forward), with window ``w`` (``time_window_s``, 2 s):

    match(q), category: the ``first-unused`` rule (:mod:`streamcue.metrics.timing`, where its formula is) over
                 the video's questions and R, ``q_k = t_q``, ``t_k = t_a``, acknowledgements skipped for a forward
                 question; its categories early / no-response / late / on-time are EarlyResponse / NoResponse /
                 LateResponse / "Error (no LLM)" (on time, no judge) or "PartlyCorrect" (on time, judged)
    score(q)   = 20 * j(q) for an on-time answer judged j(q) in [0, 5], else 0
    final_score = (1 / N) * sum_q score(q)

The judge (``--judge llm``, opt-in; without it every on-time answer is "Error (no LLM)" and scores 0) is an
OpenAI-compatible chat model asked once per distinct (question, gold answer, response) with the official prompt
(``prompts/phostream_judge.v1.txt``, one user message, max_tokens 256), its verdicts cached like every judge's
(:class:`~streamcue.metrics.judges.JudgeRunner`). Its reply, stripped, is read as JSON; ``j(q)`` is its ``score``
as a number clipped to [0, 5]; the official parser reads it so when the ``json_repair`` module is absent (with it,
some malformed replies are mended first). A reply that does not read so (or whose score is not finite) scores 0
as the official scorer's fallback does (it retries five times, then gives 0 silently); here it is counted:
``overall.judge_unparseable`` and the item ids in the report's ``judge_unparseable``.

``overall.official`` is ``build_summary``'s dictionary (without ``model_name``): ``#samples``,
``final_score``, ``objective`` and ``subjective`` (PhoStream has no options: every question is subjective),
``<time type>(objective|subjective)`` and, for each category seen, ``<category>(objective-future)`` and
``<category>(subjective-future)`` as ``"<share of forward questions, %>%(<mean score>)"``, rounded as there.
``groups`` give the categories by time type and by capability. A placeholder is a text equal, after
stripping and lower-casing, to one of ``placeholders`` (the configuration's copy of ``config.yaml``'s list).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.io import write_jsonl
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.llm_pool import make_client
from streamcue.metrics.bench_readers import RunPlayed, export_name
from streamcue.metrics.bootstrap import pooled, pooled_rows
from streamcue.metrics.judges import JudgeRunner, llm_judge_options
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import make_report, read_pairs
from streamcue.metrics.timing import Emission, TimingItem, TimingSpec, Trigger, emissions_of, first_unused
from streamcue.metrics.verdict import Triple
from streamcue.prompts import load_prompt

__all__ = ["PhoStreamConfig", "PhoStreamJudge", "PhoStreamVerdict", "CATEGORIES", "JUDGED", "clock", "score_videos",
           "official_summary", "parse_judge_reply", "judge_prompt", "run", "export", "example_predictions", "units",
           "rows", "CATEGORY_ROWS"]

#: The official categories, in the order of the rule above.
CATEGORIES = ("EarlyResponse", "NoResponse", "LateResponse", "Error (no LLM)")
#: The category of an on-time answer the judge scored.
JUDGED = "PartlyCorrect"
#: The judge prompt file (metrics/prompts/).
JUDGE_PROMPT = "phostream_judge.v1"


def _timing_items(gt: Path, pred: Path, config: PhoStreamConfig) -> dict[str, TimingItem]:
    """Each item alone for ``--timing-rule``: its question as one trigger, its responses without placeholders."""
    records, preds = read_pairs(gt, pred, "active_item")
    return {rid: TimingItem((_trigger(r),), emissions_of(preds.get(rid), config.placeholders), r["group"],
                            rid in preds) for rid, r in records.items()}


def _own_categories(gt: Path, pred: Path, config: PhoStreamConfig) -> dict[str, str]:
    """The metric's own category of each question (a video's responses pooled, whole seconds), in the shared rule's
    names: what ``--timing-rule first-unused`` is held against."""
    shared = {official: name for name, official in _OFFICIAL.items()}
    records, preds = read_pairs(gt, pred, "active_item")
    return {rid: shared[item["category"]] for rid, item in score_videos(records, preds, config).items()}


#: Its own timing rule and the items any rule reads (``streamcue evaluate phostream --timing-rule NAME``).
TIMING = TimingSpec("first-unused", lambda c: {"window_s": c.time_window_s, "placeholders": c.placeholders},
                    lambda gt, pred, config: _timing_items(gt, pred, config), group="time_type",
                    categories=lambda gt, pred, config: _own_categories(gt, pred, config),
                    notes=("--timing-rule scores each question alone with its own responses at their recorded times "
                           "(the metric pools a video's responses and reads whole seconds), placeholders dropped",))


#: The run's rows of the official categories (a unit each per question: 1 in its own, 0 in the others); an on-time
#: answer is any other category (``Error (no LLM)`` unjudged, ``PartlyCorrect`` judged).
CATEGORY_ROWS = {"EarlyResponse": "early share", "NoResponse": "no-response share", "LateResponse": "late share",
                 "on-time": "on-time share"}


def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """A question's units: ``(time type, score, 100)``, and ``(category row, 1 or 0, 1)`` for each of
    :data:`CATEGORY_ROWS` (1 in the question's own category)."""
    own = item.get("category") if item.get("category") in CATEGORY_ROWS else "on-time"
    return [(item["time_type"], float(item["score"]), 100.0),
            *((row, float(category == own), 1.0) for category, row in CATEGORY_ROWS.items())]


def rows(keys: Sequence[str], config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Task rows: each time type's score / 100; group rows: ``score / 100`` over every question, and the share of
    questions in each official category (:data:`CATEGORY_ROWS`: early, no response, late, on time; the count is
    the share times ``n``), so the categories stand in the run's tables, page and ``compare``."""
    times = [k for k in keys if k not in CATEGORY_ROWS.values()]
    task, group = pooled_rows("score / 100")(times, config)
    shares = {row: ((row,), pooled((row,))) for row in CATEGORY_ROWS.values() if row in keys}
    return task, {**group, **shares}


#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("phostream", "active_item", "phostream", higher_is_better=True, uses_judge=True,
                summary="PhoStream (ICML 2026): first unused response in [question, answer + 2 s], "
                        "early / late / no-response categories, official score-only mode (--judge llm: the "
                        "official 0-5 x 20 judge)",
                entry="streamcue.metrics.phostream:run",
                config_class="streamcue.metrics.phostream:PhoStreamConfig", config_latest=1,
                units=units, rows=rows, judges=("llm",))


@dataclass(frozen=True)
class PhoStreamConfig:
    """PhoStream's timing rule: the window after the answer time and the placeholder texts (metrics/phostream.py)."""

    version: int = 1
    time_window_s: int = 2
    placeholders: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        from streamcue.metrics.configs import check_int_at_least

        check_int_at_least(self.time_window_s, 0, "phostream time_window_s")
        object.__setattr__(self, "placeholders", tuple(self.placeholders))


def clock(seconds: float) -> str:
    """``MM:SS`` (``HH:MM:SS`` from an hour on) of the whole seconds in ``seconds``, as the official files write."""
    s = int(seconds)
    h, m = s // 3600, s % 3600 // 60
    return f"{h:02d}:{m:02d}:{s % 60:02d}" if h else f"{m:02d}:{s % 60:02d}"


@dataclass(frozen=True)
class PhoStreamVerdict:
    """The judge's 0-5 score of one answer (None when its reply could not be read) and its reply as given."""

    score: float | None
    raw: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_judge_reply(text: str) -> float | None:
    """The judge's 0-5 score read from its reply as the module docstring says, or None."""
    try:
        score = float(json.loads(text.strip())["score"])
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError):
        return None
    return min(5.0, max(0.0, score)) if math.isfinite(score) else None


def judge_prompt(question: str, response: str, reference: str) -> str:
    """The official judge's user message for one answer (the prompt file's text below its ``---`` line)."""
    template = load_prompt("streamcue.metrics", JUDGE_PROMPT).text.partition("\n---\n")[2]
    return template.format(question=question, model_output=response, reference_answer=reference)


#: What a readable reply holds (a plain-text request: no response format is sent, as the official judge sends none).
_SCHEMA = {"type": "object", "required": ["score"], "properties": {"score": {"type": "number", "minimum": 0,
                                                                             "maximum": 5}}}


def _plain(text: str) -> dict[str, float] | None:
    score = parse_judge_reply(text)
    return None if score is None else {"score": score}


@dataclass
class PhoStreamJudge:
    """PhoStream's official judge (module docstring): one plain-text call per triple, its reply parsed here."""

    client: LLMClient
    name: str = "phostream-llm"
    verdict_type = PhoStreamVerdict

    @classmethod
    def from_options(cls, **options: Any) -> PhoStreamJudge:
        # JudgeRunner caches the verdicts; the client's own cache is not needed twice. 256 tokens as the official.
        return cls(make_client(LLMSettings.resolve(**{"max_tokens": 256, **options}), use_cache=False))

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, **self.client.identity(),  # endpoint, model, sampling
                "prompt": load_prompt("streamcue.metrics", JUDGE_PROMPT).version, "parser": 1}

    def judge(self, triples: Sequence[Triple], task: str) -> list[PhoStreamVerdict]:
        from streamcue.concurrency import in_order

        version = load_prompt("streamcue.metrics", JUDGE_PROMPT).version
        requests = [Request(({"role": "user", "content": judge_prompt(question, response, reference)},), _SCHEMA,
                            version, "phostream_verdict", plain=_plain, raw=True)
                    for question, reference, response in triples]
        replies = in_order(self.client.reply, requests, self.client.settings.max_concurrency)
        return [PhoStreamVerdict(reply.parsed["score"] if reply.ok else None, reply.text) for reply in replies]


def _said(pred: Mapping[str, Any] | None) -> list[tuple[int, str]]:
    """A prediction's model responses as ``(whole second, text)``."""
    return [(int(r["t_s"]), r.get("text") or "") for r in (pred or {}).get("responses", [])
            if r.get("role", "assistant") != "user"]


def _by_video(gt: Mapping[str, dict]) -> dict[str, list[str]]:
    """Item ids by video, in the order of the ground-truth file."""
    videos: dict[str, list[str]] = {}
    for rid, record in gt.items():
        videos.setdefault(record["video_id"], []).append(rid)
    return videos


#: The shared rule's categories (metrics/timing.py, ``first-unused``) under their official names.
_OFFICIAL = dict(zip(("early", "no-response", "late", "on-time"), CATEGORIES))


def _trigger(record: Mapping[str, Any]) -> Trigger:
    """A question as the ``first-unused`` rule reads it: whole seconds, a forward question skips its acknowledgement."""
    return Trigger(int(record["target"]["t_s"]), record["target"]["text"], asked_s=int(record["query_time_s"]),
                   skip_ack=record["group"] == "forward")


def score_videos(gt: Mapping[str, dict], preds: Mapping[str, dict], config: PhoStreamConfig,
                 runner: JudgeRunner | None = None) -> dict[str, Any]:
    """Per item id: its category, score and matched response (see the module docstring), video by video; with a
    judge ``runner``, the on-time answers judged (``judge_reply``, and ``judge_unparseable`` when it did not read)."""
    per_item: dict[str, Any] = {}
    for rids in _by_video(gt).values():
        said = [Emission(t, text) for t, text in sorted((r for rid in rids for r in _said(preds.get(rid))),
                                                        key=lambda r: r[0])]
        matched = first_unused([_trigger(gt[rid]) for rid in rids], said, config.time_window_s, config.placeholders)
        for rid, category, (t_r, text) in zip(rids, matched.categories, matched.responses):
            record = gt[rid]
            per_item[rid] = {"video_id": record["video_id"], "time_type": record["group"], "capability": record["task"],
                             "category": _OFFICIAL[category], "score": 0.0, "response_time_s": t_r, "response": text}
    if runner is not None:
        _judge(gt, per_item, runner)
    return per_item


def _judge(gt: Mapping[str, dict], per_item: dict[str, Any], runner: JudgeRunner) -> None:
    """Score the on-time answers of ``per_item`` with the judge, in place."""
    on_time = [rid for rid, item in per_item.items() if item["category"] == _OFFICIAL["on-time"]]
    triples = [(gt[rid]["question"], gt[rid]["target"]["text"], per_item[rid]["response"]) for rid in on_time]
    for rid, verdict in zip(on_time, runner.verdicts(triples, "phostream")):
        item = per_item[rid]
        item.update(category=JUDGED, score=20.0 * (verdict.score or 0.0), judge_reply=verdict.raw,
                    judge_unparseable=verdict.score is None)


def _mean(items: Sequence[Mapping[str, Any]]) -> float:
    return sum(i["score"] for i in items) / len(items) if items else 0.0


def official_summary(per_item: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``build_summary``'s figures (module docstring), from the scored items in file order."""
    items = list(per_item.values())
    if not items:
        return {"#samples": 0, "final_score": 0.0}
    out: dict[str, Any] = {"#samples": len(items), "final_score": _mean(items), "objective": 0.0,
                           "subjective": round(_mean(items), 1)}
    for kind in dict.fromkeys(i["time_type"] for i in items):
        out[f"{kind}(objective)"] = 0.0
        out[f"{kind}(subjective)"] = round(_mean([i for i in items if i["time_type"] == kind]), 1)
    forward = [i for i in items if i["time_type"] == "forward"]
    for category in dict.fromkeys(i["category"] for i in items):
        out[f"{category}(objective-future)"] = "0.0%(0.0)"
    for category in dict.fromkeys(i["category"] for i in items):
        mine = [i for i in forward if i["category"] == category]
        share = round(len(mine) / len(forward) * 100, 1) if forward else 0.0
        out[f"{category}(subjective-future)"] = f"{share}%({round(_mean(mine), 1) if mine else 0.0})"
    return out


def _figures(items: Sequence[Mapping[str, Any]], judged: bool = False) -> dict[str, Any]:
    counts = Counter(i["category"] for i in items)
    categories = (*CATEGORIES[:3], JUDGED) if judged else CATEGORIES
    return {"n": len(items), "score": _mean(items), **{c: counts.get(c, 0) for c in categories},
            **({"judge_unparseable": sum(bool(i.get("judge_unparseable")) for i in items)} if judged else {})}


def _runner(context: EvalContext | None) -> JudgeRunner | None:
    """The official judge when the evaluation asks for it (``--judge llm``), else None (score-only)."""
    judge = context.judge if context is not None else METRIC.default_judge
    if judge == METRIC.default_judge:
        return None
    if judge != "llm":
        raise ConfigError(f"PhoStream's on-time answers are scored by its official LLM judge (--judge llm) or not "
                          f"at all (no --judge), not by judge {judge!r}")
    options = llm_judge_options(context.judge_options, "max_concurrency")
    return JudgeRunner(PhoStreamJudge.from_options(**options), use_cache=context.use_cache)


def run(gt: str | Path, pred: str | Path, config: PhoStreamConfig, context: EvalContext | None) -> dict[str, Any]:
    """Entry point of ``phostream`` (see :mod:`streamcue.metrics.registry`): read, match, categorise, judge."""
    runner = _runner(context)  # a judge it does not take: refused before the files are read
    gt_records, preds = read_pairs(gt, pred, "active_item")
    per_item = score_videos(gt_records, preds, config, runner)
    judged = runner is not None
    groups: dict[str, dict[str, Any]] = {}
    for name, key in (("time_type", "time_type"), ("capability", "capability")):
        values: dict[str, list[dict[str, Any]]] = {}
        for item in per_item.values():
            values.setdefault(item[key], []).append(item)
        groups[name] = {value: _figures(items, judged) for value, items in sorted(values.items())}
    overall = {**_figures(list(per_item.values()), judged), "official": official_summary(per_item)}
    report = make_report("phostream", config, runner, overall, groups, per_item, sorted(set(gt_records) - set(preds)))
    if not judged:
        report["notes"] = ["score-only mode: an answer in its window scores 0 ('Error (no LLM)'), as the official "
                           "scorer with --disable-llm-judge; the categories are the figures that carry information "
                           "(--judge llm scores them with the official judge)"]
        return report
    report["judge_unparseable"] = sorted(rid for rid, item in per_item.items() if item.get("judge_unparseable"))
    if report["judge_unparseable"]:
        report["notes"] = [f"{len(report['judge_unparseable'])} judge replies could not be read (scored 0, as the "
                           "official scorer does silently): see judge_unparseable and per_item.judge_reply"]
    return report


def _official_question(record: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of PhoStream's ``verified_responses`` rebuilt from an item."""
    entry = {"user_query": record["question"], "timestamp_question": clock(record["query_time_s"]),
             "time_type": record["group"], "response": record["target"]["text"], "capability": record["task"]}
    if record["group"] == "forward":
        entry["timestamp_proactive"] = clock(record["target"]["t_s"])
    return entry


def export(played: RunPlayed, out: Path, model: str | None = None) -> dict[str, Any]:
    """Write the run ``played`` (a run folder read by :func:`~streamcue.metrics.bench_readers.read_run`) as PhoStream's
    response file ``out/<MODEL>.jsonl``: one line per video, its ``video_path``, its questions as ``verified_responses``
    and the model's responses (``timestamp`` ``MM:SS``, ``response``, ``status_code`` 200) in time order, the records
    ``run_stream_eval.py --skip-inference --model-output F`` scores. Returns what was written (the official command line
    among it)."""
    name = export_name(model or played.results.get("model", {}).get("name"))
    lines = []
    for video_id, rids in _by_video(played.records).items():
        said = sorted((r for rid in rids for r in _said(played.predictions.get(rid))), key=lambda r: r[0])
        lines.append({"video_path": played.videos.get(video_id, {}).get("uri", video_id),
                      "verified_responses": [_official_question(played.records[rid]) for rid in rids],
                      "responses": [{"timestamp": clock(t), "response": text, "status_code": 200}
                                    for t, text in said]})
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / f"{name}.jsonl", lines)
    return {"format": "phostream-responses", "model": name, "files": [f"{name}.jsonl"], "videos": len(lines),
            "official_command": f"python run_stream_eval.py --model-name {name} --skip-inference "
                                f"--model-output {out / (name + '.jsonl')} --output-dir {out / 'official'} "
                                "--disable-llm-judge"}  # --output-dir: its default is the runner's own folder


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Predictions for the contract test: "Silent" at the question time, then a fixed answer one second later."""
    return [{"item_id": r["item_id"], "responses": [{"t_s": r["query_time_s"], "text": "Silent"},
                                                    {"t_s": r["query_time_s"] + 1, "text": "a phone"}]} for r in gt]
