"""Versioned prompt files: ``<name>.v<N>.txt`` in a package's ``prompts/`` folder.

A prompt's version string is its file stem plus the first 12 hex digits of its SHA-256, so
that an edit without a version bump still changes every cache key and provenance hash (and a
snapshot test fails until the change is made on purpose).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Prompt", "load_prompt"]


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        return f"{self.name}@{self.sha256[:12]}"

    def render(self, **values: str) -> str:
        return self.text.format(**values)


@cache
def load_prompt(package: str, name: str) -> Prompt:
    """``load_prompt("streamcue.metrics", "vsas_judge.v1")``."""
    text = resources.files(package).joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8")
    return Prompt(name, text)
