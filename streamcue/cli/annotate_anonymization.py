"""``streamcue annotate anonymization push|pull``: a person ticks each anonymized video's contact sheet."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console

__all__ = ["anonymization_app", "anonymization_push", "anonymization_pull"]

_URL_HELP = "Label Studio URL (or $LABEL_STUDIO_URL). The token is read from $LABEL_STUDIO_API_KEY only."

anonymization_app = typer.Typer(help=(
    "The anonymization check: each anonymized video's contact sheet (NAME.contact.jpg) shown in Label Studio, "
    "ticked 'all faces and plates hidden' or rejected 'something readable' by a person."), no_args_is_help=True)


@anonymization_app.command("push")
def anonymization_push(
    reports: Annotated[Path, typer.Option(help=(
        "The anonymizer's output folder (NAME.mp4, NAME.anonymization.json and NAME.contact.jpg of each video; or "
        "one report beside its video and sheet), a subfolder of Label Studio's local-files document root: the "
        "sheets are served from it."))],
    project: Annotated[str, typer.Option(help="Project title; created with the check's labeling config and "
                                              "guideline when missing, reused otherwise.")],
    url: Annotated[Optional[str], typer.Option(help=_URL_HELP)] = None,
    document_root: Annotated[Optional[Path], typer.Option(help="The server's LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT "
                                                               "(default: the same variable here).")] = None,
    required: Annotated[Optional[int], typer.Option(help=(
        "People who must tick each sheet (Label Studio's overlap); default: the project's, 1 for a new one."))
    ] = None,
) -> None:
    """Import one task per anonymized video: its contact sheet, the choice 'all faces and plates
    hidden' / 'something readable' and a note for what was missed; the project shows the
    guideline (annotation/configs/anonymization.guideline.v2.md) before the first task.

    A task is tied to the SHA-256 of the video, of its report and of the sheet: pushing again
    skips videos already there and adds a new task for a video anonymized again (or whose sheet
    changed), deleting its older task, or marking it superseded when someone annotated it (its
    ticks no longer count). Before any task is made, each video beside its report goes through
    the release's gate and each tile of its sheet is compared with the video's frame, so that a
    person ticks what is published: a report that is not `passed`, a video the gate refuses, or
    a sheet that is not the one the report states or does not show the video's frames is refused
    in one line naming the report and field; every report of the folder is checked, and each
    one refused is named, before any server is asked. A video whose bytes someone already
    found readable (in this project or another check project on the server) is pushed all the
    same and named in one line: its rejection holds, whatever is chosen on the new task.

    Example:

        streamcue annotate anonymization push --reports /data/ls-files/anonymized --project "anonymization check"
    """
    from streamcue.annotation.anonymization_check import push

    result = push(reports, project, url=url, document_root=document_root, required=required)  # each refusal: a line
    console.out.print(f"{result.imported} contact sheet(s) imported into project {result.project!r} (id "
                      f"{result.project_id}); {result.skipped} already there; guideline {result.guideline}; "
                      f"{result.required} person(s) per sheet"
                      + (f"; {result.superseded} older task(s) superseded" if result.superseded else ""),
                      markup=False, soft_wrap=True)
    for video, notes in sorted(result.rejected.items()):
        console.out.print(f"{video}: already rejected ({'; '.join(notes)}); pushed all the same, but pull keeps its "
                          "bytes rejected whatever is chosen here: anonymize it again", markup=False, soft_wrap=True)


@anonymization_app.command("pull")
def anonymization_pull(
    project: Annotated[str, typer.Option(help="Project title.")],
    out: Annotated[Path, typer.Option(help=(
        "JSON file for the checks (written atomically); release build reads RECORDS/anonymization_checks.json, "
        "or the file --anonymization-checks names."))],
    url: Annotated[Optional[str], typer.Option(help=_URL_HELP)] = None,
    required: Annotated[Optional[int], typer.Option(help="People who must tick a sheet (default: the project's "
                                                         "number per task).")] = None,
    key: Annotated[Optional[Path], typer.Option(help=(
        "The maintainer's private signing key file (streamcue annotate keygen; default $STREAMCUE_SIGNING_KEY): "
        "every check is signed with it."))] = None,
) -> None:
    """Bring the checks back: per video, ticked (REQUIRED people chose 'all faces and plates
    hidden'), rejected (anyone chose 'something readable'; their note kept) or pending, with
    the SHA-256 of the video, report and sheet that were checked, signed with the maintainer's
    key. A superseded task (replaced by a re-push) is pulled marked so: its tick never counts.
    A rejection holds for the video's bytes on the whole server: a video whose bytes were found
    readable in another check project (or on another task of this one) is pulled rejected, its
    note naming that project and task.

    release build --require-anonymization-check publishes a video only with a ticked check of
    its exact bytes. The file names people by their Label Studio e-mail; keep it with the
    records: a release publishes pseudonyms only.

    Example:

        streamcue annotate anonymization pull --project "anonymization check" \\
            --out out/recorded/anonymization_checks.json
    """
    from streamcue.annotation.anonymization_check import pull
    from streamcue.annotation.signing import key_files
    from streamcue.io import write_json
    from streamcue.prologue import check_io

    check_io([(out, "--out")], key_files(key))
    checks = pull(project, url=url, required=required, key=key)
    write_json(out, checks)
    current = [c for c in checks["checks"] if not c.get("superseded")]  # a superseded task's rejection is told by
    states = Counter(c["state"] for c in current)                      # its video's current task, which holds it
    superseded = len(checks["checks"]) - len(current)
    console.out.print(f"{len(checks['checks'])} check(s) -> {out}: "
                      + (", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "none")
                      + (f"; {superseded} superseded (their ticks do not count)" if superseded else ""),
                      markup=False, soft_wrap=True)
    for check in current:
        if check["state"] == "rejected":
            console.out.print(f"{check['video']}: rejected ({'; '.join(check['notes'])})", markup=False,
                              soft_wrap=True)
