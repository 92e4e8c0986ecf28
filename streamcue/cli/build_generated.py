"""``streamcue build <name>`` for every registered builder, from its own module.

The builders named in ``streamcue/registry.py`` each get a command, found through the builder registry and never
by a literal name: a builder module that declares ``command`` (a typer function written by hand, for options no
``Config`` field can express) gets that one; every other one gets a command made here from its module:

* each field of ``Config`` becomes an option: a ``Path`` (or ``Path | None``) a path option, a ``bool`` a flag
  (``--name``; ``--no-name`` when the default is true), an ``int``, ``float`` or ``str`` an option of that type,
  a ``tuple[str, ...]`` a repeatable option; its name is the one :func:`~streamcue.prologue.input_path` declares,
  else ``--<field name with - for _>``, its help the ``help`` of :func:`~streamcue.prologue.input_path` or
  :func:`~streamcue.prologue.option`. A field of another type stays at its default (a builder that needs it set
  from the command line writes its ``command`` by hand);
* ``--out`` is the output folder (its help lists the files the builder ``MAKES``);
* the command's help is the module's ``HELP`` (else its ``SUMMARY``) and its ``EXAMPLE`` (one command line,
  or a tuple of them);
* after :func:`~streamcue.dataset_builders.output.run_builder` it calls the module's
  ``print_summary(result, report)``, else prints the counts.

:func:`command_problems` lists what keeps a builder's command from being generated (the contract test runs it
on every builder without a ``command`` of its own).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, Union

import typer
import typer.core

from streamcue import console
from streamcue.errors import ConfigError

__all__ = ["OptionSpec", "option_specs", "command_problems", "generated_command", "builder_command",
           "BuildGroup"]

_SIMPLE = (Path, bool, int, float, str)


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One option of a generated command: the Config field it sets, its flag, type, default and help."""

    field: str
    flag: str
    kind: Any  # Path, bool, int, float, str, or tuple for tuple[str, ...]
    optional: bool  # may be None (``X | None``)
    required: bool
    default: Any
    help: str


