"""``streamcue verify-evidence``: check generated records against the video before annotation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.shared_options import LLMRetries, LLMTimeout, VisionBaseURL, VisionModel, VisionStructured
from streamcue.errors import ConfigError, InputError

__all__ = ["verify_evidence", "evidence_stats"]

EVIDENCE_KINDS = ("interval_qa",)


def verify_evidence(
    records: Annotated[Path, typer.Option(help="JSONL of records to check (e.g. interval_qa.jsonl from a build).")],
    video_root: Annotated[Path, typer.Option(help="Folder the videos' uri fields are relative to.")],
    out: Annotated[Path, typer.Option(help="Output folder: the records with provenance.evidence_check, and "
                                           "evidence_report.json.")],
    kind: Annotated[str, typer.Option(help="Record kind (interval_qa).")] = "interval_qa",
    videos: Annotated[Optional[Path], typer.Option(help="videos.jsonl with each video's uri and duration (default: "
                                                        "beside --records).")] = None,
    llm_base_url: VisionBaseURL = None,
    llm_model: VisionModel = None,
    llm_structured: VisionStructured = "json_schema",
    llm_timeout: LLMTimeout = None,
    llm_retries: LLMRetries = None,
    concurrency: Annotated[int, typer.Option(help="Records checked at the same time (each record's rounds stay in "
                                                  "order).")] = 4,
    max_rounds: Annotated[int, typer.Option(help="Plan-observe-reflect rounds per record at most (AVP: 3).")] = 3,
    confidence: Annotated[float, typer.Option(help="Stop when the reflector is this confident that the evidence "
                                                   "suffices (AVP: 0.7).")] = 0.7,
    pad_s: Annotated[float, typer.Option(help="Seconds around the claimed intervals watched for reasoning "
                                              "questions.")] = 10.0,
    max_frames: Annotated[int, typer.Option(help="Frames shown to the observer per round at most.")] = 32,
    frame_side: Annotated[int, typer.Option(help="Longest side of the frames sent to the model, in pixels.")] = 448,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
) -> None:
    """Check each generated record against the video itself (AVP: plan, observe, reflect).

    For every record a planner picks the spans to watch (the claimed answer intervals, padded
    for reasoning questions, or a uniform scan), a vision model reports time-stamped evidence
    from those frames, and a reflector decides supported / unsupported / unsure with a
    confidence; up to --max-rounds rounds, stopping at --confidence. Records come out unchanged
    except for provenance.evidence_check; `streamcue annotate push --order` can then show the
    doubtful ones first. Every call is cached: a re-run makes no new call, a killed run resumes.

    Example:

        streamcue verify-evidence --records out/ego4d/interval_qa.jsonl --video-root /data/ego4d \\
            --out out/ego4d-checked --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct
    """
    from streamcue.annotation.evidence import EvidenceConfig, verify_records
    from streamcue.errors import RecordValidationError
    from streamcue.io import iter_jsonl, write_json, write_jsonl
    from streamcue.llm import LLMClient, LLMSettings
    from streamcue.finite import non_finite_path
    from streamcue.prologue import check_io, check_numbers
    from streamcue.loaders import video_path
    from streamcue.loaders.frames import SpanFrames
    from streamcue.progress import track
    from streamcue.schemas import check_records

    if kind not in EVIDENCE_KINDS:
        raise ConfigError(f"verify-evidence checks {', '.join(EVIDENCE_KINDS)} records, not {kind!r}")
    check_numbers(("--concurrency", concurrency, 1, None), ("--max-rounds", max_rounds, 1, None),
                  ("--confidence", confidence, 0, 1), ("--pad-s", pad_s, 0, None),
                  ("--max-frames", max_frames, 1, None), ("--frame-side", frame_side, 16, 8192))
    videos = videos or records.parent / "videos.jsonl"
    target = out / f"{kind}.jsonl"
    check_io({target: "--out", out / "evidence_report.json": "--out"}, [records, videos], out_folder=out)
    config = EvidenceConfig(max_rounds=max_rounds, confidence=confidence, pad_s=pad_s, max_frames=max_frames)
    rows = []
    for name, path, record_kind in ((kind, records, kind), ("video", videos, "video")):
        if not path.is_file():
            raise InputError(f"{name} file not found", file=path)
        lines = list(iter_jsonl(path))
        report = check_records(lines, record_kind, file=str(path))
        if not report.ok:
            raise RecordValidationError(report.violations)
        rows.append(lines)
    items = [r for _, r in rows[0]]
    if not items:
        raise InputError("no records to check", file=records)
    video_records = {v["video_id"]: v for _, v in rows[1]}
    for line, record in rows[0]:
        if record["video_id"] not in video_records:
            raise InputError(f"video {record['video_id']} is not in {videos}", file=records, line=line,
                             record=record["qa_id"], field="video_id")
    needed = {r["video_id"] for r in items}
    paths = {vid: video_path(video_records[vid], video_root) for vid in sorted(needed)}
    for vid, path in paths.items():
        if not path.is_file():
            raise InputError(f"video file of {vid} not found under --video-root", file=path, record=vid, field="uri")
    settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                   max_concurrency=concurrency, timeout_s=llm_timeout, max_retries=llm_retries)
    client = LLMClient(settings, use_cache=not no_cache)
    checked, report = verify_records(
        items, {vid: video_records[vid]["duration_s"] for vid in needed}, SpanFrames(paths, side=frame_side),
        client, config, concurrency=concurrency,
        progress=lambda it: track(it, "checking evidence", total=len(items)))
    report = {"records_file": records.name, **report}
    bad = non_finite_path(report) or non_finite_path(checked)
    if bad:  # refused before either file is written: never the records without their report
        raise InputError("not a finite number in the evidence check's results", file=out / "evidence_report.json",
                         field=bad)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(target, checked)
    write_json(out / "evidence_report.json", report)
    v = report["verdicts"]
    console.out.print(console.table("evidence verdicts", ["records"], {k: {"records": n} for k, n in v.items()},
                                    "verdict"))
    u = report["llm"]
    console.out.print(f"{report['records']} records, {report['calls_per_record']:.2f} calls per record; "
                      f"{u['model']}: {u['calls']} calls, {u['cache_hits']} cache hits -> {target}")


def evidence_stats(
    checked: Annotated[Path, typer.Option(help="Records written by verify-evidence (with provenance.evidence_check).")],
    verified: Annotated[Path, typer.Option(help="The same records after annotation (streamcue annotate pull).")],
    output: Annotated[Optional[Path], typer.Option(help="Also write the figures as JSON here.")] = None,
) -> None:
    """How often annotators agreed with the evidence pre-check's verdicts.

    A supported record that annotators confirmed unchanged, or an unsupported one they corrected
    or rejected, is an agreement; unsure verdicts and records still pending are shown apart.

    Example:

        streamcue stats evidence --checked out/ego4d-checked/interval_qa.jsonl --verified verified.jsonl
    """
    from streamcue.annotation.evidence import verdict_agreement
    from streamcue.errors import InputError
    from streamcue.io import read_jsonl, write_json
    from streamcue.schemas import validate_file
    from streamcue.prologue import check_io

    if output is not None:
        check_io({output: "--output"}, [checked, verified])
    for path in (checked, verified):  # what verify-evidence checks; a wrong file is one line, not a KeyError
        validate_file(path, "interval_qa")
    checked_records = read_jsonl(checked)
    if not any(r.get("provenance", {}).get("evidence_check") for r in checked_records):
        raise InputError("no record carries provenance.evidence_check: give the output of verify-evidence",
                         file=checked)
    figures = verdict_agreement(checked_records, read_jsonl(verified))
    table = figures["by_verdict"]
    console.out.print(console.table("annotators' outcome by evidence verdict", list(table["supported"]), table,
                                    "verdict"))
    share = figures["agreement"]
    console.out.print(f"agreement on {figures['decided']} decided records: "
                      + (f"{share:.3f}" if share is not None else "n/a (none decided yet)"))
    if output:
        write_json(output, figures)
