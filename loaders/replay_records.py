"""Play stream records (interval_qa, dense_caption, guidance) to a replay model: the engine's older entry point.

:func:`replay_records` is :func:`streamcue.loaders.engine.play` with the record kind's protocol
(ESTP-Bench, VSAS-Bench, LiveCook) and the options under their earlier names (``turns`` for
``history``, ``policy`` for ``memory``, ``frames_for`` for ``frames``, ``frame_image`` for one
video's frames). Records may be dicts or the typed records of :func:`streamcue.loaders.load`.

>>> preds, report = replay_records(model, records, "guidance", durations)   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamcue.errors import ConfigError
from streamcue.loaders.engine import play
from streamcue.loaders.protocols.livecook import GUIDANCE_TYPES, plan_prompt
from streamcue.loaders.strategies.periodic import PeriodicBaseline

__all__ = ["GUIDANCE_TYPES", "plan_prompt", "replay_records", "PeriodicBaseline"]


def replay_records(model: Any, records: Iterable[Any], kind: str, durations: Mapping[str, float], *,
                   fps: float = 1.0, span: str = "video", turns: str = "own", tail_s: float = 5.0,
                   frames_for: Any = None, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Predictions for every record, and one report over all runs (see :func:`streamcue.loaders.engine.play`).

    ``options`` go to :func:`streamcue.loaders.replay.replay` (protocol, k, policy, camera_buffer,
    clock, window_s, frame_image).
    """
    if turns not in ("own", "gold"):
        raise ConfigError(f"unknown turns {turns!r}; use own (the model's answers) or gold")
    frame_image = options.pop("frame_image", None)
    if frame_image is not None and frames_for is None:
        frames_for = lambda video_id: frame_image  # noqa: E731
    memory = options.pop("policy", "SW+U")
    k = options.pop("k", 64)
    window_s = options.pop("window_s", None)
    if "protocol" in options:
        options["timing"] = options.pop("protocol")
    return play(records, kind, strategy=model, memory=memory, k=k, fps=fps, window_s=window_s, history=turns,
                span=span, tail_s=tail_s, durations=durations, frames=frames_for, **options)
