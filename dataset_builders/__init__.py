"""Builders that turn source annotations and videos into streamcue records.

Each builder is a module with a frozen ``Config`` and ``build(config)`` yielding
``(kind, record)`` pairs; :data:`BUILDERS` lists them all.
"""

from __future__ import annotations

from streamcue.dataset_builders import captaincook4d

#: name -> builder module (``Config`` + ``build``).
BUILDERS = {
    "captaincook4d": captaincook4d,
}

__all__ = ["BUILDERS"]
