"""Recorded guidance -> LiveCook "mistake summaries" (``mistake_summary``), as ``livecook-summaries`` makes them
for CaptainCook4D.

The retrieval index is the mistakes of the **train**-split recorded videos' guidance records (each performed
step with at least one mistake: its description and its mistakes); for every plan step of a validation or
test video, the ``k`` index entries whose description is most similar (sentence embeddings, cosine;
:func:`streamcue.dataset_builders.livecook_summaries.retrieve`) are shown to the LLM with LiveCook's prompt,
which summarises the mistakes people typically make there. Only train-split text reaches a prompt.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from streamcue.dataset_builders.livecook_summaries import ANSWER_SCHEMA, PROMPT, TrainExample, queries, retrieve
from streamcue.llm import LLMClient, Request
from streamcue.prompts import load_prompt
from streamcue.schemas import SCHEMA_VERSION

__all__ = ["train_index", "summaries"]


def train_index(guidance: Sequence[dict[str, Any]], splits: dict[str, str]) -> list[TrainExample]:
    """Every performed step of a train-split guidance record with at least one mistake, in record order."""
    examples = []
    for record in guidance:
        if splits[record["video_id"]] != "train":
            continue
        found: dict[Any, list[tuple[str, str]]] = {}
        for event in record["events"]:
            if event["type"] == "mistake":
                for sid in event["step_ids"]:
                    found.setdefault(sid, []).append((event["mistake_category"], event["text"]))
        for step in record["plan"]:
            for action in step["actions"]:
                if action["step_id"] in found:
                    examples.append(TrainExample(record["video_id"], action["step_id"], action["description"],
                                                 tuple(found.pop(action["step_id"]))))
    return examples


def summaries(guidance: Sequence[dict[str, Any]], splits: dict[str, str], llm: LLMClient, embedder: Any,
              embedding_model: str, k: int, source: str) -> Iterator[dict[str, Any]]:
    """``mistake_summary`` records for every plan step of the validation and test videos (none without an
    index: no train-split video with a mistake)."""
    index = train_index(guidance, splits)
    qs = queries(guidance, splits, ("validation", "test"))
    if not index or not qs:
        return
    prompt = load_prompt(*PROMPT)
    neighbours = retrieve(embedder, index, [q.instruction for q in qs], k)
    requests = [Request(({"role": "user", "content": prompt.render(
        activity=q.activity, instruction=q.instruction,
        mistakes="\n".join(dict.fromkeys(f"- {index[j].instruction} -> [{c}] {d}"
                                         for j, _ in hits for c, d in index[j].mistakes)))},),
        ANSWER_SCHEMA, prompt.version, "mistake_summary") for q, hits in zip(qs, neighbours)]
    for q, hits, answer in zip(qs, neighbours, llm.complete_many(requests)):
        yield {
            "schema_version": SCHEMA_VERSION, "summary_id": f"{q.video_id}:{q.plan_index}", "video_id": q.video_id,
            "plan_index": q.plan_index, "split": q.split, "instruction": q.instruction, "step_ids": list(q.step_ids),
            "summary": "\n".join(" ".join(line.split()) for line in answer["possible_mistakes"]),
            "neighbours": [{"video_id": index[j].video_id, "step_id": index[j].step_id,
                            "instruction": index[j].instruction, "similarity": sim,
                            "mistakes": [{"category": c, "description": d} for c, d in index[j].mistakes]}
                           for j, sim in hits],
            "retrieval": {"index_split": "train", "embedding_model": embedding_model, "k": k,
                          "index_size": len(index)},
            "provenance": {"builder": "streamcue.recorded", "version": "1.0", "source": source,
                           "stage": "mistake_summary", "model": llm.settings.model, "prompt_hash": prompt.sha256[:16],
                           "notes": ["retrieval index: the train-split recorded videos' marked mistakes"]},
            "verification": {"status": "unverified", "annotators": [], "checks": 0},
        }
