"""The common part of every strategy: an OpenAI-compatible vision endpoint behind the replay ``Model`` interface.

A strategy is a replay model (``respond(frames, prompt, history, now, context=None)``, see
:mod:`streamcue.loaders.replay`) that decides *when* to call the endpoint and *what* to ask.
Every call goes through :class:`streamcue.llm.LLMClient` (validated structured answers, the
persistent cache, so a re-run or a killed run resumes without new calls) with a versioned prompt
file from ``loaders/prompts/``. ``stats`` counts what the strategy did (polls, answers,
malformed lines...) and :meth:`VisionStrategy.report` adds the endpoint's usage (calls, cache
hits, tokens) and wall-clock latency per request.

A strategy declares what the CLI and the registry need to know about it: ``applies``
(``{record kind: protocols}``, None for every protocol that plays the kind), ``options``
(:class:`Option`: name, type, default, help; the CLI builds its flags from them) and
``needs_endpoint``. Stream-mode protocols call ``begin(episode)`` then ``respond`` at every
frame (:mod:`streamcue.loaders.replay`); ask-mode protocols (OVO-Bench, StreamingBench) call
``answer_turn(turn, view)`` once per question (:mod:`streamcue.loaders.engine`).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamcue.errors import ConfigError
from streamcue.llm import LLMClient, LLMSettings, Request, image_content
from streamcue.loaders.replay import Episode, Frame
from streamcue.prompts import Prompt, load_prompt

__all__ = ["Asker", "VisionStrategy", "Option", "frame_parts", "dialogue_text", "user_content", "YES_NO", "TEXT",
           "ANSWER_FORMS"]

YES_NO = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["answer"], "additionalProperties": False}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
        "additionalProperties": False}


#: How an asked question is answered: ``form -> (prompt file, what the call is counted as)``.
ANSWER_FORMS = {"choice": ("bench_choice.v1", "ask_choice"), "open": ("bench_open.v1", "ask_open"),
                "yes_no": ("bench_yes_no.v1", "ask_yes_no")}


@dataclass(frozen=True)
class Option:
    """A strategy option: the constructor keyword ``name``, its type, default and help.

    ``flag`` is the CLI flag (default ``--name`` with dashes); ``load`` turns the CLI value into the
    constructor's (e.g. a file of hints into a dict); ``report`` says whether the value goes into
    replay_report.json's ``options``.
    """

    name: str
    type: type
    default: Any
    help: str
    flag: str | None = None
    load: Callable[[Any], Any] | None = None
    report: bool = True

    @property
    def cli_flag(self) -> str:
        return "--" + (self.flag or self.name.replace("_", "-"))


def frame_parts(frames: Sequence[Frame], label: Any = None) -> list[dict[str, Any]]:
    """Chat content parts for frames: a text label (``Frame at 12.0 s`` by default), then the JPEG if any."""
    parts: list[dict[str, Any]] = []
    for frame in frames:
        parts.append({"type": "text", "text": label(frame) if label else f"Frame at {frame.t_s:.1f} s"})
        if frame.image is not None:
            parts.append(image_content(frame.image))
    return parts


def dialogue_text(history: Sequence[tuple[float, str, str]], skip_prompt: str | None = None) -> str:
    """The dialogue so far, one ``[t s] who: text`` line per turn (the current prompt left out)."""
    turns = [turn for turn in history if not (turn[1] == "user" and turn[2] == skip_prompt)]
    return "\n".join(f"[{t:.1f} s] {who}: {text}" for t, who, text in turns)


def user_content(frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]], now: float,
                 context: str | None = None, label: Any = None) -> list[dict[str, Any]]:
    """The user message of a replay call: time, task, dialogue so far, memory context, frames."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"Time now: {now:.1f} s.\nTask: {prompt}"}]
    dialogue = dialogue_text(history, prompt)
    if dialogue:
        parts.append({"type": "text", "text": f"Dialogue so far:\n{dialogue}"})
    if context:
        parts.append({"type": "text", "text": f"Memory of earlier events:\n{context}"})
    return parts + frame_parts(frames, label)


