"""Agreement: between annotators for every kind (:func:`annotator_agreement`), and generated-vs-verified
dense captions (:func:`caption_agreement`, VSAS-Bench reports it after verification).

Between annotators (every record two annotators submitted, every pair of them; reviewers left out),
pooled per project and per annotator pair:

* every kind: ``record_agreement``, the share of record pairs that agree under the double-check rule
  (same decision, same items, boundaries within the tolerance, same types and texts);
* interval_qa: ``decision_same`` (both reject or both keep), ``question_same``, ``interval_iou`` (mean
  temporal IoU of the two annotators' answer intervals, as sets of seconds, records neither rejected),
  ``answer_text_same`` (answers both kept: same text up to case and spacing);
* guidance: ``event_in_both`` (events either kept or added that the other kept too: pushed events by
  region, added ones in time order), then over those: ``time_within_tolerance``, ``type_same``,
  ``text_same`` and ``mean_abs_dt_s``;
* dense_caption: ``caption_text_same``.

Generated vs verified captions, for every caption present in both files (matched by task_id and second):

* cosine similarity of the two texts' sentence embeddings (normalised, so the dot product);
* agreement: the share of captions whose similarity is at least ``threshold``;
* corrected: the share the annotators changed (flagged ``corrected`` or a different text).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.embedding import Embedder, model_name
from streamcue.errors import InputError
from streamcue.schemas import validate_file
from streamcue.io import read_jsonl


__all__ = ["AGREEMENT_FILE", "annotator_agreement", "caption_agreement", "interval_iou"]

#: The agreement figures ``annotate pull`` writes beside the pulled records (the release card reads them).
AGREEMENT_FILE = "agreement.json"
_SHARES = {"interval_qa": ("record_agreement", "decision_same", "question_same", "interval_iou", "answer_text_same"),
           "guidance": ("record_agreement", "event_in_both", "time_within_tolerance", "type_same", "text_same",
                        "mean_abs_dt_s"),
           "dense_caption": ("record_agreement", "caption_text_same")}


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def interval_iou(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Temporal IoU of two sets of intervals (each taken as the union of its intervals); 1.0 when both are empty."""
    a, b = _merged(a), _merged(b)
    inter = sum(max(0.0, min(x[1], y[1]) - max(x[0], y[0])) for x in a for y in b)
    union = sum(e - s for s, e in a) + sum(e - s for s, e in b) - inter
    return 1.0 if union <= 0 else inter / union


class _Tally:
    def __init__(self) -> None:
        self.records = 0
        self.num: dict[str, float] = defaultdict(float)
        self.den: dict[str, int] = defaultdict(int)

    def add(self, name: str, value: float, weight: int = 1) -> None:
        self.num[name] += value
        self.den[name] += weight

    def figures(self, kind: str) -> dict[str, Any]:
        return {"records": self.records, **{n: (self.num[n] / self.den[n] if self.den[n] else None)
                                            for n in _SHARES[kind]}}


def _compare(kind: str, a: Any, b: Any, tolerance_s: float, tally: _Tally) -> None:
    from streamcue.annotation.verify import _norm, _pair_new, differences

    tally.records += 1
    tally.add("record_agreement", float(not differences(kind, a, b, tolerance_s)))
    if kind == "interval_qa":
        tally.add("decision_same", float(a.rejected == b.rejected))
        if a.rejected or b.rejected:
            return
        tally.add("question_same", float(_norm(a.record["question"]) == _norm(b.record["question"])))
        spans = [[(x["start_s"], x["end_s"]) for x in r.record["answers"]] for r in (a, b)]
        tally.add("interval_iou", interval_iou(*spans))
        for rid in a.items.keys() & b.items.keys():
            tally.add("answer_text_same", float(_norm(a.items[rid]["text"]) == _norm(b.items[rid]["text"])))
        return
    if kind == "dense_caption":
        for rid in a.items.keys() & b.items.keys():
            tally.add("caption_text_same", float(_norm(a.items[rid]["text"]) == _norm(b.items[rid]["text"])))
        return
    pushed = [(a.items.get(k), b.items.get(k)) for k in {k for k in (*a.items, *b.items) if not k.startswith("+")}]
    for x, y in pushed + _pair_new(a.items, b.items, "t_s"):
        tally.add("event_in_both", float(x is not None and y is not None))
        if x is None or y is None:
            continue
        dt = abs(x["t_s"] - y["t_s"])
        tally.add("time_within_tolerance", float(dt <= tolerance_s))
        tally.add("mean_abs_dt_s", dt)
        tally.add("type_same", float(x["type"] == y["type"]))
        tally.add("text_same", float(_norm(x["text"]) == _norm(y["text"])))


def annotator_agreement(kind: str, applied: list[list[tuple[str, Any]]], tolerance_s: float) -> dict[str, Any]:
    """Agreement between annotators: ``applied`` holds, per record, each annotator's (name, Applied).

    Returns ``{"kind", "tolerance_s", "figures", "overall": {...}, "pairs": [{"annotators": [a, b], ...}]}``
    (figures: see the module's docstring; a figure with nothing to compare is None).
    """
    overall, pairs = _Tally(), defaultdict(_Tally)
    for record_annotations in applied:
        for i, (na, a) in enumerate(record_annotations):
            for nb, b in record_annotations[i + 1:]:
                (na_, a_), (nb_, b_) = sorted(((na, a), (nb, b)), key=lambda p: p[0])
                _compare(kind, a_, b_, tolerance_s, overall)
                _compare(kind, a_, b_, tolerance_s, pairs[(na_, nb_)])
    return {"kind": kind, "tolerance_s": tolerance_s, "figures": list(_SHARES[kind]),
            "overall": overall.figures(kind),
            "pairs": [{"annotators": list(k), **t.figures(kind)} for k, t in sorted(pairs.items())]}


def caption_agreement(generated: str | Path, verified: str | Path, *, threshold: float = 0.8,
                      model_path: str | Path | None = None) -> dict[str, Any]:
    for path in (generated, verified):
        validate_file(path, "dense_caption")
    before = {r["task_id"]: r for r in read_jsonl(generated)}
    pairs: list[tuple[str, str, str, bool]] = []  # category, generated, verified, corrected
    for record in read_jsonl(verified):
        original = before.get(record["task_id"])
        if original is None:
            raise InputError("task not in the generated file", file=verified, record=f"task_id={record['task_id']}")
        texts = {c["t_s"]: c["text"] for c in original["captions"]}
        for caption in record["captions"]:
            if caption["t_s"] in texts:
                old = texts[caption["t_s"]]
                pairs.append((record["category"], old, caption["text"],
                              bool(caption.get("corrected")) or caption["text"] != old))
    if not pairs:
        raise InputError("no captions in common (matched by task_id and second)", file=verified)
    sims = Embedder(model_path).pair_similarity([p[1] for p in pairs], [p[2] for p in pairs])

    def summary(index: list[int]) -> dict[str, Any]:
        s = sims[index]
        return {"captions": len(index), "mean_cosine": float(np.mean(s)), "share_above": float(np.mean(s >= threshold)),
                "share_corrected": float(np.mean([pairs[i][3] for i in index]))}

    groups: dict[str, list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        groups[pair[0]].append(i)
    return {"overall": summary(list(range(len(pairs)))), "groups": {k: summary(v) for k, v in sorted(groups.items())},
            "threshold": threshold, "model": model_name(model_path)}
