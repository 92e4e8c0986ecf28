"""Command-line options that several commands share, declared once, and the one name per idea.

One idea, one option name, in every command:

==========================  =====================================================================
``--video-root DIR``        the folder video ``uri`` s (or a tasks file's ``video`` names) are relative to
``--videos FILE``           a ``videos.jsonl`` (video records), never a folder
``--llm-base-url URL``      an OpenAI-compatible endpoint (generators, vision models and LLM judges alike)
``--llm-model NAME``        the model name at that endpoint
``--llm-structured MODE``   structured output of that endpoint
``--llm-timeout S``         the total deadline of one call to that endpoint, retries included
``--llm-retries N``         retries of one call (HTTP 408/409/429/5xx, no connection), by the openai package
``--embedding-model DIR``   a sentence-transformers model folder
``--pred-model NAME``       the model whose answers a predictions file stores (``evaluate``)
``--out DIR``               an output folder; ``--output FILE``: an output file
==========================  =====================================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

__all__ = ["LLMBaseURL", "LLMModel", "LLMStructured", "LLMConcurrency", "LLMTimeout", "LLMRetries", "NoCache",
           "VisionBaseURL", "VisionModel", "VisionStructured", "EmbeddingModel",
           "parse_params", "parse_ids", "config_parameters", "config_from", "config_command"]

#: The LLM options of the text-model commands (build ego4d, livecook-summaries, livecook-augment).
LLMBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL (or $STREAMCUE_LLM_BASE_URL).")]
LLMModel = Annotated[
    Optional[str], typer.Option(help="Model name (or $STREAMCUE_LLM_MODEL). The key comes from $STREAMCUE_LLM_API_KEY.")
]
LLMStructured = Annotated[
    str, typer.Option(help="Structured output: json_schema (OpenAI, vLLM), json_object (llama.cpp server) or none.")
]
LLMConcurrency = Annotated[int, typer.Option(help="Requests in flight at most.")]
#: ``--llm-timeout``: :attr:`streamcue.llm.LLMSettings.timeout_s` (None: its default).
LLMTimeout = Annotated[Optional[float], typer.Option(
    help="Seconds one model call may take in all, retries included; then it fails as timed out (default 300, at "
         "most 86400).")]
#: ``--llm-retries``: :attr:`streamcue.llm.LLMSettings.max_retries` (None: its default).
LLMRetries = Annotated[Optional[int], typer.Option(
    help="Retries of a call answered HTTP 408/409/429/5xx or not answered, with the openai package's backoff "
         "(default 4, at most 100).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")]

#: ``--llm-base-url`` of a command that talks to a vision model.
VisionBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL of a vision model (or "
                                                          "$STREAMCUE_LLM_BASE_URL).")]
#: ``--llm-model`` of a command that talks to a vision model.
VisionModel = Annotated[Optional[str], typer.Option(help="Vision model name (or $STREAMCUE_LLM_MODEL). The key "
                                                        "comes from $STREAMCUE_LLM_API_KEY.")]
#: ``--llm-structured`` of a command that talks to a vision model.
VisionStructured = Annotated[str, typer.Option(help="Structured output: json_schema, json_object or none.")]

#: ``--embedding-model``: a sentence-transformers folder.
EmbeddingModel = Annotated[Optional[Path], typer.Option(
    "--embedding-model", help="sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2).")]


# ------------------------------------------------------------------------------------------ configuration commands

def parse_params(items: list[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` items (``--param``) as a dict; a value is read as JSON when it is JSON, else kept as text."""
    import json

    from streamcue.errors import ConfigError
    from streamcue.finite import NonFiniteNumber
    from streamcue.io import loads

    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--param expects NAME=VALUE, got {item!r}")
        try:
            out[name] = loads(value)
        except NonFiniteNumber:
            raise ConfigError(f"--param {name}: {value} is not a finite number") from None
        except json.JSONDecodeError:
            out[name] = value
    return out


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


_PARSERS = {"ids": (Optional[str], parse_ids), "params": (Optional[list[str]], parse_params)}


def _cli_type(hint: Any) -> Any:
    """The typer type of a configuration field's type hint (``X | None`` -> ``Optional[X]``)."""
    import types
    import typing

    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = next((a for a in args if a is not Path and a is not str), None) if len(args) > 1 else args[0]
        return Optional[Path if Path in args else inner or str]
    return hint


def config_parameters(cls: type, skip: set[str] = frozenset()) -> list[Any]:
    """One keyword parameter per declared field of the configuration dataclass ``cls`` (its help, its flag; none for
    the fields in ``skip``), then one per strategy flag (:func:`streamcue.loaders.replay_config.strategy_flags`)."""
    import dataclasses
    import inspect
    import typing

    hints = typing.get_type_hints(cls)
    params = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if not meta.get("cli", False) or f.name in skip:
            continue
        flag = "--" + (meta.get("flag") or f.name).replace("_", "-")
        kind, parse = _PARSERS.get(meta.get("parse"), (_cli_type(hints[f.name]), None))
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=None if parse is not None else f.default,
                                        annotation=Annotated[kind, typer.Option(flag, help=meta["help"])]))
    return params + _strategy_parameters()


def _strategy_parameters() -> list[Any]:
    import inspect

    from streamcue.loaders.replay_config import strategy_flags

    params = []
    for flag, declared in strategy_flags().items():
        types_ = {option.type for _, option in declared}
        kind = types_.pop() if len(types_) == 1 else str
        text = "; ".join(f"{name}: {option.help}" + (f" (default {option.default})" if option.default is not None
                                                     else "") for name, option in declared)
        params.append(inspect.Parameter(flag[2:].replace("-", "_"), inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[Optional[kind], typer.Option(flag, help=text)]))
    return params


def config_from(cls: type, values: dict[str, Any]) -> Any:
    """The configuration ``cls`` from a command's parsed ``values`` (fields by name, parsed where declared so; the
    strategy flags into ``strategy_options``)."""
    import dataclasses

    from streamcue.loaders.replay_config import strategy_flags

    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in values:
            parse = _PARSERS.get(f.metadata.get("parse"), (None, None))[1]
            kwargs[f.name] = parse(values[f.name]) if parse is not None else values[f.name]
    flags = {flag[2:].replace("-", "_"): flag for flag in strategy_flags()}
    kwargs["strategy_options"] = {flags[k]: v for k, v in values.items() if k in flags and v is not None}
    return cls(**kwargs)


def config_command(cls: type, body: Any, name: str) -> Any:
    """A typer command: ``body``'s own parameters after the first (positional arguments, ``--out``), then every
    declared option of ``cls``; it calls ``body(config, **own)``, the configuration made from the flags and from
    those own parameters that are fields of ``cls`` (e.g. ``records``)."""
    import dataclasses
    import inspect

    own = list(inspect.signature(body, eval_str=True).parameters.values())[1:]
    fields_ = {f.name for f in dataclasses.fields(cls)}

    def command(**kwargs: Any) -> Any:
        rest = {p.name: kwargs[p.name] if p.name in fields_ else kwargs.pop(p.name) for p in own}
        return body(config_from(cls, kwargs), **rest)

    params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in own]
    params += [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for p in config_parameters(cls, {p.name for p in own})]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = body.__doc__
    command.__name__ = name
    return command
