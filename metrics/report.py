"""Print a metric report as tables."""

from __future__ import annotations

from typing import Any

from streamcue import console

__all__ = ["print_report"]


def print_report(report: dict[str, Any]) -> None:
    overall = report["overall"]
    rows = [[name, value] for name, value in overall.items() if value is not None]
    console.out.print(console.table(f"{report['metric']} overall (config {report['config_version']})",
                                    ["score", "value"], rows))
    if report.get("overrides"):
        console.out.print("overridden parameters: " + ", ".join(f"{k}={v!r}" for k, v in report["overrides"].items()),
                          markup=False)
    for group, rows in report["groups"].items():
        if rows:
            cols = list(dict.fromkeys(col for row in rows.values() for col in row))
            console.out.print(console.table(f"by {group}", cols, rows, group))
    judge = report.get("judge")
    if judge:
        console.out.print(f"judge {judge['judge']}: {judge['distinct']} distinct of {judge['requested']} requests, "
                          f"{judge['calls']} judged, {judge['cache_hits']} from cache")
    if report.get("bertscore_model"):
        b = report["bertscore_model"]
        console.out.print(f"BERTScore model {b['model']}, layer {b['num_layers']}, "
                          f"on {report['overall']['feedback_pairs']} true-positive pairs")
    for note in report.get("notes") or []:
        console.out.print(f"note: {note}", markup=False)
    if report.get("coverage"):
        console.err.print(f"note: {report['coverage']['note']}", markup=False)
    if report["missing_predictions"]:
        how = report.get("missing_scored_as", "no response")
        console.err.print(f"warning: {len(report['missing_predictions'])} items have no prediction "
                          f"(scored as {how})",
                          markup=False)
    for warning in report.get("warnings") or []:  # prediction problems, counted and named (bench_readers.Problems)
        console.err.print(f"warning: {warning}", markup=False)
    if report.get("duplicates") and "warnings" not in report:
        console.err.print(f"warning: {len(report['duplicates'])} ids answered more than once: "
                          f"{', '.join(report['duplicates'][:10])}", markup=False)
