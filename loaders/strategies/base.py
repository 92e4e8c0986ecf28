"""The common part of every strategy: an OpenAI-compatible vision endpoint behind the replay ``Model`` interface.

A strategy is a replay model (``respond(frames, prompt, history, now, context=None)``, see
:mod:`streamcue.loaders.replay`) that decides *when* to call the endpoint and *what* to ask.
Every call goes through :class:`streamcue.llm.LLMClient` (validated structured answers, the
persistent cache, so a re-run or a killed run resumes without new calls) with a versioned prompt
file from ``loaders/prompts/``. ``stats`` counts what the strategy did (polls, answers,
malformed lines...) and :meth:`VisionStrategy.report` adds the endpoint's usage (calls, cache
hits, tokens) and wall-clock latency per request.

A strategy declares what the CLI and the registry need to know about it: ``applies``
(``{record kind: None}`` for every protocol that plays the kind, ``BY_DEFAULT`` for the protocols that name it
their default strategy of that kind), ``options``
(:class:`Option`: name, type, default, help; the CLI builds its flags from them) and
``needs_endpoint``. The replay (:mod:`streamcue.loaders.replay`) calls ``begin(episode)``, then, for stream-mode
protocols, ``respond`` at every frame (or scheduled moment); for ask-mode protocols (OVO-Bench, StreamingBench)
``answer_turn(turn, view)`` once per question, at its time (:meth:`VisionStrategy.asked` makes a call's message from
the ``view``).

Nothing is silent: an answer that stays unparseable (not JSON, NaN, outside its schema; with
``--llm-structured none`` a yes/no that is neither) is a recorded wrong answer (``None``: a
question's response is null, a poll is a no, a step is silent), counted under ``unparseable`` and
kept with its raw text in the call's sample. With ``structured="none"`` the answer-text and
yes/no prompts drop their "Reply with JSON only" line (prompt version ``<version>+plain``) and
the plain text is kept as the answer, for the scorer's own extraction rule.

Every call is traced (:class:`CallTrace`, one per record and thread, opened by the engine) as one sample of
what it really sent and got: the record, the ask time, the messages' text (:func:`sent_text`; moved by
:func:`store_prompts` to ``prompts.jsonl`` beside samples.jsonl, the sample keeping their sha256), the frames
its own messages carry (time, pixels, bytes) or the clip, the sound sent, the transport, the response format
sent (None when none was), the prompt version, the raw and parsed answer, latency, time to first token, tokens,
cache hit and retries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import statistics
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamcue.errors import ConfigError
from streamcue.extras import require
from streamcue.llm import LLMClient, LLMSettings, Reply, Request, image_content
from streamcue.loaders.clock import place
from streamcue.loaders.replay import Episode, Frame
from streamcue.prompts import Prompt, load_prompt

__all__ = ["Asker", "VisionStrategy", "Option", "frame_parts", "dialogue_text", "user_content", "YES_NO", "TEXT",
           "ANSWER_FORMS", "Transport", "turn_content", "CallTrace", "tracing", "current_trace", "FRAME_LABELS",
           "TRANSPORTS", "clip_extra", "AUDIO_MODES", "bounded", "LONGEST_STEP_S", "STEP_WHY", "BY_DEFAULT"]

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
    replay_report.json's ``options``. ``minimum`` / ``maximum`` bound a number, ``why`` says what a value past
    them does (checked by :meth:`check` when a replay's configuration is made).
    """

    name: str
    type: type
    default: Any
    help: str
    flag: str | None = None
    load: Callable[[Any], Any] | None = None
    report: bool = True
    minimum: float | None = None
    maximum: float | None = None
    why: str = ""

    @property
    def cli_flag(self) -> str:
        return "--" + (self.flag or self.name.replace("_", "-"))

    def check(self, value: Any) -> None:
        """A :class:`ConfigError` naming the flag and the bound when ``value`` lies past ``minimum`` / ``maximum``."""
        bounded(value, self.cli_flag, self.minimum, self.maximum, self.why)


