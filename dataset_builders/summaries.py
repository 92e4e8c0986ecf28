"""Summary tables of built records (what the build and demo commands print)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from streamcue import console
from streamcue.dataset_builders.output import BuildReport
from streamcue.io import read_jsonl
from streamcue.schemas.taxonomy import EVENT_TYPES, SPLITS

__all__ = ["WARN_INCONSISTENT", "guidance_summary", "print_ego4d_summary", "print_guidance_summary",
           "print_llm_usage", "print_task_summary"]

#: ``--warn-inconsistent`` of the builders of published benchmarks' question files.
WARN_INCONSISTENT = ("Keep source records no one can answer (a target before its question, an unknown task, a probe "
                     "about a missing step): counted as quirks, each a warning.")


def guidance_summary(guidance: Iterable[Mapping[str, Any]], videos: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Recordings and events by type per split, and mistakes by category."""
    split_of = {v["video_id"]: v["split"] for v in videos}
    per_split: dict[str, Counter] = {}
    mistakes: Counter = Counter()
    for record in guidance:
        row = per_split.setdefault(split_of.get(record["video_id"], "?"), Counter())
        row["recordings"] += 1
        row["plan steps"] += len(record["plan"])
        for event in record["events"]:
            row[event["type"]] += 1
            if event["type"] == "mistake":
                mistakes[event["mistake_category"]] += 1
    columns = ["recordings", "plan steps",
               *(t for t in ("instruction", "success", "mistake", "finish") if t in EVENT_TYPES)]
    order = [s for s in SPLITS if s in per_split] + sorted(set(per_split) - set(SPLITS))
    rows = {split: {c: per_split[split][c] for c in columns} for split in order}
    rows["all"] = {c: sum(r[c] for r in rows.values()) for c in columns}
    return {"columns": columns, "rows": rows, "mistakes_by_category": dict(mistakes.most_common())}


def print_ego4d_summary(report: BuildReport) -> None:
    """Questions by task type, clips dropped and LLM usage of an Ego4D build."""
    figures = report.details
    console.out.print(console.table("interval_qa by task type", ["questions"],
                                    {k: {"questions": v} for k, v in sorted(figures["by_task_type"].items())},
                                    "task type"))
    dropped = figures["dropped_clips"]
    reasons = Counter(d["reason"].split(" (")[0] for d in dropped)
    console.out.print(f"{report.counts.get('interval_qa', 0)} questions from {figures['usable_videos']} of "
                      f"{figures['videos']} videos; {len(dropped)} clips dropped "
                      f"({', '.join(f'{n} {r}' for r, n in reasons.items()) or 'none'})")
    if figures["llm_skipped"]:
        console.out.print(figures["llm_skipped"])
    if report.llm:
        u = report.llm
        cost = f", cost ${u['cost_usd']:.4f}" if u.get("cost_usd") is not None else ""
        console.out.print(f"LLM {u['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
                          f"{u['invalid_answers']} invalid answers retried, "
                          f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens{cost}")


def print_guidance_summary(guidance_path: Path, videos_path: Path) -> None:
    """The :func:`guidance_summary` tables of a guidance build, printed."""
    summary = guidance_summary(read_jsonl(guidance_path), read_jsonl(videos_path))
    console.out.print(console.table(f"guidance records ({guidance_path})", summary["columns"], summary["rows"],
                                    "split"))
    console.out.print(console.table("mistakes by category", ["mistakes"],
                                    {k: {"mistakes": v} for k, v in summary["mistakes_by_category"].items()},
                                    "category"))


def print_task_summary(result: Any, report: BuildReport) -> None:
    """Records by group and task, the counts written and the source's quirks, then its warnings (what ``streamcue
    build`` prints for a builder of a published benchmark's question files)."""
    summary = report.details
    rows = {f"{group} {task}": {"records": n}
            for group, tasks in summary["by_task"].items() for task, n in tasks.items()}
    console.out.print(console.table("records by group and task", ["records"], rows, "task"))
    quirks = ", ".join(f"{n} {name}" for name, n in summary["quirks"].items()) or "none"
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    console.out.print(f"wrote {counts} to {result.out} (quirks: {quirks}; see build_report.json)")
    for line in summary.get("warnings", []):
        console.err.print(f"warning: {line}", markup=False, soft_wrap=True)


def print_llm_usage(usage: Mapping[str, Any]) -> None:
    """One line of a build's LLM usage: calls, cache hits, invalid answers retried and tokens."""
    console.out.print(
        f"LLM {usage['model']}: {usage['calls']} calls, {usage['cache_hits']} cache hits, "
        f"{usage['invalid_answers']} invalid answers retried, {usage['prompt_tokens']} prompt + "
        f"{usage['completion_tokens']} completion tokens",
        markup=False,
    )
