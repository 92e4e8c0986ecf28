"""``streamcue annotate push|pull|review|status``: human verification in Label Studio (``annotate anonymization
push|pull``: the contact-sheet check, in :mod:`streamcue.cli.annotate_anonymization`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.cli.annotate_anonymization import anonymization_app

__all__ = ["annotate_app", "URL_HELP", "KEY_HELP", "annotate_setup", "annotate_push", "annotate_pull",
           "annotate_review", "annotate_status", "annotate_keygen"]


annotate_app = typer.Typer(help="Send records to Label Studio for human verification and bring the work back.",
                           no_args_is_help=True)
annotate_app.add_typer(anonymization_app, name="anonymization")
URL_HELP = "Label Studio URL (or $LABEL_STUDIO_URL). The token is read from $LABEL_STUDIO_API_KEY only."
KEY_HELP = ("The maintainer's private signing key file (streamcue annotate keygen; default $STREAMCUE_SIGNING_KEY), "
            "kept outside every build and release folder.")


@annotate_app.command("push")
def annotate_push(
    kind: Annotated[str, typer.Option(help="Record kind: interval_qa, dense_caption or guidance.")],
    records: Annotated[Path, typer.Option(help="JSONL file of records (a videos.jsonl beside it gives each video's "
                                               "uri and fps).")],
    project: Annotated[str, typer.Option(help="Project title; created with the kind's labeling config when missing, "
                                              "reused otherwise.")],
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    videos: Annotated[Optional[Path], typer.Option(help="videos.jsonl, when it is not beside the records.")] = None,
    video_root: Annotated[Optional[Path], typer.Option("--video-root", help=(
        "Folder the video uris are relative to; served to the "
                                                             "browser through Label Studio's local files (a "
        "subfolder of its document root)."))] = None,
    document_root: Annotated[Optional[Path], typer.Option(help="The server's LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT "
                                                               "(default: the same variable here).")] = None,
    required: Annotated[Optional[int], typer.Option(
        help="Annotators each task goes to (Label Studio's overlap); default: the project's, 2 for a new one. "
             "Refused when it would change a project someone has annotated in.")] = None,
    order: Annotated[bool, typer.Option("--order", help=(
        "Import the records most likely wrong first (evidence verdict, then the generator's confidence), "
        "so annotators review them first."))] = False,
    ids: Annotated[Optional[list[str]], typer.Option("--ids", help=(
        "Push only these records (their ids, comma-separated or the option repeated)."))] = None,
    split: Annotated[Optional[str], typer.Option(help="Push only records of this split (train, validation, test; "
                                                      "from videos.jsonl).")] = None,
    sample: Annotated[Optional[int], typer.Option(help=(
        "Push a uniform random sample of this many records (after --ids/--split), for a spot check; each task "
        "records the sample (seed, size, population, split) and pull reports it."))] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample's draw (stated with the sample).")] = 0,
    limit: Annotated[Optional[int], typer.Option(help="Push at most this many records (the first ones, after "
                                                      "--order).")] = None,
) -> None:
    """Import one task per chosen record, its current content as the annotator's starting point.

    Records already in the project (same id) are skipped, so pushing again is safe. The
    project shows the kind's guideline (annotation/configs/KIND.guideline.vN.md) before
    annotating; a project keeps the guideline version it was annotated under, and the number
    of annotators per task once anyone has annotated.

    Examples:

        LABEL_STUDIO_API_KEY=... streamcue annotate push --kind interval_qa --records out/ego4d/interval_qa.jsonl \\
            --project "ego4d val QA" --url http://127.0.0.1:8080 --video-root /data/files/ego4d --order

        streamcue annotate push --kind guidance --records out/cc4d/guidance.jsonl --project "cc4d check" \\
            --ids 1_7,1_10,2_3

        streamcue annotate push --kind guidance --records out/cc4d/guidance.jsonl --project "cc4d spot check" \\
            --split validation --sample 20 --seed 7
    """
    from streamcue.annotation.roundtrip import Selection, push

    chosen = tuple(i.strip() for value in ids or [] for i in value.split(",") if i.strip())
    result = push(kind, records, project, url=url, videos=videos, videos_root=video_root, document_root=document_root,
                  order=order, checks=required, selection=Selection(chosen, split, sample, seed, limit))
    console.out.print(f"{result.imported} tasks imported into project {result.project!r} (id {result.project_id})"
                      f"{', most likely wrong first' if order else ''}; {result.skipped} already there; "
                      f"guideline {result.guideline}; {result.required} annotator(s) per task")
    if result.required_before is not None:
        console.out.print(f"the project handed each task to {result.required_before} annotator(s); now "
                          f"{result.required} (nobody had annotated yet)")
    if result.sample:
        s = result.sample
        console.out.print(f"sample: {s['sample_size']} of {s['sample_population']} records ({s['sample_split']}), "
                          f"seed {s['sample_seed']}; recorded in each task's data")


@annotate_app.command("pull")
def annotate_pull(
    project: Annotated[str, typer.Option(help="Project title.")],
    out: Annotated[Path, typer.Option(help=(
        "JSONL file for the records; with --build, the new build folder (must not exist yet). Written "
        "atomically, all or nothing."))],
    build: Annotated[Optional[Path], typer.Option(help=(
        "A builder's output folder: write a copy of it to --out with the pulled records in place of its own "
        "(videos.jsonl and every other record carried as they are; build_report.json says what was merged)."))
    ] = None,
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    required: Annotated[Optional[int], typer.Option(help="Annotators who must agree before a record is verified "
                                                         "(default: the project's number per task).")] = None,
    tolerance: Annotated[float, typer.Option(help="Seconds two annotators' boundaries may differ and still "
                                                  "agree (finite, 0 or more).")] = 1.0,
    majority: Annotated[bool, typer.Option("--majority", help=(
        "Decide a disagreement by majority: more than half of the annotators agreeing (needs --required 3 or "
        "more); the record says decided_by: majority."))] = False,
    reviewer: Annotated[Optional[list[str]], typer.Option("--reviewer", help=(
        "Email of a reviewer (repeatable): their annotation of a task decides it (decided_by: reviewer)."))] = None,
    changes: Annotated[Optional[Path], typer.Option(help="Also write what changed per record as JSON here.")] = None,
    videos: Annotated[Optional[Path], typer.Option(help=(
        "videos.jsonl to check the pulled times against, as streamcue validate does (default: the build's, or "
        "the one beside OUT, if any)."))] = None,
    key: Annotated[Optional[Path], typer.Option(help=KEY_HELP)] = None,
) -> None:
    """Bring the annotators' work back as records of the same schema, verification filled in.

    Every verified or rejected record is signed with the maintainer's key (--key or
    $STREAMCUE_SIGNING_KEY; streamcue annotate keygen makes one), its verification naming the
    Label Studio task and annotations that decided it: release build and every reader count a
    record as verified only while that signature holds.

    A record becomes verified (or rejected) only when REQUIRED distinct annotators agree (one
    person submitting twice is one check); a disagreement, named by item and field, leaves it
    unverified with a note until a reviewer decides it in Label Studio (--reviewer) or a majority
    does (--majority). An annotation that would make the record invalid (a success relabelled as
    a mistake has no mistake category) is reported for that record only. Skipped annotations are
    ignored; a record nobody touched comes back identical. What is written is validated as
    `streamcue validate` validates it (times within the video's length: --videos, the build's
    videos.jsonl, or the one beside OUT). The agreement between annotators and
    any spot-check sample are written beside the records (agreement.json, samples.json in a
    build folder; OUT_STEM.agreement.json, OUT_STEM.samples.json beside a file).

    Examples:

        streamcue annotate pull --project "ego4d val QA" --out verified/interval_qa.jsonl

        streamcue annotate pull --project "cc4d check" --build out/cc4d --out out/cc4d-v2 --reviewer rev@example.org
    """
    from streamcue.annotation.merge import merge_into_build, side_files
    from streamcue.annotation.roundtrip import check_tolerance, pull
    from streamcue.io import write_json
    from streamcue.annotation.signing import key_files
    from streamcue.prologue import check_io

    check_tolerance(tolerance)
    agreement_file, samples_file = side_files(out, build is not None)
    outputs = [(out, "--out"), *([(changes, "--changes")] if changes else [])]
    if build is None:
        outputs += [(agreement_file, "agreement"), (samples_file, "samples")]
    check_io(outputs, [*(p for p in (build, videos) if p is not None), *key_files(key)])
    if build is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        from streamcue.errors import ConfigError

        raise ConfigError(f"--out {out} already exists: a pull into the build writes a new folder")
    reviewers = tuple(reviewer or ())
    result = pull(project, None if build is not None else out, url=url, required=required, tolerance_s=tolerance,
                  majority=majority, reviewers=reviewers,
                  videos=videos or (build / "videos.jsonl" if build is not None else None), key=key)
    if build is not None:
        entry = merge_into_build(build, out, result, project=project, rule={
            "required": result.required, "tolerance_s": tolerance, "majority": majority, "reviewers": list(reviewers)})
        where = f"{out} ({len(entry['replaced'])} records replaced, every other file carried from {build})"
    else:
        write_json(agreement_file, {result.kind: result.agreement})
        write_json(samples_file, {result.kind: result.samples})
        where = str(out)
    # soft_wrap: the title and each line whole, piped or not (not wrapped to the table's or 80 columns' width)
    console.out.print(console.table(f"{result.records} records -> {where}", ["records"],
                                    {state: {"records": n} for state, n in sorted(result.states.items())}, "state"),
                      soft_wrap=True)
    if result.decided_by:
        console.out.print("decided by " + ", ".join(f"{how}: {n}" for how, n in sorted(result.decided_by.items())),
                          soft_wrap=True)
    for rid, what in list(result.changes.items())[:20]:
        console.out.print(f"{rid}: {'; '.join(what)}", markup=False, soft_wrap=True)
    for rid, why in result.disagreements.items():
        console.out.print(f"{rid}: annotators disagree: {why}", markup=False, soft_wrap=True)
    for rid, why in result.invalid.items():
        console.err.print(f"warning: Label Studio project {project!r}, record {rid}: the annotation makes the record "
                          f"invalid ({why}); kept as pushed, unverified", markup=False)
    for sample in result.samples:
        console.out.print(sample["statement"], markup=False, soft_wrap=True)
    if changes:
        write_json(changes, {"changes": result.changes, "disagreements": result.disagreements,
                             "invalid": result.invalid, "states": dict(result.states)})


@annotate_app.command("keygen")
def annotate_keygen(
    out: Annotated[Path, typer.Option(help="File for the new private key (PEM, readable by you only; never "
                                           "overwritten). Its public part goes to OUT.pub.")],
) -> None:
    """Make the maintainer's signing key: annotate pull signs what it verified with it, release build
    checks and signs with it, and a release names its public part (fingerprint) on the card.

    Keep the private key outside every build and release folder, and point --key or
    $STREAMCUE_SIGNING_KEY at it.

    Example:

        streamcue annotate keygen --out keys/streamcue-signing.pem
    """
    from streamcue.annotation.signing import generate

    key = generate(out)
    console.out.print(f"signing key {key.fingerprint}: private {out}, public {out}.pub ({key.public_text})",
                      markup=False)


@annotate_app.command("review")
def annotate_review(
    project: Annotated[str, typer.Option(help="Project title.")],
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    tolerance: Annotated[float, typer.Option(help="Seconds two annotators' boundaries may differ and still "
                                                  "agree (as for pull).")] = 1.0,
    reviewer: Annotated[Optional[list[str]], typer.Option("--reviewer", help=(
        "Email of a reviewer (repeatable): tasks they already annotated are left alone."))] = None,
) -> None:
    """Give each disputed task the reviewer's starting point: a prediction (tab streamcue-review)
    holding the annotators' regions, each region they disagree on marked in the region's meta
    ("\u26a0 disputed: ...", never in its text: pull refuses an answer whose text carries the
    mark, naming the task and region), and the number of differences in the task's data (Data
    Manager column review_disagreements). Run it again after more annotations: it replaces its
    earlier prediction.

    Example:

        streamcue annotate review --project "cc4d check" --reviewer rev@example.org
    """
    from streamcue.annotation.review import review

    result = review(project, url=url, tolerance_s=tolerance, reviewers=tuple(reviewer or ()))
    console.out.print(f"{len(result.tasks)} disputed task(s) in project {project!r} now start from the annotators' "
                      f"regions ({sum(result.tasks.values())} difference(s) marked)")
    for rid, note in result.notes.items():
        console.out.print(f"{rid}: {note}", markup=False)


@annotate_app.command("status")
def annotate_status(
    project: Annotated[str, typer.Option(help="Project title.")],
    url: Annotated[Optional[str], typer.Option(help=URL_HELP)] = None,
    required: Annotated[Optional[int], typer.Option(help="Annotators who must agree before a record is verified "
                                                         "(default: the project's number per task).")] = None,
    tolerance: Annotated[float, typer.Option(help="Seconds two annotators' boundaries may differ and still "
                                                  "agree.")] = 1.0,
    majority: Annotated[bool, typer.Option("--majority", help="As for pull.")] = False,
    reviewer: Annotated[Optional[list[str]], typer.Option("--reviewer", help="As for pull.")] = None,
) -> None:
    """Per task: annotators so far, agreement, and how many checks are still missing; then the
    throughput per annotator (tasks done, skipped, median and total time per task from Label
    Studio's lead times).

    Example:

        streamcue annotate status --project "ego4d val QA"
    """
    from collections import Counter

    from streamcue.annotation.roundtrip import check_tolerance, status_report

    check_tolerance(tolerance)
    rows, people = status_report(project, url=url, required=required, tolerance_s=tolerance, majority=majority,
                                 reviewers=tuple(reviewer or ()))
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


@annotate_app.command("setup")
def annotate_setup(
    admin: Annotated[str, typer.Option(help="The admin's email (label-studio start --username); the password is "
                                            "read from $LABEL_STUDIO_PASSWORD only.")],
    accounts: Annotated[Path, typer.Option(help="File for the new accounts' first passwords (email, role, password; "
                                                "readable by you only).")],
    url: Annotated[Optional[str], typer.Option(help="Label Studio URL (or $LABEL_STUDIO_URL).")] = None,
    annotator: Annotated[Optional[list[str]], typer.Option("--annotator", help="Email of an annotator (repeatable).")
                         ] = None,
    reviewer: Annotated[Optional[list[str]], typer.Option("--reviewer", help=(
        "Email of a reviewer (repeatable): an account like the others; name it to pull --reviewer."))] = None,
) -> None:
    """Make a personal access token for the admin and an account per annotator and reviewer.

    Prints `export LABEL_STUDIO_URL=...` and `export LABEL_STUDIO_API_KEY=...` on stdout, and on
    failure nothing there (keep them, then eval them only if there are some, as the example does:
    `eval "$(...)"` alone runs an empty string and carries on), everything else on stderr. Accounts
    are signed up through the organisation's invite link with a generated first password,
    written to --accounts; accounts that exist already are left as they are. Run again, it
    keeps the token in $LABEL_STUDIO_API_KEY when that still works (Label Studio shows a
    token once and keeps one per user: without it, revoke the old one in the page first).

    Example:

        LS_ENV=$(LABEL_STUDIO_PASSWORD=... streamcue annotate setup --url http://127.0.0.1:8080 \\
            --admin admin@example.org --annotator ann1@example.org --annotator ann2@example.org \\
            --reviewer rev@example.org --accounts ls-accounts.tsv)
        eval "${LS_ENV:?streamcue annotate setup failed: its error is above}"
    """
    import os
    import shlex

    from streamcue.annotation.client import server_url
    from streamcue.annotation.setup import check_accounts_file, setup, write_accounts
    from streamcue.errors import ConfigError

    url = server_url(url)
    password = os.environ.get("LABEL_STUDIO_PASSWORD")
    if not password:
        raise ConfigError("no admin password: set LABEL_STUDIO_PASSWORD (never an option)")
    check_accounts_file(accounts)
    result = setup(url, admin, password, list(annotator or ()), list(reviewer or ()),
                   os.environ.get("LABEL_STUDIO_API_KEY"))
    write_accounts(accounts, result.accounts)
    for account in result.accounts:
        made = "created" if account.password else "exists already"
        console.err.print(f"{account.role} {account.email}: {made}", markup=False)
    console.err.print(f"first passwords of new accounts: {accounts}; invite link for others: {result.invite_url}",
                      markup=False)
    print(f"export LABEL_STUDIO_URL={shlex.quote(url)}")
    print(f"export LABEL_STUDIO_API_KEY={shlex.quote(result.token)}")
