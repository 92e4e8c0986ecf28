"""Stage 5, many-to-many grouping into contextual multi-turn sets (ESTP-Bench appendix B.5, step 5).

The LLM sees a video's generated questions in time order and groups logically related ones
into conversations of 2-4 turns, rewriting each question as a follow-up. Every group becomes a
set of new ORC (object relative context) records sharing ``context.group_id``, turns ordered
by query time, each keeping its member's answers. Invalid groups (unknown or repeated members,
fewer than two, a question count that does not match) are dropped and counted, never repaired
silently; a question joins at most one group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamcue.dataset_builders.estp_gen.records import make_qa
from streamcue.llm import LLMClient, Request
from streamcue.prompts import load_prompt

__all__ = ["many_to_many"]

PROMPT = ("streamcue.dataset_builders.estp_gen", "many_to_many.v1")


def _schema(n: int) -> dict[str, Any]:
    return {"type": "object", "required": ["groups"], "properties": {"groups": {"type": "array", "items": {
        "type": "object", "required": ["members", "questions"],
        "properties": {"members": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": n - 1}},
                       "questions": {"type": "array", "items": {"type": "string", "minLength": 1}}}}}}}


def many_to_many(video_id: str, goal: str, records: Sequence[dict[str, Any]], llm: LLMClient,
                 source: str) -> tuple[list[dict[str, Any]], int]:
    """New contextual ORC records for one video, and how many proposed groups were invalid."""
    ordered = sorted(records, key=lambda r: (r["query_time_s"], r["qa_id"]))
    if len(ordered) < 2:
        return [], 0
    prompt = load_prompt(*PROMPT)
    listing = "\n".join(f"[{i}] {r['question']} -> {r['answers'][0]['text']}" for i, r in enumerate(ordered))
    answer = llm.complete(Request(({"role": "user", "content": prompt.render(goal=goal, questions=listing)},),
                                  _schema(len(ordered)), prompt.version, "many_to_many"))
    used: set[int] = set()
    out, invalid = [], 0
    for group in answer["groups"]:
        members = group["members"]
        if (len(members) < 2 or len(set(members)) != len(members) or used & set(members)
                or len(group["questions"]) != len(members)):
            invalid += 1
            continue
        used.update(members)
        group_id = f"{video_id}:ORC:{sum(1 for r in out if r['context']['turn'] == 1)}"
        turns = sorted(zip(members, group["questions"]), key=lambda mq: (ordered[mq[0]]["query_time_s"], mq[0]))
        for turn, (m, question) in enumerate(turns, start=1):
            member = ordered[m]
            out.append(make_qa(f"{group_id}:{turn}", video_id, "ORC", question, member["query_time_s"],
                               member["answers"],
                               stage="many_to_many", source=source, context=(group_id, turn), model=llm.settings.model,
                               prompt_hash=prompt.sha256[:16], from_qa=member["qa_id"]))
    return out, invalid
