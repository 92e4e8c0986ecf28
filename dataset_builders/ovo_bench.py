"""OVO-Bench annotations (``ovo_bench_new.json``) -> ``mc_question``, ``active_item`` and ``video`` records.

* Backward tracing (EPM, ASI, HLD) and real-time perception (STU, OJR, ATR, ACR, OCR, FPD) become
  ``mc_question`` records: the question is asked at ``realtime``; ``gt`` is the correct option.
* Forward active responding (REC, SSR, CRR) becomes ``active_item`` records: every entry of
  ``test_info`` is a probe with its expected answer (REC: the count so far; SSR, CRR: ``Yes`` for
  type 1, ``No`` for type 0).

Quirks are kept as they are and counted in the build report: an ``answer`` text that is not the
text of option ``gt`` (``answer_text_differs``), one that is the text of another option
(``answer_names_other_option``; ``gt`` wins, as in the official scorer), two options with the
same text (``duplicate_options``), times given as
HH:MM:SS strings. The annotations are CC BY-NC-SA 4.0: convert them locally, never redistribute.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.bench_sources import QuirkReport, VideoIndex, canonical, parse_time, relative_uri
from streamcue.dataset_builders.summaries import WARN_INCONSISTENT, print_task_summary
from streamcue.errors import InputError
from streamcue.prologue import input_path, option
from streamcue.fields import field
from streamcue.io import read_json
from streamcue.schemas import SCHEMA_VERSION
from streamcue.version import __version__

__all__ = ["Config", "build", "example_config", "GROUPS", "TASK_GROUP"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("mc_question", "active_item", "video")
SUMMARY = "mc_question and active_item records from OVO-Bench's annotation file"
#: The report it fills instead of the BuildReport: its ``to_dict()`` becomes the build report's details.
FIGURES = "QuirkReport"
#: ``streamcue build ovo-bench`` is generated from :class:`Config`: its help, then its example.
HELP = """Convert OVO-Bench: backward and real-time questions to mc_question, forward REC/SSR/CRR to active_item.

