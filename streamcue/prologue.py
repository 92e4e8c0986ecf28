"""The prologue of every command that writes: what it reads, what it writes, and never one over the other.

A builder's frozen ``Config`` declares the paths it reads with :func:`input_path` (and, when it writes
files besides its records, the folder it writes with :func:`output_path`); :func:`declared_inputs`
reads them back, so that :func:`~streamcue.dataset_builders.output.run_builder` checks them for every
builder and no caller can forget one::

    @dataclass(frozen=True)
    class Config:
        annotations: Path = input_path("--annotations", folder=True)
        narrations: Path | None = input_path("--narrations", default=None)

:func:`check_io` is the one check of outputs against inputs (every command calls it before any
work): an output folder that exists as a file, an output that is or resolves (symlinks, ``..``)
to an input, one that lies inside an input folder or "inside" an input file, and two inputs that
would be written to one output are all refused with a one-line :class:`~streamcue.errors.ConfigError`
(exit code 2). Reading and validating records is the schemas layer's job
(:func:`streamcue.schemas.validate_file`); the commands chain the two.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.paths import check_out_folder, check_outputs

__all__ = ["DeclaredPath", "DeclaredField", "input_path", "output_path", "option", "declared_inputs",
           "declared_outputs", "declared_fields", "check_io", "check_config_io", "is_blank", "check_numbers"]

_KEY = "streamcue.io"


@dataclass(frozen=True)
class DeclaredPath:
    """One path a config reads or writes: the option that sets it, whether it is a folder, and its value."""

    field: str
    option: str
    folder: bool
    path: Path
    #: for an output folder: the entries the build writes inside it besides its records (``videos/``)
    writes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeclaredField:
    """A path field of a ``Config`` class: name, role (``input`` or ``output``), option, kind, entries written."""

    field: str
    role: str
    option: str
    folder: bool
    writes: tuple[str, ...] = ()


def input_path(option: str, *, folder: bool = False, help: str = "", **field_args: Any) -> Any:
    """A ``Config`` field that names a file (or, with ``folder``, a folder) the build reads.

    ``option`` is the command-line option that sets it (named in errors and by the generated tests);
    ``help`` its help text when ``streamcue build <name>`` is generated from the ``Config``;
    ``field_args`` go to :func:`dataclasses.field` (``default=None`` for an optional input).
    """
    return dataclasses.field(metadata={_KEY: "input", "option": option, "folder": folder, "help": help},
                             **field_args)


def output_path(option: str, *writes: str, help: str = "", **field_args: Any) -> Any:
    """A ``Config`` field that names the folder the build writes files into besides its records.

    ``writes``: the entries written inside it (``"videos"``), checked against the inputs like the records.
    """
    return dataclasses.field(metadata={_KEY: "output", "option": option, "folder": True, "writes": writes,
                                       "help": help}, **field_args)


def option(help: str, *, name: str | None = None, **field_args: Any) -> Any:
    """A ``Config`` field that is no path, with the help text of its option when ``streamcue build <name>`` is
    generated from the ``Config`` (``name``: the option, when not ``--<field name with - for _>``)."""
    return dataclasses.field(metadata={"help": help, **({"option": name} if name else {})}, **field_args)


def _declared(config: Any, role: str) -> list[DeclaredPath]:
    if not dataclasses.is_dataclass(config):
        raise TypeError(f"{type(config).__name__} is not a dataclass: it cannot declare its inputs")
    found = []
    for f in dataclasses.fields(config):
        if f.metadata.get(_KEY) != role:
            continue
        value = getattr(config, f.name)
        values = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            if item is not None and str(item) != "":
                found.append(DeclaredPath(f.name, f.metadata["option"], f.metadata["folder"], Path(item),
                                          tuple(f.metadata.get("writes", ()))))
    return found


def declared_inputs(config: Any) -> list[DeclaredPath]:
    """The files and folders ``config`` reads (its :func:`input_path` fields that are set), in field order."""
    return _declared(config, "input")


def declared_outputs(config: Any) -> list[DeclaredPath]:
    """The folders ``config`` writes into besides the records (its :func:`output_path` fields)."""
    return _declared(config, "output")


def check_io(outputs: Mapping[Path, object] | Iterable[tuple[Path, object]], inputs: Iterable[Path], *,
             out_folder: Path | None = None, option: str = "--out") -> None:
    """Refuse, before anything is read or written, an output that would lose data.

    ``outputs`` pairs each file or folder to be written with a label (or the input it comes from);
    ``inputs`` are the files and folders read; ``out_folder`` (the command's ``--out``) must be a
    folder or not exist, and may be neither an input, nor inside an input folder, nor below an input
    file. See :func:`streamcue.paths.check_outputs` for the rules on each output.
    """
    pairs = list(outputs.items() if isinstance(outputs, Mapping) else outputs)
    if out_folder is not None:
        pairs.insert(0, (Path(out_folder), option))
    check_outputs(pairs, [Path(p) for p in inputs], inside_inputs=True)
    if out_folder is not None:
        check_out_folder(out_folder, option)


def check_config_io(config: Any, out: Path, written: Iterable[str], option: str = "--out") -> None:
    """:func:`check_io` for a builder: ``OUT/<each of written>`` and the config's own outputs against its inputs."""
    inputs = [d.path for d in declared_inputs(config)]
    outputs: list[tuple[Path, object]] = [(out / name, name) for name in written]
    for declared in declared_outputs(config):
        outputs += [(declared.path, declared.option), *((declared.path / w, w) for w in declared.writes)]
    check_io(outputs, inputs, out_folder=out, option=option)


def declared_fields(config_type: Any) -> list[DeclaredField]:
    """Each path field a ``Config`` class (or instance) declares with :func:`input_path` or :func:`output_path`."""
    return [DeclaredField(f.name, f.metadata[_KEY], f.metadata["option"], f.metadata["folder"],
                          tuple(f.metadata.get("writes", ()))) for f in dataclasses.fields(config_type)
            if f.metadata.get(_KEY)]


def is_blank(path: Path) -> bool:
    """Whether the file ``path`` holds nothing but whitespace (read up to its first other character)."""
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 16):
            if chunk.strip():
                return False
    return True


def check_numbers(*rules: tuple[str, float | int | None, float | None, float | None]) -> None:
    """Refuse, before any work, a numeric option that makes no sense: one line naming the option.

    Each rule is ``(option, value, low, high)``: ``value`` (None: not given, accepted) must be a finite
    number with ``low <= value <= high`` (a bound of None is open). ``--workers 0``, ``--frame-side 0``,
    ``--pad-s inf`` or ``--confidence nan`` would otherwise run, then fail (or write nonsense) half-way.
    """
    for option, value, low, high in rules:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{option} must be a finite number, got {value!r}")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = (f"between {low} and {high}" if low is not None and high is not None
                      else f"at least {low}" if low is not None else f"at most {high}")
            raise ConfigError(f"{option} must be {bounds}, got {value!r}")
