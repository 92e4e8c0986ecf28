"""Commands generated from a configuration dataclass's declared fields (``streamcue replay``, ``streamcue run``).

The options that several commands share, and the one name per idea, are declared once in
:mod:`streamcue.shared_options` (the builders' own commands use them too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

__all__ = ["parse_params", "parse_ids", "config_parameters", "config_from", "config_command"]


# ------------------------------------------------------------------------------------------ configuration commands

def parse_params(items: list[str] | None) -> dict[str, Any]:
    """``--param NAME=VALUE`` items as a dict (:func:`streamcue.metrics.run_config.parse_params`, which
    ``RunConfig`` applies too)."""
    from streamcue.metrics.run_config import parse_params as parse

    return parse(items)


def parse_ids(value: str | None) -> tuple[str, ...] | None:
    """``--ids`` (:func:`streamcue.loaders.replay_config.parse_ids`, which ``ReplayConfig`` applies too)."""
    from streamcue.loaders.replay_config import parse_ids as parse

    return parse(value)


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
