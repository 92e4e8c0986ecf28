"""A replay as a library object: one frozen, checked configuration and one function that plays it into a folder
(:func:`streamcue.loaders.replay_run.write_replay`).

>>> from streamcue.loaders.replay_config import ReplayConfig
>>> from streamcue.loaders.replay_run import write_replay
>>> config = ReplayConfig(records="out/ovo", video_root="/data/ovo", llm_base_url="http://127.0.0.1:8000/v1",
...                       llm_model="Qwen2.5-VL-7B-Instruct", concurrency=8)            # doctest: +SKIP
>>> report = write_replay(config, "runs/ovo")                                           # doctest: +SKIP

Every option is declared once, here, as a field with its help; ``streamcue replay`` and ``streamcue run`` are
generated from these fields (:mod:`streamcue.cli.options`) and every check of a value is made once, when the
configuration is made (``ConfigError``, one line). The records are any source :func:`~streamcue.loaders.open_records`
opens; a source that ships its videos needs no ``video_root``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from streamcue.errors import ConfigError, InputError
from streamcue.loaders.clock import CLOCK_HELP, checked_clock
from streamcue.loaders.replay import DEFAULT_K, DEFAULT_MEMORY
from streamcue.loaders.sources import RecordSet, open_records

__all__ = ["parse_ids", "ReplayConfig", "Plan", "prepare", "check_out", "choose", "declared", "recorded",
           "strategy_flags", "with_options", "protocol_options", "protocol_settings", "PROMPT_SET_HELP",
           "CONTEXT_HELP", "SCHEDULE_HELP"]


def declared(default: Any, help: str, *, flag: str | None = None, cli: bool = True, **extra: Any) -> Any:
    """A configuration field and its command-line help (the one place an option is declared)."""
    return field(default=default, metadata={"help": help, "flag": flag, "cli": cli, **extra})


PROMPT_SET_HELP = ("ovo-bench, streamingbench: official (default: the benchmark's own prompt templates, sent alone "
                   "as plain text; the raw answer is read by the official rule) or streamcue (streamcue's prompts, "
                   "JSON answers).")
#: Why frames have at least 64 px on their longest side (64 x 64 px in all).
FRAME_WHY = ("vision encoders read 28-px patches (Qwen2-VL refuses a side under 28 px); 64 px keeps the short side "
             "of a frame up to 2:1 above that")
SCHEDULE_HELP = ("phostream: every-chunk (default: the model is asked at every 1 s chunk from the question on; reads "
                 "no gold time) or official-sparse (the official runner's default: also in the 2 s after a forward "
                 "question's gold answer time; for parity only).")
CONTEXT_HELP = ("streamingbench: all (default: every frame up to the question, as the released code) or last-60s "
                "(the public leaderboard; the window when --window-s is not given).")


def parse_ids(value: str | None) -> tuple[str, ...] | None:
    """``--ids``: comma-separated ids, or ``@FILE`` with one id a line."""
    from streamcue.errors import ConfigError, InputError

    if value is None:
        return None
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise InputError("--ids @FILE: no such file", file=path)
        items = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    else:
        items = [part.strip() for part in value.split(",")]
    items = [i for i in items if i]
    if not items:
        raise ConfigError("--ids names no record id")
    return tuple(dict.fromkeys(items))


def strategy_flags() -> dict[str, list[tuple[str, Any]]]:
    """``{cli flag: [(strategy name, Option)]}`` from the strategies' declarations."""
    from streamcue.loaders.strategies import STRATEGIES

    flags: dict[str, list[tuple[str, Any]]] = {}
    for name, cls in STRATEGIES.items():
        for option in cls.options:
            flags.setdefault(option.cli_flag, []).append((name, option))
    return flags


