"""The builder registry: every source that ``streamcue build <name>`` turns into records, in one literal dict.

The contract (checked for every entry by ``tests/test_contracts.py``): the builder's module
``streamcue.dataset_builders.<name>`` has

* ``Config``: a frozen dataclass of everything the build reads (paths, options; no output folder
  unless the builder writes files besides records);
* ``build(config, report) -> Iterator[tuple[kind, record]]``: yields ``(kind, record)`` pairs of
  the kinds in :attr:`Builder.makes`, each valid against its schema, ids unique, the same
  records in the same order for the same inputs; it fills ``report``
  (:class:`~streamcue.dataset_builders.output.BuildReport`: ``llm`` usage and its own
  ``details``) and raises :class:`~streamcue.errors.StreamcueError` subclasses for bad input.

To add a builder: copy ``captaincook4d.py`` (no LLM) or ``ego4d.py`` (LLM stages), add one
:class:`Builder` line to :data:`BUILDERS`, a ``streamcue build <name>`` command in ``streamcue/cli/build.py``
that calls :func:`~streamcue.dataset_builders.output.run_builder`, and its smallest real input to
``SMALLEST_INPUTS`` in ``tests/test_contracts.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from streamcue.fields import unknown_name

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


#: name (``streamcue build <name>``) -> builder. Literal on purpose: the list of builders is read here.
BUILDERS: dict[str, Builder] = {
    "captaincook4d": Builder("captaincook4d", ("guidance", "video"),
                             "guidance records (LiveCook protocol) from CaptainCook4D annotations",
                             "streamcue.dataset_builders.captaincook4d"),
    "ego4d": Builder("ego4d", ("interval_qa", "video"),
                     "interval_qa proactive questions (ESTP-Gen) from Ego4D GoalStep and narrations",
                     "streamcue.dataset_builders.ego4d"),
    "recorded": Builder("recorded", ("dense_caption", "video"),
                        "dense_caption records (VSAS-Bench style) from anonymized recorded videos",
                        "streamcue.dataset_builders.recorded"),
    "livecook-summaries": Builder("livecook-summaries", ("mistake_summary",),
                                  "mistake_summary records (LiveCook) for CaptainCook4D instructions, from the "
                                  "training split", "streamcue.dataset_builders.livecook_summaries",
                                  figures="SummaryFigures"),
    "livecook-augment": Builder("livecook-augment", ("guidance", "counterfactual_mistake", "video"),
                                "LiveCook training data from Ego4D GoalStep: success-only guidance and "
                                "counterfactual mistakes", "streamcue.dataset_builders.livecook_augment",
                                figures="AugmentFigures"),
    "ovo-bench": Builder("ovo-bench", ("mc_question", "active_item", "video"),
                         "mc_question and active_item records from OVO-Bench's annotation file",
                         "streamcue.dataset_builders.ovo_bench", figures="QuirkReport"),
    "streamingbench": Builder("streamingbench", ("mc_question", "active_item", "video"),
                              "mc_question and active_item records from StreamingBench's question files",
                              "streamcue.dataset_builders.streamingbench", figures="QuirkReport"),
    "streambench": Builder("streambench", ("open_question", "video"), "open_question records from StreamBench "
                           "(OASIS's eval_streambench.json)", "streamcue.dataset_builders.streambench",
                           figures="StreamBenchReport"),
}


def get_builder(name: str) -> Builder:
    """The registered builder called ``name``; an unknown name suggests the closest one."""
    if name not in BUILDERS:
        raise unknown_name("builder", name, BUILDERS)
    return BUILDERS[name]
