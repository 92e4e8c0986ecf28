"""``streamcue annotate push|pull|status``: human verification in Label Studio."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console

__all__ = ["annotate_app", "URL_HELP", "annotate_push", "annotate_pull", "annotate_status"]


annotate_app = typer.Typer(help="Send records to Label Studio for human verification and bring the work back.",
                           no_args_is_help=True)
URL_HELP = "Label Studio URL (or $LABEL_STUDIO_URL). The token is read from $LABEL_STUDIO_API_KEY only."


@annotate_app.command("push")
def annotate_push(
    kind: Annotated[str, typer.Option(help="Record kind: interval_qa, dense_caption or guidance.")],
    records: Annotated[Path, typer.Option(help="JSONL file of records (a videos.jsonl beside it gives each video's "
                                               "uri and fps).")],
    project: Annotated[str, typer.Option(help="Project title; created with the kind's labeling config when missing, "
                                              "reused otherwise.")],
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    videos: Annotated[Optional[Path], typer.Option(help="videos.jsonl, when it is not beside the records.")] = None,
    video_root: Annotated[Optional[Path], typer.Option("--video-root", "--videos-root", help=(
        "Folder the video uris are relative to; served to the "
                                                             "browser through Label Studio's local files (a "
        "subfolder of its document root)."))] = None,
    document_root: Annotated[Optional[Path], typer.Option(help="The server's LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT "
                                                               "(default: the same variable here).")] = None,
    required: Annotated[int, typer.Option(
        help="Annotators each task goes to (Label Studio's overlap); use the same number for pull.")] = 2,
    order: Annotated[bool, typer.Option("--order", help=(
        "Import the records most likely wrong first (evidence verdict, then the generator's confidence), "
        "so annotators review them first."))] = False,
) -> None:
    """Import one task per record, its current content as the annotator's starting point.

    Records already in the project (same id) are skipped, so pushing again is safe. The
    project shows the kind's guideline (annotation/configs/KIND.guideline.vN.md) before
    annotating; a project keeps the guideline version it was annotated under.

    Example:

        LABEL_STUDIO_API_KEY=... streamcue annotate push --kind interval_qa --records out/ego4d/interval_qa.jsonl \\
            --project "ego4d val QA" --url http://127.0.0.1:8080 --video-root /data/files/ego4d --order
    """
    from streamcue.annotation.roundtrip import push

    result = push(kind, records, project, url=url, videos=videos, videos_root=video_root, document_root=document_root,
                  order=order, checks=required)
    console.out.print(f"{result.imported} tasks imported into project {result.project!r} (id {result.project_id})"
                      f"{', most likely wrong first' if order else ''}; {result.skipped} already there; "
                      f"guideline {result.guideline}")


@annotate_app.command("pull")
def annotate_pull(
    project: Annotated[str, typer.Option(help="Project title.")],
    out: Annotated[Path, typer.Option(help="JSONL file for the records (written atomically, all or nothing).")],
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    required: Annotated[int, typer.Option(help="Annotators who must agree before a record is verified.")] = 2,
    tolerance: Annotated[float, typer.Option(help="Seconds two annotators' boundaries may differ and still "
                                                  "agree.")] = 1.0,
    changes: Annotated[Optional[Path], typer.Option(help="Also write what changed per record as JSON here.")] = None,
) -> None:
    """Bring the annotators' work back as records of the same schema, verification filled in.

    A record becomes verified (or rejected) only when REQUIRED distinct annotators agree (one
    person submitting twice is one check); a disagreement leaves it unverified with a note.
    An annotation that would make the record invalid (a success relabelled as a mistake has no
    mistake category) is reported for that record only: it comes back as pushed, unverified,
    with a note, and every other record is written. Skipped annotations are ignored; a record
    nobody touched comes back identical.

    Example:

        streamcue annotate pull --project "ego4d val QA" --out verified/interval_qa.jsonl
    """
    from streamcue.annotation.roundtrip import pull
    from streamcue.io import write_json
    from streamcue.prologue import check_io

    check_io([(out, "--out"), *([(changes, "--changes")] if changes else [])], [])
    result = pull(project, out, url=url, required=required, tolerance_s=tolerance)
    console.out.print(console.table(f"{result.records} records -> {out}", ["records"],
                                    {state: {"records": n} for state, n in sorted(result.states.items())}, "state"))
    for rid, what in list(result.changes.items())[:20]:
        console.out.print(f"{rid}: {'; '.join(what)}", markup=False)
    for rid, why in result.disagreements.items():
        console.out.print(f"{rid}: annotators disagree ({why})", markup=False)
    for rid, why in result.invalid.items():
        console.err.print(f"warning: Label Studio project {project!r}, record {rid}: the annotation makes the record "
                          f"invalid ({why}); kept as pushed, unverified", markup=False)
    if changes:
        write_json(changes, {"changes": result.changes, "disagreements": result.disagreements,
                             "invalid": result.invalid, "states": dict(result.states)})


@annotate_app.command("status")
def annotate_status(
    project: Annotated[str, typer.Option(help="Project title.")],
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    required: Annotated[int, typer.Option(help="Annotators who must agree before a record is verified.")] = 2,
    tolerance: Annotated[float, typer.Option(help="Seconds two annotators' boundaries may differ and still "
                                                  "agree.")] = 1.0,
) -> None:
    """Per task: annotators so far, agreement, and how many checks are still missing; then the
    throughput per annotator (tasks done, skipped, median and total time per task from Label
    Studio's lead times).

    Example:

        streamcue annotate status --project "ego4d val QA"
    """
    from collections import Counter

    from streamcue.annotation.roundtrip import status_report

    rows, people = status_report(project, url=url, required=required, tolerance_s=tolerance)
    console.out.print(console.table(f"project {project!r}", ["task", "record", "annotations", "state", "missing",
                                                             "note"],
                                    [[r["task"], r["record"], r["annotations"], r["state"], r["missing"], r["note"]]
                                     for r in rows]))
    counts = Counter(r["state"] for r in rows)
    console.out.print(", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
                      + f"; {sum(r['missing'] for r in rows)} checks missing")

    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f} s"

    if people:
        console.out.print(console.table("throughput", ["annotator", "tasks", "skipped", "median per task", "total"],
                                        [[p["annotator"], p["tasks"], p["skipped"], seconds(p["median_s"]),
                                          seconds(p["total_s"])] for p in people]))
