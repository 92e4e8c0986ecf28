"""What a benchmark asks, when, and how the answers become predictions: the protocol axis of the replay engine.

A protocol is one object per benchmark (``loaders/protocols/<benchmark module>.py`` defines
``PROTOCOL``; :data:`streamcue.loaders.protocols.PROTOCOLS` lists them). The engine
(:mod:`streamcue.loaders.engine`) plays each record through it; the strategy (when the model is
called), the memory (which frames and text it sees) and the frame source (pixels) are the other
axes and are chosen on their own.

To add a benchmark, subclass :class:`Protocol` and fill in:

* ``name`` (the registry key, e.g. ``"streambench"``), ``kinds`` (record kinds it plays),
  ``prompts`` (the versioned prompt files it uses, under ``loaders/prompts/``);
* ``mode``: ``{kind: "stream" | "ask"}`` (below) and ``default_strategy``: ``{kind: strategy name}``
  (which strategies apply is declared by each strategy, :data:`streamcue.loaders.strategies.STRATEGIES`);
* ``history``: ``"gold"`` or ``"own"``, the default for ``--history`` (which answers of earlier turns
  are shown: the gold ones or the model's own);
* ``options``: the names of its own options, keywords of its constructor kept as attributes of the same name
  (e.g. ``("schedule",)``); a run sets one through the configuration field of that name (``--schedule``),
  :meth:`Protocol.with_options` makes the protocol with it and :meth:`Protocol.settings` is what replay_report.json,
  results.json, the run page and ``compare`` record of it;
* ``leaky_options``: ``{option: its values that read a gold answer or its time to decide when or what to ask}``
  (e.g. ``{"schedule": ("official-sparse",)}``); ``streamcue compare --leak`` pairs a run under one with a run
  under the default and reports the difference (the leak);
* :meth:`Protocol.turns` -- what is asked when, as :class:`Turn` objects;
* :meth:`Protocol.prediction` -- the record's ``<kind>_prediction`` from the model's responses.

Two ways of playing exist, and a protocol says which per kind (``mode``):

* ``"stream"`` (interval_qa, dense_caption, guidance, PhoStream's active_item): the record's turns are
  delivered into a running stream (:func:`streamcue.loaders.replay.replay`) over :meth:`Protocol.span`; the
  strategy is called at every frame and decides whether to call the model, or, where :meth:`Protocol.moments`
  names the moments a benchmark asks in (its schedule), at the first frame at or after each of them only.
  Responses are ``{"t_s", "text"[, "type", "plan_index"]}``.
* ``"ask"`` (multiple choice, probes, open questions): every user turn is a question asked at its
  time ``t_s``; the model sees the frames up to then and answers it (``form`` names the answer
  prompt: ``choice``, ``open`` or ``yes_no``); a turn with ``until_s`` and ``poll`` is polled
  (``poll`` asked yes/no from ``t_s`` to ``until_s``, then the question on the first yes).
  Responses are ``{"t_s", "text", "turn"}`` (the index of the user turn answered), plus
  ``{"role": "user"}`` lines for the polls when the protocol keeps the dialogue.

Example (a minimal open-question protocol)::

    class MyBench(Protocol):
        name, kinds, prompts = "mybench", ("open_question",), ()
        mode = {"open_question": "ask"}
        default_strategy = {"open_question": "single-call"}

        def turns(self, record, context):
            return [Turn(record["query_time_s"], record["question"], form="open")]

        def prediction(self, record, responses):
            said = responses[-1]["text"] if responses else None
            return {"question_id": record["question_id"], "response": said}

    PROTOCOL = MyBench()
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamcue.errors import ConfigError
from streamcue.prompts import load_prompt

__all__ = ["Turn", "Context", "Protocol", "prompt_text", "on_grid"]


@dataclass(frozen=True)
class Turn:
    """One turn of the dialogue at ``t_s``: a question (``role="user"``) or an earlier answer shown (``"assistant"``).

    ``form`` (ask mode) names how a user turn is answered: ``choice`` (a letter), ``open`` (short
    text), ``yes_no``; ``"stream"`` for stream mode. ``probe`` is carried into the response (OVO-Bench
    forward probes). ``until_s`` and ``poll`` make a polled turn (StreamingBench proactive).

    A turn whose text is the whole instruction (a benchmark's official prompt, ``protocol.complete_prompts``)
    sets ``plain``: the strategies send the frames then the text alone (no system prompt, no JSON) as a plain
    request and keep the raw answer; ``plain(raw)`` is what the official extraction rule reads in it (the
    sample's ``parsed``). ``prompt`` and ``poll_prompt`` name the prompt files of ``text`` and ``poll`` (their
    versions go into the samples); ``poll_yes(raw)`` is the official rule that reads a poll's answer as yes.
    """

    t_s: float
    text: str
    role: str = "user"
    form: str = "stream"
    probe: int | None = None
    until_s: float | None = None
    poll: str | None = None
    dialogue: tuple[tuple[float, str, str], ...] = ()
    prompt: str | None = None
    plain: Callable[[str | None], Any] | None = field(default=None, compare=False)
    poll_prompt: str | None = None
    poll_yes: Callable[[str | None], bool] | None = field(default=None, compare=False)


@dataclass
class Context:
    """What a protocol may look at besides the record: the run's other records and the model's own answers.

    ``group(record)`` gives the earlier-and-current turns of a multi-turn group (by ``context.group_id``,
    in turn order); ``own[record id]`` is the model's answer to an already played record; ``history``
    is ``"gold"`` or ``"own"``.
    """

    history: str = "own"
    groups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    own: dict[str, str] = field(default_factory=dict)

    def group(self, record: Mapping[str, Any]) -> list[dict[str, Any]]:
        context = record.get("context")
        if not context:
            return [dict(record)]
        turns = [r for r in self.groups.get(context["group_id"], [record]) if r["context"]["turn"] <= context["turn"]]
        return sorted(turns, key=lambda r: r["context"]["turn"])


def prompt_text(name: str, **values: Any) -> str:
    """The text of the versioned prompt file ``loaders/prompts/<name>.txt``, its ``{fields}`` filled in."""
    prompt = load_prompt("streamcue.loaders", name)
    return prompt.render(**values) if values else prompt.text


class Protocol:
    """A benchmark's protocol (see the module docstring). Subclasses set the attributes and the two methods."""

    name: str = ""
    kinds: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    mode: Mapping[str, str] = {}
    default_strategy: Mapping[str, str] = {}
    history: str = "own"
    #: Strategy option defaults of this protocol, e.g. ``{"polling": {"hz": 1.0}}`` (StreamingBench polls at 1 Hz).
    defaults: Mapping[str, Mapping[str, Any]] = {}
    #: The protocol's own options: keywords of its constructor, kept as attributes of the same name.
    options: tuple[str, ...] = ()
    #: Of those, the values that read the gold (an answer or its time) to decide when or what to ask: ``{option:
    #: values}``; ``streamcue compare --leak`` measures what a run under one gains (metrics/compare.py).
    leaky_options: Mapping[str, tuple[str, ...]] = {}

    def with_options(self, **given: Any) -> Protocol:
        """This protocol with the options ``given`` (None: unchanged), checked by its constructor; an option it does
        not declare is a :class:`ConfigError`."""
        unknown = [name for name in given if name not in self.options]
        if unknown:
            raise ConfigError(f"{self.name} has no option {unknown[0]!r}; its options: "
                              f"{', '.join(self.options) or 'none'}")
        return type(self)(**{**self.settings(), **{k: v for k, v in given.items() if v is not None}})

    def settings(self) -> dict[str, Any]:
        """Its options' values, by name (what the reports record)."""
        return {name: getattr(self, name) for name in self.options}

    def moments(self, record: Mapping[str, Any], start_s: float, end_s: float) -> list[float] | None:
        """Stream mode: the times in ``[start_s, end_s]`` at which the model may be called about ``record`` (its
        schedule; a call falls on the first frame at or after each), or None: at every frame (the default)."""
        return None
    #: The records that need sound (the benchmark's audio-visual questions): ``(record field, its values)``; a run
    #: that plays them without ``--audio`` is labelled video-only.
    sound_field: tuple[str, tuple[str, ...]] | None = None

    def needs_sound(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` is one of the benchmark's audio-visual questions (:attr:`sound_field`)."""
        return self.sound_field is not None and record.get(self.sound_field[0]) in self.sound_field[1]

    def turns(self, record: Mapping[str, Any], context: Context) -> list[Turn]:
        """What is asked when (user turns) and which earlier answers are shown (assistant turns), by time."""
        raise NotImplementedError

    def prediction(self, record: Mapping[str, Any], responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The record's ``<kind>_prediction`` from the responses (see the module docstring for their shape)."""
        raise NotImplementedError

    def span(self, record: Mapping[str, Any], duration_s: float | None, context: Context, *, span: str = "video",
             tail_s: float = 5.0) -> tuple[float, float]:
        """Stream mode: ``(start_s, end_s)`` of the video to play (default: all of it)."""
        if duration_s is None:
            raise ValueError("stream mode needs the video's duration")
        return 0.0, float(duration_s)

    def record_id(self, record: Mapping[str, Any]) -> str:
        """The id under which the model's own answer to ``record`` is kept for later turns."""
        from streamcue.schemas import ID_FIELDS

        return str(record[ID_FIELDS[self.kind_of(record)]])

    def kind_of(self, record: Mapping[str, Any]) -> str:
        """The record kind of ``record`` among ``kinds`` (told by its id field)."""
        from streamcue.schemas.discovery import kind_of_record

        return kind_of_record(record, self.kinds) or self.kinds[0]

    def __repr__(self) -> str:
        return f"<protocol {self.name}: {', '.join(self.kinds)}>"


def on_grid(start: float, end: float, fps: float) -> tuple[float, float]:
    """A span moved to start on a sampled frame (``i / fps``), so frame times match the video's samples."""
    snapped = math.ceil(start * fps - 1e-9) / fps
    return snapped, max(snapped, end)