def _kind(hint: Any) -> tuple[Any, bool] | None:
    """``(base type, may be None)`` of a field's type, or None when no option can express it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType) and type(None) in args and len(args) == 2:
        inner = _kind(next(a for a in args if a is not type(None)))
        return (inner[0], True) if inner and inner[0] is not bool else None
    if hint in _SIMPLE:
        return hint, False
    if origin is tuple and args in ((str, Ellipsis),):
        return tuple, False
    return None


def option_specs(config: type) -> tuple[list[OptionSpec], list[str]]:
    """The options of ``config``'s generated command, and the fields that no option can set (required ones
    make the command impossible; see :func:`command_problems`)."""
    hints = typing.get_type_hints(config)
    specs, unset = [], []
    for f in dataclasses.fields(config):
        kind = _kind(hints[f.name])
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if kind is None:
            unset.append(f.name)
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        flag = f.metadata.get("option") or "--" + f.name.replace("_", "-")
        if kind[0] is bool and default is True:
            flag = "--no-" + flag[2:]
        specs.append(OptionSpec(f.name, flag, kind[0], kind[1], not has_default, default, f.metadata.get("help", "")))
    return specs, unset


def command_problems(name: str) -> list[str]:
    """Why ``streamcue build <name>`` cannot be generated, or has options without help (empty: none)."""
    from streamcue.dataset_builders import get_builder

    module = get_builder(name).load()
    problems = [f"{module.__name__} has no EXAMPLE (the example of `streamcue build {name} --help`)"
                for _ in [0] if not getattr(module, "EXAMPLE", None)]
    config = getattr(module, "Config", None)
    if not (dataclasses.is_dataclass(config) and isinstance(config, type)):
        return [*problems, f"{module.__name__} has no Config dataclass"]
    specs, unset = option_specs(config)
    required = {f.name for f in dataclasses.fields(config)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    problems += [f"{name}: Config.{field} is required but no option can set it (write the command by hand)"
                 for field in unset if field in required]
    problems += [f"{name}: option {s.flag} (Config.{s.field}) has no help (input_path(..., help=...) or "
                 f"streamcue.prologue.option(help))" for s in specs if not s.help.strip()]
    return problems


def _annotation(spec: OptionSpec) -> Any:
    if spec.kind is bool:
        return Annotated[bool, typer.Option(spec.flag, help=spec.help)]
    if spec.kind is tuple:
        return Annotated[Optional[list[str]], typer.Option(spec.flag, help=spec.help)]
    kind = Optional[spec.kind] if spec.optional else spec.kind
    return Annotated[kind, typer.Option(spec.flag, help=spec.help)]


def _docstring(module: Any) -> str:
    examples = module.EXAMPLE if isinstance(module.EXAMPLE, (tuple, list)) else (module.EXAMPLE,)
    head = getattr(module, "HELP", None) or module.SUMMARY[:1].upper() + module.SUMMARY[1:] + "."
    lines = "\n\n".join(f"    {example}" for example in examples)
    return f"{head}\n\nExample{'s' if len(examples) > 1 else ''}:\n\n{lines}\n"


def generated_command(name: str) -> Callable[..., None]:
    """The function typer turns into ``streamcue build <name>``, made from the builder's module."""
    from streamcue.dataset_builders import get_builder
    from streamcue.dataset_builders.output import FILE_NAMES, REPORT_NAME

    builder = get_builder(name)
    module = builder.load()
    problems = command_problems(name)
    if problems:
        def refuse() -> None:
            raise ConfigError(f"streamcue build {name} cannot be generated: {'; '.join(problems)}")

        refuse.__doc__ = f"{builder.summary} (no command: {'; '.join(problems)}). Example: none."
        return refuse
    specs, _ = option_specs(module.Config)
    out_help = f"Output folder: {', '.join(FILE_NAMES[kind] for kind in builder.makes)}, {REPORT_NAME}."
    out_spec = next((s for s in specs if s.flag == "--out"), None)
    parameters = [inspect.Parameter(s.field, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(s))
                  for s in specs if s.required and s is not out_spec]
    parameters.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY,
                                        annotation=Annotated[Path, typer.Option("--out", help=out_help)]))
    parameters += [inspect.Parameter(s.field, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(s),
                                     default=None if s.kind is tuple else s.default)
                   for s in specs if not s.required and s is not out_spec]

    def command(**values: Any) -> None:
        from streamcue.dataset_builders import get_builder, run_builder

        out = values["out"]
        fields = {}
        for spec in specs:
            value = values["out" if spec is out_spec else spec.field]
            if spec.kind is tuple:
                value = tuple(value) if value else spec.default
            elif spec.kind is bool and spec.flag.startswith("--no-") and spec.default is True:
                value = not value
            fields[spec.field] = value
        config = module.Config(**fields)
        result, report = run_builder(get_builder(name), config, out)
        if hasattr(module, "print_summary"):
            module.print_summary(result, report)
        else:
            counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
            console.out.print(f"wrote {counts} to {out} (see {REPORT_NAME})", markup=False)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__doc__ = _docstring(module)
    command.__name__ = command.__qualname__ = f"build_{module.__name__.rpartition('.')[2]}"
    return command


def builder_command(name: str) -> tuple[Callable[..., None], bool]:
    """``(function typer turns into streamcue build <name>, whether it was generated)``: the ``command`` the
    builder's module declares, else the one :func:`generated_command` makes from its ``Config``."""
    from streamcue.dataset_builders import get_builder

    own = getattr(get_builder(name).load(), "command", None)
    return (own, False) if own is not None else (generated_command(name), True)


class BuildGroup(typer.core.TyperGroup):
    """The ``streamcue build`` group: one command for every builder that streamcue/registry.py names, its module's
    own or a generated one (made when the command tree is built, so a registered builder is never without a
    command)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from streamcue.dataset_builders import BUILDERS

        for name in BUILDERS:
            function, generated = builder_command(name)
            app = typer.Typer(add_completion=False)
            app.command(name)(function)
            command = typer.main.get_command(app)
            command.generated = generated  # type: ignore[attr-defined]  # (the contract tests tell them apart)
            self.add_command(command, name)
