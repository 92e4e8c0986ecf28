"""Small text helpers that several builders share."""

from __future__ import annotations

__all__ = ["lower_first"]


def lower_first(text: str) -> str:
    """``"Boil water"`` -> ``"boil water"``, for the middle of a sentence; an acronym (``"DIY ..."``) is kept."""
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
