"""What a release must check before it writes anything: validity, verification, anonymization.

Each gate refuses with one message naming the file, record and field, and says how to proceed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.anonymize.report import report_problem
from streamcue.dataset_builders.output import FILE_NAMES
from streamcue.errors import ConfigError, InputError, RecordValidationError
from streamcue.io import iter_jsonl
from streamcue.loaders.features import RELEASE_KINDS
from streamcue.schemas import ID_FIELDS, check_file

#: Splits that are benchmarks: their records must be human-verified before release.
BENCHMARK_SPLITS = ("validation", "test")
SPLITS = ("train", "validation", "test")


@dataclass
class ReleaseInput:
    """Validated records, by kind and split, and what the gates let through."""

    records: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    unverified_in_benchmark: Counter = field(default_factory=Counter)
    rejected_left_out: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)


def _validated(path: Path, kind: str) -> list[tuple[int, dict[str, Any]]]:
    report = check_file(path, kind)
    if not report.ok:
        raise RecordValidationError(report.violations)
    return list(iter_jsonl(path))


def collect(records_dir: str | Path, *, allow_unverified: bool = False,
            video_root: str | Path | None = None) -> ReleaseInput:
    """Read a builder's output folder and apply every gate; raise on the first refusal."""
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
    _check_anonymization(videos, videos_path, video_root)
    result.records["video"] = _by_split(rec for _, rec in videos.values())
    result.sources.update(rec["source"] for _, rec in videos.values())

    for kind in found:
        path = records_dir / FILE_NAMES[kind]
        kept: list[dict[str, Any]] = []
        for line, rec in _validated(path, kind):
            status = rec["verification"]["status"]
            split = videos[rec["video_id"]][1]["split"]
            if status == "rejected":
                result.rejected_left_out[kind] += 1
                continue
            if status != "verified" and split in BENCHMARK_SPLITS:
                if not allow_unverified:
                    raise InputError(
                        f"{status} record in the {split} split; benchmark splits need verified records "
                        "(verify them in Label Studio, or pass --allow-unverified, which the card will state)",
                        file=path, line=line, record=f"{ID_FIELDS[kind]}={rec[ID_FIELDS[kind]]}",
                        field="$.verification.status")
                result.unverified_in_benchmark[kind] += 1
            kept.append(dict(rec, _split=split))
        result.records[kind] = _by_split(kept)
    return result


def _by_split(records: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for rec in records:
        split = rec.pop("_split", None) or rec["split"]
        out[split].append(rec)
    return out


def _check_anonymization(videos: dict[str, tuple[int, dict[str, Any]]], path: Path,
                         video_root: str | Path | None) -> None:
    recorded = [(line, rec) for line, rec in videos.values() if rec["source"] == "recorded"]
    if recorded and video_root is None:
        raise ConfigError(f"{len(recorded)} recorded video(s) in {path}: pass --video-root so that each file "
                          "can be checked against its anonymization report")
    for line, rec in recorded:
        anon = rec["anonymization"]
        where = dict(file=path, line=line, record=f"video_id={rec['video_id']}")
        if anon["status"] != "passed" or not anon.get("report"):
            raise InputError(f"recorded video without a passing anonymization (status {anon['status']!r}); "
                             "run streamcue anonymize first", field="$.anonymization", **where)
        report = Path(anon["report"])
        problem = report_problem(report if report.is_absolute() else path.parent / report,
                                 Path(video_root) / rec["uri"])
        if problem:
            raise InputError(problem, field="$.anonymization.report", **where)
