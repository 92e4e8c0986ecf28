"""The ``phostream`` metric: PhoStream's timing categories and score, as its official scorer's score-only mode.

Source: Lucky-Lance/PhoStream (MIT), commit ed7543d6f580278db795e618c22730ca56a9807b,
``run_stream_eval.py`` (``evaluate_sample``, ``build_summary``) with ``config.yaml``'s placeholder list, run as
``run_stream_eval.py --skip-inference --model-output F --disable-llm-judge``. Times are whole seconds: a
response at ``t_s`` counts at ``floor(t_s)``, as the official runner stamps it.

A video's responses R are the responses of its items' predictions (``role`` user left out), in time order.
Its questions are taken in file order; question q, asked at ``t_q``, answered by its gold time ``t_a``
(``target.t_s``; ``t_a = t_q`` unless the question is forward), with window ``w`` (``time_window_s``, 2 s):

    match(q), category: the ``first-unused`` rule (:mod:`streamcue.metrics.timing`, where its formula is) over
                 the video's questions and R, ``q_k = t_q``, ``t_k = t_a``, acknowledgements skipped for a forward
                 question; its categories early / no-response / late / on-time are EarlyResponse / NoResponse /
                 LateResponse / "Error (no LLM)" (on time; the official score-only mode has no judge)
    score(q)   = 0 in every category (the on-time answers are scored 0-5 x 20 only by the official judge,
                 which this version does not run)
    final_score = (1 / N) * sum_q score(q)

``overall.official`` is ``build_summary``'s dictionary (without ``model_name``): ``#samples``,
``final_score``, ``objective`` and ``subjective`` (PhoStream has no options: every question is subjective),
``<time type>(objective|subjective)`` and, for each category seen, ``<category>(objective-future)`` and
``<category>(subjective-future)`` as ``"<share of forward questions, %>%(<mean score>)"``, rounded as there.
``groups`` give the categories by time type and by capability. A placeholder is a text equal, after
stripping and lower-casing, to one of ``placeholders`` (the configuration's copy of ``config.yaml``'s list).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.io import write_jsonl
from streamcue.metrics.bench_readers import export_name, read_run
from streamcue.metrics.bootstrap import pooled_rows
from streamcue.metrics.registry import EvalContext, Metric
from streamcue.metrics.scoring import make_report, read_pairs
from streamcue.metrics.timing import Emission, TimingItem, TimingSpec, Trigger, emissions_of, first_unused

__all__ = ["PhoStreamConfig", "CATEGORIES", "clock", "score_videos", "official_summary", "run", "export",
           "example_predictions", "units"]

#: The official categories, in the order of the rule above.
CATEGORIES = ("EarlyResponse", "NoResponse", "LateResponse", "Error (no LLM)")


def _timing_items(gt: Path, pred: Path, config: PhoStreamConfig) -> dict[str, TimingItem]:
    """Each item alone for ``--timing-rule``: its question as one trigger, its responses without placeholders."""
    records, preds = read_pairs(gt, pred, "active_item")
    return {rid: TimingItem((_trigger(r),), emissions_of(preds.get(rid), config.placeholders), r["group"],
                            rid in preds) for rid, r in records.items()}


#: Its own timing rule and the items any rule reads (``streamcue evaluate phostream --timing-rule NAME``).
TIMING = TimingSpec("first-unused", lambda c: {"window_s": c.time_window_s, "placeholders": c.placeholders},
                    lambda gt, pred, config: _timing_items(gt, pred, config), group="time_type",
                    notes=("--timing-rule scores each question alone with its own responses at their recorded times "
                           "(the metric pools a video's responses and reads whole seconds), placeholders dropped",))


def units(item: Mapping[str, Any], record: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """A question's unit: ``(time type, score, 100)``."""
    return [(item["time_type"], float(item["score"]), 100.0)]


