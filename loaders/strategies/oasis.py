"""OASIS's hierarchical event memory (OASIS, supplementary material) as a replay memory policy.

Tiers, from recent to old:

* **short window**: the last ``short_k`` frames, shown to the model as images;
* **medium buffer**: frames that left the short window; every ``event_frames`` of them are
  summarised by the model into a leaf **event node** (chronological, concrete, nothing guessed,
  at most ``max_words`` words; longer answers are cut and counted);
* **event forest**: when ``fanout`` adjacent roots share a level they are merged, by the model,
  into a parent node (same word bound) one level up; when more than ``max_roots`` roots remain
  (4, OASIS's ``root_cnt_limit``) the two oldest are merged;
* **Q/A memory**: the ``k_q`` earlier question/answer pairs of the dialogue most similar to the
  current question (each cut to ``max_words`` words).

At every call the forest is searched with the current question: each node scores
``weight * cosine(question, node) + (1 - weight) * level / max_level`` (``weight`` trades
similarity against abstraction; the paper does not give the mix, so it is a parameter), and
:func:`retrieve` greedily takes the best node, drops its ancestors and descendants, and repeats
up to ``k_f`` nodes (2 works best in the paper), so the results come from distinct branches.
The text context (retrieved nodes in time order, then the Q/A pairs) is bounded by
``(k_f + 2 k_q) * max_words`` words and the frames by ``short_k``, however long the video.

LLM calls: one per ``event_frames`` frames for the leaves plus about as many merges; at 1 fps
with 16-frame events that is about 450 per video hour, on top of the strategy's own calls.
Embeddings come from the packaged all-MiniLM-L6-v2 (``[embed]`` extra) unless an ``embedder``
with ``encode(texts) -> unit vectors`` is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streamcue.errors import ConfigError
from streamcue.loaders.replay import Episode, Frame, select_frames, with_pixels
from streamcue.loaders.strategies.base import TEXT, Asker, frame_parts

__all__ = ["EventNode", "OasisMemory", "retrieve", "OFFICIAL", "OFFICIAL_SOURCE"]

OFFICIAL_SOURCE = "Solus-sano/OASIS src/configs/default.yaml at commit dbd342c (MIT)"
#: The defaults of the official code (OFFICIAL_SOURCE; a copy in shared/data/streambench/oasis_default.yaml):
#: now_window_frames_limit 16 (``short_k``), max_frames_per_node 16 (``event_frames``, and every frame of a node
#: is shown when it is summarised: ``summary_frames``), root_cnt_limit 4 (``max_roots``),
#: rag_event_retrieve_limit 2 (``k_f``), rag_qa_retrieve_limit 1 (``k_q``). Where streamcue differs (stream fps,
#: sampling, the pixel budget, the models) is in docs/replay.md, "OASIS".
OFFICIAL = {"short_k": 16, "event_frames": 16, "summary_frames": 16, "max_roots": 4, "k_f": 2, "k_q": 1}


@dataclass
class EventNode:
    id: int
    start_s: float
    end_s: float
    level: int
    text: str
    parent: int | None = None
    children: list[int] = field(default_factory=list)


def _family(nodes: Sequence[EventNode], i: int) -> set[int]:
    """``i``, its ancestors and its descendants."""
    out = {i}
    up = nodes[i].parent
    while up is not None:
        out.add(up)
        up = nodes[up].parent
    stack = list(nodes[i].children)
    while stack:
        child = stack.pop()
        out.add(child)
        stack.extend(nodes[child].children)
    return out


def retrieve(nodes: Sequence[EventNode], similarity: Sequence[float], k_f: int, weight: float = 0.7) -> list[int]:
    """Ids of at most ``k_f`` nodes, none an ancestor or descendant of another, best score first.

    ``similarity[i]`` is node ``i``'s similarity to the query; the score adds
    ``(1 - weight) * level / max_level``. Ties go to the earlier node.
    """
    if k_f < 1 or not nodes:
        return []
    top = max(n.level for n in nodes) or 1
    scores = [weight * float(similarity[n.id]) + (1 - weight) * n.level / top for n in nodes]
    chosen: list[int] = []
    excluded: set[int] = set()
    for i in sorted(range(len(nodes)), key=lambda j: (-scores[j], j)):
        if i in excluded:
            continue
        chosen.append(i)
        if len(chosen) == k_f:
            break
        excluded |= _family(nodes, i)
    return chosen


def _cut(text: str, max_words: int) -> tuple[str, bool]:
    words = text.split()
    return (" ".join(words[:max_words]), True) if len(words) > max_words else (" ".join(words), False)


class OasisMemory(Asker):
    """``view(frames, k, now, prompt, history) -> (short-window frames, text context)`` for the replay."""

    name = "oasis"
    EVENT, MERGE = "oasis_event.v1", "oasis_merge.v1"

    def __init__(self, settings: Any = None, *, embedder: Any = None, short_k: int = OFFICIAL["short_k"],
                 event_frames: int = OFFICIAL["event_frames"], summary_frames: int = OFFICIAL["summary_frames"],
                 fanout: int = 2, max_roots: int = OFFICIAL["max_roots"], max_words: int = 300,
                 k_f: int = OFFICIAL["k_f"], k_q: int = OFFICIAL["k_q"], weight: float = 0.7, use_cache: bool = True,
                 client: Any = None) -> None:
        for name, value, low in (("short_k", short_k, 0), ("event_frames", event_frames, 1),
                                 ("summary_frames", summary_frames, 1), ("fanout", fanout, 2),
                                 ("max_roots", max_roots, 1), ("max_words", max_words, 1), ("k_f", k_f, 0),
                                 ("k_q", k_q, 0)):
            if not isinstance(value, int) or value < low:
                raise ConfigError(f"OASIS memory: {name} must be an integer >= {low}, got {value!r}")
        if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
            raise ConfigError(f"OASIS memory: weight must lie in [0, 1], got {weight!r}")
        super().__init__(settings, use_cache=use_cache, client=client)
        self.short_k, self.event_frames, self.summary_frames = short_k, event_frames, summary_frames
        self.fanout, self.max_words, self.k_f, self.k_q, self.weight = fanout, max_words, k_f, k_q, weight
        self.max_roots = max_roots
        self._embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}
        self.begin(None)

    def begin(self, episode: Episode | None) -> None:
        """Forget everything: a new record starts (its frames' pixels come from ``episode.pixels``)."""
        self._pixels = episode.pixels if episode is not None else None
        self.nodes: list[EventNode] = []
        self.roots: list[int] = []
        self.medium: list[Frame] = []
        self._recent: list[Frame] = []
        self._last_t = -math.inf
        self.last_context: str | None = None

    # -- building the forest ------------------------------------------------------------------
    def _summary(self, prompt: str, content: list[dict[str, Any]], what: str) -> str:
        text, cut = _cut(self.ask(prompt, content, TEXT, what, max_words=str(self.max_words))["text"], self.max_words)
        self.stats["summaries_cut"] += cut
        return text

    def _add_leaf(self, frames: Sequence[Frame]) -> None:
        shown = with_pixels(select_frames(frames, self.summary_frames, "U"), self._pixels)
        text = self._summary(self.EVENT, frame_parts(shown), "ask_event")
        node = EventNode(len(self.nodes), frames[0].t_s, frames[-1].t_s, 0, text)
        self.nodes.append(node)
        self.roots.append(node.id)
        while len(self.roots) >= self.fanout and len({self.nodes[r].level for r in self.roots[-self.fanout:]}) == 1:
            self._merge(self.roots[-self.fanout:])
        while len(self.roots) > self.max_roots:  # OASIS's root_cnt_limit: the two oldest roots become one
            self._merge(self.roots[:2])

    def _merge(self, ids: list[int]) -> None:
        children = [self.nodes[i] for i in ids]
        lines = "\n".join(f"[{c.start_s:.1f}-{c.end_s:.1f} s] {c.text}" for c in children)
        text = self._summary(self.MERGE, [{"type": "text", "text": lines}], "ask_merge")
        level = max(c.level for c in children) + 1
        parent = EventNode(len(self.nodes), children[0].start_s, children[-1].end_s, level, text, children=list(ids))
        self.nodes.append(parent)
        for c in children:
            c.parent = parent.id
        at = self.roots.index(ids[0])
        self.roots = self.roots[:at] + [parent.id] + self.roots[at + len(ids):]

    def observe(self, frames: Sequence[Frame]) -> None:
        """Take in the frames not seen yet; summarise the medium buffer as it fills."""
        for frame in frames:
            if frame.t_s > self._last_t:
                self._recent.append(frame)
                self._last_t = frame.t_s
        while len(self._recent) > self.short_k:
            self.medium.append(self._recent.pop(0))
            if len(self.medium) >= self.event_frames:
                self._add_leaf(self.medium)
                self.medium = []

    # -- retrieval ----------------------------------------------------------------------------
    def _encode(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            from streamcue.embedding import Embedder

            self._embedder = Embedder()
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, self._embedder.encode(missing)):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def _qa_pairs(self, history: Sequence[tuple[float, str, str]], prompt: str) -> list[str]:
        pairs, question = [], None
        for _, who, text in history:
            if who == "user":
                question = text
            elif question is not None and question != prompt:
                pairs.append(f"Q: {_cut(question, self.max_words)[0]} A: {_cut(text, self.max_words)[0]}")
        return pairs

    def context(self, prompt: str, history: Sequence[tuple[float, str, str]]) -> str | None:
        """The retrieved event nodes and Q/A pairs as text (None when memory is empty)."""
        lines: list[str] = []
        query = prompt or "What has happened so far?"
        if self.nodes and self.k_f:
            vectors = self._encode([query] + [n.text for n in self.nodes])
            sims = vectors[1:] @ vectors[0]
            picked = sorted(retrieve(self.nodes, sims, self.k_f, self.weight), key=lambda i: self.nodes[i].start_s)
            lines += [f"[{self.nodes[i].start_s:.1f}-{self.nodes[i].end_s:.1f} s] {self.nodes[i].text}" for i in picked]
        pairs = self._qa_pairs(history, prompt)
        if pairs and self.k_q:
            vectors = self._encode([query] + pairs)
            sims = vectors[1:] @ vectors[0]
            best = sorted(sorted(range(len(pairs)), key=lambda i: -float(sims[i]))[:self.k_q])
            lines += ["Earlier questions and answers:"] + [pairs[i] for i in best]
        return "\n".join(lines) or None

    def view(self, frames: Sequence[Frame], k: int, now: float, prompt: str,
             history: Sequence[tuple[float, str, str]]) -> tuple[list[Frame], str | None]:
        self.observe(frames)
        shown = self._recent[-min(k, self.short_k):] if self.short_k else []
        self.last_context = self.context(prompt, history)
        return list(shown), self.last_context
