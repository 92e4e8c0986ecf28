"""Evidence-seeking pre-check of generated records before annotation (AVP's plan, observe, reflect).

Generated questions can carry wrong answer intervals (the generator saw captions, not the
video). Following AVP (Active Video Perception, appendix D.1), each record is checked against
the video itself in rounds of three model calls:

1. **plan**: the planner chooses the spans to watch and how densely (``min_fps``-``max_fps``).
   Its prompt states AVP's rules: a factual question (``proactive_type`` explicit) is checked on
   the claimed intervals exactly, a reasoning question (implicit, contextual) on the intervals
   padded by ``pad_s``; with no claim, or after a round that found nothing, a uniform scan.
   Spans are clipped to the video; if the planner gives none usable, the rule's spans are used.
2. **observe**: the frames of those spans (JPEG, each labelled with its time; at most
   ``max_frames``, the rate lowered to fit) go to a vision model, which returns time-stamped
   evidence ``[{start_s, end_s, description}]``. Evidence outside every watched span, or with
   non-finite times, is dropped (the model cannot have seen it).
3. **reflect**: the reflector reads all evidence so far and returns a verdict (supported /
   unsupported / unsure), whether the evidence is sufficient, a confidence in [0, 1], a
   justification and what is missing (fed to the next round's planner).

The loop stops when the evidence is sufficient with confidence >= ``confidence`` (AVP's best
threshold, 0.7), after at most ``max_rounds`` rounds (3, AVP Table 11). The record's verdict is
the reflector's when it stopped on sufficient evidence, otherwise ``unsure``. A record costs
exactly 3 calls per round (cache hits included in ``calls``); every call goes through
:class:`streamcue.llm.LLMClient`, validated and cached, so a re-run makes no new call and an
interrupted run resumes.

The record itself is returned unchanged except for ``provenance.evidence_check`` (schema:
``common.schema.json#/$defs/evidence_check``).
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from streamcue.errors import ConfigError
from streamcue.llm import LLMClient, Request, image_content
from streamcue.prompts import Prompt, load_prompt

__all__ = ["EvidenceConfig", "FrameSource", "check_record", "verify_records", "question_kind", "verdict_agreement",
           "VERDICTS", "OUTCOMES"]

VERDICTS = ("supported", "unsupported", "unsure")
PROMPTS = {"plan": "evidence_plan.v1", "observe": "evidence_observe.v1", "reflect": "evidence_reflect.v1"}
_PACKAGE = "streamcue.annotation"

#: ``frames(video_id, start_s, end_s, fps)`` -> ``[(t_s, jpeg bytes)]`` of that span.
FrameSource = Callable[[str, float, float, float], Sequence[tuple[float, bytes]]]

_SPAN = {"type": "object", "required": ["start_s", "end_s"],
         "properties": {"start_s": {"type": "number"}, "end_s": {"type": "number"}}}
PLAN_SCHEMA = {"type": "object", "required": ["spans", "fps", "reason"],
               "properties": {"spans": {"type": "array", "items": _SPAN}, "fps": {"type": "number"},
                              "reason": {"type": "string"}}}
OBSERVE_SCHEMA = {"type": "object", "required": ["evidence"],
                  "properties": {"evidence": {"type": "array", "items": {
                      "type": "object", "required": ["start_s", "end_s", "description"],
                      "properties": {"start_s": {"type": "number"}, "end_s": {"type": "number"},
                                     "description": {"type": "string"}}}}}}
REFLECT_SCHEMA = {"type": "object", "required": ["verdict", "sufficient", "confidence", "justification", "missing"],
                  "properties": {"verdict": {"type": "string", "enum": list(VERDICTS)},
                                 "sufficient": {"type": "boolean"},
                                 "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                 "justification": {"type": "string"}, "missing": {"type": "string"}}}


@dataclass(frozen=True)
class EvidenceConfig:
    """Parameters of the loop; the defaults are AVP's (confidence 0.7, at most 3 rounds)."""

    max_rounds: int = 3
    confidence: float = 0.7
    pad_s: float = 10.0
    min_fps: float = 0.25
    max_fps: float = 2.0
    max_frames: int = 32

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ConfigError(f"max_rounds must be at least 1, got {self.max_rounds}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ConfigError(f"confidence must lie in [0, 1], got {self.confidence}")
        if not (0 < self.min_fps <= self.max_fps) or self.max_frames < 1 or not self.pad_s >= 0:
            raise ConfigError("need 0 < min_fps <= max_fps, max_frames >= 1 and pad_s >= 0")


def question_kind(record: dict[str, Any]) -> str:
    """``factual`` for explicit questions (the cue is visible), ``reasoning`` otherwise."""
    return "factual" if record.get("proactive_type") == "explicit" else "reasoning"


Span = tuple[float, float]


def _finite(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def _merge(spans: Sequence[Span], duration_s: float) -> list[Span]:
    """Clip to [0, duration], drop empty or non-finite spans, merge overlaps, sort."""
    clipped = sorted((max(0.0, a), min(duration_s, b)) for a, b in spans
                     if _finite(a, b) and min(duration_s, b) > max(0.0, a))
    merged: list[Span] = []
    for a, b in clipped:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _rule_spans(record: dict[str, Any], duration_s: float, config: EvidenceConfig, scan: bool) -> list[Span]:
    claims = [(a["start_s"], a["end_s"]) for a in record.get("answers", [])]
    if scan or not claims:
        return [(0.0, duration_s)]
    pad = 0.0 if question_kind(record) == "factual" else config.pad_s
    return _merge([(a - pad, b + pad) for a, b in claims], duration_s)


def _fmt_time(t: float) -> str:
    return f"{t:.1f}"


def _claims(record: dict[str, Any]) -> str:
    answers = record.get("answers") or []
    if not answers:
        return "(none)"
    return "\n".join(f"- [{_fmt_time(a['start_s'])}-{_fmt_time(a['end_s'])} s] {a['text']}" for a in answers)


def _evidence_text(evidence: Sequence[dict[str, Any]]) -> str:
    if not evidence:
        return "(none yet)"
    return "\n".join(f"- [{_fmt_time(e['start_s'])}-{_fmt_time(e['end_s'])} s] {e['description']}" for e in evidence)


def _budget_fps(spans: Sequence[Span], fps: float, max_frames: int) -> float:
    """The rate that keeps the frames of ``spans`` within ``max_frames`` (never above ``fps``)."""
    total = sum(b - a for a, b in spans)
    return min(fps, max_frames / total) if total > 0 else fps


@dataclass
class _Prompts:
    plan: Prompt
    observe: Prompt
    reflect: Prompt

    @classmethod
    def load(cls) -> _Prompts:
        return cls(**{step: load_prompt(_PACKAGE, name) for step, name in PROMPTS.items()})

    def versions(self) -> dict[str, str]:
        return {step: getattr(self, step).version for step in PROMPTS}


def check_record(record: dict[str, Any], duration_s: float, frames: FrameSource, client: LLMClient,
                 config: EvidenceConfig = EvidenceConfig(), prompts: _Prompts | None = None) -> dict[str, Any]:
    """Run the plan-observe-reflect loop on one record; returns its ``evidence_check`` block."""
    prompts = prompts or _Prompts.load()
    kind = question_kind(record)
    video_id = record["video_id"]
    evidence: list[dict[str, Any]] = []
    observed: list[Span] = []
    missing, calls, reflection = "(first round)", 0, {}
    for round_ in range(1, config.max_rounds + 1):
        scan = round_ > 1 and not evidence
        default = _rule_spans(record, duration_s, config, scan)
        plan_text = prompts.plan.render(
            min_fps=str(config.min_fps), max_fps=str(config.max_fps), pad_s=str(config.pad_s),
            question_kind=kind, question=record["question"], query_s=_fmt_time(record["query_time_s"]),
            claims=_claims(record), duration_s=_fmt_time(duration_s), round=str(round_),
            max_rounds=str(config.max_rounds),
            observed=", ".join(f"[{_fmt_time(a)}-{_fmt_time(b)} s]" for a, b in observed) or "(nothing)",
            evidence=_evidence_text(evidence), missing=missing)
        plan = client.complete(Request(({"role": "user", "content": plan_text},), PLAN_SCHEMA,
                                       prompts.plan.version, "evidence_plan"))
        calls += 1
        spans = _merge([(s["start_s"], s["end_s"]) for s in plan["spans"]], duration_s) or default
        fps = plan["fps"] if _finite(plan["fps"]) else config.min_fps
        fps = _budget_fps(spans, min(config.max_fps, max(config.min_fps, fps)), config.max_frames)
        shown = [(t, jpeg) for a, b in spans for t, jpeg in frames(video_id, a, b, fps)][:config.max_frames]
        observed = _merge([*observed, *spans], duration_s)
        content: list[dict[str, Any]] = [{"type": "text", "text": prompts.observe.render(
            question=record["question"], query_s=_fmt_time(record["query_time_s"]), claims=_claims(record))}]
        for t, jpeg in shown:
            content += [{"type": "text", "text": f"Frame at {_fmt_time(t)} s"}, image_content(jpeg)]
        seen = client.complete(Request(({"role": "user", "content": content},), OBSERVE_SCHEMA,
                                       prompts.observe.version, "evidence_observe"))
        calls += 1
        for item in seen["evidence"]:
            a, b, text = item["start_s"], item["end_s"], item["description"].strip()
            if not text or not _finite(a, b):
                continue
            a, b = min(a, b), max(a, b)
            if any(a <= s_end and b >= s_start for s_start, s_end in spans):
                evidence.append({"start_s": max(0.0, float(a)), "end_s": min(duration_s, float(b)),
                                 "description": text})
        evidence.sort(key=lambda e: (e["start_s"], e["end_s"]))
        reflection = client.complete(Request(({"role": "user", "content": prompts.reflect.render(
            question_kind=kind, question=record["question"], query_s=_fmt_time(record["query_time_s"]),
            claims=_claims(record), evidence=_evidence_text(evidence))},),
            REFLECT_SCHEMA, prompts.reflect.version, "evidence_reflect"))
        calls += 1
        missing = reflection["missing"] or "(not said)"
        if reflection["sufficient"] and reflection["confidence"] >= config.confidence:
            break
    settled = reflection["sufficient"] and reflection["confidence"] >= config.confidence
    return {
        "verdict": reflection["verdict"] if settled else "unsure",
        "confidence": float(reflection["confidence"]),
        "justification": reflection["justification"],
        "evidence": evidence,
        "observed": [{"start_s": a, "end_s": b} for a, b in observed],
        "rounds": round_,
        "calls": calls,
        "model": client.settings.model,
        "prompts": prompts.versions(),
    }


def verify_records(records: Sequence[dict[str, Any]], durations: dict[str, float], frames: FrameSource,
                   client: LLMClient, config: EvidenceConfig = EvidenceConfig(), *, concurrency: int = 1,
                   progress: Callable[[Any], Any] = iter) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each record with ``provenance.evidence_check`` added (records unchanged otherwise), and a report.

    ``durations`` maps video ids to seconds; ``concurrency`` records are checked at a time (each
    record's rounds stay in order).
    """
    prompts = _Prompts.load()

    def one(record: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(record)
        out["provenance"]["evidence_check"] = check_record(record, durations[record["video_id"]], frames, client,
                                                           config, prompts)
        return out

    if concurrency > 1:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            checked = list(progress(pool.map(one, records)))
    else:
        checked = [one(r) for r in progress(records)]
    blocks = [r["provenance"]["evidence_check"] for r in checked]
    report = {
        "records": len(checked),
        "verdicts": {v: sum(1 for b in blocks if b["verdict"] == v) for v in VERDICTS},
        "rounds": dict(sorted(Counter(b["rounds"] for b in blocks).items())),
        "calls_per_record": (sum(b["calls"] for b in blocks) / len(blocks)) if blocks else 0.0,
        "llm": {"model": client.settings.model, **client.usage.to_dict()},
        "config": asdict(config),
        "prompts": prompts.versions(),
    }
    return checked, report


def _outcome(checked: dict[str, Any], verified: dict[str, Any] | None) -> str:
    """What the annotators did: confirmed (verified, unchanged), corrected, rejected or pending."""
    if verified is None or verified["verification"]["status"] == "unverified":
        return "pending"
    if verified["verification"]["status"] == "rejected":
        return "rejected"
    same = all(checked.get(k) == verified.get(k) for k in ("question", "answers", "query_time_s"))
    return "confirmed" if same else "corrected"


OUTCOMES = ("confirmed", "corrected", "rejected", "pending")


def verdict_agreement(checked: Sequence[dict[str, Any]], verified: Sequence[dict[str, Any]],
                      id_field: str = "qa_id") -> dict[str, Any]:
    """How often the annotators' outcome agreed with the pre-check's verdict.

    Agreement: ``supported`` records confirmed unchanged, ``unsupported`` ones corrected or rejected.
    ``unsure`` verdicts and records still pending are counted but left out of the agreement share.
    """
    pulled = {r[id_field]: r for r in verified}
    table = {v: dict.fromkeys(OUTCOMES, 0) for v in VERDICTS}
    agree = decided = 0
    for record in checked:
        block = record.get("provenance", {}).get("evidence_check")
        if block is None:
            continue
        outcome = _outcome(record, pulled.get(record[id_field]))
        table[block["verdict"]][outcome] += 1
        if outcome != "pending" and block["verdict"] != "unsure":
            decided += 1
            agree += (block["verdict"] == "supported") == (outcome == "confirmed")
    return {"by_verdict": table, "decided": decided, "agreement": agree / decided if decided else None}
