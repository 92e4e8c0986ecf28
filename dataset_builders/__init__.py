"""Builders: source annotations -> streamcue records.

Every builder is registered in :data:`BUILDERS` (:mod:`~streamcue.dataset_builders.registry`, where the
contract is written down): a module ``streamcue.dataset_builders.<name>`` with a frozen ``Config`` and
``build(config, report)``, a generator of ``(kind, record)`` pairs. :func:`run_builder` runs one and
writes its records and its :class:`BuildReport`.
"""

from __future__ import annotations

from streamcue.dataset_builders.output import BuildReport, run_builder
from streamcue.dataset_builders.registry import BUILDERS, Builder, get_builder

__all__ = ["BUILDERS", "BuildReport", "Builder", "get_builder", "run_builder"]
