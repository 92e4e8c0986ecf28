"""``streamcue release build``: a Hub-ready dataset folder from a builder's validated records.

The folder holds one Parquet file per config and split (nested features derived from the
schemas), a README.md dataset card whose YAML declares the configs, figures, CHANGELOG.md and
manifest.json (row counts, schema version and the SHA-256 of every file). It is assembled in a
temporary folder and renamed into place, so a failed build leaves nothing behind.
"""

from __future__ import annotations

import os
import re
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.anonymize.report import sha256_file
from streamcue.bulk import gc_paused
from streamcue.errors import ConfigError, InputError, check_every
from streamcue.extras import require
from streamcue.io import atomic_write, write_json
from streamcue.paths import check_outputs
from streamcue.progress import track
from streamcue.release import card
from streamcue.release.croissant import write_croissant
from streamcue.release.diff import changelog_lines, default_config, diff, keyed, read_release
from streamcue.schemas.features import Layout, encode, typed
from streamcue.release.gates import (VIDEOS_DIR, AnonymizationChecks, PublishedVideo, ReleaseInput,
                                     check_published_reports, check_published_video, collect, published_report,
                                     scan_published)
from streamcue.release.manifest import MANIFEST, check_repo_id
from streamcue.release.notice import NOTICE_FILE, notice
from streamcue.schemas import SCHEMA_VERSION
from streamcue.staging import staged_folder
from streamcue.version import __version__

__all__ = ["ReleaseConfig", "parse_version", "build_release"]


_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


@dataclass(frozen=True)
class ReleaseConfig:
    records: Path
    version: str
    out: Path
    title: str = "streamcue benchmark"
    license: str = "apache-2.0"
    repo: str | None = None
    previous: Path | None = None
    allow_unverified: bool = False
    video_root: Path | None = None
    citation: str | None = None
    #: Keep verified records only (every split) and the videos they refer to; the card states the share.
    only_verified: bool = False
    #: The agreement figures for the card; default ``RECORDS/agreement.json`` when present (written by
    #: ``streamcue annotate pull``).
    annotation_figures: Path | None = None
    #: The maintainer's pseudonyms file (never published); default ``pseudonyms.json`` beside ``out``.
    pseudonyms: Path | None = None
    #: The default config (a config name); None: the previous version's, or for a first version the first
    #: present of ``card.DEFAULT_ORDER`` (see :func:`card.choose_default`).
    default_config: str | None = None
    #: The maintainer's signing key file (None: the one ``$STREAMCUE_SIGNING_KEY`` names, if any): verified records
    #: count as verified only when their signature holds under it, and are published signed again with it.
    key: Path | None = None
    #: Publish a video only with a ticked contact-sheet check of its exact bytes (``annotate anonymization pull``);
    #: the card and manifest say the check was required and how many were ticked.
    require_anonymization_check: bool = False
    #: The checks file; default ``RECORDS/anonymization_checks.json`` (read only with the check required).
    anonymization_checks: Path | None = None


def parse_version(text: str) -> tuple[int, int, int]:
    """``"1.2.3"`` -> ``(1, 2, 3)``; a leading ``v`` is accepted."""
    match = _VERSION.match(text.removeprefix("v"))
    if not match:
        raise ConfigError(f"version {text!r} is not X.Y.Z (semantic versioning, e.g. 1.0.0)")
    return tuple(int(g) for g in match.groups())  # type: ignore[return-value]


def _write_parquet(records: list[dict[str, Any]], kind: str, path: Path, shape: Layout, arrow: Any) -> None:
    datasets = require("datasets", "release")
    datasets.disable_progress_bars()
    table = datasets.Dataset.from_list([encode(r, kind, shape) for r in records], features=arrow)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(str(path))


def build_release(opts: ReleaseConfig) -> dict[str, Any]:
    """Apply the gates, then write the release folder; returns its manifest."""
    version = parse_version(opts.version)
    if opts.repo is not None:
        check_repo_id(opts.repo)
    out = Path(opts.out)
    # pairs, not a mapping: ``--pseudonyms d --out d`` made one key of the two, and the mapping was written as d
    check_outputs([(out, "--out"), (_pseudonyms(opts), "--pseudonyms")],
                  [p for p in (opts.records, opts.previous, opts.video_root, opts.annotation_figures,
                               opts.anonymization_checks) if p is not None],
                  inside_inputs=True)
    if out.resolve() in _pseudonyms(opts).resolve().parents:
        raise ConfigError(f"--pseudonyms {_pseudonyms(opts)} is inside the release folder: the mapping is never "
                          "published; keep it beside the release folders")
    if opts.anonymization_checks is not None and not opts.require_anonymization_check:
        raise ConfigError("--anonymization-checks is read only with --require-anonymization-check")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} already exists: a built version is never overwritten; choose a new --out")
    old_manifest, old_records = (None, None)
    if opts.previous is not None:
        old_manifest, old_records = read_release(opts.previous)
        if parse_version(old_manifest["version"]) >= version:
            raise ConfigError(f"version {opts.version} is not newer than the previous release "
                              f"{old_manifest['version']} ({opts.previous})")
    with gc_paused():
        return _build(opts, version, out, old_manifest, old_records)