#: The metric as ``streamcue evaluate`` runs it (metrics/registry.py reads it here).
METRIC = Metric("phostream", "active_item", "phostream", higher_is_better=True, uses_judge=False,
                summary="PhoStream (ICML 2026): first unused response in [question, answer + 2 s], "
                        "early / late / no-response categories, official score-only mode",
                entry="streamcue.metrics.phostream:run",
                config_class="streamcue.metrics.phostream:PhoStreamConfig", config_latest=1,
                units=units, rows=pooled_rows("score / 100"))


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


def score_videos(gt: Mapping[str, dict], preds: Mapping[str, dict], config: PhoStreamConfig) -> dict[str, Any]:
    """Per item id: its category, score and matched response (see the module docstring), video by video."""
    per_item: dict[str, Any] = {}
    for rids in _by_video(gt).values():
        said = [Emission(t, text) for t, text in sorted((r for rid in rids for r in _said(preds.get(rid))),
                                                        key=lambda r: r[0])]
        matched = first_unused([_trigger(gt[rid]) for rid in rids], said, config.time_window_s, config.placeholders)
        for rid, category, (t_r, text) in zip(rids, matched.categories, matched.responses):
            record = gt[rid]
            per_item[rid] = {"video_id": record["video_id"], "time_type": record["group"], "capability": record["task"],
                             "category": _OFFICIAL[category], "score": 0.0, "response_time_s": t_r, "response": text}
    return per_item


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


def _figures(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    counts = Counter(i["category"] for i in items)
    return {"n": len(items), "score": _mean(items), **{c: counts.get(c, 0) for c in CATEGORIES}}


def run(gt: str | Path, pred: str | Path, config: PhoStreamConfig, context: EvalContext) -> dict[str, Any]:
    """Entry point of ``phostream`` (see :mod:`streamcue.metrics.registry`): read, match, categorise."""
    gt_records, preds = read_pairs(gt, pred, "active_item")
    per_item = score_videos(gt_records, preds, config)
    groups: dict[str, dict[str, Any]] = {}
    for name, key in (("time_type", "time_type"), ("capability", "capability")):
        values: dict[str, list[dict[str, Any]]] = {}
        for item in per_item.values():
            values.setdefault(item[key], []).append(item)
        groups[name] = {value: _figures(items) for value, items in sorted(values.items())}
    overall = {**_figures(list(per_item.values())), "official": official_summary(per_item)}
    report = make_report("phostream", config, None, overall, groups, per_item, sorted(set(gt_records) - set(preds)))
    report["notes"] = ["score-only mode: an answer in its window scores 0 ('Error (no LLM)'), as the official "
                       "scorer with --disable-llm-judge; the categories are the figures that carry information"]
    return report


def _official_question(record: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of PhoStream's ``verified_responses`` rebuilt from an item."""
    entry = {"user_query": record["question"], "timestamp_question": clock(record["query_time_s"]),
             "time_type": record["group"], "response": record["target"]["text"], "capability": record["task"]}
    if record["group"] == "forward":
        entry["timestamp_proactive"] = clock(record["target"]["t_s"])
    return entry


def export(run: str | Path, out: Path, model: str | None = None) -> dict[str, Any]:
    """Write the run folder ``run`` as PhoStream's response file ``out/<MODEL>.jsonl``: one line per video, its
    ``video_path``, its questions as ``verified_responses`` and the model's responses (``timestamp`` ``MM:SS``,
    ``response``, ``status_code`` 200) in time order, the records ``run_stream_eval.py --skip-inference
    --model-output F`` scores. Returns what was written (the official command line among it)."""
    played = read_run(run)
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
                                f"--model-output {out / (name + '.jsonl')} --disable-llm-judge"}


def example_predictions(gt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Predictions for the contract test: "Silent" at the question time, then a fixed answer one second later."""
    return [{"item_id": r["item_id"], "responses": [{"t_s": r["query_time_s"], "text": "Silent"},
                                                    {"t_s": r["query_time_s"] + 1, "text": "a phone"}]} for r in gt]
