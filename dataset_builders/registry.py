"""The builders: every source that ``streamcue build <name>`` turns into records, read from the benchmark registry.

Which builders exist is written once, in ``streamcue/registry.py``: each source names its builder, and
``TRAINING_BUILDERS`` names the builders of training data that belong to no benchmark. Everything else a
builder is, its module ``streamcue.dataset_builders.<module>`` declares (``<module>`` = the name with
``-`` -> ``_``); :data:`BUILDERS` reads it there when an entry is used (so ``streamcue ls`` stays fast):

* ``MAKES``: the record kinds it yields; ``SUMMARY``: one line for ``streamcue ls``; optionally ``FIGURES``:
  the name of a report class of its own that it fills instead of the BuildReport;
* ``Config``: a frozen dataclass of everything the build reads (paths, options; no output folder
  unless the builder writes files besides records), its inputs declared (:func:`streamcue.prologue.input_path`);
* ``build(config, report) -> Iterator[tuple[kind, record]]``: yields ``(kind, record)`` pairs of
  the kinds in ``MAKES``, each valid against its schema, ids unique, the same
  records in the same order for the same inputs; it fills ``report``
  (:class:`~streamcue.dataset_builders.output.BuildReport`: ``llm`` usage and its own
  ``details``) and raises :class:`~streamcue.errors.StreamcueError` subclasses for bad input;
* ``example_config(data_root)``: its smallest real input (the contract test runs it);
* its command: ``EXAMPLE`` (and optionally ``HELP`` and ``print_summary(result, report)``), and
  ``streamcue build <name>`` is generated from its ``Config`` (the help of each option in the field's
  metadata); or, when no ``Config`` field can express an option, ``command``: a typer function of its own
  (``streamcue/cli/build_generated.py`` finds either through :data:`BUILDERS`).

To add a builder: copy ``captaincook4d.py`` (no LLM) or ``ego4d.py`` (LLM stages) and name it in the
registry (a source's ``builder``); ``tests/streamcue/test_contracts.py`` checks it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from streamcue.errors import ConfigError
from streamcue.registry import Derived, builder_modules

__all__ = ["BUILDERS", "Builder", "get_builder"]


@dataclass(frozen=True)
class Builder:
    """One registered builder: its name, the record kinds it makes and the module holding ``Config`` and ``build``."""

    name: str
    makes: tuple[str, ...]
    summary: str
    module: str
    #: For builders that fill a report class of their own (name in the module) instead of the BuildReport:
    #: its ``to_dict()`` becomes the BuildReport's details (its ``llm`` key, the BuildReport's llm).
    figures: str | None = None

    def load(self) -> ModuleType:
        """The builder's module (imported on first use, so that ``streamcue ls`` stays fast)."""
        return importlib.import_module(self.module)

    @property
    def config(self) -> type:
        """The builder's frozen ``Config`` dataclass."""
        return self.load().Config

    def build(self, config: Any, report: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """The builder's entry point: ``(kind, record)`` pairs; ``report`` is filled as it goes."""
        module = self.load()
        if self.figures is None:
            return module.build(config, report)
        return self._build_with_figures(module, config, report)

    def _build_with_figures(self, module: ModuleType, config: Any, report: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        figures = getattr(module, self.figures)()
        yield from module.build(config, figures)
        details = figures.to_dict()
        report.llm = details.pop("llm", None)
        report.details = details


def _load(name: str, module: str) -> Builder:
    """The builder ``name`` as its module ``streamcue.dataset_builders.<module>`` declares it."""
    path = f"{__package__}.{module}"
    declared = importlib.import_module(path)
    for constant in ("MAKES", "SUMMARY"):
        if not hasattr(declared, constant):
            raise ConfigError(f"builder {name!r}: {path} declares no {constant} (see dataset_builders/registry.py)")
    return Builder(name, tuple(declared.MAKES), declared.SUMMARY, path, getattr(declared, "FIGURES", None))


#: name (``streamcue build <name>``) -> builder: the builders that streamcue/registry.py names (each source's,
#: then the training-data builders after the source they read), each as its own module declares it.
BUILDERS: Derived[Builder] = Derived("builder", builder_modules, _load)


def get_builder(name: str) -> Builder:
    """The registered builder called ``name``; an unknown name suggests the closest one."""
    return BUILDERS.get_or_suggest(name)
