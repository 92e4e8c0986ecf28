"""What a release must check: validity, licences, verification, anonymization, and no local path in what it publishes.

Each gate refuses with one message naming the file, record and field, and says how to proceed.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from streamcue.annotation.signing import SigningKey
from streamcue.anonymize.report import report_problem, sha256_file, sheet_beside
from streamcue.dataset_builders.output import FILE_NAMES
from streamcue.errors import ConfigError, InputError, RecordValidationError, check_every
from streamcue.io import iter_jsonl, read_json
from streamcue.paths import resolve_uri
from streamcue.redact import key_shaped
from streamcue.registry import BENCHMARKS, SOURCES, Source
from streamcue.schemas.features import RELEASE_KINDS
from streamcue.schemas import ID_FIELDS, check_file
from streamcue.schemas.taxonomy import SPLITS

__all__ = ["BENCHMARK_SPLITS", "ReleaseInput", "collect", "licence_problem", "PERMISSIVE", "ABSOLUTE_PATH",
           "absolute_path_in", "PERSONAL", "personal_data_in", "scan_published", "HUB_LICENCES",
           "check_licence_id", "check_published_reports", "VIDEOS_DIR", "PublishedVideo", "publishes_videos",
           "published_report", "check_published_video", "VIDEO_SUFFIXES", "licence_conflict", "video_licence_id",
           "video_licence_problem", "OWN_VIDEOS", "check_benchmarks", "AnonymizationChecks",
           "require_anonymization_checks"]


#: Splits that are benchmarks: their records must be human-verified before release.
BENCHMARK_SPLITS = ("validation", "test")


@dataclass(frozen=True)
class PublishedVideo:
    """A video a release publishes: where it is, its report, and where its record says it is (for messages)."""

    video_id: str
    uri: str
    file: Path
    report: Path
    records: Path
    line: int

    def where(self) -> dict[str, Any]:
        return dict(file=self.records, line=self.line, record=f"video_id={self.video_id}")

    def contact_sheet(self) -> tuple[Path, str, str] | None:
        """The contact sheet the report names (beside it), its SHA-256 and where the release publishes it (beside the
        published report, under the name the report states, so the reference holds); None for a report made before
        sheets were drawn, or a report missing or unreadable (:func:`check_published_video` says why). One line naming
        the report and field when the sheet is missing, or is not the sheet the report states (replaced since the
        anonymizer drew it)."""
        try:
            report = read_json(self.report) if self.report.is_file() else None
        except InputError:
            return None
        stated = report.get("contact_sheet") if isinstance(report, dict) else None
        if not isinstance(stated, dict):
            return None
        sheet, digest = sheet_beside(self.report, stated, record=f"video_id={self.video_id}")
        return sheet, digest, published_report(self.uri).rpartition("/")[0] + "/" + sheet.name


@dataclass
class ReleaseInput:
    """Validated records, by kind and split, and what the gates let through."""

    records: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    unverified_in_benchmark: Counter = field(default_factory=Counter)
    rejected_left_out: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)
    #: kind -> split -> [verified, records in the build] (rejected ones included in the count).
    verified: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: video id -> the video file and report that the release publishes under ``videos/`` (sources whose
    #: registry row allows publishing their videos; checked against the copy by :func:`check_published_video`).
    published: dict[str, PublishedVideo] = field(default_factory=dict)
    #: Records left out by ``only_verified`` (unverified ones, any split), per kind.
    unverified_left_out: Counter = field(default_factory=Counter)
    #: kind -> record id -> why its ``verified`` status does not hold (it counts, and is published, as unverified).
    not_held: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The agreement figures for the card (kind -> figures), names already pseudonyms; None when not measured.
    annotation: dict[str, Any] | None = None
    #: Every annotator's and reviewer's account name (the pseudonyms file's keys): the scan refuses them.
    people: list[str] = field(default_factory=list)
    #: With ``require_anonymization_check``: what the release states of the contact-sheet checks (required, videos,
    #: ticked, and per published video the bytes checked and who ticked, as pseudonyms); None without it.
    anonymization_check: dict[str, Any] | None = None
    #: The pseudonyms mapping, extended with this build's people and not yet written back: the build saves it once
    #: everything is written (``Pseudonyms.save``), so a refused build leaves the maintainer's file as it was.
    names: Any = None


def _validated(path: Path, kind: str) -> list[tuple[int, dict[str, Any]]]:
    report = check_file(path, kind)
    if not report.ok:
        raise RecordValidationError(report.violations)
    return list(iter_jsonl(path))


def collect(records_dir: str | Path, *, allow_unverified: bool = False, only_verified: bool = False,
            video_root: str | Path | None = None, licence: str = "apache-2.0", pseudonyms: str | Path | None = None,
            annotation_figures: str | Path | None = None, key: SigningKey | None = None,
            anonymization_checks: AnonymizationChecks | None = None) -> ReleaseInput:
    """Read a builder's output folder and apply every gate; raise on the first gate that refuses (a gate of the
    videos names every video it refuses).

    ``licence`` is the release's (a Hub licence id such as ``apache-2.0`` or ``cc-by-nc-sa-4.0``): it must
    be on the Hub's list (:data:`HUB_LICENCES`), and the records of every source present must be
    redistributable and allow it (:func:`licence_problem`). ``only_verified`` keeps verified records only
    (every split) and the videos they refer to. A record counts as verified only when
    :func:`~streamcue.annotation.verify.verification_problem` finds nothing (its content hash holds, two
    people checked it, its signature holds under the maintainer's ``key``: :mod:`~streamcue.annotation.signing`);
    one that does not is published, if at all, as ``unverified`` with a note saying why. A verified record is
    published signed again with ``key``, its annotators as pseudonyms.
    Every annotator and reviewer becomes their pseudonym from the mapping file ``pseudonyms``
    (:mod:`~streamcue.annotation.pseudonyms`; read and extended here, written back by the build once the
    release is written: ``ReleaseInput.names``), in the records and in the
    agreement figures (``annotation_figures``, default ``RECORDS/agreement.json`` when present).
    With ``anonymization_checks``, every published video needs a ticked contact-sheet check of its exact bytes
    (:func:`require_anonymization_checks`).
    """
    check_licence_id(licence)
    if only_verified and allow_unverified:
        raise ConfigError("--only-verified and --allow-unverified contradict each other: choose one")
    records_dir = Path(records_dir)
    if not records_dir.is_dir():
        raise InputError("not a folder", file=records_dir)
    videos_path = records_dir / FILE_NAMES["video"]
    if not videos_path.is_file():
        raise InputError("a release needs the videos.jsonl that the builders write beside the records",
                         file=videos_path)
    found = [k for k in RELEASE_KINDS if k != "video" and (records_dir / FILE_NAMES[k]).is_file()]
    if not found:
        names = ", ".join(FILE_NAMES[k] for k in RELEASE_KINDS if k != "video")
        raise InputError(f"no records to release (expected one of {names})", file=records_dir)

    result = ReleaseInput()
    videos = {rec["video_id"]: (line, rec) for line, rec in _validated(videos_path, "video")}
    for name in sorted({rec["source"] for _, rec in videos.values()}):
        _check_licence(name, licence, videos, videos_path)
    result.published = _check_anonymization(videos, videos_path, video_root)
    result.annotation = _figures(records_dir, annotation_figures)
    records = {kind: _validated(records_dir / FILE_NAMES[kind], kind) for kind in found}
    check_benchmarks(records, videos, records_dir)
    names = _pseudonyms(pseudonyms, records, result.annotation)
    if result.annotation is not None:
        result.annotation = names.figures(result.annotation)
    result.people = names.people
    used: set[str] = set()

    for kind in found:
        path = records_dir / FILE_NAMES[kind]
        kept: list[dict[str, Any]] = []
        shares = result.verified.setdefault(kind, {split: [0, 0] for split in SPLITS})
        for line, rec in records[kind]:
            rec = _published(rec, kind, result, names, key)
            status = rec["verification"]["status"]
            split = videos[rec["video_id"]][1]["split"]
            shares[split][1] += 1
            shares[split][0] += status == "verified"
            if status == "rejected":
                result.rejected_left_out[kind] += 1
                continue
            if only_verified and status != "verified":
                result.unverified_left_out[kind] += 1
                continue
            if status != "verified" and split in BENCHMARK_SPLITS:
                if not allow_unverified:
                    why = "; ".join(n for n in rec["verification"].get("notes", []) if n.startswith(_NOT_HELD))
                    raise InputError(
                        f"{status} record in the {split} split{f' ({why})' if why else ''}; benchmark splits need "
                        "verified records (verify them in Label Studio, or pass --allow-unverified, which the card "
                        "will state)",
                        file=path, line=line, record=f"{ID_FIELDS[kind]}={rec[ID_FIELDS[kind]]}",
                        field="$.verification.status")
                result.unverified_in_benchmark[kind] += 1
            kept.append(dict(rec, _split=split))
            used.add(rec["video_id"])
        result.records[kind] = _by_split(kept)
    if only_verified and not used:
        raise InputError(f"--only-verified: no verified record to release ({_why_none_verified(result)})",
                         file=records_dir)
    kept_videos = [rec for _, rec in videos.values() if not only_verified or rec["video_id"] in used]
    kept_ids = {rec["video_id"] for rec in kept_videos}
    result.published = {k: v for k, v in result.published.items() if k in kept_ids}
    result.records = {"video": _by_split(kept_videos), **result.records}
    result.sources.update(rec["source"] for rec in kept_videos)
    if anonymization_checks is not None:
        result.anonymization_check = require_anonymization_checks(result.published, anonymization_checks, key, names)
        result.people = names.people
    result.names = names
    return result


@dataclass(frozen=True)
class AnonymizationChecks:
    """``release build --require-anonymization-check``: the checks file ``annotate anonymization pull`` wrote
    (``path``; ``given``: named by ``--anonymization-checks``, so it must exist)."""

    path: Path
    given: bool = False


def require_anonymization_checks(published: dict[str, PublishedVideo], checks: AnonymizationChecks,
                                 key: SigningKey | None, names: Any) -> dict[str, Any]:
    """Refuse a published video without a ticked check of its exact bytes
    (:func:`~streamcue.annotation.anonymization_check.video_check`: the video's SHA-256 its report states, which
    :func:`check_published_video` holds against the copy, and the report's own): one line naming the video and its
    check's state, every such video named before the build is refused
    (:func:`~streamcue.errors.check_every`); returns what the manifest and card state, the people who ticked as
    pseudonyms."""
    from streamcue.annotation.anonymization_check import read_checks

    if key is None:
        raise ConfigError("--require-anonymization-check: the checks are signed by annotate anonymization pull; "
                          "pass --key or set STREAMCUE_SIGNING_KEY to the key it signed with")
    if checks.given and not checks.path.is_file():
        raise InputError("anonymization checks file not found", file=checks.path)
    found = read_checks(checks.path) if checks.path.is_file() else []
    stated = dict(check_every(published.items(), lambda item: (item[0], _ticked(item[1], found, key, names))))
    return {"required": True, "videos": len(published), "ticked": len(stated), "checks": stated}


def _ticked(video: PublishedVideo, found: list[dict[str, Any]], key: SigningKey, names: Any) -> dict[str, Any]:
    """What the release states of ``video``'s ticked check (who ticked as pseudonyms); one line naming the video
    and the check's state when it has none."""
    from streamcue.annotation.anonymization_check import video_check

    if not video.report.is_file():
        raise InputError(f"anonymization report not found at {video.report} (a relative path in videos.jsonl "
                         "is relative to its folder)", field="$.anonymization.report", **video.where())
    report = read_json(video.report)
    output = report.get("output") if isinstance(report, dict) else None
    output = output if isinstance(output, dict) else {}
    sheet = video.contact_sheet()
    state, check, why = video_check(found, str(output.get("path")), str(output.get("sha256")),
                                    sha256_file(video.report), key, sheet[1] if sheet else None)
    if check is None:
        raise InputError(f"anonymization check {state}: {why}", field="$.anonymization", **video.where())
    names.add("annotator", check["checked_by"])
    return {"state": state, "video_sha256": check["video_sha256"], "report_sha256": check["report_sha256"],
            **({"contact_sheet": sheet[2]} if sheet else {}),
            "contact_sheet_sha256": check["contact_sheet_sha256"], "guideline": check.get("guideline"),
            "checked_by": [names.of("annotator", n) for n in check["checked_by"]]}


#: The note a record gets when its ``verified`` status does not hold (the card and ``release diff`` quote it).
_NOT_HELD = "not verified: "


def _published(rec: dict[str, Any], kind: str, result: ReleaseInput, names: Any, key: SigningKey | None
               ) -> dict[str, Any]:
    """``rec`` as it is published: checked (:func:`_holds`), its people as pseudonyms, signed again when verified."""
    rec = names.record(_holds(rec, kind, result, key))
    if rec["verification"]["status"] == "verified" and key is not None:
        rec = key.sign(rec)
    return rec


def _why_none_verified(result: ReleaseInput) -> str:
    """What to do when no record is verified: the reason the first record saying ``verified`` did not hold
    (a missing signing key, most often), else pull verified records in."""
    held_not = [(kind, rid, why) for kind, ids in result.not_held.items() for rid, why in ids.items()]
    if not held_not:
        return "pull verified records into the build first: streamcue annotate pull"
    kind, rid, why = held_not[0]
    return (f"{len(held_not)} record(s) say verified and do not hold; {kind} {rid}: {why}")


#: Why a verified record does not hold when the build has no key to check its signature against.
_NO_KEY = ("verification.signature: no signing key to check it against (pass --key or set STREAMCUE_SIGNING_KEY "
           "to the key annotate pull signed with)")


def _holds(rec: dict[str, Any], kind: str, result: ReleaseInput, key: SigningKey | None = None) -> dict[str, Any]:
    """``rec`` as it counts: a ``verified`` status that does not hold becomes ``unverified`` with a note."""
    from streamcue.annotation.verify import verification_problem

    ver = rec["verification"]
    problem = (verification_problem(rec, key) or (_NO_KEY if key is None else None)
               if ver["status"] == "verified" else None)
    if problem is None:
        return rec
    result.not_held.setdefault(kind, {})[str(rec[ID_FIELDS[kind]])] = problem
    return {**rec, "verification": {**ver, "status": "unverified",
                                    "notes": [*ver.get("notes", []), _NOT_HELD + problem]}}


def _figures(records_dir: Path, path: str | Path | None) -> dict[str, Any] | None:
    """The agreement figures ``annotate pull`` wrote (kind -> figures), or None."""
    from streamcue.annotation.agreement import AGREEMENT_FILE

    file = Path(path) if path is not None else records_dir / AGREEMENT_FILE
    if not file.is_file():
        if path is not None:
            raise InputError("annotation figures file not found", file=path)
        return None
    data = read_json(file)
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "overall" in v for v in data.values()):
        raise InputError("not the agreement figures annotate pull writes ({kind: {\"overall\": ..., "
                         "\"pairs\": [...]}})", file=file)
    return data


def _pseudonyms(path: str | Path | None, records: dict[str, list[tuple[int, dict[str, Any]]]],
                figures: dict[str, Any] | None) -> Any:
    from streamcue.annotation.pseudonyms import Pseudonyms

    names = Pseudonyms.read(path) if path is not None else Pseudonyms(Path("pseudonyms.json"))
    for recs in records.values():
        for _, rec in recs:
            ver = rec["verification"]
            names.add("annotator", ver.get("annotators") or ())
            names.add("reviewer", [ver["reviewer"]] if ver.get("reviewer") else [])
    names.add_figures(figures or {})
    if names.added and path is None:
        raise ConfigError("the records name annotators: pass the pseudonyms file that keeps them private")
    return names


#: The licence identifiers the Hub accepts in a card's ``license:`` field. huggingface_hub ships no such list,
#: so it is copied from the Hub documentation's table, https://huggingface.co/docs/hub/repositories-licenses
#: (huggingface/hub-docs, docs/hub/repositories-licenses.md, the "licenses" region), less ``unknown`` and
#: ``other``: a release must name a licence the gate can check against its sources'.
HUB_LICENCES = frozenset("""
apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0 bigcode-openrail-m
afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0 cc-by-2.5
cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0
cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0 cdla-permissive-1.0
cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl
lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense
zlib pddl lgpl-lr deepfloyd-if-license llama2 gemma
""".split())


def check_licence_id(licence: str) -> None:
    """Refuse a ``--license`` that is not one of the Hub's licence identifiers (:data:`HUB_LICENCES`)."""
    if licence in HUB_LICENCES:
        return
    if licence.lower() in HUB_LICENCES:
        raise ConfigError(f"--license {licence!r}: the Hub's licence ids are lower case; use --license "
                          f"{licence.lower()}")
    if licence in ("other", "unknown"):
        raise ConfigError(f"--license {licence}: a release names its licence (a Hub licence id such as apache-2.0 "
                          "or cc-by-4.0), so that it can be checked against the licences of its sources")
    from difflib import get_close_matches

    close = get_close_matches(licence.lower(), sorted(HUB_LICENCES), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(f"--license {licence!r} is not a Hub licence id{hint}; see "
                      "https://huggingface.co/docs/hub/repositories-licenses")


#: Licences (SPDX ids, compared without case) whose data may go out under any release licence
#: (MIT and BSD keep their notice, CC BY its attribution: the card cites every source).
PERMISSIVE = frozenset({"mit", "apache-2.0", "bsd-2-clause", "bsd-3-clause", "cc0-1.0", "cc-by-4.0", "cc-by-3.0",
                        "cdla-permissive-2.0", "odc-by"})


def licence_problem(source: Source, licence: str) -> str | None:
    """Why the records of ``source`` may not go out under the release licence ``licence`` (None: they may).

    Not redistributable: never. Otherwise as :func:`licence_conflict` judges the source's licence.
    """
    head = f"source {source.name} ({source.licence})"
    if not source.redistributable:
        return f"{head} may not be redistributed ({source.licence_note}); a release under {licence} cannot include it"
    return licence_conflict(head, source.licence, licence)


def licence_conflict(head: str, own: str, licence: str) -> str | None:
    """Why data under the licence ``own`` (an SPDX or Hub id, any case) may not go out under ``licence``
    (None: it may); ``head`` names the data in the message.

    Permissive (:data:`PERMISSIVE`): under any licence. Otherwise the release must keep every restriction of
    ``own``: NonCommercial (``-NC``) data only under an NC licence, ShareAlike (``-SA``) data only under the same
    licence; any other licence only under itself.
    """
    src, wanted = own.lower(), licence.lower()
    if src in PERMISSIVE or src == wanted:
        return None
    if "-nc" in src and "-sa" not in src and "-nc" in wanted:  # NonCommercial data under another NC licence
        return None
    return f"{head} does not allow a release under {licence}: release it under --license {src}, or leave it out"


#: Sources whose videos are recorded for the dataset and published with it (``publishes_videos`` in the registry):
#: each video's own licence (its record's ``license``) governs the video and what is made from it, not only the
#: source's.
OWN_VIDEOS = frozenset(name for name, source in SOURCES.items() if source.publishes_videos)
#: How to state a video's licence so that the gate can check it (:func:`video_licence_id`).
_HOW_TO_STATE = ("state it in the video's record as an SPDX or Hub licence id such as CC-BY-4.0, CC-BY-NC-4.0 or "
                 "CC-BY-SA-4.0 (streamcue build recorded: the tasks file's license, or --license)")


def video_licence_id(text: str) -> str | None:
    """The Hub licence id (lower case) that a video record's ``license`` states, or None when it states none
    the gate knows. An SPDX or Hub id in any case, its words joined by spaces, ``-`` or ``_``, optionally
    followed by "licence": ``"CC BY-NC 4.0"`` -> ``cc-by-nc-4.0``, ``"MIT License"`` -> ``mit``."""
    words = re.sub(r"[\s_]+", "-", text.strip().lower())
    words = re.sub(r"-?licen[cs]e$", "", words)
    return words if words in HUB_LICENCES or words in PERMISSIVE else None


def video_licence_problem(video: dict[str, Any], licence: str) -> str | None:
    """Why the records made from ``video`` (a video record) may not go out under ``licence`` (None: they may):
    its ``license`` must name a licence (:func:`video_licence_id`) that allows ``licence``
    (:func:`licence_conflict`); "All rights reserved" allows none."""
    text, vid = video["license"], video["video_id"]
    head = f"video {vid} ({text})"
    if "all rights reserved" in " ".join(text.lower().split()):
        return (f"{head}: its owner grants no licence, so no release may include records made from it; leave it "
                f"out, or get a licence from its owner and {_HOW_TO_STATE}")
    own = video_licence_id(text)
    if own is None:
        return f"{head} is not a licence the gate can check: {_HOW_TO_STATE}, or leave the video out"
    return licence_conflict(head, own, licence)


def _check_licence(name: str, licence: str, videos: dict[str, tuple[int, dict[str, Any]]], path: Path) -> None:
    """The records of source ``name`` may go out under ``licence``; for :data:`OWN_VIDEOS`, each video's too."""
    line, rec = next((line, rec) for line, rec in videos.values() if rec["source"] == name)
    source = SOURCES.get(name)
    problem = (licence_problem(source, licence) if source is not None else
               f"source {name} has no entry in the registry of sources (streamcue ls), so its licence is unknown: "
               f"a release under {licence} cannot include its records")
    if problem:
        raise InputError(problem, file=path, line=line, record=f"video_id={rec['video_id']}", field="$.source")
    for line, rec in videos.values():
        if rec["source"] == name and name in OWN_VIDEOS:
            problem = video_licence_problem(rec, licence)
            if problem:
                raise InputError(problem, file=path, line=line, record=f"video_id={rec['video_id']}",
                                 field="$.license")


def check_benchmarks(records: dict[str, list[tuple[int, dict[str, Any]]]],
                     videos: dict[str, tuple[int, dict[str, Any]]], records_dir: Path) -> None:
    """Refuse a record whose ``benchmark`` does not take records from its video's ``source`` (an OVO-Bench
    question on a video relabelled ``streamingbench`` would otherwise go out under StreamingBench's licence)."""
    for kind, recs in records.items():
        for line, rec in recs:
            bench = BENCHMARKS.get(rec.get("benchmark", ""))
            video_line, video = videos[rec["video_id"]]
            if bench is None or video["source"] in bench.sources:
                continue
            raise InputError(
                f"benchmark {bench.name} on video {video['video_id']}, whose source is {video['source']} "
                f"({FILE_NAMES['video']}:{video_line}): {bench.name} records come from {', '.join(bench.sources)}, "
                f"whose licence governs them: correct the video's source or the record's benchmark, or leave the "
                "record out", file=records_dir / FILE_NAMES[kind], line=line,
                record=f"{ID_FIELDS[kind]}={rec[ID_FIELDS[kind]]}", field="$.benchmark")


def _by_split(records: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for rec in records:
        split = rec.pop("_split", None) or rec["split"]
        out[split].append(rec)
    return out


#: Where a release publishes videos: ``videos/<uri>``, each report beside it (``<stem>.anonymization.json``, the
#: name ``streamcue anonymize`` gives it).
VIDEOS_DIR = "videos"
#: The video files a release publishes (the video extensions of ``datasets``' videofolder that we publish).
VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi", ".mpeg")


def publishes_videos(source: str) -> bool:
    """May a release publish this source's videos (its registry row, :attr:`Source.publishes_videos`)?"""
    return source in SOURCES and SOURCES[source].publishes_videos


def published_report(uri: str) -> str:
    """``recorded/v1.mp4`` -> ``videos/recorded/v1.anonymization.json``: the published report beside its video."""
    stem, _, _ = uri.rpartition(".")
    return f"{VIDEOS_DIR}/{stem or uri}.anonymization.json"


def _check_anonymization(videos: dict[str, tuple[int, dict[str, Any]]], path: Path,
                         video_root: str | Path | None) -> dict[str, PublishedVideo]:
    """The videos to publish (sources whose registry row allows it), each with a passing report; the SHA-256
    of the bytes is checked on the release's own copy (:func:`check_published_video`).

    The published record's ``anonymization.report`` becomes ``videos/<uri stem>.anonymization.json`` (a path
    inside the release, never one with ``..`` that names the maintainer's folders). Every video is checked before
    any is refused (:func:`~streamcue.errors.check_every`): each refused one is named."""
    check_every(videos.values(), lambda item: _report_stays_inside(*item, path))
    own = [(line, rec) for line, rec in videos.values() if publishes_videos(rec["source"])]
    if own and video_root is None:
        raise ConfigError(f"{len(own)} video(s) to publish in {path}: pass --video-root so that each file "
                          "can be checked against its anonymization report")
    return dict(check_every(own, lambda item: _to_publish(*item, path, video_root)))


def _report_stays_inside(line: int, rec: dict[str, Any], path: Path) -> None:
    """One line naming the video record when its report, not published, names a path that leaves the records."""
    report = (rec.get("anonymization") or {}).get("report")
    if report and not publishes_videos(rec["source"]) and _escapes(report):
        raise InputError("an anonymization report path that leaves the records folder (a '..' segment or an "
                         "absolute path) would be published; keep reports under the records folder",
                         file=path, line=line, record=f"video_id={rec['video_id']}", field="$.anonymization.report")


def _to_publish(line: int, rec: dict[str, Any], path: Path, video_root: str | Path) -> tuple[str, PublishedVideo]:
    """A video to publish with its report (its record made to name the report's published path); one line naming
    the record when it has no passing anonymization or its file is not under ``video_root``."""
    anon = rec["anonymization"]
    where = dict(file=path, line=line, record=f"video_id={rec['video_id']}")
    if anon["status"] != "passed" or not anon.get("report"):
        raise InputError(f"a video to publish without a passing anonymization (status {anon['status']!r}); "
                         "run streamcue anonymize first", field="$.anonymization", **where)
    report = Path(anon["report"])
    video = resolve_uri(video_root, rec["uri"], file=path, record=where["record"])
    if not video.is_file():
        raise InputError(f"video file {rec['uri']} not found under --video-root", field="$.uri", **where)
    rec["anonymization"] = dict(anon, report=published_report(rec["uri"]))
    return rec["video_id"], PublishedVideo(rec["video_id"], rec["uri"], video,
                                           report if report.is_absolute() else path.parent / report, path, line)


def check_published_video(video: PublishedVideo, copy: Path) -> str:
    """Refuse ``copy`` (the release's own copy of ``video``) unless its report passes
    (:func:`~streamcue.anonymize.report.report_problem`: real detectors, the copy's exact bytes, not the raw
    recording, the measured schedule, detections blurred); returns the SHA-256 of the copy."""
    problem = report_problem(video.report, copy)
    if problem:
        raise InputError(problem.replace(str(copy), video.uri), field="$.anonymization.report", **video.where())
    return read_json(video.report)["output"]["sha256"]


def _escapes(path: str) -> bool:
    return path.startswith(("/", "~", "\\")) or ".." in re.split(r"[\\/]", path) or bool(re.match(r"[A-Za-z]:", path))


def check_published_reports(records: list[dict[str, Any]]) -> None:
    """The last word on what a release publishes: no video record's report path has a ``..`` segment."""
    for rec in records:
        report = (rec.get("anonymization") or {}).get("report")
        if report and _escapes(report):
            raise InputError("a published anonymization report path leaves the release (a '..' segment or an "
                             "absolute path)", file=FILE_NAMES["video"], record=f"video_id={rec['video_id']}",
                             field="$.anonymization.report")


#: What may stand right before a path: the start of the string, any character that is not part of a word
#: or a relative path (not a letter, digit, ``_``, ``.``, ``~``, ``/`` or backslash; so a space of any kind,
#: a no-break space included, any quote, bracket, ASCII or Unicode, and ``+ # ! @ & ) = , ; : | * -``), a
#: short option glued to its value (``-i/home/...``), or a backslash escape (``"\t/home/..."`` in YAML or JSON).
_BEFORE = r"""(?:^|[^A-Za-z0-9_.~/\\]|(?:^|[^A-Za-z0-9_.~/\\])-[A-Za-z]|\\[A-Za-z])"""
#: A local absolute path or home directory anywhere in a string: ``/a/b...``, ``/home``, ``/root``,
#: ``/Users``, ``~/``, ``~bob/``, ``$HOME`` or ``${HOME}``, ``%USERPROFILE%`` (and Windows' other home
#: variables), a Windows drive (``C:\``), a UNC path (``\\server\share``, ``\\?\C:\``) after :data:`_BEFORE`,
#: or a ``file:`` URL anywhere. So ``note={/home/...}``, ``see:/home/bob/x``, ``(x)/home/...``, ``「/home/...」``
#: and ``-i/home/...`` are caught while ``1/2 cup``, ``and/or``, ``./data/x``, ``~5/10``, ``10:30`` and
#: ``https://a.org/b/c`` pass. RE2-compatible (Arrow scans
#: Parquet string columns with it; RE2's ``\s`` is ASCII, so no class here relies on it for Unicode spaces).
ABSOLUTE_PATH = (_BEFORE + r"""(?P<path>/[A-Za-z0-9._-]+/[^\s/]|/(?:home|root|Users)\b|~/|~[A-Za-z_][A-Za-z0-9._-]*|"""
                 r"""\$\{?(?:HOME|USERPROFILE|HOMEPATH|APPDATA|LOCALAPPDATA)\b|%(?:USERPROFILE|HOMEPATH|HOMEDRIVE|HOME|APPDATA|LOCALAPPDATA)%|[A-Za-z]:[\\/]|"""
                 r"""\\\\[A-Za-z0-9._$?-]+\\)|(?P<url>\b[Ff][Ii][Ll][Ee]:/)""")
_ABSOLUTE = re.compile(ABSOLUTE_PATH, re.ASCII)
#: An e-mail address (``name@host.tld``, internationalized too: ``bob@bücher.example``; a quoted local part
#: ``"bob smith"@x.org``, an IP literal ``bob@[10.0.0.1]``, a host without a dot of three or more characters
#: ``bob@localhost``; not ``a@b``) or a Label Studio account
#: id as ``annotate pull`` names an unknown user (``user:17``): personal data a release never publishes.
#: RE2-compatible (``[^\x00-\x7F]``: any non-ASCII letter of a name).
PERSONAL = (r"""(?:"[^"@\s,;:](?:[^"@\n,;:]{0,62}[^"@\s,;:])?"|(?:[A-Za-z0-9._%+-]|[^\x00-\x7F])+)@"""
            r"""(?:\[[0-9A-Fa-fv.:]+\]|"""
            r"""(?:[A-Za-z0-9-]|[^\x00-\x7F])+(?:\.(?:[A-Za-z0-9-]|[^\x00-\x7F])+)*\.(?:[A-Za-z]{2,}|xn--[A-Za-z0-9-]+)|"""
            r"""(?:[A-Za-z]|[^\x00-\x7F])(?:[A-Za-z0-9-]|[^\x00-\x7F]){2,})|\buser:[0-9]+\b""")
_PERSONAL = re.compile(PERSONAL, re.ASCII)


_AT = re.compile(r"\s*[\[({<]\s*at\s*[\])}>]\s*", re.IGNORECASE)
_DOT = re.compile(r"\s*[\[({<]\s*dot\s*[\])}>]\s*", re.IGNORECASE)
_JSON_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|[/\\\"])")
#: What a string must hold for the normalized reading to differ (RE2): the Parquet scan reads these in Python.
NORMALIZABLE = r"""[%&\\~$@]|[^\x00-\x7F]|(?i:at|dot)\s*[\])}>]|(?i:hf_|sk-|bearer)"""


def normalized(text: str) -> str:
    """``text`` as a reader may see it: Unicode NFKC (``＠`` is ``@``, ``／`` is ``/``), HTML entities, percent
    escapes and JSON escapes decoded (repeatedly, so a double encoding hides nothing), and the spelled-out
    ``[at]``, ``(at)``, ``[dot]``, ``(dot)`` read as ``@`` and ``.``."""
    out = unicodedata.normalize("NFKC", text)
    for _ in range(4):
        before = out
        out = _JSON_ESCAPE.sub(lambda m: chr(int(m[1][1:], 16)) if m[1][0] == "u" else m[1], out)
        out = unicodedata.normalize("NFKC", unquote(html.unescape(out)))
        if out == before:
            break
    return _DOT.sub(".", _AT.sub("@", out))


def absolute_path_in(text: str) -> str | None:
    """The start of the first local absolute path or home directory in ``text`` or in its :func:`normalized`
    reading (for a message), or None."""
    match = _ABSOLUTE.search(text) or _ABSOLUTE.search(normalized(text))
    if match is None:
        return None
    head = match.group("path") or match.group("url")
    cut = head.find("/", 1)
    return (head[:cut + 1] if cut > 0 else head) + "..."  # never the whole path, not even in an error


def personal_data_in(text: str, people: Iterable[str] = ()) -> str | None:
    """What personal data ``text`` holds, in words (never the data itself), or None: an e-mail address, a
    Label Studio account id, or one of ``people`` (account names, matched as whole words without case; a name
    of one or two characters would match ordinary words, so only longer ones are looked for)."""
    match = _PERSONAL.search(text) or _PERSONAL.search(normalized(text))
    if match:
        return "a Label Studio account id" if match.group().startswith("user:") else "an e-mail address"
    lowered = text.lower()
    for name in (p for p in people if len(p) >= 3):
        at = lowered.find(name.lower())
        while at >= 0:
            end = at + len(name)
            if (at == 0 or not lowered[at - 1].isalnum()) and (end == len(lowered) or not lowered[end].isalnum()):
                return "an annotator's or reviewer's account name (one in the pseudonyms file)"
            at = lowered.find(name.lower(), at + 1)
    return None


def scan_published(folder: str | Path, people: Iterable[str] = ()) -> None:
    """Refuse a release folder in which any string of any file names a local absolute path or home directory,
    an e-mail address or an account name (``people``, the annotators and reviewers the pseudonyms replaced).

    Every string is read as a user of the file reads it: Parquet, every string value of every column
    (nested lists and structs included) and every field name; JSON, every value and key once parsed (so an
    escape such as ``\\u00a0`` or ``\\t`` hides nothing); Markdown and other text, the text, and the card's
    YAML header parsed; PNG, its text chunks; JPEG (a contact sheet), its comment and metadata segments. Any other
    file must be UTF-8 text.
    """
    folder = Path(folder)
    people = [p for p in people if p]
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    # the data first: a path that a record holds is reported against its Parquet column, not the card's example
    for path in sorted(files, key=lambda p: (p.relative_to(folder).parts[0] != "data", p)):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(VIDEOS_DIR + "/") and path.suffix.lower() in VIDEO_SUFFIXES:
            continue  # a published video: its bytes are the ones its passing anonymization report names
        for where, text in _strings(path, people):
            found = absolute_path_in(text)
            if found:
                raise InputError(f"a published file names a local absolute path or home directory ({found}); "
                                 "records, reports and cards must hold relative paths only",
                                 file=rel, field=where)
            if key_shaped(text) or key_shaped(normalized(text)):
                raise InputError("a published file holds a key-shaped token (sk-..., hf_..., a bearer token); "
                                 "remove it from the records (it is a secret, wherever it came from)",
                                 file=rel, field=where)
            personal = personal_data_in(text, people)
            if personal:
                raise InputError(f"a published file holds {personal}; annotators and reviewers are published as "
                                 "pseudonyms (release build --pseudonyms) and nothing else personal may be",
                                 file=rel, field=where)


def _strings(path: Path, people: list[str]) -> Iterator[tuple[str | None, str]]:
    if path.suffix == ".parquet":
        yield from _parquet_strings(path, people)
    elif path.suffix == ".png":
        yield from ((f"PNG text {key}", value) for key, value in _png_text(path.read_bytes()))
        yield from ((f"PNG text {key}", key) for key, _ in _png_text(path.read_bytes()))
    elif path.suffix in (".jpg", ".jpeg"):
        yield from _jpeg_text(path.read_bytes())
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError("cannot check a binary file of this type for local paths", file=path) from None
        yield None, text
        if path.suffix == ".json":
            yield from _parsed(_json(path, text))
        elif path.suffix == ".md" and text.startswith("---\n"):
            header = text[4:].split("\n---\n", 1)[0]
            yield from ((f"YAML header {w}", t) for w, t in _parsed(yaml.safe_load(header)))


def _json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise InputError("not valid JSON", file=path) from None


def _parsed(value: Any, where: str = "$") -> Iterator[tuple[str, str]]:
    """Every string of a parsed JSON or YAML document, keys included, with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{where} (a key)", str(key)
            yield from _parsed(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _parsed(item, f"{where}[{i}]")
    elif isinstance(value, str):
        yield where, value


def _parquet_strings(path: Path, people: list[str]) -> Iterator[tuple[str, str]]:
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    for column in schema:
        yield f"{column.name} (a column name)", column.name
        yield from _arrow_names(column.type, column.name)
    with pq.ParquetFile(path) as parquet:  # reads the named leaves only (read_table would read a struct's bytes)
        table = parquet.read(columns=_string_columns(schema))
    for column in table.column_names:
        for chunk in table.column(column).chunks:
            for name, strings in _arrow_leaves(chunk, column):
                yield from ((name, text) for text in _flagged(strings, people))


def _string_columns(schema: Any) -> list[str]:
    """Every column with strings; of a struct holding bytes (a video), only its strings."""
    import pyarrow as pa

    columns = []
    for f in schema:
        if _arrow_has(f.type, _is_binary) and pa.types.is_struct(f.type):
            columns += [f"{f.name}.{sub.name}" for sub in f.type if _is_text(sub.type)]
        elif _arrow_has(f.type, _is_text):
            columns.append(f.name)
    return columns


def _flagged(strings: Any, people: list[str]) -> list[str]:
    """The strings of an Arrow string array that hold an absolute path, a personal pattern or a person's name, or
    that normalizing could change (those the Python check reads again)."""
    import pyarrow.compute as pc

    hits = pc.or_(pc.or_(pc.match_substring_regex(strings, ABSOLUTE_PATH), pc.match_substring_regex(strings, PERSONAL)),
                  pc.match_substring_regex(strings, NORMALIZABLE))  # checked in Python, normalized
    for person in (p for p in people if len(p) >= 3):
        hits = pc.or_(hits, pc.match_substring(strings, person, ignore_case=True))
    hits = hits.fill_null(False)
    return strings.filter(hits).to_pylist() if pc.any(hits).as_py() else []


def _is_list(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_binary(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_binary(kind) or pa.types.is_large_binary(kind)


def _arrow_leaves(array: Any, name: str) -> Iterator[tuple[str, Any]]:
    """The string arrays under an Arrow array (struct fields and list items flattened), with their paths."""
    import pyarrow as pa

    kind = array.type
    if _is_text(kind):
        yield name, array
    elif pa.types.is_struct(kind):
        for i in range(kind.num_fields):
            yield from _arrow_leaves(array.field(i), f"{name}.{kind.field(i).name}")
    elif _is_list(kind):
        yield from _arrow_leaves(array.flatten(), f"{name}[]")


def _arrow_names(kind: Any, name: str) -> Iterator[tuple[str, str]]:
    """The field names of an Arrow type, nested ones included, with their paths."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        for i in range(kind.num_fields):
            yield f"{name} (a field name)", kind.field(i).name
            yield from _arrow_names(kind.field(i).type, f"{name}.{kind.field(i).name}")
    elif _is_list(kind):
        yield from _arrow_names(kind.value_type, f"{name}[]")


def _arrow_has(kind: Any, test: Any) -> bool:
    """Does the Arrow type, or a type nested in it, pass ``test``?"""
    import pyarrow as pa

    if test(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_arrow_has(kind.field(i).type, test) for i in range(kind.num_fields))
    return _is_list(kind) and _arrow_has(kind.value_type, test)


def _jpeg_text(data: bytes) -> Iterator[tuple[str, str]]:
    """``(segment, text)`` of a JPEG's comment (COM) and application segments other than JFIF's APP0 (EXIF, XMP and
    the like), read up to the image data; a contact sheet (OpenCV's JFIF) has none."""
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker, length = data[pos + 1], int.from_bytes(data[pos + 2:pos + 4], "big")
        body = data[pos + 4:pos + 2 + length]
        if marker == 0xDA:  # start of scan: the pixels follow
            return
        if marker == 0xFE or (0xE1 <= marker <= 0xEF):
            yield f"JPEG segment 0x{marker:02X}", body.decode("utf-8", "replace")
        pos += 2 + length


def _png_text(data: bytes) -> Iterator[tuple[str, str]]:
    """``(keyword, text)`` of a PNG's tEXt, zTXt and iTXt chunks."""
    import zlib

    pos = 8
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            key, _, rest = body.partition(b"\0")
            if kind == b"zTXt":
                rest = zlib.decompress(rest[1:])
            elif kind == b"iTXt":
                compressed, rest = rest[0], rest[2:].split(b"\0", 2)[-1]
                rest = zlib.decompress(rest) if compressed else rest
            yield key.decode("latin-1"), rest.decode("utf-8", "replace")
