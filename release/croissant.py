"""``croissant.json``: the release described in Croissant 1.0 with its responsible-AI fields (Croissant RAI).

Croissant is the metadata format the NeurIPS datasets track asks for. The file is built with the
``mlcroissant`` package from the same data as the card (:mod:`streamcue.release.card`): the configs and
their Parquet files, the published videos, the annotation figures and verified shares, the
anonymization of recorded videos. Every top-level column of scalar or list-of-scalar type is a field; nested
columns are described by the card's Fields section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError
from streamcue.extras import require
from streamcue.registry import SOURCES

__all__ = ["CROISSANT", "write_croissant"]

CROISSANT = "croissant.json"


def _data_type(mlc: Any, arrow: Any) -> tuple[Any, bool] | None:
    """The Croissant data type of an Arrow column and whether it repeats; None for a nested column."""
    import pyarrow as pa

    repeated = pa.types.is_list(arrow) or pa.types.is_large_list(arrow)
    kind = arrow.value_type if repeated else arrow
    for test, data_type in ((pa.types.is_boolean, mlc.DataType.BOOL), (pa.types.is_integer, mlc.DataType.INTEGER),
                            (pa.types.is_floating, mlc.DataType.FLOAT), (pa.types.is_string, mlc.DataType.TEXT),
                            (pa.types.is_large_string, mlc.DataType.TEXT)):
        if test(kind):
            return data_type, repeated
    return None


def _record_set(mlc: Any, config: str, parquet: Path) -> Any:
    import pyarrow.parquet as pq

    fields = []
    for column in pq.read_schema(parquet):
        typed = _data_type(mlc, column.type)
        if typed is None:
            continue
        fields.append(mlc.Field(id=f"{config}/{column.name}", name=column.name, data_types=[typed[0]],
                                repeated=typed[1] or None,
                                source=mlc.Source(file_set=f"{config}-files", extract=mlc.Extract(column=column.name))))
    return mlc.RecordSet(id=config, name=config, fields=fields,
                         description=f"The {config} config (one Parquet file per split; nested columns: see the card)")


def _responsible_ai(meta: dict[str, Any], videos: list[dict[str, Any]]) -> dict[str, Any]:
    """The RAI fields, from the card's data: annotation figures and verified shares, anonymization."""
    figures = meta.get("annotation") or {}
    shares = [f"{config} {split}: {v} of {n} verified" for config, by in sorted(meta["verified"].items())
              for split, (v, n) in by.items() if n]
    agreement = figures.get("agreement")
    published = [v for v in videos if SOURCES.get(v["source"]) and SOURCES[v["source"]].publishes_videos]
    others = sorted({v["source"] for v in videos} - {v["source"] for v in published})
    personal = ["Records hold text annotations and times; every published string is scanned for local paths and "
                "home directories. Annotator ids are pseudonyms."]
    if published:
        personal.append(f"{len(published)} recorded video(s) are published after anonymization: faces and licence "
                        "plates blurred by streamcue anonymize; each video's report (detectors and versions, "
                        "per-frame detections, SHA-256 of the published bytes) is published beside it, and a video "
                        "without a passing report naming its exact bytes is refused.")
    if others:
        personal.append("Videos of " + ", ".join(SOURCES[s].title if s in SOURCES else s for s in others)
                        + " are not published; their anonymization is their sources'.")
    return {
        "data_collection": "Records are built from the sources' own annotations and, for recorded videos, from "
                           "captions drafted by a vision-language model on the anonymized video (provenance in "
                           "each record).",
        "data_annotation_protocol": [
            "People verify records in Label Studio (streamcue annotate push/pull); a record is verified when the "
            "required number of annotators agree or a reviewer resolves their disagreement.",
            f"Guideline version: {figures.get('guideline_version') or figures.get('guidelines') or 'not recorded'}."],
        "data_annotation_platform": ["Label Studio"],
        "data_annotation_analysis": shares + ([f"agreement {k}: {v}" for k, v in _flat(agreement)]
                                              if agreement else ["Inter-annotator agreement: not measured."]),
        "personal_sensitive_information": personal,
        "data_use_cases": ["Evaluating streaming-video assistants: what to say and when, as the video plays."],
        "data_limitations": ["Records converted from the sources inherit their annotation errors; generated text "
                             "may be wrong unless verified."],
    }


def _flat(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [row for k, v in value.items() for row in _flat(v, f"{prefix}.{k}" if prefix else str(k))]
    return [(prefix, value)]


def write_croissant(folder: Path, meta: dict[str, Any], configs: dict[str, dict[str, str]],
                    videos: list[dict[str, Any]]) -> None:
    """Write ``folder/croissant.json`` for the release in ``folder``; ``configs``: config -> split -> Parquet path.

    Refuses (ConfigError) metadata that ``mlcroissant`` finds an error in."""
    mlc = require("mlcroissant", "release")
    repo = meta.get("repo") or "ORG/NAME"
    distribution = [mlc.FileObject(id="repo", name="repo", encoding_formats=["git+https"],
                                   content_url=f"https://huggingface.co/datasets/{repo}",
                                   # a repository has no one digest: the value Croissant's issue 80 settled on
                                   sha256="https://github.com/mlcommons/croissant/issues/80",
                                   description=f"The dataset repository, revision v{meta['version']}")]
    record_sets = []
    for config, splits in configs.items():
        distribution.append(mlc.FileSet(id=f"{config}-files", name=f"{config}-files", contained_in=["repo"],
                                        encoding_formats=["application/x-parquet"],
                                        includes=[f"data/{config}/*.parquet"]))
        record_sets.append(_record_set(mlc, config, folder / next(iter(splits.values()))))
    if (folder / "videos").is_dir():
        distribution.append(mlc.FileSet(id="video-files", name="video-files", contained_in=["repo"],
                                        encoding_formats=["video/mp4"], includes=["videos/**/*.mp4"],
                                        description="The published (anonymized) videos, each at its record's uri"))
    try:
        metadata = mlc.Metadata(
            name=meta["title"], description=f"{meta['title']}: a benchmark for streaming-video assistants (README.md)",
            url=f"https://huggingface.co/datasets/{repo}", license=[meta["license"]], version=meta["version"],
            cite_as=meta.get("citation") or None, distribution=distribution, record_sets=record_sets,
            **_responsible_ai(meta, videos))
    except mlc.ValidationError as exc:
        problem = str(exc).splitlines()[-1].strip()
        raise ConfigError(f"{CROISSANT}: mlcroissant refuses the metadata: {problem}") from None
    from streamcue.io import write_json

    write_json(folder / CROISSANT, metadata.to_json())