def _build(opts: ReleaseConfig, version: tuple[int, int, int], out: Path, old_manifest: dict[str, Any] | None,
           old_records: Any) -> dict[str, Any]:
    from streamcue.annotation.signing import load_key

    key = load_key(opts.key, required=False)
    data = collect(opts.records, allow_unverified=opts.allow_unverified, only_verified=opts.only_verified,
                   video_root=opts.video_root, licence=opts.license, pseudonyms=_pseudonyms(opts),
                   annotation_figures=opts.annotation_figures, key=key, anonymization_checks=_checks(opts))
    check_published_reports([rec for recs in data.records["video"].values() for rec in recs])

    out.parent.mkdir(parents=True, exist_ok=True)
    with staged_folder(out, suffix=".tmp") as tmp:
        files: dict[str, dict[str, str]] = {}
        rows: dict[str, dict[str, int]] = {}
        layouts: dict[str, Layout] = {}
        examples: dict[str, dict[str, Any]] = {}
        for kind, splits in track(list(data.records.items()), "writing Parquet"):
            every = [rec for records in splits.values() for rec in records]
            if not every:
                continue
            node, layouts[kind] = typed(kind, every)
            arrow = require("datasets", "release").Features(node.feature())
            files[kind], rows[kind] = {}, {}
            examples[kind] = every[0]
            for split, records in splits.items():
                if records:
                    written = tmp / card.data_path(kind, split)
                    _write_parquet(records, kind, written, layouts[kind], arrow)
                    files[kind][split] = card.data_path(kind, split, sha256_file(written))
                    written.rename(tmp / files[kind][split])
                    rows[kind][split] = len(records)
        digests, video_files = _publish_videos(data, tmp)
        default = card.choose_default([k for k, f in files.items() if f],
                                      default_config(opts.previous) if opts.previous else None, opts.default_config)
        stats = card.statistics(data.records)
        figures = card.write_figures(stats, tmp / "figures")
        meta = {
            "title": opts.title, "version": ".".join(map(str, version)), "license": opts.license,
            "repo": opts.repo, "schema_version": SCHEMA_VERSION, "streamcue_version": __version__,
            "json_fields": {k: list(v.json) for k, v in layouts.items()}, "citation": opts.citation,
            "unverified_in_benchmark": dict(data.unverified_in_benchmark),
            "rejected_left_out": dict(data.rejected_left_out),
            "unverified_left_out": dict(data.unverified_left_out),
            "only_verified": opts.only_verified, "verified": data.verified,
            "annotation": data.annotation, "examples": examples, "not_held": data.not_held, "default": default,
            "video_files": video_files,
            "total_rows": sum(n for r in rows.values() for n in r.values()),
            "signing": _signing(data, key), "anonymization_check": data.anonymization_check,
        }
        (tmp / "README.md").write_text(card.card_header(meta, files, data.records) + "\n"
                                       + card.card_body(meta, rows, stats, figures, data.records),
                                       encoding="utf-8")
        videos = [rec for recs in data.records["video"].values() for rec in recs]
        (tmp / NOTICE_FILE).write_text(notice(opts.title, opts.license, videos), encoding="utf-8")
        write_croissant(tmp, meta, {**{card.CONFIG_NAMES[k]: f for k, f in files.items()},
                                    **({card.VIDEO_FILES: meta["video_files"]} if meta["video_files"] else {})},
                        videos)
        _write_changelog(tmp, meta["version"], opts.previous, old_manifest,
                         diff(old_records, keyed(data.records), data.not_held) if old_records is not None else None,
                         card.CONFIG_NAMES[default])
        manifest = {
            "format": "streamcue.release/1", "title": opts.title, "version": meta["version"],
            "schema_version": SCHEMA_VERSION, "streamcue_version": __version__, "license": opts.license,
            "previous_version": old_manifest["version"] if old_manifest else None,
            "default_config": card.CONFIG_NAMES[default],
            "allow_unverified": opts.allow_unverified, "only_verified": opts.only_verified,
            "unverified_in_benchmark": meta["unverified_in_benchmark"],
            "rejected_left_out": meta["rejected_left_out"],
            "unverified_left_out": meta["unverified_left_out"], "verification_not_held": data.not_held,
            "verified": {card.CONFIG_NAMES[k]: {sp: {"verified": v, "records": n} for sp, (v, n) in by.items() if n}
                         for k, by in data.verified.items()},
            "configs": {card.CONFIG_NAMES[k]: {s: {"path": p, "rows": rows[k][s]} for s, p in f.items()}
                        for k, f in files.items()},
            "layout": {card.CONFIG_NAMES[k]: v.to_dict() for k, v in layouts.items()},
            "video_files": meta["video_files"],
            "signing": meta["signing"],
            **({"anonymization_check": data.anonymization_check} if data.anonymization_check else {}),
            "files": {rel: digests.get(rel) or sha256_file(p)
                      for p in sorted(tmp.rglob("*")) if p.is_file() and (rel := p.relative_to(tmp).as_posix())},
        }
        write_json(tmp / MANIFEST, manifest)
        scan_published(tmp, data.people)
        data.names.save()  # the last step before the release takes its name: a refused build leaves the file alone
    return manifest


