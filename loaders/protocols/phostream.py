"""PhoStream: open questions during a stream, answered at once or when the video reaches their moment (ICML 2026).

As the official runner plays it (``run_stream_eval.py`` of Lucky-Lance/PhoStream at ed7543d; PAPERS.md
section 10): the video goes to the model in 1 s chunks (:data:`CHUNK_S`) at 2 fps (:data:`FPS`), with a
rolling context of the last ~60 s of video (:data:`CONTEXT_S`, ``max_video_length_in_seconds`` 60.2), the
official system prompt (``phostream_official_system.v1``) and each question as a user text ``Question:
<question>\\n`` in the chunk of its second; an answer equal to "Silent" (:data:`SILENT`, case aside) is not
added to the dialogue, every other answer is. The official scorer ignores a forward question's answer given
in the question's own second (an acknowledgement); :mod:`streamcue.metrics.phostream` does the same.

streamcue plays each question as a stream record (``mode`` stream) over the whole video: the engine calls the
strategy only at the moments of the schedule (:meth:`PhoStream.moments`, chunk ends), and the default strategy,
``chunked`` (:mod:`streamcue.loaders.strategies.chunked`), sends at each one the official system prompt, the frames
of the rolling context (``window_s`` = :data:`CONTEXT_S`, unless ``--window-s``) and the dialogue, and takes
"Silent" as silence. ``--fps 2 --k 121 --memory SW`` shows every frame of that context, as the official runner.

When the model is asked, :data:`SCHEDULES` (the protocol's option ``schedule``, ``--schedule``; recorded in
replay_report.json, results.json and on the run page):

* ``every-chunk`` (the default): at every chunk from the question on, to the end of the video; reads no gold
  time (the official ``--sparse-mode 0``);
* ``official-sparse``: the official default ``--sparse-mode 1``: in the question's second; for a forward
  question also the next second, and the second of its *ground-truth* proactive time and the next
  (``_build_user_content``'s answer window of 2 chunks): the model is asked exactly when the answer is due.
  For parity only; declared gold-reading (``leaky_options``): ``streamcue compare --leak`` measures its gain.

:func:`call_seconds` gives the seconds a schedule asks in. The prediction (``active_item_prediction``)
keeps every answer with its time; the metric pools a video's answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from streamcue.errors import ConfigError
from streamcue.loaders.protocols.base import Context, Protocol, Turn

__all__ = ["PhoStream", "PROTOCOL", "SCHEDULES", "SYSTEM_PROMPT", "CHUNK_S", "FPS", "CONTEXT_S", "SILENT",
           "ANSWER_WINDOW_S", "question_text", "call_seconds"]

SYSTEM_PROMPT = "phostream_official_system.v1"
#: The official runner's defaults: ``--chunk-seconds``, ``--model-video-fps``, ``max_video_length_in_seconds``,
#: ``--active-window`` and the prompt's ``silent_word``.
CHUNK_S = 1.0
FPS = 2.0
CONTEXT_S = 60.2
ANSWER_WINDOW_S = 2
SILENT = "silent"
#: Schedule name -> what it reads (results.json and the docs page state the one a run used).
SCHEDULES = {"every-chunk": "every 1 s chunk from the question to the end of the video; reads no gold time",
             "official-sparse": "the question's second, and the 2 s after a forward question's gold proactive "
                                "time (run_stream_eval.py --sparse-mode 1); reads the gold time"}


def question_text(record: Mapping[str, Any]) -> str:
    """The user text of a question, as the official ``render_user_prompt`` writes one without options."""
    return f"Question: {record['question']}\n"


def call_seconds(record: Mapping[str, Any], end_s: float, schedule: str = "every-chunk") -> list[int]:
    """The whole seconds (chunk ends) at which ``schedule`` asks the model about ``record``, up to ``end_s``.

    ``every-chunk``: ``t_q, t_q + 1, ..., floor(end_s)``. ``official-sparse``: ``t_q``, and for a forward
    question ``t_q + 1``, ``t_a`` and ``t_a + 1`` (its gold time ``t_a``): the chunk that brings a forward
    question or its proactive event opens a window of ``ANSWER_WINDOW_S`` chunks (an instant or backward
    question one chunk), counted down once per chunk, the chunk itself included."""
    if schedule not in SCHEDULES:
        raise ConfigError(f"unknown PhoStream schedule {schedule!r}; use {' or '.join(SCHEDULES)}")
    t_q = int(record["query_time_s"])
    if schedule == "every-chunk":
        return list(range(t_q, int(math.floor(end_s)) + 1))
    if record["group"] != "forward":
        return [t_q]
    t_a = int(record["target"]["t_s"])
    return [t_q, t_q + 1, *(t for t in (t_a, t_a + 1) if t > t_q + 1)]


class PhoStream(Protocol):
    name = "phostream"
    kinds = ("active_item",)
    prompts = (SYSTEM_PROMPT,)
    mode = {"active_item": "stream"}
    default_strategy = {"active_item": "chunked"}
    history = "own"
    options = ("schedule",)
    leaky_options = {"schedule": ("official-sparse",)}
    #: The official prompt and placeholder, for the chunked strategy.
    defaults = {"chunked": {"prompt": SYSTEM_PROMPT, "placeholder": "Silent"}}
    #: The rolling context: the frames of the last :data:`CONTEXT_S` seconds (``--window-s`` overrides it).
    window_s = CONTEXT_S
    sound_field = ("task", ("Audio-Visual Association",))  # the capability of its 968 audio-visual questions

    def __init__(self, schedule: str = "every-chunk") -> None:
        if schedule not in SCHEDULES:
            raise ConfigError(f"unknown PhoStream schedule {schedule!r}; use {' or '.join(SCHEDULES)}")
        self.schedule = schedule

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        return [Turn(record["query_time_s"], question_text(record), prompt=SYSTEM_PROMPT)]

    def span(self, record: Mapping[str, Any], duration_s: float | None, context: Context, *, span: str = "video",
             tail_s: float = 5.0) -> tuple[float, float]:
        """The whole video (the default schedule plays to its end, whatever the gold time)."""
        return super().span(record, duration_s, context, span=span, tail_s=tail_s)

    def moments(self, record: Mapping[str, Any], start_s: float, end_s: float) -> list[float]:
        """The seconds the schedule asks in (:func:`call_seconds`), within the played span."""
        return [float(t) for t in call_seconds(record, end_s, self.schedule) if start_s <= t <= end_s]

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"item_id": record["item_id"],
                "responses": [{"t_s": r["t_s"], "text": r.get("text")} for r in responses]}

    def __repr__(self) -> str:
        return f"<protocol {self.name} ({self.schedule} schedule): {', '.join(self.kinds)}>"


PROTOCOL = PhoStream()
