"""BERTScore F1 with a local model (``bert-score``), offline by default.

The default model is the packaged all-MiniLM-L6-v2 at layer 4; pass ``model_path`` to use, for
example, local roberta-large files (``num_layers=17``) for numbers comparable with papers.
Scores from different models or layers are not comparable, so the report names both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from streamcue.extras import require

__all__ = ["bertscore_f1"]


def bertscore_f1(references: Sequence[str], candidates: Sequence[str], model_path: str | None = None,
                 num_layers: int = 4) -> tuple[list[float], dict]:
    """BERTScore F1 per pair, and ``{"model", "num_layers"}`` describing how it was computed."""
    from streamcue.embedding import default_model_path, model_name
    from streamcue.embedding import quiet_offline

    path = Path(model_path) if model_path else default_model_path()
    info = {"model": model_name(model_path), "num_layers": num_layers, "rescale_with_baseline": False}
    if not references:
        return [], info
    bert_score = require("bert_score", "embed", "bert-score")
    with quiet_offline():  # offline for this call only (the model loads inside it)
        _, _, f1 = bert_score.score(list(candidates), list(references), model_type=str(path), num_layers=num_layers,
                                    batch_size=64, verbose=False)
    return [float(x) for x in f1], info
