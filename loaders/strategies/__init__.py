"""Replay strategies (when the model is called, what it is asked), behind one literal registry.

=================  ====================================  ==============================================
name               kinds (protocols)                     what it does (paper)
=================  ====================================  ==============================================
periodic           interval_qa, dense_caption, guidance  sees nothing: a fixed answer every N s (a floor)
single-call        every kind (active_item: ovo-bench)   one speak/stay-silent call per replay step; one
                                                         call per question where questions are asked
polling            interval_qa, dense_caption,           "right time?" at ``hz``, then the answer
                   active_item (streamingbench)          (ESTP-Bench; StreamingBench proactive)
response-in-last   interval_qa                           one call after the clip, ``[frame] answer`` lines
turn-loop          guidance                              completed? / mistake? every 5 s (LiveCook)
self-check         dense_caption                         "does my last answer still hold?" first (VSAS-Bench)
chunked            active_item (phostream)               at each chunk end the protocol schedules: system
                                                         prompt, rolling context, dialogue; plain answer or
                                                         the placeholder (PhoStream's runner)
=================  ====================================  ==============================================

Each class declares ``applies`` (record kind -> protocols, None for all), ``options``
(:class:`~streamcue.loaders.strategies.base.Option`: name, type, default, help; the CLI builds its
flags from them), ``needs_endpoint`` and ``help``. Memories (which frames and what text a call
sees) are the other axis: :mod:`streamcue.loaders.memory`.

>>> model = make_strategy("polling", settings, "interval_qa", hz=1.0)          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from streamcue.errors import ConfigError
from streamcue.loaders.strategies.chunked import Chunked
from streamcue.loaders.strategies.periodic import PeriodicBaseline
from streamcue.loaders.strategies.polling import Polling
from streamcue.loaders.strategies.response_in_last import ResponseInLast
from streamcue.loaders.strategies.self_check import SelfCheck
from streamcue.loaders.strategies.single_call import SingleCall
from streamcue.loaders.strategies.turn_loop import TurnLoop

__all__ = ["STRATEGIES", "applicable", "make_strategy"]

STRATEGIES: dict[str, Any] = {
    "periodic": PeriodicBaseline,
    "single-call": SingleCall,
    "polling": Polling,
    "response-in-last": ResponseInLast,
    "turn-loop": TurnLoop,
    "self-check": SelfCheck,
    "chunked": Chunked,
}


def applicable(kind: str, protocol: str | None = None) -> list[str]:
    """The strategies that play ``kind`` records (of ``protocol``), in registry order."""
    return [name for name, cls in STRATEGIES.items() if cls.applies_to(kind, protocol)]


def make_strategy(name: str, settings: Any, kind: str, *, protocol: str | None = None, **options: Any) -> Any:
    """A replay model for ``name`` (see :data:`STRATEGIES`); ``options`` go to its constructor.

    Options the strategy does not declare are dropped (``use_cache`` and ``latency_s`` reach every
    endpoint strategy). An unknown name, or one that does not play ``kind`` (of ``protocol``), is a
    :class:`ConfigError` naming what applies.
    """
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    cls = STRATEGIES[name]
    if not cls.applies_to(kind, protocol):
        where = f"{kind} records of {protocol}" if protocol and kind in cls.plays() else f"{kind} records"
        raise ConfigError(f"strategy {name} plays {' or '.join(cls.plays())} records, not {where}; "
                          f"for {kind} use {' or '.join(applicable(kind, protocol)) or 'none'}")
    declared = {o.name for o in cls.options} | ({"use_cache", "latency_s", "client"} if cls.needs_endpoint else set())
    kept = {k: v for k, v in options.items() if k in declared}
    if not cls.needs_endpoint:
        return cls(**kept)
    return cls(settings, kind=kind, **kept)
