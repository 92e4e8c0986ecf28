"""The seeds' reference baselines as replay strategies, behind one registry.

=================  ==========================  ==================================================
name               kinds                       what it does (paper)
=================  ==========================  ==================================================
periodic           all                         sees nothing: a fixed answer every N s (a floor)
single-call        all                         one speak/stay-silent call per replay step
polling            interval_qa, dense_caption  "right time?" at ``hz``, then the answer (ESTP-Bench)
response-in-last   interval_qa                 one call after the clip, ``[frame] answer`` lines (ESTP-Bench)
turn-loop          guidance                    completed? / mistake? every 5 s (LiveCook)
self-check         dense_caption               "does my last answer still hold?" first (VSAS-Bench)
=================  ==========================  ==================================================

Memories (which frames and what text a call sees) are separate: ``SW``, ``U``, ``SW+U`` in
:mod:`streamcue.loaders.replay` and OASIS's event memory in
:mod:`streamcue.loaders.strategies.oasis`.

>>> model = make_strategy("polling", settings, "interval_qa", hz=1.0)          # doctest: +SKIP
>>> replay_records(model, records, "interval_qa", durations, span="clip")      # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from streamcue.errors import ConfigError

__all__ = ["STRATEGIES", "make_strategy"]

STRATEGIES = {
    "periodic": "blind floor: a fixed answer every --every-s seconds (sees nothing, no endpoint)",
    "single-call": "one speak-or-stay-silent call at every replay step",
    "polling": "ESTP-Bench polling: 'right time to answer?' at --poll-hz, then the answer",
    "response-in-last": "ESTP-Bench response-in-last: one call after the clip, '[frame index] answer' lines",
    "turn-loop": "LiveCook: 'instruction completed?' then 'mistake?' every --every-s seconds",
    "self-check": "VSAS-Bench self-check: re-caption only when the last caption no longer holds",
}


def make_strategy(name: str, settings: Any, kind: str, **options: Any) -> Any:
    """A replay model for ``name`` (see :data:`STRATEGIES`); ``options`` go to its constructor."""
    if name == "periodic":
        from streamcue.loaders.replay_records import PeriodicBaseline

        return PeriodicBaseline(**{k: v for k, v in options.items() if k == "every_s"})
    if name == "single-call":
        from streamcue.loaders.openai_model import OpenAIVisionModel

        return OpenAIVisionModel(settings, kind=kind, **{k: v for k, v in options.items()
                                                         if k in ("latency_s", "use_cache")})
    if name == "polling":
        from streamcue.loaders.strategies.polling import Polling as cls
    elif name == "response-in-last":
        from streamcue.loaders.strategies.response_in_last import ResponseInLast as cls
    elif name == "turn-loop":
        from streamcue.loaders.strategies.turn_loop import TurnLoop as cls
    elif name == "self-check":
        from streamcue.loaders.strategies.self_check import SelfCheck as cls
    else:
        raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return cls(settings, kind=kind, **options)