def bounded(value: Any, flag: str, minimum: float | None = None, maximum: float | None = None, why: str = "",
            off: tuple[float, str] | None = None) -> None:
    """Refuse a number ``value`` of ``flag`` below ``minimum`` or above ``maximum``, naming the bound and ``why``;
    ``off`` (a value and its meaning, e.g. ``(0, "full size")``) is accepted as such; what is not a finite number
    is left to the owner's own check."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return
    if off and value == off[0]:
        return
    if minimum is not None and value < minimum:
        extra = f" (or {off[0]:g}: {off[1]})" if off else ""
        raise ConfigError(f"{flag} {value:g} is below its floor: the smallest accepted value is {minimum:g}{extra}"
                          + (f" ({why})" if why else ""))
    if maximum is not None and value > maximum:
        raise ConfigError(f"{flag} {value:g} is above its ceiling: the largest accepted value is {maximum:g}"
                          + (f" ({why})" if why else ""))


#: The longest step a strategy may take (``--every-s``, ``--mistake-every-s``), and why.
LONGEST_STEP_S = 600.0
STEP_WHY = "a step at least every 10 minutes: a record shorter than a longer period is never answered"

FRAME_LABELS = ("seconds", "clock", "none")
TRANSPORTS = ("frames", "video_url")
AUDIO_MODES = ("none", "parts", "video")


@dataclass(frozen=True)
class Transport:
    """How frames reach the model. ``frames``: each frame a JPEG part after a text label (``label``:
    ``seconds`` "Frame at 12.0 s", ``clock`` "Frame at 00:00:12", ``none`` no text); ``video_url``: a
    clip of exactly the frames shown (each at its own time), cut from the video, as one ``video_url`` part (a data
    URL, or a ``file://`` path with ``video_url_form="file"``) with its frame count in vLLM's
    ``media_io_kwargs`` (for servers that decode video themselves).

    ``audio``: ``none`` (no sound), ``parts`` (the sound of the span the call's frames cover, a WAV cut by ffmpeg,
    as one OpenAI ``input_audio`` part after them) or ``video`` (with ``video_url``: the clip keeps its sound and
    the request sets vLLM's ``mm_processor_kwargs.use_audio_in_video``)."""

    mode: str = "frames"
    label: str = "seconds"
    video_url_form: str = "data"
    audio: str = "none"

    def __post_init__(self) -> None:
        if self.mode not in TRANSPORTS:
            raise ConfigError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {self.mode!r}")
        if self.label not in FRAME_LABELS:
            raise ConfigError(f"--frame-label must be one of {', '.join(FRAME_LABELS)}, got {self.label!r}")
        if self.video_url_form not in ("data", "file"):
            raise ConfigError(f"--video-url must be data or file, got {self.video_url_form!r}")
        if self.audio not in AUDIO_MODES:
            raise ConfigError(f"--audio must be one of {', '.join(AUDIO_MODES)}, got {self.audio!r}")
        if self.audio == "video" and self.mode != "video_url":
            raise ConfigError("--audio video sends the clip's own sound: it needs --transport video_url")

    def extra(self, frames: int) -> dict[str, Any]:
        """The request's extra body for a clip of ``frames`` frames (vLLM's switches)."""
        extra: dict[str, Any] = {"media_io_kwargs": {"video": {"num_frames": frames}}}
        if self.audio == "video":
            extra["mm_processor_kwargs"] = {"use_audio_in_video": True}
        return extra

    def label_text(self, t_s: float) -> str | None:
        if self.label == "none":
            return None
        if self.label == "clock":
            whole = int(t_s)
            return f"Frame at {whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"
        return f"Frame at {t_s:.1f} s"


#: How many contents' frames a trace remembers (a strategy may send one content in several calls: polling's
#: answer call carries the frames of its "right time?" call).
REMEMBERED_CONTENTS = 4


@dataclass
class CallTrace:
    """What the calls of one record sent and got back (the engine opens one per record, per thread).

    ``clip(times)`` -> ``(url, bytes)`` cuts the clip of exactly the frames at ``times`` for the ``video_url``
    transport. The parts
    :func:`frame_parts` makes are remembered by identity (those of the last :data:`REMEMBERED_CONTENTS` contents),
    so that a call's sample lists the frames and the clip its own messages carry (:meth:`media`).
    ``sound(start_s, end_s)`` -> ``(base64 WAV or None, what was sent)``, or None for a video without an audio
    stream, gives the sound of a call (``audio`` keeps it for the call's sample).
    """

    record_id: str | None = None
    kind: str | None = None
    transport: Transport = field(default_factory=Transport)
    clip: Callable[[Sequence[float]], tuple[str, int]] | None = None
    sound: Callable[[float, float], tuple[str | None, dict[str, Any]] | None] | None = None
    audio: dict[str, Any] | None = None
    now: float | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    without_pixels: int = 0
    pixels_expected: bool = True
    made: deque[dict[int, tuple[dict[str, Any], dict[str, Any]]]] = field(
        default_factory=lambda: deque(maxlen=REMEMBERED_CONTENTS))

    def media(self, messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The frames (time, index, pixels, bytes) and the clip that ``messages`` carry, as :func:`frame_parts`
        recorded them."""
        frames: list[dict[str, Any]] = []
        video = None
        for message in messages:
            content = message.get("content")
            for part in content if isinstance(content, list) else ():
                info = next((got[1] for made in self.made if (got := made.get(id(part))) and got[0] is part), None)
                if info is not None and part.get("type") == "video_url":
                    video = info
                elif info is not None:
                    frames.append(info)
        return frames, video

    def take_audio(self) -> dict[str, Any] | None:
        """What sound the call sent (None with ``--audio none``; ``seconds`` 0 and why under ``missing`` when none
        was: a video without an audio stream, a call without frames)."""
        audio, self.audio = self.audio, None
        if audio is None and self.transport.audio != "none":
            return self.silent("no frames in the call")
        return audio

    def silent(self, why: str) -> dict[str, Any]:
        return {"mode": self.transport.audio, "seconds": 0.0, "bytes": 0, "format": None, "missing": why}


_LOCAL = threading.local()


def current_trace() -> CallTrace | None:
    """The trace open in this thread (None outside the engine)."""
    return getattr(_LOCAL, "trace", None)


@contextlib.contextmanager
def tracing(trace: CallTrace) -> Iterator[CallTrace]:
    """Open ``trace`` for the calls made in this thread until the block ends."""
    previous = current_trace()
    _LOCAL.trace = trace
    try:
        yield trace
    finally:
        _LOCAL.trace = previous


def _image_size(data: bytes) -> tuple[int | None, int | None]:
    """Width and height of an encoded frame, read by Pillow from its header (None when it is no image)."""
    width, height = getattr(data, "width", None), getattr(data, "height", None)
    if width is not None:
        return width, height
    import io

    image = require("PIL.Image", "video", "pillow")
    try:
        with image.open(io.BytesIO(data)) as img:
            return img.size
    except (image.UnidentifiedImageError, image.DecompressionBombError, OSError, ValueError):
        return None, None


def frame_parts(frames: Sequence[Frame], label: Any = None) -> list[dict[str, Any]]:
    """Chat content parts for frames: a text label (``Frame at 12.0 s`` by default), then the JPEG if any.

    Inside the engine the open :class:`CallTrace` decides the transport and the label, and records each frame
    sent (time, pixels, bytes) or the clip; a frame without pixels while the video was given is counted.
    """
    trace = current_trace()
    return _frame_parts(frames, label, trace) + _sound_parts(frames, trace)


def _sound_parts(frames: Sequence[Frame], trace: CallTrace | None) -> list[dict[str, Any]]:
    """The sound of the span ``frames`` cover as an ``input_audio`` part (``--audio parts``); kept in the trace."""
    if trace is None or trace.sound is None or not frames:
        return []
    sound = trace.sound(frames[0].t_s, frames[-1].t_s)
    if sound is None:
        trace.audio = trace.silent("no audio stream")
        return []
    data, trace.audio = sound
    return [] if data is None else [{"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}]


def _frame_parts(frames: Sequence[Frame], label: Any, trace: CallTrace | None) -> list[dict[str, Any]]:
    transport = trace.transport if trace is not None else Transport()
    made: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    if trace is not None:
        trace.made.append(made)
    if trace is not None and transport.mode == "video_url" and trace.clip is not None and frames:
        return _clip_parts(trace, frames, made)
    parts: list[dict[str, Any]] = []
    for frame in frames:
        text = label(frame) if label else transport.label_text(frame.t_s)
        if text is not None:
            parts.append({"type": "text", "text": text})
        if frame.image is not None:
            parts.append(image_content(frame.image))
        if trace is not None and parts and (frame.image is not None or text is not None):
            made[id(parts[-1])] = parts[-1], _frame_info(frame)
        if trace is not None and frame.image is None and trace.pixels_expected:
            trace.without_pixels += 1
    return parts


def _clip_parts(trace: CallTrace, frames: Sequence[Frame],
                made: dict[int, tuple[dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """The ``video_url`` transport's parts: a text naming the span, then the clip of exactly the frames chosen (their
    times ``t_s`` in the call's sample)."""
    start, end = frames[0].t_s, frames[-1].t_s
    url, size = trace.clip([frame.t_s for frame in frames])  # type: ignore[misc]
    clip = {"type": "video_url", "video_url": {"url": url}}
    made[id(clip)] = clip, {"start_s": start, "end_s": end, "frames": len(frames), "t_s": [f.t_s for f in frames],
                            "bytes": size, "form": trace.transport.video_url_form}
    return [{"type": "text", "text": f"Video from {start:.1f} s to {end:.1f} s ({len(frames)} frames)"}, clip]


def _frame_info(frame: Frame) -> dict[str, Any]:
    """What a sample says of a frame sent: its time and index, and its pixels and bytes when it has an image."""
    info: dict[str, Any] = {"t_s": frame.t_s, "index": frame.index}
    if frame.image is not None:
        width, height = _image_size(frame.image)
        info.update(width=width, height=height, bytes=len(frame.image))
    return info


def clip_extra(content: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The request's extra body (vLLM's switches, :meth:`Transport.extra`) for a content carrying a clip, else None."""
    trace = current_trace()
    video = trace.media([{"content": list(content)}])[1] if trace is not None else None
    return trace.transport.extra(video["frames"]) if trace is not None and video else None


def sent_text(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message's role and its text parts as sent (a string content is one part; images are the frames)."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else [p.get("text", "") for p in content or ()
                                                          if p.get("type") == "text"]
    return {"role": message.get("role"), "text": parts}


#: The file beside samples.jsonl that holds the text of the messages sent, once per distinct text.
PROMPT_STORE = "prompts.jsonl"


def prompt_hash(entry: Mapping[str, Any]) -> str:
    """sha256 of a message's role and text parts (:func:`sent_text`) as canonical JSON."""
    data = json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def store_prompts(out: Any, samples: Sequence[dict[str, Any]]) -> None:
    """Replace each call's ``prompt`` (its messages' role and text) by their sha256 hashes and write the texts to
    ``out/prompts.jsonl``, one line ``{sha256, role, text}`` per distinct message, atomically."""
    from pathlib import Path

    from streamcue.io import write_jsonl

    store: dict[str, dict[str, Any]] = {}
    for sample in samples:
        entries = sample.get("prompt") or []
        hashes = [prompt_hash(e) if isinstance(e, Mapping) else e for e in entries]
        store.update((h, {"sha256": h, **e}) for h, e in zip(hashes, entries) if isinstance(e, Mapping))
        sample["prompt"] = hashes
    write_jsonl(Path(out) / PROMPT_STORE, list(store.values()))


def turn_content(frames: Sequence[Frame], text: str, now: float, context: str | None = None,
                 label: Any = None) -> list[dict[str, Any]]:
    """The user message of a complete turn (a benchmark's official prompt): the frames, then the text alone, as the
    official code sends them (a memory's text, if any, before the frames)."""
    trace = current_trace()
    if trace is not None:
        trace.now = now
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"Memory of earlier events:\n{context}"}] if context else []
    return parts + frame_parts(frames, label) + [{"type": "text", "text": text}]


def dialogue_text(history: Sequence[tuple[float, str, str]], skip_prompt: str | None = None) -> str:
    """The dialogue so far, one ``[t s] who: text`` line per turn (the current prompt left out)."""
    turns = [turn for turn in history if not (turn[1] == "user" and turn[2] == skip_prompt)]
    return "\n".join(f"[{t:.1f} s] {who}: {text}" for t, who, text in turns)


def user_content(frames: Sequence[Frame], prompt: str, history: Sequence[tuple[float, str, str]], now: float,
                 context: str | None = None, label: Any = None) -> list[dict[str, Any]]:
    """The user message of a replay call: time, task, dialogue so far, memory context, frames."""
    trace = current_trace()
    if trace is not None:
        trace.now = now
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"Time now: {now:.1f} s.\nTask: {prompt}"}]
    dialogue = dialogue_text(history, prompt)
    if dialogue:
        parts.append({"type": "text", "text": f"Dialogue so far:\n{dialogue}"})
    if context:
        parts.append({"type": "text", "text": f"Memory of earlier events:\n{context}"})
    return parts + frame_parts(frames, label)


