"""The ``llm`` judge: an OpenAI-compatible chat model grades answers with versioned prompts.

Each metric that it grades declares its task in its own module (``Metric(..., llm_task=LLMTask(...))``: the prompt,
the answer's JSON shape and the verdict read from it, formula there); a task no metric declares is graded as the
task declared ``fallback``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.metrics.verdict import LLMTask, Triple, Verdict
from streamcue.prompts import load_prompt

__all__ = ["LLMJudge", "llm_tasks"]


def llm_tasks() -> dict[str, LLMTask]:
    """The tasks the registered metrics declare, by name."""
    from streamcue.metrics.registry import METRICS

    return {m.llm_task.name: m.llm_task for m in METRICS.values() if m.llm_task is not None}


def _task(name: str) -> LLMTask:
    tasks = llm_tasks()
    return tasks.get(name) or next(t for t in tasks.values() if t.fallback)


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
                "prompts": {name: load_prompt("streamcue.metrics", t.prompt).version
                            for name, t in llm_tasks().items()}}

    def judge(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        graded = _task(task)
        prompt = load_prompt("streamcue.metrics", graded.prompt)
        requests = [Request(({"role": "user",
                              "content": prompt.render(question=q or "(none)", reference=ref, response=res)},),
                            graded.schema, prompt.version, f"{graded.name}_verdict") for q, ref, res in triples]
        return [graded.verdict(a) for a in self.client.complete_many(requests)]
