"""Generated-vs-verified agreement of dense captions (VSAS-Bench reports it after verification).

For every caption present in both files (matched by task_id and second):

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


__all__ = ["caption_agreement"]


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
