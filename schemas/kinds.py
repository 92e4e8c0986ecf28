"""The record kinds, declared once: one :class:`Kind` row each in :data:`TABLE`.

A row says what the shared modules need of a kind: its id field, its build file name and release config, its
card line, how a record of it is told from the others, whether it is asked once (and how its one answer is read),
which strategies may play it whatever the protocol, its semantic check, where its schema file is, and its rank in
each shared order (:data:`ORDERS`). The tables the package reads (``ID_FIELDS``, ``FILE_NAMES``, ``CONFIG_NAMES``,
``RELEASE_KINDS``, ``RECORD_KINDS``, the card's ``TASKS`` and ``DEFAULT_ORDER``, ``ASKED_ONCE``) are views of
:data:`TABLE` read on every access, so a row added at run time (a test's throwaway kind) shows at once.

>>> TABLE["open_question"].id_field, ordered("default")[:2]
('question_id', ('guidance', 'interval_qa'))
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Kind", "TABLE", "ORDERS", "ordered", "view", "names", "version", "semantic_check", "schema_file"]

#: The shared orders a row may rank itself in (lower first; a kind without a rank is not in that order):
#: ``discover`` the kinds a source may hold, in discovery order (``loaders.sources.RECORD_KINDS``); ``default``
#: which config ``load_dataset(repo)`` gives without a name (``release.card.DEFAULT_ORDER``); ``ids`` the order a
#: replay sample's record id is looked up (``metrics.run``); ``release`` the configs a release publishes
#: (``schemas.features.RELEASE_KINDS``); ``files`` the build folder's files (``schemas.discovery.FILE_NAMES``).
ORDERS = ("discover", "default", "ids", "release", "files")


@dataclass(frozen=True)
class Kind:
    """One record kind. ``file``: its build file name (None: a build does not write it); ``config``: its release
    config (None: not released); ``card``: what a record of it asks of an assistant (the release card's line);
    ``tells``: what tells a record of it where its id field alone does not; ``answer``: ``"choice"`` or ``"text"``
    when it is asked once and its prediction is one ``response``, None when it is answered by a stream of
    responses; ``strategies``: strategies that may play it for every protocol (beside the kinds a strategy's own
    ``applies`` names); ``check``: its semantic check, ``"module:function"`` (None: the schema only);
    ``schemas``: the folder of its ``<name>.schema.json`` (None: this package's); ``rank``: its place in each
    of :data:`ORDERS` it is in."""

    name: str
    id_field: str
    file: str | None = None
    config: str | None = None
    card: str | None = None
    tells: Callable[[Mapping[str, Any]], bool] | None = None
    answer: str | None = None
    strategies: tuple[str, ...] = ()
    check: str | None = None
    schemas: Path | None = None
    rank: Mapping[str, float] = field(default_factory=dict)


def _check(name: str) -> str:
    return f"streamcue.schemas._semantic:check_{name}"


def _question(r: Mapping[str, Any]) -> bool:
    return "question_id" in r and "options" not in r


_ROWS = (
    Kind("video", "video_id", "videos.jsonl", "videos", tells=lambda r: "uri" in r and "plan" not in r,
         check=_check("video"), rank={"default": 6, "release": 0, "files": 0},
         card="one row per video: id, source, split, duration and the path of the file relative to the video "
              "root (`videos/` of this release for the videos it publishes, else a folder you supply)"),
    Kind("interval_qa", "qa_id", "interval_qa.jsonl", "interval_qa", check=_check("interval_qa"),
         rank={"discover": 1, "default": 1, "ids": 2, "release": 1, "files": 2},
         card="a question asked at a moment of the video, answered once or more during given intervals "
              "(proactive answering: say it when it becomes true)"),
    Kind("dense_caption", "task_id", "dense_caption.jsonl", "dense_caption", check=_check("dense_caption"),
         rank={"discover": 2, "default": 2, "ids": 3, "release": 2, "files": 3},
         card="timed captions of what happens, to be emitted while the video plays"),
    Kind("guidance", "video_id", "guidance.jsonl", "guidance", tells=lambda r: "plan" in r, check=_check("guidance"),
         rank={"discover": 0, "default": 0, "ids": 4, "release": 3, "files": 1},
         card="a task plan and the guidance events an assistant should give live: instructions, successes, "
              "mistakes and the finish"),
    Kind("interval_qa_prediction", "qa_id"),
    Kind("dense_caption_prediction", "task_id"),
    Kind("guidance_prediction", "video_id"),
    Kind("interval_qa_minimal", "qa_id", check=_check("interval_qa_minimal")),
    Kind("dense_caption_minimal", "task_id", check=_check("dense_caption_minimal")),
    Kind("guidance_minimal", "video_id"),
    Kind("recorded_task", "task_id"),
    Kind("reasoning_trace", "id"),
    Kind("reasoning_trace_prediction", "id"),
    Kind("mistake_summary", "summary_id", "mistake_summaries.jsonl", rank={"discover": 6, "files": 4}),
    Kind("counterfactual_mistake", "cf_id", "counterfactual_mistakes.jsonl", check=_check("counterfactual_mistake"),
         rank={"discover": 7, "files": 5}),
    Kind("mc_question", "question_id", "mc_question.jsonl", "mc_question", tells=lambda r: "options" in r,
         answer="choice", strategies=("single-call",), check=_check("mc_question"),
         rank={"discover": 3, "default": 3, "ids": 0, "release": 4, "files": 6},
         card="a multiple-choice question asked at a moment of the video"),
    Kind("active_item", "item_id", "active_item.jsonl", "active_item", check=_check("active_item"),
         rank={"discover": 5, "default": 5, "ids": 1, "release": 5, "files": 7},
         card="a question whose answer the assistant must give at the right moment (active responding)"),
    Kind("mc_question_prediction", "question_id"),
    Kind("active_item_prediction", "item_id"),
    Kind("open_question", "question_id", "open_question.jsonl", "open_question", tells=_question, answer="text",
         strategies=("single-call",), check=_check("open_question"),
         rank={"discover": 4, "default": 4, "ids": 5, "release": 6, "files": 8},
         card="an open-ended question in a multi-turn stream, judged against a reference answer"),
    Kind("open_question_prediction", "question_id"),
)

class _Table(dict):
    """A dict that counts its changes (``version``), so that what is derived from it is computed again only
    after one."""

    version = 0

    def _changed(self, result: Any = None) -> Any:
        self.version += 1
        return result

    def __setitem__(self, key: str, row: Kind) -> None:
        self._changed(super().__setitem__(key, row))

    def __delitem__(self, key: str) -> None:
        self._changed(super().__delitem__(key))

    def pop(self, *args: Any) -> Any:
        return self._changed(super().pop(*args))

    def popitem(self) -> Any:
        return self._changed(super().popitem())

    def setdefault(self, key: str, default: Any = None) -> Any:
        return self._changed(super().setdefault(key, default))

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed(super().update(*args, **kwargs))

    def clear(self) -> None:
        self._changed(super().clear())


#: Every record kind by name, in the order ``streamcue info`` lists them (a new kind is one row more).
TABLE: dict[str, Kind] = _Table((row.name, row) for row in _ROWS)


def version() -> int:
    """How many times :data:`TABLE` has changed (a key for what is derived from it)."""
    return TABLE.version


def ordered(order: str) -> tuple[str, ...]:
    """The kinds ranked in ``order`` (one of :data:`ORDERS`), lowest rank first."""
    ranked = [(row.rank[order], n, row.name) for n, row in enumerate(TABLE.values()) if order in row.rank]
    return tuple(name for _, _, name in sorted(ranked))


class _Derived:
    """Derived from :data:`TABLE` on every access (computed again only when a row was added, removed or
    replaced)."""

    def __init__(self, make: Callable[[], Any], what: str) -> None:
        self._compute, self._what = make, what
        self._seen = -1
        self._value: Any = None

    def _make(self) -> Any:
        if self._seen != TABLE.version:
            self._seen, self._value = TABLE.version, self._compute()
        return self._value

    def __repr__(self) -> str:
        return f"<{self._what} of streamcue/schemas/kinds.py: {self._make()!r}>"


class _View(_Derived, Mapping[str, Any]):
    """A read-only mapping derived from :data:`TABLE`."""

    def __getitem__(self, key: str) -> Any:
        return self._make()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._make())

    def __len__(self) -> int:
        return len(self._make())

    def __contains__(self, key: object) -> bool:
        return key in self._make()


class _Names(_Derived, Sequence[str]):
    """A read-only tuple of kind names derived from :data:`TABLE`."""

    def __getitem__(self, index: Any) -> Any:
        return self._make()[index]

    def __len__(self) -> int:
        return len(self._make())

    def __iter__(self) -> Iterator[str]:
        return iter(self._make())

    def __contains__(self, name: object) -> bool:
        return name in self._make()

    def __eq__(self, other: object) -> bool:
        return self._make() == (tuple(other) if isinstance(other, (_Names, tuple)) else other)

    def __hash__(self) -> int:
        return hash(self._make())

    def __add__(self, other: Sequence[str]) -> tuple[str, ...]:
        return self._make() + tuple(other)

    def __radd__(self, other: Sequence[str]) -> tuple[str, ...]:
        return tuple(other) + self._make()


def view(what: str, make: Callable[[], dict[str, Any]]) -> Mapping[str, Any]:
    """A mapping derived from :data:`TABLE`, computed by ``make`` on every access."""
    return _View(make, what)


def names(what: str, make: Callable[[], tuple[str, ...]]) -> Sequence[str]:
    """A tuple of kind names derived from :data:`TABLE`, computed by ``make`` on every access."""
    return _Names(make, what)


def semantic_check(kind: str) -> Callable[..., Any] | None:
    """The semantic check a kind's row names (imported when first asked), or None."""
    spec = TABLE[kind].check
    return None if spec is None else _function(spec)


@cache
def _function(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def schema_file(kind: str) -> Path | None:
    """Where a kind's schema file is when its row names a folder; None: this package's resource."""
    folder = TABLE[kind].schemas
    return None if folder is None else Path(folder) / f"{kind}.schema.json"