def _signing(data: ReleaseInput, key: Any) -> dict[str, Any] | None:
    """What the release states about its signatures: the key (fingerprint and public part) every published
    verified record is signed with, how many are, and which (``config/split/id``), that list signed with the key
    too (:func:`verified_statement`), so that a record made unverified after the build is seen; None when it
    publishes no verified record."""
    from streamcue.annotation.signing import canonical

    records = verified_ids(keyed({kind: splits for kind, splits in data.records.items() if kind != "video"}))
    if not records:
        return None
    signing = {"algorithm": "ed25519", "key": key.fingerprint, "public_key": key.public_text,
               "verified": len(records), "records": records}
    return {**signing, "statement": key.sign_bytes(canonical(signing))}


def verified_ids(records: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """``config/split/id`` of every verified record of ``records`` (keyed as :func:`keyed` keys them), sorted."""
    return sorted(f"{config}/{rid}" for config, recs in records.items() for rid, rec in recs.items()
                  if (rec.get("verification") or {}).get("status") == "verified")


def _checks(opts: ReleaseConfig) -> AnonymizationChecks | None:
    from streamcue.annotation.anonymization_check import CHECKS_FILE

    if not opts.require_anonymization_check:
        return None
    given = opts.anonymization_checks is not None
    return AnonymizationChecks(opts.anonymization_checks if given else Path(opts.records) / CHECKS_FILE, given)


def _pseudonyms(opts: ReleaseConfig) -> Path:
    from streamcue.annotation.pseudonyms import PSEUDONYMS_FILE

    return opts.pseudonyms or Path(opts.out).parent / PSEUDONYMS_FILE


def _publish_videos(data: ReleaseInput, folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Copy each video to publish to ``videos/<uri>`` and its report beside it, check each copy against its
    report (the SHA-256 of exactly the published bytes), and write the ``video_files`` config from the checked
    copies (:func:`_write_video_files`). Returns release path -> SHA-256 of each video and Parquet file, and the
    ``video_files`` paths.

    Copying and hashing release the GIL: two videos are copied and checked at a time while the Parquet file
    takes each checked copy, in record order. A refused copy stops the Parquet file, not the copies: every video is
    checked, and every refused one named, before the build is refused (:func:`~streamcue.errors.check_every`; the
    staged folder goes with it)."""
    order = [data.published[v["video_id"]] for videos in data.records["video"].values() for v in videos
             if v["video_id"] in data.published]
    listed = {v.video_id for v in order}
    order += [v for v in data.published.values() if v.video_id not in listed]
    sheets = _contact_sheets(order)
    pool = ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1))
    try:
        checked = {v.video_id: pool.submit(_publish_video, v, folder, sheets.get(v.video_id)) for v in order}
        written, digests = _write_video_files(data, checked, folder)
        copies = check_every(order, lambda v: checked[v.video_id].result())
        digests.update({f"{VIDEOS_DIR}/{v.uri}": digest for v, digest in zip(order, copies)})
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return digests, written


def _contact_sheets(videos: list[PublishedVideo]) -> dict[str, tuple[Path, str]]:
    """Video id -> the contact sheet its report names and where the release publishes it
    (:meth:`PublishedVideo.contact_sheet`), before anything is copied; one line naming the report when two reports
    name the same published sheet (one would replace the other). Every video is looked at before any is refused."""
    taken: dict[str, str] = {}

    def sheet_of(video: PublishedVideo) -> tuple[str, tuple[Path, str]] | None:
        sheet = video.contact_sheet()
        if sheet is None:
            return None
        if sheet[2] in taken:
            raise InputError(f"its contact sheet would be published as {sheet[2]}, as video_id={taken[sheet[2]]}'s: "
                             "give each video its own sheet (anonymize them under distinct names)", file=video.report,
                             record=f"video_id={video.video_id}", field="$.contact_sheet.path")
        taken[sheet[2]] = video.video_id
        return video.video_id, (sheet[0], sheet[2])

    return dict(found for found in check_every(videos, sheet_of) if found is not None)


def _publish_video(video: PublishedVideo, folder: Path, sheet: tuple[Path, str] | None) -> str:
    """Copy one video, its report and the contact sheet the report names (``sheet``: a person's evidence, blurred
    frames only) into the release, check the copy; returns its SHA-256."""
    copy = folder / VIDEOS_DIR / video.uri
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(video.file, copy)
    digest = check_published_video(video, copy)
    shutil.copyfile(video.report, folder / published_report(video.uri))
    if sheet is not None:
        shutil.copyfile(sheet[0], folder / sheet[1])
    return digest


def _write_video_files(data: ReleaseInput, checked: dict[str, Future], folder: Path
                       ) -> tuple[dict[str, str], dict[str, str]]:
    """The ``video_files`` config, the Hub's video-dataset form: per split, a Parquet file of ``video_id``,
    ``uri`` and a ``datasets.Video`` column holding the published bytes (all configs of a Hub dataset share one
    builder, Parquet here, and a Parquet path is not resolved against the repository: the bytes are embedded,
    uncompressed, so that chunk-deduplicating storage such as the Hub's keeps them once), each video's bytes
    read from its release copy once ``checked`` (video id -> the copy's check) passed. Returns split -> file,
    and file -> SHA-256."""
    datasets = require("datasets", "release")
    pa = require("pyarrow", "release")
    pq = require("pyarrow.parquet", "release", "pyarrow")
    schema = datasets.Features({"video_id": datasets.Value("string"), "uri": datasets.Value("string"),
                                "video": datasets.Video()}).arrow_schema
    written, digests = {}, {}
    for split, videos in data.records["video"].items():
        published = [v for v in videos if v["video_id"] in checked]
        if not published:
            continue
        path = folder / card.video_files_path(split)
        path.parent.mkdir(parents=True, exist_ok=True)
        # one row group (and one data page) per video, written from a memory map: one video in memory at a time
        with pq.ParquetWriter(path, schema, compression="none", use_dictionary=False, write_statistics=False,
                              data_page_size=1 << 31) as writer:
            for v in track(published, "publishing videos"):
                if checked[v["video_id"]].exception() is not None:
                    return {}, {}  # a copy refused: the caller names every refused one, and nothing is published
                data_bytes = pa.memory_map(str(folder / VIDEOS_DIR / v["uri"])).read_buffer()
                if data_bytes.size >= 1 << 31:
                    raise InputError("a video of 2 GiB or more does not fit the Hub's video feature (cut it into "
                                     "parts)", file=data.published[v["video_id"]].file)
                writer.write_table(pa.Table.from_pydict({
                    "video_id": [v["video_id"]], "uri": [v["uri"]],
                    "video": pa.StructArray.from_arrays([_binary(pa, data_bytes), pa.array([v["uri"]])],
                                                        names=["bytes", "path"])}, schema=schema))
        digest = sha256_file(path)
        written[split] = card.video_files_path(split, digest)
        digests[written[split]] = digest  # the manifest's, without reading the file again
        path.rename(folder / written[split])
    return written, digests


def _binary(pa: Any, data: Any) -> Any:
    """A one-value binary array over ``data`` (a pyarrow buffer), without copying it."""
    offsets = pa.array([0, data.size], pa.int32()).buffers()[1]
    return pa.BinaryArray.from_buffers(pa.binary(), 1, [None, offsets, data])


def _write_changelog(folder: Path, version: str, previous: Path | None, old_manifest: dict[str, Any] | None,
                     changes: Any, default: str) -> None:
    lines = [f"## v{version}", ""]
    if changes is None:
        lines.append("- First release.")
    else:
        lines.append(f"Changes since v{old_manifest['version']}:")
        lines += changelog_lines(changes, defaults=(default_config(previous), default))
    older = ""
    if previous is not None and (previous / "CHANGELOG.md").is_file():
        older = (previous / "CHANGELOG.md").read_text(encoding="utf-8").removeprefix("# Changelog\n").lstrip()
    with atomic_write(folder / "CHANGELOG.md") as fh:
        fh.write("# Changelog\n\n" + "\n".join(lines) + "\n\n" + older)

