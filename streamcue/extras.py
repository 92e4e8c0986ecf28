"""Lazy imports of optional dependencies, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from streamcue.errors import MissingExtraError

__all__ = ["require"]


def require(module: str, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` telling which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        # Re-raise errors from *inside* an installed package; only a missing package is ours to explain.
        if exc.name and not module.startswith(exc.name) and not exc.name.startswith(module.split(".")[0]):
            raise
        raise MissingExtraError(
            f"{package or module.split('.')[0]} is not installed: pip install 'streamcue[{extra}]'"
        ) from None
