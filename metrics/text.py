"""Answer normalisation and token F1 (SQuAD v1.1 evaluation script conventions)."""

from __future__ import annotations

import re
import string
from collections import Counter

__all__ = ["normalize_answer", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, strip punctuation and the articles a/an/the, collapse whitespace."""
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(reference: str, response: str) -> float:
    """Harmonic mean of token precision and recall after :func:`normalize_answer`.

    Two empty texts score 1.0; one empty text scores 0.0.
    """
    ref, res = normalize_answer(reference).split(), normalize_answer(response).split()
    if not ref or not res:
        return float(ref == res)
    common = sum((Counter(ref) & Counter(res)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(res), common / len(ref)
    return 2 * precision * recall / (precision + recall)