class Asker:
    """Validated, cached calls with versioned prompts; counts them and their wall-clock latency."""

    name = ""

    def __init__(self, settings: LLMSettings | None = None, *, use_cache: bool = True,
                 client: LLMClient | None = None) -> None:
        if client is None and settings is None:
            raise ConfigError(f"{self.name or 'this strategy'} needs an LLM endpoint (settings)")
        self.client = client or LLMClient(settings, use_cache=use_cache)  # type: ignore[arg-type]
        self.stats: Counter[str] = Counter()
        self.wall_s: list[float] = []

    @staticmethod
    def prompt(name: str) -> Prompt:
        return load_prompt("streamcue.loaders", name)

    def ask(self, prompt_name: str, content: list[dict[str, Any]], schema: dict[str, Any], what: str,
            **values: Any) -> Any:
        """One validated, cached call; counts it under ``what`` (``values`` fill the prompt's fields)."""
        prompt = self.prompt(prompt_name)
        system = prompt.render(**values) if values else prompt.text
        started = time.perf_counter()
        answer = self.client.complete(Request(
            messages=({"role": "system", "content": system}, {"role": "user", "content": content}),
            schema=schema, prompt_version=prompt.version, name=what))
        self.wall_s.append(time.perf_counter() - started)
        self.stats[what] += 1
        return answer

    def yes(self, prompt_name: str, content: list[dict[str, Any]], what: str) -> bool:
        return self.ask(prompt_name, content, YES_NO, what)["answer"] == "yes"

    def answer(self, form: str, content: list[dict[str, Any]]) -> str:
        """An asked question's answer: a letter (``choice``), short text (``open``) or ``Yes``/``No`` (``yes_no``)."""
        prompt, what = ANSWER_FORMS[form]
        if form == "yes_no":
            return "Yes" if self.yes(prompt, content, what) else "No"
        return self.ask(prompt, content, TEXT, what)["text"]

    def report(self) -> dict[str, Any]:
        """Endpoint usage and latency for the replay report."""
        usage = self.client.usage
        return {"strategy": self.name, "requests": sum(self.stats[k] for k in self.stats if k.startswith("ask_")),
                "endpoint_calls": usage.calls, "cache_hits": usage.cache_hits,
                "invalid_answers": usage.invalid_answers, "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "latency_mean_s": statistics.fmean(self.wall_s) if self.wall_s else 0.0,
                "latency_max_s": max(self.wall_s, default=0.0), **dict(self.stats)}


class VisionStrategy(Asker):
    """Base class of the strategies: an :class:`Asker` that plays one kind of record."""

    #: ``{record kind: protocol names or None (every protocol of that kind)}``.
    applies: Mapping[str, tuple[str, ...] | None] = {}
    options: tuple[Option, ...] = ()
    needs_endpoint = True
    help = ""
    takes_context = True

    @classmethod
    def applies_to(cls, kind: str, protocol: str | None = None) -> bool:
        if kind not in cls.applies:
            return False
        protocols = cls.applies[kind]
        return protocols is None or protocol is None or protocol in protocols

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.applies)

    def __init__(self, settings: LLMSettings | None = None, *, kind: str, latency_s: float = 1.0,
                 use_cache: bool = True, client: LLMClient | None = None) -> None:
        if kind not in self.kinds:
            raise ConfigError(f"strategy {self.name} plays {' or '.join(self.kinds)} records, not {kind}")
        super().__init__(settings, use_cache=use_cache, client=client)
        self.kind = kind
        self.latency_s = latency_s
        self.episode: Episode | None = None

    def begin(self, episode: Episode) -> None:
        self.episode = episode

    def content(self, frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]], now: float,
                context: str | None, label: Any = None) -> list[dict[str, Any]]:
        return user_content(frames, prompt, history, now, context, label)