@dataclass(frozen=True)
class ReplayConfig:
    """What a replay plays and how: records and selection, protocol settings, strategy and its options, memory,
    frames and transport, endpoint and generation. Checked when made."""

    #: The command whose folder this configuration writes (recorded with its settings, :func:`recorded`).
    COMMAND: ClassVar[str] = "replay"

    records: str | Path = declared(None, "Records: a build folder, one record file, a release folder or a Hub "
                                         "dataset ORG/NAME@REVISION.", cli=False)
    benchmark: str | None = declared(None, "The benchmark whose protocol plays the records (default: the records' "
                                           "benchmark field, or the only one that plays their kind).")
    kind: str | None = declared(None, "Record kind (default: every playable kind the source holds).")
    split: str | None = declared(None, "Play only the records of this split's videos (train, validation, test).")
    ids: tuple[str, ...] | None = declared(None, "Play only these record ids: comma-separated, or @FILE with one id a "
                                                 "line (a later turn of a multi-turn video is refused alone).",
                                           parse="ids")
    limit: int | None = declared(None, "Play only the first N records in total (after --split and --ids).")
    videos: Path | None = declared(None, "videos.jsonl with durations, uris and splits (default: the source's).")
    video_root: Path | None = declared(None, "Folder the videos' uri fields are relative to (default: the source's "
                                             "own videos, when it ships them); or --no-video.")
    no_video: bool = declared(False, "A blind run: the model sees no frames, only their times (labelled blind).")
    strategy: str | None = declared(None, "When the model is called (default: the benchmark's own).")
    strategy_options: Mapping[str, Any] = declared(None, "The strategy's options by name (generated flags).",
                                                   cli=False)
    memory: str = declared(DEFAULT_MEMORY, "Which frames a call sees: SW, U, SW+U, window (the last --window-s "
                                           "seconds) or OASIS (event memory; needs the embed extra).")
    k: int = declared(DEFAULT_K, "Frames per call (OASIS: its short window is min(k, 16)).")
    fps: float = declared(1.0, "Frames per second sampled from the video (0.1 to 60).", minimum=0.1,
                          why="a frame at least every 10 s: every strategy acts at frames, and a slower rate leaves a "
                              "record shorter than the gap without a frame after its question")
    window_s: float | None = declared(None, "Show only the frames of the last N seconds (now - N < t <= now).")
    history: str | None = declared(None, "Earlier turns of multi-turn questions show the gold answers (gold) or the "
                                         "model's own (own); default: the benchmark's.")
    span: str = declared("clip", "interval_qa: clip (the record's clip, else query time to 5 s after the last "
                                 "answer) or video.")
    timing: str = declared("synchronous", "synchronous (the model answers before the next frame) or asynchronous "
                                          "(VSAS-Bench: a slow model sees fewer frames and answers late).")
    clock: str = declared("free", CLOCK_HELP)
    prompt_set: str | None = declared(None, PROMPT_SET_HELP, protocol=True)
    context: str | None = declared(None, CONTEXT_HELP, protocol=True)
    schedule: str | None = declared(None, SCHEDULE_HELP, protocol=True)
    transport: str = declared("frames", "How frames reach the model: frames (JPEG images) or video_url (the clip "
                                        "itself, for servers such as vLLM that decode video).")
    frame_side: int | None = declared(448, "Frames at most this many pixels on their longest side, at least 64 "
                                           "(0: full size).", minimum=64, off=(0, "full size"), why=FRAME_WHY)
    frame_pixels: int | None = declared(None, "Per-frame pixel budget (width x height), aspect kept; at least 4096.",
                                        minimum=64 * 64, why=FRAME_WHY)
    jpeg_quality: int = declared(85, "JPEG quality of the frames sent (1-100).")
    frame_label: str = declared("seconds", "Text before each frame: seconds, clock or none.")
    video_url: str = declared("data", "With --transport video_url: a data URL (data) or a file:// path (file).")
    audio: str = declared("none", "The clip's sound with its frames: none (default), parts (the sound of the span "
                                  "a call covers, a 16 kHz WAV as an input_audio part) or video (with --transport "
                                  "video_url: the clip keeps its sound, vLLM's use_audio_in_video set).")
    llm_base_url: str | None = declared(None, "OpenAI-compatible base URL of a vision model (or "
                                              "$STREAMCUE_LLM_BASE_URL).")
    llm_model: str | None = declared(None, "Vision model name (or $STREAMCUE_LLM_MODEL); the key comes from "
                                           "$STREAMCUE_LLM_API_KEY.")
    llm_structured: str = declared("json_schema", "Structured output: json_schema, json_object or none.")
    temperature: float = declared(0.0, "Sampling temperature of every call (part of the cache key).")
    max_tokens: int = declared(1024, "Most tokens per answer (part of the cache key).")
    llm_retries: int = declared(4, "Retries of a call answered HTTP 408/409/429/5xx or not answered, with the "
                                   "openai package's backoff (0 to 100).", pace=True)
    llm_timeout: float = declared(300.0, "Seconds one model call may take in all, retries included; then it fails "
                                         "as timed out (at most 86400: a day).", pace=True)
    model_revision: str | None = declared(None, "What the checkpoint is (a commit, a date, a hash): part of every "
                                                "cache key beside the server's own model entry.")
    concurrency: int = declared(1, "Records played at once (a multi-turn group is one); output in input order.",
                                pace=True)
    no_cache: bool = declared(False, "Do not read or write the LLM response cache.", pace=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "strategy_options", dict(self.strategy_options or {}))
        for name in ("videos", "video_root"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        if isinstance(self.ids, str):  # as the command line gives it: comma-separated, or @FILE
            object.__setattr__(self, "ids", parse_ids(self.ids))
        if self.ids is not None:
            object.__setattr__(self, "ids", tuple(dict.fromkeys(str(i) for i in self.ids)))
        if self.records is None:
            raise ConfigError("no records: give a build folder, a record file, a release folder or ORG/NAME@REV")
        _check_names(self)
        _check_numbers(self)
        _check_floors(self)
        _check_frames(self)
        _check_strategy_options(self)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (checked again)."""
        import dataclasses

        return dataclasses.replace(self, **changes)


def _check_names(c: ReplayConfig) -> None:
    from streamcue.loaders.engine import HISTORIES, SPANS
    from streamcue.loaders.memory import MEMORIES
    from streamcue.loaders.strategies import STRATEGIES

    if c.strategy is not None and c.strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {c.strategy!r}; known: {', '.join(STRATEGIES)}")
    if c.memory not in MEMORIES:
        raise ConfigError(f"unknown memory {c.memory!r}; known: {', '.join(MEMORIES)}")
    if c.history is not None and c.history not in HISTORIES:
        raise ConfigError(f"--history must be gold (the gold answers) or own (the model's), got {c.history!r}")
    if c.span not in SPANS:
        raise ConfigError(f"--span must be clip or video, got {c.span!r}")
    if c.timing not in ("synchronous", "asynchronous"):
        raise ConfigError(f"--timing must be synchronous or asynchronous, got {c.timing!r}")
    object.__setattr__(c, "clock", str(checked_clock(c.clock, c.timing)))  # fixed:2.0 is recorded as fixed:2
    if c.ids is not None and not c.ids:
        raise ConfigError("--ids names no record id")


def _finite(value: float | None) -> bool:
    return value is None or math.isfinite(value)


def _check_numbers(c: ReplayConfig) -> None:
    if not (math.isfinite(c.fps) and 0 < c.fps <= 60):
        raise ConfigError(f"--fps must be a positive number of frames per second, at most 60, got {c.fps}")
    for flag, value in (("--k", c.k), ("--limit", c.limit), ("--concurrency", c.concurrency),
                        ("--max-tokens", c.max_tokens)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be at least 1, got {value}")
    if c.window_s is not None and not (math.isfinite(c.window_s) and c.window_s > 0):
        raise ConfigError(f"--window-s (the context window) must be a positive number of seconds, got {c.window_s}")
    if not (math.isfinite(c.temperature) and 0 <= c.temperature <= 2):
        raise ConfigError(f"--temperature must be a number in [0, 2], got {c.temperature}")
    if c.llm_retries < 0 or not (math.isfinite(c.llm_timeout) and c.llm_timeout > 0):
        raise ConfigError("--llm-retries must be >= 0 and --llm-timeout a finite number of seconds > 0")
    from streamcue.llm import MAX_RETRIES, MAX_TIMEOUT_S
    from streamcue.loaders.strategies.base import bounded

    bounded(c.llm_retries, "--llm-retries", maximum=MAX_RETRIES, why="more only wait longer on a silent endpoint")
    bounded(c.llm_timeout, "--llm-timeout", maximum=MAX_TIMEOUT_S, why="a longer deadline is no deadline")


def _check_floors(c: ReplayConfig) -> None:
    """Every declared field with a ``minimum`` or ``maximum`` (and its ``why``) within them."""
    import dataclasses

    from streamcue.loaders.strategies.base import bounded

    for f in dataclasses.fields(c):
        meta = f.metadata
        if "minimum" in meta or "maximum" in meta:
            flag = "--" + (meta.get("flag") or f.name).replace("_", "-")
            bounded(getattr(c, f.name), flag, meta.get("minimum"), meta.get("maximum"), meta.get("why", ""),
                    meta.get("off"))


def _check_frames(c: ReplayConfig) -> None:
    from streamcue.loaders.strategies.base import Transport

    if not 1 <= c.jpeg_quality <= 100:
        raise ConfigError(f"--jpeg-quality must be in 1-100, got {c.jpeg_quality}")
    if c.no_video and c.video_root is not None:
        raise ConfigError("--no-video and --video-root contradict each other: give one")
    Transport(mode=c.transport, label=c.frame_label, video_url_form=c.video_url, audio=c.audio)  # checks its names
    if c.audio != "none" and c.no_video:
        raise ConfigError(f"--audio {c.audio} sends the videos' sound: it needs the videos, not --no-video")


def _check_strategy_options(c: ReplayConfig) -> None:
    flags = strategy_flags()
    names = {option.name: flag for flag, declared_ in flags.items() for _, option in declared_}
    for name, value in c.strategy_options.items():
        if name not in names and name not in flags:
            raise ConfigError(f"unknown strategy option {name!r}; known: {', '.join(sorted(names))}")
        for _, option in flags[names.get(name, name)]:  # each strategy's floor, where the flag is shared
            if option.name == name or option.cli_flag == name:
                option.check(value)


# ------------------------------------------------------------------------------------------ selecting

def choose(by_kind: Mapping[str, list[dict[str, Any]]], ids: tuple[str, ...] | None, limit: int | None, *,
           origin: str = "") -> dict[str, list[dict[str, Any]]]:
    """The records of ``by_kind`` with one of ``ids`` (every given id must exist), then the first ``limit`` in
    total; a later turn of a multi-turn dialogue chosen without its earlier turns is refused."""
    from streamcue.schemas.discovery import ID_FIELDS

    chosen = {k: list(rows) for k, rows in by_kind.items()}
    if ids is not None:
        wanted = set(ids)
        found = {str(r.get(ID_FIELDS[k])) for k, rows in chosen.items() for r in rows}
        unknown = [i for i in ids if i not in found]
        if unknown:
            raise InputError(f"--ids: {len(unknown)} unknown id(s), e.g. {unknown[0]!r}", file=origin)
        chosen = {k: [r for r in rows if str(r.get(ID_FIELDS[k])) in wanted] for k, rows in chosen.items()}
        for kind, rows in chosen.items():
            _check_turns(rows, by_kind[kind], ID_FIELDS[kind], origin)
    if limit is not None:
        left = limit
        for kind in chosen:
            chosen[kind] = chosen[kind][:left]
            left -= len(chosen[kind])
    return {k: rows for k, rows in chosen.items() if rows}


def _check_turns(chosen: list[dict[str, Any]], every: list[dict[str, Any]], id_field: str, origin: str) -> None:
    """A later turn of a multi-turn dialogue (``context.group_id``, ``context.turn``) chosen without its earlier
    turns is refused, naming them: played alone, its dialogue would be dropped silently."""
    ids = {str(r.get(id_field)) for r in chosen}
    for record in chosen:
        context = record.get("context") or {}
        if not context.get("group_id") or int(context.get("turn", 1)) <= 1:
            continue
        earlier = [str(r.get(id_field)) for r in every
                   if (r.get("context") or {}).get("group_id") == context["group_id"]
                   and int(r["context"].get("turn", 1)) < int(context["turn"])]
        missing = [i for i in earlier if i not in ids]
        if missing:
            raise InputError(f"--ids: {record.get(id_field)} is turn {context['turn']} of a dialogue; add its earlier "
                             f"turn(s) {', '.join(missing)} (played alone its dialogue would be dropped)",
                             file=origin, record=f"{id_field}={record.get(id_field)}")


# ------------------------------------------------------------------------------------------ a plan

@dataclass
class Plan:
    """What a replay plays, resolved and checked before any call: the source, the records chosen by kind, one
    ``(kind, rows, protocol, strategy name, strategy options)`` play per kind, the video root, ``n_benchmark``."""

    config: ReplayConfig
    source: RecordSet
    chosen: dict[str, list[dict[str, Any]]]
    plays: list[tuple[str, list[dict[str, Any]], Any, str, dict[str, Any]]]
    video_root: Path | None
    n_benchmark: int

    @property
    def videos(self) -> list[dict[str, Any]]:
        """The video records of the chosen records, in source order."""
        used = {r.get("video_id") for rows in self.chosen.values() for r in rows}
        return [v for vid, v in self.source.videos.items() if vid in used]


def _kinds(config: ReplayConfig) -> tuple[str, ...]:
    from streamcue.loaders.protocols import PROTOCOLS
    from streamcue.registry import get_benchmark

    if config.kind is not None:
        return (config.kind,)
    if config.benchmark is not None:
        return tuple(get_benchmark(config.benchmark).kinds)
    return tuple(dict.fromkeys(k for p in PROTOCOLS.values() for k in p.kinds))


def _open(config: ReplayConfig) -> RecordSet:
    from streamcue.io import read_jsonl
    from streamcue.schemas import validate_file

    source = open_records(config.records, kind=_kinds(config), split=None)
    if config.videos is not None:
        if not config.videos.is_file():
            raise InputError("no such videos file", file=config.videos)
        validate_file(config.videos, "video")
        source = RecordSet(kind=source.kind, records=source.records, origin=source.origin,
                           videos={v["video_id"]: v for v in read_jsonl(config.videos)},
                           video_root=source.video_root, by_kind=source.by_kind, files=source.files)
    return source


def _in_split(source: RecordSet, config: ReplayConfig) -> dict[str, list[dict[str, Any]]]:
    by_kind = dict(source.by_kind)
    if config.benchmark is not None:
        for kind, rows in by_kind.items():
            other = {r.get("benchmark") for r in rows} - {None, config.benchmark}
            if other:
                raise InputError(f"these are {', '.join(sorted(map(str, other)))} records; {config.benchmark} plays "
                                 "its own", file=source.files.get(kind, source.origin), field="benchmark")
    if config.split is None:
        return by_kind
    if not source.videos:
        raise ConfigError(f"--split {config.split} needs the videos with each video's split (pass --videos)")
    split_of = {vid: v.get("split") for vid, v in source.videos.items()}
    return {k: [r for r in rows if split_of.get(r.get("video_id")) == config.split] for k, rows in by_kind.items()}


def prepare(config: ReplayConfig) -> Plan:
    """Open, select and check everything a replay needs, before any call."""
    source = _open(config)
    in_split = _in_split(source, config)
    chosen = choose(in_split, config.ids, config.limit, origin=source.origin)
    if not chosen:
        raise InputError(f"no records to play{f' in split {config.split}' if config.split else ''}",
                         file=source.origin)
    plays = [_play_of(kind, rows, config) for kind, rows in chosen.items()]
    root = None if config.no_video else config.video_root or source.video_root
    return Plan(config, source, chosen, plays, root, sum(len(rows) for rows in in_split.values()))


def _play_of(kind: str, rows: list[dict[str, Any]], config: ReplayConfig) -> tuple[Any, ...]:
    from streamcue.loaders.protocols import protocol_for
    from streamcue.loaders.strategies import STRATEGIES, applicable

    protocol = with_options(protocol_for(kind, rows[0], config.benchmark), protocol_settings(config))
    others = {r.get("benchmark") for r in rows} - {None, protocol.name}
    if others:
        raise InputError(f"records of several benchmarks ({protocol.name}, {', '.join(sorted(others))}) in one "
                         "source; replay one benchmark at a time", file=str(config.records))
    name = config.strategy or protocol.default_strategy[kind]
    if not STRATEGIES[name].applies_to(kind, protocol.name):
        raise ConfigError(f"strategy {name} plays {_plays(STRATEGIES[name])}, not {kind} records of "
                          f"{protocol.name}; for those use {' or '.join(applicable(kind, protocol.name))}")
    options = _strategy_options(name, kind, config.strategy_options, dict(protocol.defaults.get(name, {})))
    return kind, rows, protocol, name, options


def _plays(strategy: Any) -> str:
    """What a strategy plays, in words: each kind's records, of the benchmarks it is limited to."""
    limits = {kind: strategy.protocols_of(kind) for kind in strategy.plays()}
    parts = [f"{kind} records" + ("" if only is None else f" of {' or '.join(only)} only")
             for kind, only in limits.items()]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _strategy_options(strategy: str, kind: str, given: Mapping[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The strategy's options: given, else the protocol's default, else the declared default; an option of another
    strategy is refused."""
    from streamcue.loaders.strategies import STRATEGIES

    flags = strategy_flags()
    declared_ = {option.name: option for option in STRATEGIES[strategy].options}
    by_flag = {option.cli_flag: option.name for option in declared_.values()}
    for key, value in given.items():
        name = by_flag.get(key, key)
        if value is not None and name not in declared_:
            flag = key if key.startswith("--") else "--" + key.replace("_", "-")
            users = [n for n, _ in flags.get(flag, [])] or ["another strategy"]
            raise ConfigError(f"{flag} is for --strategy {' or '.join(users)}, not {strategy} ({kind})")
    options = {}
    for name, option in declared_.items():
        value = given.get(name, given.get(option.cli_flag))
        if value is None:
            value = defaults.get(name, option.default)
        elif option.load is not None and isinstance(value, (str, Path)):
            value = option.load(value)
        options[name] = value
    return options


def protocol_settings(config: ReplayConfig) -> dict[str, Any]:
    """The protocol options ``config`` sets: its fields declared with ``protocol=True`` that are not None."""
    import dataclasses

    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if f.metadata.get("protocol") and getattr(config, f.name) is not None}


def with_options(protocol: Any, given: Mapping[str, Any]) -> Any:
    """``protocol`` with the options ``given`` (:meth:`~streamcue.loaders.protocols.base.Protocol.with_options`); one
    it does not declare is refused in one line naming the protocols that do."""
    from streamcue.loaders.protocols import PROTOCOLS

    given = {name: value for name, value in given.items() if value is not None}
    for name in given:
        if name not in protocol.options:
            users = [p.name for p in PROTOCOLS.values() if name in p.options]
            raise ConfigError(f"--{name.replace('_', '-')} is for {' or '.join(users) or 'no'} records, "
                              f"not {protocol.name}")
    return protocol.with_options(**given) if given else protocol


def protocol_options(protocol: Any) -> dict[str, Any]:
    """What the reports record of a protocol's options (:meth:`~streamcue.loaders.protocols.base.Protocol.settings`,
    e.g. its prompt set, context or schedule) and, for a protocol that has options, the versions of its prompt files
    (``prompt_versions``, ``name@sha12``)."""
    from streamcue.prompts import load_prompt

    settings = protocol.settings()
    if not settings:
        return {}
    return {**settings, "prompt_versions": [load_prompt("streamcue.loaders", name).version
                                            for name in protocol.prompts]}


# ------------------------------------------------------------------------------------------ playing

def check_out(out: Path, config: ReplayConfig, extra: list[str], finished: str = "replay_report.json") -> bool:
    """``out`` may take this replay's (or run's) files: no output is or lies inside an input, no other process writes
    there, and a run already in it is this one (:func:`_check_settings`). Returns whether ``out`` holds this run
    finished (its ``finished`` file written): then there is nothing to do, and nothing is replaced."""
    from streamcue.paths import check_out_folder, check_outputs

    inputs = [Path(config.records)] if Path(str(config.records)).exists() else []
    inputs += [p for p in (config.videos,) if p is not None]
    inputs += [Path(v) for v in config.strategy_options.values() if isinstance(v, Path)]
    check_out_folder(out)
    names = ["predictions.jsonl", "replay_report.json", "samples.jsonl", *extra]
    check_outputs([(out / name, name) for name in names], inputs, inside_inputs=True)
    return _check_settings(out, config, finished)


def _path_id(path: Path) -> str:
    """A path as the reports record it: its name and the first 12 hex digits of the SHA-256 of its absolute form
    (``ovo@1a2b3c4d5e6f``): the same file or folder however it is given, and no folder name of the machine."""
    import hashlib

    return f"{path.name}@{hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]}"


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return _path_id(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def recorded(config: ReplayConfig) -> dict[str, Any]:
    """What decides a run's answers and figures, as its report records them (replay_report.json ``config``): the
    command, then every declared field but those marked ``pace`` (how fast or how patiently it runs: concurrency,
    retries, timeout, cache), each path as its name and a digest of its absolute form (:func:`_path_id`), ``ids``
    sorted (the set of ids decides what is played, not the order given), the endpoint and model as resolved from
    the environment when not given (without credentials), redacted as written."""
    import dataclasses
    import json

    from streamcue.llm import LLMSettings
    from streamcue.redact import redact

    out: dict[str, Any] = {"command": config.COMMAND}
    out.update({f.name: _plain(getattr(config, f.name)) for f in dataclasses.fields(config)
                if not f.metadata.get("pace")})
    if config.ids is not None:
        out["ids"] = sorted(config.ids)
    records = Path(str(config.records))
    out["records"] = _path_id(records) if records.exists() else str(config.records)  # else ORG/NAME@REVISION
    try:
        llm = LLMSettings.resolve(base_url=config.llm_base_url, model=config.llm_model)
        out["llm_base_url"], out["llm_model"] = llm.endpoint, llm.model
    except ConfigError:  # no endpoint: a strategy that calls none
        pass
    return json.loads(redact(json.dumps(out, ensure_ascii=False)))


def _flag(name: str, config: ReplayConfig) -> str:
    import dataclasses

    if name.startswith("strategy_options."):
        key = name.split(".", 1)[1]
        return key if key.startswith("--") else "--" + key.replace("_", "-")
    meta = {f.name: f.metadata for f in dataclasses.fields(config)}.get(name, {})
    return name if name == "command" else "--" + (meta.get("flag") or name).replace("_", "-")


def _flat(settings: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in settings.items() if k != "strategy_options"},
            **{f"strategy_options.{k}": v for k, v in (settings.get("strategy_options") or {}).items()}}


def _check_settings(out: Path, config: ReplayConfig, finished: str) -> bool:
    """A folder holding a run (its settings recorded in ``finished`` or replay_report.json) takes only the same
    run again: refused, one line naming the folder and the first differing setting, when the settings differ;
    True when that run is finished. A folder with no recorded settings (new, or a run killed before its replay
    ended) takes any."""
    from streamcue.io import read_json

    there = next((out / name for name in dict.fromkeys((finished, "replay_report.json")) if (out / name).is_file()),
                 None)
    if there is None:
        return False
    data = read_json(there)
    settings = data.get("config", (data.get("replay") or {}).get("config")) if isinstance(data, Mapping) else None
    if not isinstance(settings, Mapping):
        raise ConfigError(f"--out {out} holds a run whose settings are not recorded ({there.name} has no config): a "
                          "run folder is never replaced; give a new --out")
    was, now = _flat(settings), _flat(recorded(config))
    was.setdefault("clock", "free")  # a folder written before --clock existed played the free clock
    for name in dict.fromkeys([*now, *was]):
        if was.get(name) != now.get(name):
            mine = settings.get("command") == config.COMMAND  # else the folder of another command: no state said
            state = ("a finished " if (out / finished).is_file() else "an unfinished ") if mine else "a "
            shown = {side: "none" if v is None else v for side, v in (("was", was.get(name)), ("now", now.get(name)))}
            raise ConfigError(f"--out {out} holds {state}{settings.get('command', 'run')} made with other settings: "
                              "first difference "
                              f"{_flag(name, config)} {shown['was']} there, {shown['now']} now; a run folder is never "
                              "replaced: give a new --out, or the same settings to resume it")
    return (out / finished).is_file()
