"""The ``llm`` judge: an OpenAI-compatible chat model grades answers with versioned prompts.

* ``vsas`` task: prompt ``vsas_judge.v1`` returns ``{"score": 0-3, "match": bool}``;
  the verdict is ``binary = match``, ``rubric = score``, ``answer_score = 1 + 4 * score / 3``.
* ``estp`` task: prompt ``estp_answer.v1`` returns ``{"score": 1-5}``;
  ``answer_score = score``, ``rubric = round(3 * (score - 1) / 4)``, ``binary = score >= 3``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.metrics.verdict import Triple, Verdict
from streamcue.prompts import load_prompt

__all__ = ["LLMJudge"]

SCHEMAS = {
    "vsas": {"type": "object", "required": ["score", "match"], "additionalProperties": False,
             "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 3}, "match": {"type": "boolean"}}},
    "estp": {"type": "object", "required": ["score"], "additionalProperties": False,
             "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}},
}
PROMPTS = {"vsas": "vsas_judge.v1", "estp": "estp_answer.v1"}


@dataclass
class LLMJudge:
    client: LLMClient
    name: str = "llm"

    @classmethod
    def from_options(cls, **options: Any) -> LLMJudge:
        # The judge's verdicts are cached by JudgeRunner; the client's own cache is not needed twice.
        return cls(LLMClient(LLMSettings.resolve(**options), use_cache=False))

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, **self.client.identity(),  # endpoint, model, sampling
                "prompts": {task: load_prompt("streamcue.metrics", p).version for task, p in PROMPTS.items()}}

    def judge(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        task = task if task in PROMPTS else "vsas"
        prompt = load_prompt("streamcue.metrics", PROMPTS[task])
        requests = [Request(({"role": "user",
                              "content": prompt.render(question=q or "(none)", reference=ref, response=res)},),
                            SCHEMAS[task], prompt.version, f"{task}_verdict") for q, ref, res in triples]
        answers = self.client.complete_many(requests)
        if task == "vsas":
            return [Verdict(bool(a["match"]), int(a["score"]), 1 + 4 * a["score"] / 3) for a in answers]
        return [Verdict(a["score"] >= 3, int(round(3 * (a["score"] - 1) / 4)), float(a["score"])) for a in answers]
