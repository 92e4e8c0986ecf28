"""``streamcue stats agreement|evidence``: statistics on built and verified records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.cli.evidence import evidence_stats

__all__ = ["stats_app", "agreement"]


stats_app = typer.Typer(help="Statistics on built and verified records.", no_args_is_help=True)



@stats_app.command("agreement")
def agreement(
    generated: Annotated[Path, typer.Option(help="dense_caption.jsonl as the builder wrote it.")],
    verified: Annotated[Path, typer.Option(help="The same records after human verification (annotation pull).")],
    threshold: Annotated[float, typer.Option(help="Cosine similarity counted as agreement.")] = 0.8,
    embedding_model: Annotated[Optional[Path], typer.Option("--embedding-model", "--model", help=(
        "sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2)."))] = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the numbers as JSON here.")] = None,
) -> None:
    """How far annotators changed the generated captions: embedding similarity and corrections.

    Captions are matched by task_id and second. A caption counts as corrected when the
    annotator flagged it (corrected: true) or its text differs.

    Example:

        streamcue stats agreement --generated out/recorded/dense_caption.jsonl --verified verified/dense_caption.jsonl
    """
    from streamcue.annotation.agreement import caption_agreement
    from streamcue.io import write_json
    from streamcue.prologue import check_io

    if output is not None:
        check_io({output: "--output"}, [generated, verified])
    result = caption_agreement(generated, verified, threshold=threshold, model_path=embedding_model)
    rows = {name: {k: v for k, v in group.items()} for name, group in result["groups"].items()}
    console.out.print(console.table("generated vs verified captions", ["captions", "mean_cosine", "share_above",
                                                                       "share_corrected"],
                                    {"overall": result["overall"], **rows}, "category"))
    console.out.print(f"model {result['model']}, threshold {threshold}")
    if output:
        write_json(output, result)



stats_app.command("evidence")(evidence_stats)