_YES_NO_WORD = re.compile(r"^\W*(yes|no)\b", re.I)


def _plain_yes_no(text: str) -> dict[str, str] | None:
    """A plain-text yes/no: the first word (``Yes.``, ``no, because...``); None when it is neither."""
    match = _YES_NO_WORD.match(text or "")
    return {"answer": match.group(1).lower()} if match else None


def _plain_text(text: str) -> dict[str, str]:
    return {"text": (text or "").strip()}


def _raw_text(text: str) -> dict[str, str]:
    return {"text": text or ""}


#: Schemas whose answers can come as plain text with ``--llm-structured none``, and how they are read.
_PLAIN = ((YES_NO, _plain_yes_no), (TEXT, _plain_text))
_JSON_LINE = re.compile(r"\n*^Reply with JSON only.*\Z", re.M | re.S)


class Asker:
    """Validated, cached calls with versioned prompts; counts them, their wall-clock latency, the unparseable
    answers, and traces each call (thread-safe: the engine may play records concurrently)."""

    name = ""

    def __init__(self, settings: LLMSettings | None = None, *, use_cache: bool = True,
                 client: LLMClient | None = None) -> None:
        if client is None and settings is None:
            raise ConfigError(f"{self.name or 'this strategy'} needs an LLM endpoint (settings)")
        self.client = client or LLMClient(settings, use_cache=use_cache)  # type: ignore[arg-type]
        self.stats: Counter[str] = Counter()
        self.wall_s: list[float] = []
        self._stats_lock = threading.Lock()

    @staticmethod
    def prompt(name: str) -> Prompt:
        return load_prompt("streamcue.loaders", name)

    def count(self, what: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[what] += n

    def request(self, prompt_name: str, content: list[dict[str, Any]], schema: dict[str, Any], what: str,
                extra: dict[str, Any] | None = None, **values: Any) -> Request:
        """The request of one call; with ``structured="none"`` a yes/no or text answer is asked as plain text."""
        prompt = self.prompt(prompt_name)
        system = prompt.render(**values) if values else prompt.text
        version = prompt.version
        plain = next((read for known, read in _PLAIN if known is schema or known == schema), None)
        if plain is not None and self.client.settings.structured == "none":
            stripped = _JSON_LINE.sub("", system).rstrip()
            if stripped != system.rstrip():
                system, version = stripped, version + "+plain"
        else:
            plain = None
        return Request(messages=({"role": "system", "content": system}, {"role": "user", "content": content}),
                       schema=schema, prompt_version=version, name=what, plain=plain, extra=extra)

    def try_ask(self, prompt_name: str, content: list[dict[str, Any]], schema: dict[str, Any], what: str,
                **values: Any) -> Reply:
        """One validated, cached call as a :class:`~streamcue.llm.Reply` (unparseable answers kept, counted)."""
        request = self.request(prompt_name, content, schema, what, clip_extra(content), **values)
        return self._send(request, what)

    def _send(self, request: Request, what: str, read: Callable[[str], Any] | None = None) -> Reply:
        """Send ``request``, count it and trace it (``read``: what the sample's ``parsed`` holds instead)."""
        trace = current_trace()
        reply = self.client.reply(request)
        with self._stats_lock:
            self.wall_s.append(reply.latency_s)
            self.stats[what] += 1
            if not reply.ok:
                self.stats["unparseable"] += 1
            if reply.retries:
                self.stats["retries"] += reply.retries
        sample = self._sample(trace, request, reply, what, read) if trace is not None else None
        if trace is not None:
            trace.samples.append(sample)
        place(reply, sample)  # on the stream's live or fixed clock (docs/clock.md); nothing under free
        return reply

    def _sample(self, trace: CallTrace, request: Request, reply: Reply, what: str,
                read: Callable[[str], Any] | None) -> dict[str, Any]:
        """One call as sent and answered (docs/replay.md, "samples.jsonl"): the messages' text (``prompt``, moved
        to ``prompts.jsonl`` by :func:`store_prompts`), the frames or clip they carry, the response format asked."""
        sent, video = trace.media(request.messages)
        return {
            "record_id": trace.record_id, "kind": trace.kind, "t_s": trace.now, "call": what,
            "prompt_version": request.prompt_version, "prompt": [sent_text(m) for m in request.messages],
            "response_format": self.client.response_format(request),
            "transport": trace.transport.mode, "frame_label": trace.transport.label,
            "frames": sent, "video": video, "audio": trace.take_audio(),
            "frames_sent": video["frames"] if video else sum(1 for f in sent if "bytes" in f),
            "frames_without_pixels": 0 if video else sum(1 for f in sent if "bytes" not in f),
            "bytes_sent": video["bytes"] if video else sum(f.get("bytes", 0) for f in sent),
            "raw": reply.text, "parsed": read(reply.text) if read and reply.ok else reply.parsed,
            "problem": reply.problem, "latency_s": round(reply.latency_s, 6),
            "ttft_s": None if reply.ttft_s is None else round(reply.ttft_s, 6),
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "cached": reply.cached, "retries": reply.retries, "attempts": reply.attempts}

    def plain_reply(self, prompt_name: str | None, content: list[dict[str, Any]], what: str,
                    read: Callable[[str], Any] | None = None) -> Reply:
        """A turn's complete text (a benchmark's official prompt) sent alone: one user message (frames, then the
        text), no system prompt, plain text whatever the structured mode; the raw answer is kept. ``prompt_name``
        is the prompt file the text comes from (its version, ``+plain``, is the sample's); ``read`` is the
        official extraction rule (the sample's ``parsed``)."""
        version = (self.prompt(prompt_name).version if prompt_name else "turn") + "+plain"
        request = Request(messages=({"role": "user", "content": content},), schema=TEXT, prompt_version=version,
                          name=what, plain=_raw_text, extra=clip_extra(content), raw=True)
        return self._send(request, what, read)

    def ask(self, prompt_name: str, content: list[dict[str, Any]], schema: dict[str, Any], what: str,
            **values: Any) -> Any:
        """One validated, cached call; counts it under ``what`` (``values`` fill the prompt's fields). An answer
        that stays invalid is a :class:`~streamcue.errors.ServiceError` naming the model and endpoint (strategies
        use :meth:`try_ask` to record it as a wrong answer instead)."""
        from streamcue.errors import ServiceError

        reply = self.try_ask(prompt_name, content, schema, what, **values)
        if not reply.ok:
            raise ServiceError(reply.problem or "invalid answer")
        return reply.parsed

    def yes(self, prompt_name: str, content: list[dict[str, Any]], what: str) -> bool:
        """A yes/no call; an unparseable answer counts as no (and is counted, and kept in the sample)."""
        reply = self.try_ask(prompt_name, content, YES_NO, what)
        return reply.ok and reply.parsed["answer"] == "yes"

    def answer(self, form: str, content: list[dict[str, Any]]) -> str | None:
        """An asked question's answer: a letter (``choice``), short text (``open``) or ``Yes``/``No`` (``yes_no``);
        None when the answer was unparseable (a recorded wrong answer)."""
        prompt, what = ANSWER_FORMS[form]
        if form == "yes_no":
            reply = self.try_ask(prompt, content, YES_NO, what)
            return None if not reply.ok else "Yes" if reply.parsed["answer"] == "yes" else "No"
        reply = self.try_ask(prompt, content, TEXT, what)
        return reply.parsed["text"] if reply.ok else None

    def answer_plain(self, form: str, content: list[dict[str, Any]], prompt_name: str | None,
                     read: Callable[[str], Any] | None = None) -> str | None:
        """An asked question in its benchmark's official words: the raw answer as the model wrote it (the
        scorer's official rule reads it); None only when the call itself failed to give text."""
        reply = self.plain_reply(prompt_name, content, ANSWER_FORMS[form][1], read)
        return reply.text if reply.ok else None

    def report(self) -> dict[str, Any]:
        """Endpoint usage and latency for the replay report."""
        usage = self.client.usage
        with self._stats_lock:
            stats, wall = dict(self.stats), list(self.wall_s)
        return {"strategy": self.name, "requests": sum(stats[k] for k in stats if k.startswith("ask_")),
                "endpoint_calls": usage.calls, "cache_hits": usage.cache_hits,
                "earlier_run_hits": usage.earlier_run_hits,
                "invalid_answers": usage.invalid_answers, "unparseable": usage.unparseable,
                "retries": usage.retries, "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "latency_mean_s": statistics.fmean(wall) if wall else 0.0,
                "latency_max_s": max(wall, default=0.0), **stats}


#: ``VisionStrategy.applies`` value: it plays a kind's records only for the protocols that name it their default.
BY_DEFAULT = "protocol default"


class VisionStrategy(Asker):
    """Base class of the strategies: an :class:`Asker` that plays one kind of record."""

    #: ``{record kind: None (every protocol of that kind) or BY_DEFAULT (only the protocols whose default strategy
    #: for that kind it is: a protocol, not the strategy, names the benchmark)}``.
    applies: Mapping[str, str | None] = {}
    options: tuple[Option, ...] = ()
    needs_endpoint = True
    help = ""
    takes_context = True

    @classmethod
    def plays(cls) -> dict[str, str | None]:
        """``applies`` and the record kinds whose row (:data:`streamcue.schemas.kinds.TABLE`) names this strategy
        among its ``strategies`` (played for every protocol), in the table's order."""
        from streamcue.schemas.kinds import TABLE

        named = {**cls.applies, **{k: None for k, row in TABLE.items() if cls.name in row.strategies}}
        order = {k: n for n, k in enumerate(TABLE)}
        return {k: named[k] for k in sorted(named, key=lambda k: order.get(k, len(order)))}

    @classmethod
    def applies_to(cls, kind: str, protocol: str | None = None) -> bool:
        if kind not in cls.plays():
            return False
        only = cls.protocols_of(kind)
        return only is None or protocol is None or protocol in only

    @classmethod
    def protocols_of(cls, kind: str) -> tuple[str, ...] | None:
        """The protocols it plays ``kind`` records of, or None for every one (:meth:`plays`)."""
        if cls.plays().get(kind) != BY_DEFAULT:
            return None
        from streamcue.loaders.protocols import PROTOCOLS

        return tuple(name for name, protocol in PROTOCOLS.items() if protocol.default_strategy.get(kind) == cls.name)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.plays())

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

    def asked(self, view: Any, now: float, text: str, dialogue: Sequence[tuple[float, str, str]],
              alone: bool = False) -> list[dict[str, Any]]:
        """The user message asking ``text`` at ``now``: the frames and memory text ``view(now, text, dialogue)``
        gives (one call of the replay), as a replay call's content, or (``alone``: a complete turn, a benchmark's
        official prompt) the frames then the text alone."""
        frames, context = view(now, text, dialogue)
        if alone:
            return turn_content(frames, text, now, context)
        return self.content(frames, text, dialogue, now, context)