Videos are not copied: videos.jsonl lists each one's path relative to your OVO-Bench video
root. The annotations are CC BY-NC-SA 4.0: convert locally, do not redistribute."""
EXAMPLE = "streamcue build ovo-bench --annotations ../shared/data/ovo_bench/ovo_bench_new.json --out out/ovo"
#: What the command prints after the build: records by group and task, then the quirks.
print_summary = print_task_summary

#: OVO-Bench's three groups and their tasks (paper Sec. 3; the same in utils/OVOBenchScore.py).
GROUPS: dict[str, tuple[str, ...]] = {
    "backward": ("EPM", "ASI", "HLD"),
    "realtime": ("STU", "OJR", "ATR", "ACR", "OCR", "FPD"),
    "forward": ("REC", "SSR", "CRR"),
}
TASK_GROUP = {task: group for group, tasks in GROUPS.items() for task in tasks}
LICENSE = "not redistributed: see the licence of the source dataset ({}) that OVO-Bench draws it from"


@dataclass(frozen=True)
class Config:
    annotations: Path = input_path("--annotations", help="OVO-Bench's data/ovo_bench_new.json.")
    #: keep items no one can answer (an SSR probe about a step the item does not list), counted as quirks with a
    #: warning each in the build report, instead of stopping the build
    warn_inconsistent: bool = option(WARN_INCONSISTENT, default=False)


def _provenance(source: str) -> dict[str, Any]:
    return {"builder": "ovo-bench", "version": __version__, "source": source}


def _common(video_id: str, task: str, source: str) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "video_id": video_id, "benchmark": "ovo-bench", "task": task,
            "group": TASK_GROUP[task], "provenance": _provenance(source), "verification": {"status": "unverified"}}


def _time(item: Any, key: str, file: Path, rid: str, report: QuirkReport, where: str = "") -> float:
    return parse_time(field(item, key, file, rid, where), file, rid, where + key, report)


def _mc(item: dict[str, Any], rid: str, file: Path, report: QuirkReport) -> dict[str, Any]:
    options = field(item, "options", file, rid)
    if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
        raise InputError("expected a list of at least two option texts", file=file, record=rid, field="options")
    gt = field(item, "gt", file, rid)
    if isinstance(gt, bool) or not isinstance(gt, int) or not 0 <= gt < len(options):
        raise InputError(f"option index {gt!r} is out of range ({len(options)} options)", file=file, record=rid,
                         field="gt")
    if len(set(options)) < len(options):
        report.quirk("duplicate_options", rid)
    answer = item.get("answer")
    if isinstance(answer, str) and answer != options[gt]:
        report.quirk("answer_text_differs", rid)
        if answer in options:
            report.quirk("answer_names_other_option", rid)
    question = field(item, "question", file, rid)
    if not isinstance(question, str) or not question.strip():
        raise InputError("expected a question text", file=file, record=rid, field="question")
    return {"question_id": f"ovo-{item['id']}", "question": question, "options": options, "answer": gt,
            "answer_text": answer if isinstance(answer, str) else None,
            "query_time_s": _time(item, "realtime", file, rid, report)}


def _probes(item: dict[str, Any], task: str, rid: str, file: Path, report: QuirkReport) -> list[dict[str, Any]]:
    test_info = field(item, "test_info", file, rid)
    if not isinstance(test_info, list) or not test_info:
        raise InputError("expected a non-empty list of probes", file=file, record=rid, field="test_info")
    probes = []
    for i, probe in enumerate(test_info):
        where = f"test_info[{i}]."
        t_s = _time(probe, "realtime", file, rid, report, where)
        if task == "REC":
            count = field(probe, "count", file, rid, where)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise InputError(f"expected a count >= 0, got {count!r}", file=file, record=rid, field=where + "count")
            probes.append({"t_s": t_s, "expected": str(count), "step": None})
            continue
        kind = field(probe, "type", file, rid, where)
        if kind not in (0, 1) or isinstance(kind, bool):
            raise InputError(f"expected type 0 or 1, got {kind!r}", file=file, record=rid, field=where + "type")
        entry = {"t_s": t_s, "expected": "Yes" if kind == 1 else "No", "step": None}
        if task == "SSR":
            step = field(probe, "step", file, rid, where)
            if not isinstance(step, str) or not step.strip():
                raise InputError(f"expected a step text, got {step!r}", file=file, record=rid, field=where + "step")
            steps = item.get("all_steps")
            if isinstance(steps, list) and step not in steps:
                report.inconsistent("probe_step_not_in_item", f"probe about the step {step!r}, which is not one of "
                                    f"the item's {len(steps)} all_steps", file=file, record=rid, field=where + "step")
            entry["step"] = step
        probes.append(entry)
    return probes


def _spans(item: dict[str, Any], starts: str, ends: str, texts: str | None, rid: str, file: Path,
           report: QuirkReport) -> list[dict[str, Any]]:
    start, end = field(item, starts, file, rid), field(item, ends, file, rid)
    labels = field(item, texts, file, rid) if texts else [None] * len(start)
    if not (isinstance(start, list) and isinstance(end, list) and isinstance(labels, list)) \
            or not len(start) == len(end) == len(labels):
        raise InputError(f"{starts} and {ends} must be lists of the same length", file=file, record=rid, field=ends)
    spans = []
    for i, (s, e, text) in enumerate(zip(start, end, labels)):
        s_s = parse_time(s, file, rid, f"{starts}[{i}]", report)
        e_s = parse_time(e, file, rid, f"{ends}[{i}]", report)
        if e_s < s_s:
            raise InputError(f"span {i} ends at {e_s} s, before it starts ({s_s} s)", file=file, record=rid,
                             field=f"{ends}[{i}]")
        if text is not None and not isinstance(text, str):
            raise InputError(f"expected a step text, got {text!r}", file=file, record=rid, field=f"{texts}[{i}]")
        spans.append({"start_s": s_s, "end_s": e_s, "text": text})
    return spans


def _active(item: dict[str, Any], task: str, rid: str, file: Path, report: QuirkReport) -> dict[str, Any]:
    probes = _probes(item, task, rid, file, report)
    record: dict[str, Any] = {"item_id": f"ovo-{item['id']}", "probes": probes}
    if task == "CRR":
        record["question"] = str(field(item, "question", file, rid))
        record["query_time_s"] = _time(item, "ask_time", file, rid, report)
        record["clue_time_s"] = _time(item, "clue_time", file, rid, report)
    else:
        record["query_time_s"] = min(p["t_s"] for p in probes)
    if task == "REC":
        record["activity"] = str(field(item, "activity", file, rid))
        record["spans"] = _spans(item, "start_times", "end_times", None, rid, file, report)
    if task == "SSR":
        record["spans"] = _spans(item, "start_time", "end_time", "all_steps", rid, file, report)
        if item.get("tutorial") is not None:
            record["activity"] = str(item["tutorial"])
    return record


def build(config: Config, report: QuirkReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(kind, record)`` pairs for every item of the annotation file; fill ``report``."""
    report = report if report is not None else QuirkReport()
    report.warn = config.warn_inconsistent
    file = Path(config.annotations)
    data = read_json(file)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of items, got {type(data).__name__}", file=file)
    source = file.name
    report.sources.append(source)
    videos = VideoIndex("ovo-bench", LICENSE.format("unknown"))
    seen: set[Any] = set()
    out: list[tuple[str, dict[str, Any]]] = []
    for n, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError(f"expected an object, got {type(item).__name__}", file=file, record=f"#{n}")
        item_id = field(item, "id", file, f"#{n}")
        if isinstance(item_id, bool) or not isinstance(item_id, (int, str)) or str(item_id) == "":
            raise InputError(f"expected an id, got {item_id!r}", file=file, record=f"#{n}", field="id")
        rid = f"id={item_id}"
        if item_id in seen:
            raise InputError("duplicate id", file=file, record=rid, field="id")
        seen.add(item_id)
        task = field(item, "task", file, rid)
        if not isinstance(task, str) or task not in TASK_GROUP:
            raise InputError(f"unknown task code {task!r}; OVO-Bench tasks: {', '.join(TASK_GROUP)}",
                             file=file, record=rid, field="task")
        uri = relative_uri(field(item, "video", file, rid), file, rid, "video")
        video_id = videos.add(uri, LICENSE.format(uri.split("/")[0]))
        base = _common(video_id, task, source)
        if TASK_GROUP[task] == "forward":
            record = {**base, **_active(item, task, rid, file, report)}
            kind = "active_item"
        else:
            record = {**base, **_mc(item, rid, file, report)}
            kind = "mc_question"
        report.count(kind, TASK_GROUP[task], task)
        out.append((kind, canonical(record, kind)))
    if not out:
        raise InputError("no items in the list: nothing to convert", file=file)
    report.counts["video"] = len(videos.by_uri)
    for video in videos.records():
        yield "video", video
    yield from out


def example_config(data_root: Path) -> Config:
    """The smallest real input, for the contract tests and a first try: the first record of each task
    (``fixtures/ovo_bench/`` under ``data_root``; CC BY-NC-SA: tests and local use only)."""
    return Config(Path(data_root) / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json")
