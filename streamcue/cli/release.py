"""``streamcue release build|push|diff|verify``: versioned dataset releases for maintainers, checked by readers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.schemas.kinds import ordered

#: The record kinds in the order a release's default config is chosen (streamcue/schemas/kinds.py).
_DEFAULT_ORDER = ", ".join(k for k in ordered("default") if k != "video")

__all__ = ["release_app", "release_build", "release_push", "release_diff", "release_verify"]


release_app = typer.Typer(help="Build, publish and compare versioned Hugging Face dataset releases.",
                          no_args_is_help=True)


@release_app.command("build")
def release_build(
    records: Annotated[Path, typer.Option(help="A builder's output folder (videos.jsonl plus "
                                               "guidance/interval_qa/dense_caption .jsonl).")],
    version: Annotated[str, typer.Option(help="The new version, X.Y.Z; it becomes the tag vX.Y.Z when pushed.")],
    out: Annotated[Path, typer.Option(help="Release folder to create (must not exist yet).")],
    title: Annotated[str, typer.Option(help="Dataset title on the card.")] = "streamcue benchmark",
    license: Annotated[str, typer.Option(help="Licence id of the annotations, for the card (Hub licence "
                                              "ids).")] = "apache-2.0",
    repo: Annotated[Optional[str], typer.Option(help="ORG/NAME the release will be pushed to (used in the card's "
                                                     "examples).")] = None,
    previous: Annotated[Optional[Path], typer.Option(help="Folder of the previous release: the changelog lists what "
                                                          "changed and the version must be newer.")] = None,
    allow_unverified: Annotated[bool, typer.Option("--allow-unverified",
                                                   help="Publish unverified records in validation/test; the card "
                                                        "says so.")] = False,
    video_root: Annotated[Optional[Path], typer.Option(help="Where recorded videos live (their uri is relative to "
                                                            "it): each is checked against its anonymization "
                                                            "report and published under videos/.")] = None,
    citation: Annotated[Optional[Path], typer.Option(help="A BibTeX file to put on the card.")] = None,
    only_verified: Annotated[bool, typer.Option("--only-verified",
                                                help="Publish verified records only (every split) and the videos "
                                                     "they refer to; the card states the verified share per "
                                                     "split.")] = False,
    annotation_figures: Annotated[Optional[Path], typer.Option(
        help="The agreement figures annotate pull wrote, for the card; default RECORDS/agreement.json when "
             "present.")] = None,
    default_config: Annotated[Optional[str], typer.Option(help=(
        "The config load_dataset(repo) gives without a name. Default: the --previous version's (it never "
        f"changes silently), or for a first version the first present of {_DEFAULT_ORDER}. Naming another is "
        "stated in the changelog and release diff."))] = None,
    pseudonyms: Annotated[Optional[Path], typer.Option(
        help="Your mapping of annotators and reviewers to the pseudonyms published (annotator-1, reviewer-1, "
             "...), read and extended by each build, never published; default pseudonyms.json beside --out, "
             "so every version built there keeps the same pseudonyms.")] = None,
    key: Annotated[Optional[Path], typer.Option(help=(
        "The maintainer's private signing key file (default $STREAMCUE_SIGNING_KEY): a verified record counts "
        "only when annotate pull's signature holds under it; what is published is signed again with it."))] = None,
    require_anonymization_check: Annotated[bool, typer.Option("--require-anonymization-check", help=(
        "Publish a video only when a person ticked its contact sheet (annotate anonymization push/pull) on its "
        "exact bytes; a missing, rejected, pending or stale check is refused. The card and manifest say so."))
    ] = False,
    anonymization_checks: Annotated[Optional[Path], typer.Option(help=(
        "The checks annotate anonymization pull wrote (with --require-anonymization-check); default "
        "RECORDS/anonymization_checks.json."))] = None,
) -> None:
    """Assemble a Hub-ready release folder: Parquet per config and split, card, changelog, manifest.

    Refuses invalid records, unverified records in the validation/test splits (unless
    --allow-unverified, or left out with --only-verified), a --license that is not a Hub licence id
    or that a source's licence does not allow, recorded videos without a passing anonymization
    report, a local path, an e-mail address or an account name in any published string, and a
    version that is not new. A record marked verified counts as verified only when nothing was
    edited since (its verification.content_sha256 holds), two people checked it, and annotate
    pull's signature holds under the maintainer's key (--key); the card and manifest state how
    many records are verified under which key. Annotators and reviewers are published as
    pseudonyms (annotator-1, reviewer-1) from --pseudonyms.

    Examples:

        streamcue release build --records out/cc4d-v2 --version 1.0.0 --out dist/v1.0.0 --only-verified

        streamcue release build --records out/cc4d --version 1.0.0 --out dist/v1.0.0 --license mit --allow-unverified

        streamcue release build --records out/recorded --video-root /data/recorded --version 1.0.0 \\
            --out dist/v1.0.0 --only-verified --require-anonymization-check
    """
    from streamcue.release.build import ReleaseConfig, build_release

    text = citation.read_text(encoding="utf-8") if citation else None
    manifest = build_release(ReleaseConfig(records=records, version=version, out=out, title=title, license=license,
                                            repo=repo, previous=previous, allow_unverified=allow_unverified,
                                            video_root=video_root, citation=text, only_verified=only_verified,
                                            annotation_figures=annotation_figures, pseudonyms=pseudonyms,
                                            default_config=default_config, key=key,
                                            require_anonymization_check=require_anonymization_check,
                                            anonymization_checks=anonymization_checks))
    rows = {config: {split: info["rows"] for split, info in splits.items()}
            for config, splits in manifest["configs"].items()}
    console.out.print(console.table(f"release {manifest['version']} ({out})", ["train", "validation", "test"], rows,
                                    "config"))
    if manifest["only_verified"]:
        console.out.print("only verified records published; left out as not verified: "
                          + (", ".join(f"{n} {k}" for k, n in manifest["unverified_left_out"].items()) or "none"))
    for config, held in manifest["verification_not_held"].items():
        for rid, why in list(held.items())[:5]:
            console.out.print(f"{config} {rid}: marked verified, counted as unverified: {why}", markup=False)
    unverified = manifest["unverified_in_benchmark"]
    if unverified:
        console.out.print("unverified records published in validation/test (stated on the card): "
                          + ", ".join(f"{n} {k}" for k, n in unverified.items()))
    if manifest.get("anonymization_check"):
        check = manifest["anonymization_check"]
        console.out.print(f"anonymization check required: {check['ticked']} of {check['videos']} published video(s) "
                          "ticked on their contact sheet", soft_wrap=True)
    if manifest["signing"]:
        console.out.print(f"{manifest['signing']['verified']} verified record(s) signed with key "
                          f"{manifest['signing']['key']}")
    console.out.print(f"{len(manifest['files'])} files listed with SHA-256 in {out / 'manifest.json'}")


@release_app.command("push")
def release_push(
    dist: Annotated[Path, typer.Option(help="A folder made by `streamcue release build`.")],
    repo: Annotated[str, typer.Option(help="Dataset repository ORG/NAME.")],
    git_root: Annotated[Optional[Path], typer.Option(help="Push to a local git repository "
                                                          "GIT_ROOT/datasets/ORG/NAME instead of the Hub.")] = None,
    endpoint: Annotated[Optional[str], typer.Option(help="Hub API endpoint (default $HF_ENDPOINT or "
                                                         "https://huggingface.co).")] = None,
    private: Annotated[bool, typer.Option("--private", help="Create the Hub repository as private.")] = False,
) -> None:
    """Publish a release as one commit tagged vX.Y.Z, so load_dataset(..., revision="vX.Y.Z") pins it.

    The token comes from $HF_TOKEN (or `hf auth login`); streamcue never writes it anywhere.

    Examples:

        HF_TOKEN=... streamcue release push --dist dist/v1.0.0 --repo ORG/NAME

        streamcue release push --dist dist/v1.0.0 --repo ORG/NAME --git-root hub-mirror
    """
    from streamcue.release.push import push

    result = push(dist, repo, git_root=git_root, endpoint=endpoint, private=private)
    console.out.print(f"published {result.tag} to {result.target} (commit {result.commit[:12]})")


@release_app.command("diff")
def release_diff(
    old: Annotated[Path, typer.Argument(help="Folder of the older release.")],
    new: Annotated[Path, typer.Argument(help="Folder of the newer release.")],
    show: Annotated[int, typer.Option(help="List at most this many ids per change.")] = 10,
) -> None:
    """What changed between two releases: records added, removed, modified (each changed field
    with its old and new value) and newly verified, per config.

    Records are matched by id within a split; a record that moved split counts as removed
    and added. A line reads `modified: test/1_49: events[3].t_s 12.0 -> 13.5`. A changed default
    config is named first; a record verified in OLD that is not in NEW (edited since, or checked by
    one person) is named with the reason.

    Example:

        streamcue release diff dist/v1.0.0 dist/v1.1.0
    """
    from streamcue.prologue import check_numbers
    from streamcue.release.diff import changelog_lines, default_config, diff, read_release

    check_numbers(("--show", show, 0, None))

    old_manifest, old_records = read_release(old)
    new_manifest, new_records = read_release(new)
    changes = diff(old_records, new_records, new_manifest.get("verification_not_held"))
    console.out.print(console.table(f"{old_manifest['version']} -> {new_manifest['version']}",
                                    ["added", "removed", "modified"],
                                    {k: {"added": len(d.added), "removed": len(d.removed), "modified": len(d.modified)}
                                     for k, d in changes.items()}, "config"))
    for line in changelog_lines(changes, sample=show, defaults=(default_config(old), default_config(new))):
        if line.startswith(("  ", "- default config")):
            console.out.print(line.strip().removeprefix("- ").replace("`", ""), markup=False, soft_wrap=True)


@release_app.command("verify")
def release_verify(
    release: Annotated[str, typer.Argument(help="A release folder, or a Hub dataset ORG/NAME[@vX.Y.Z] (the Hub at "
                                                "$HF_ENDPOINT).")],
    revision: Annotated[Optional[str], typer.Option(help="The Hub revision (a tag such as v1.0.0) when RELEASE has "
                                                         "no @REV.")] = None,
    key: Annotated[Optional[str], typer.Option(help=(
        "The key you trust: its fingerprint (16 hex digits), its public key (ed25519:...) or a .pub file, "
        "from the maintainer's page or an earlier release. Without it, the release's own key is checked "
        "but not pinned."))] = None,
) -> None:
    """Check a downloaded release as a researcher would: every file the manifest lists against its
    SHA-256, each Parquet file's row count, and every verified record's signature against the key
    the release names (and, with --key, that this is the key you trust). Exits non-zero with one
    line naming the file, record and field that failed.

    Examples:

        streamcue release verify dist/v1.0.0

        streamcue release verify ORG/NAME@v1.0.0 --key 0123456789abcdef
    """
    from streamcue.release.verify import verify_release

    result = verify_release(release, revision=revision, trusted=key)
    console.out.print(console.table(f"release {result.version} ({result.source})", ["train", "validation", "test"],
                                    result.rows, "config"))
    signed = (f"{result.verified} verified record(s), every signature holds under key {result.key}"
              if result.key else "no verified record (nothing signed)")
    console.out.print(f"{result.files} files match manifest.json; {signed}", markup=False)
