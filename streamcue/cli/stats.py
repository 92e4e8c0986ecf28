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
    project: Annotated[Optional[str], typer.Option(help=(
        "Label Studio project: agreement between its annotators, for any kind ($LABEL_STUDIO_URL and "
        "$LABEL_STUDIO_API_KEY as for annotate)."))] = None,
    tolerance: Annotated[float, typer.Option(help="With --project: seconds two boundaries may differ and "
                                                  "agree.")] = 1.0,
    reviewer: Annotated[Optional[list[str]], typer.Option("--reviewer", help=(
        "With --project: a reviewer's email (repeatable), left out of the annotators compared; default: whoever "
        "submitted an annotation started from annotate review's starting point (as the card's figures)."))] = None,
    url: Annotated[Optional[str], typer.Option(help="With --project: Label Studio URL (or $LABEL_STUDIO_URL).")
                   ] = None,
    generated: Annotated[Optional[Path], typer.Option(help="dense_caption.jsonl as the builder wrote it.")] = None,
    verified: Annotated[Optional[Path], typer.Option(help="The same records after human verification "
                                                          "(annotation pull).")] = None,
    threshold: Annotated[float, typer.Option(help="Cosine similarity counted as agreement.")] = 0.8,
    embedding_model: Annotated[Optional[Path], typer.Option("--embedding-model", help=(
        "sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2)."))] = None,
    output: Annotated[Optional[Path], typer.Option(help="Write the numbers as JSON here.")] = None,
) -> None:
    """Agreement between annotators of a project (every kind), or generated vs verified captions.

    With --project: per annotator pair and pooled, the share of records the pair agrees on under the
    double-check rule and the kind's own figures (interval_qa: decision, question, interval IoU,
    answer text; guidance: events kept by both, time within --tolerance, type, text, mean time
    difference; dense_caption: caption text). annotate pull writes the same figures in
    agreement.json beside the records.

    With --generated and --verified: how far annotators changed the generated captions, by
    embedding similarity and corrections (captions matched by task_id and second; corrected when
    flagged or the text differs).

    Examples:

        streamcue stats agreement --project "cc4d check" --tolerance 1.0

        streamcue stats agreement --generated out/recorded/dense_caption.jsonl --verified verified/dense_caption.jsonl
    """
    from streamcue.annotation.agreement import caption_agreement
    from streamcue.errors import ConfigError
    from streamcue.io import write_json
    from streamcue.prologue import check_io, check_numbers

    if project is not None:
        if generated is not None or verified is not None:
            raise ConfigError("--project compares annotators; --generated/--verified compare captions: give one")
        _project_agreement(project, tolerance, tuple(reviewer or ()), url, output)
        return
    if generated is None or verified is None:
        raise ConfigError("give --project, or both --generated and --verified")
    check_numbers(("--threshold", threshold, -1.0, 1.0))  # a cosine similarity
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


def _project_agreement(project: str, tolerance: float, reviewers: tuple[str, ...], url: Optional[str],
                       output: Optional[Path]) -> None:
    from streamcue.annotation.roundtrip import check_tolerance, pull
    from streamcue.io import write_json
    from streamcue.prologue import check_io

    check_tolerance(tolerance)
    if output is not None:
        check_io({output: "--output"}, [])
    if not reviewers:  # the reviewers annotate pull was told of: otherwise one counts as a third annotator
        from streamcue.annotation.review import review_annotators

        reviewers = review_annotators(project, url=url)
        if reviewers:
            console.out.print(f"reviewers (started from annotate review's starting point; --reviewer to name "
                              f"others): {', '.join(reviewers)}", markup=False)
    figures = pull(project, None, url=url, tolerance_s=tolerance, reviewers=reviewers, required=1).agreement
    names = figures["figures"]

    def cell(value: object) -> object:
        return "-" if value is None else round(value, 3) if isinstance(value, float) else value

    rows = [["all pairs", figures["overall"]["records"], *(cell(figures["overall"][n]) for n in names)]]
    rows += [[" | ".join(p["annotators"]), p["records"], *(cell(p[n]) for n in names)] for p in figures["pairs"]]
    console.out.print(console.table(f"agreement between annotators, project {project!r} ({figures['kind']}, "
                                    f"tolerance {tolerance:g} s)", ["annotators", "records", *names], rows))
    if output:
        write_json(output, figures)


stats_app.command("evidence")(evidence_stats)
