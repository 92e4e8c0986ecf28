"""Where streamcue finds its default inputs and caches (options > environment > defaults)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["repository_root", "shared_data_dir", "default_captaincook4d", "default_goalstep", "cache_dir"]


def repository_root() -> Path:
    """The source checkout this package was installed from (``pip install -e .``)."""
    return Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The public annotation files that sit beside the repository (``../shared/data``)."""
    return Path(os.environ.get("STREAMCUE_SHARED_DATA", repository_root().parent / "shared" / "data"))


def default_captaincook4d() -> Path:
    """CaptainCook4D annotations: $STREAMCUE_CAPTAINCOOK4D, else ``../shared/data/captaincook4d``."""
    return Path(os.environ.get("STREAMCUE_CAPTAINCOOK4D", shared_data_dir() / "captaincook4d"))


def default_goalstep() -> Path:
    """Ego4D GoalStep val annotations beside the repository."""
    return shared_data_dir() / "ego4d_goalstep" / "data" / "goalstep_valid.json"


def cache_dir() -> Path:
    """Persistent cache (judge verdicts, LLM responses): $STREAMCUE_CACHE_DIR or ~/.cache/streamcue."""
    base = (os.environ.get("STREAMCUE_CACHE_DIR")
            or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "streamcue")
    return Path(base)
