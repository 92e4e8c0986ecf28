"""StreamBench (StreamChat), OASIS's unified file ``eval_streambench.json`` -> ``open_question`` and ``video`` records.

Source: Solus-sano/OASIS ``metadata/eval_streambench.json`` (MIT), StreamBench itself from
hmxiong/StreamChat (MIT; Xiong et al., ICLR 2025). The file is a JSON list of video entries
``{info: {video_path, video_name?, class_1, class_2, dataset}, breakpoint: [{question, answer,
class, time, type}]}``: each breakpoint is an open-ended question asked ``time`` seconds into the
stream (the model has seen the video up to then), with a reference answer and one of six classes
(:data:`CLASSES`).

* Every breakpoint becomes one ``open_question``: ``question_id`` ``streambench-<entry>-<breakpoint>``
  (0-based positions in the file), ``task`` its class, ``group`` the video domain (``class_1``: Ego,
  WebVideo, Movie), ``category`` the video type (``class_2``), ``query_time_s`` its ``time``,
  ``context`` the entry and the question's turn in the order the stream asks them (by time).
* Every distinct ``video_path`` becomes one ``video`` record (source ``streambench``; not
  redistributed, duration unknown).

Quirks of the source are kept and counted in the build report (``quirks``, with example ids):
``repeated_entry`` (an entry equal to an earlier one: the official evaluation asks and scores
its questions twice; ``Config.drop_repeated_entries`` leaves them out instead, counted in
``dropped``), ``video_in_two_entries`` (one video path in two entries, whatever their questions),
``no_video_name`` / ``video_name_differs`` (``video_name`` missing, or not the file's stem: the
path is used), ``domain_differs_from_folder`` (``class_1`` is not the video's folder),
``breakpoints_not_in_time_order``, ``repeated_question`` (the same text twice in one video,
asked at different times), ``untrimmed_text`` (spaces around a question or answer, kept as
given), ``no_questions`` (an entry without breakpoints: its video is listed, nothing asked).

What is refused (an :class:`~streamcue.errors.InputError` naming the file, the entry ``#n`` and
the field): a file that is not a JSON list, an empty list, an entry of another ``dataset``, a
class outside :data:`CLASSES`, a ``type`` other than ``open_ended``, an empty question or answer,
a time that is not seconds, a video path that leaves the video root.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from streamcue.dataset_builders.bench_sources import (QuirkReport, VideoIndex, canonical, parse_time, read_video_list,
                                                     relative_uri)
from streamcue.prologue import input_path, option
from streamcue.errors import InputError
from streamcue.fields import field as required
from streamcue.fields import items, text
from streamcue.schemas import SCHEMA_VERSION
from streamcue.version import __version__

__all__ = ["CLASSES", "Config", "StreamBenchReport", "build", "example_config"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("open_question", "video")
SUMMARY = "open_question records from StreamBench (OASIS's eval_streambench.json)"
#: The report it fills instead of the BuildReport: its ``to_dict()`` becomes the build report's details.
FIGURES = "StreamBenchReport"
#: ``streamcue build streambench`` is generated from :class:`Config`: its help, then its example.
HELP = """Convert StreamBench: every breakpoint becomes an open_question asked at its time.

Videos are not copied: videos.jsonl lists each one's path relative to your StreamBench video
root. Quirks of the source (repeated entries, missing video names, ...) are kept and counted."""
EXAMPLE = "streamcue build streambench --annotations ../shared/data/streambench/eval_streambench.json --out out/sb"

#: StreamBench's six question classes (StreamChat README, "StreamBench").
CLASSES: dict[str, str] = {
    "OS": "Object Search",
    "LM": "Long-term Memory Search",
    "SM": "Short-term Memory Search",
    "CI": "Conversational Interaction",
    "KG": "Knowledge-based Question Answering",
    "SF": "Simple Factual",
}
LICENSE = "not redistributed: StreamBench {} video; see hmxiong/StreamChat for its source and terms"


@dataclass(frozen=True)
class Config:
    """``annotations``: OASIS's ``metadata/eval_streambench.json``. ``drop_repeated_entries``: leave out an
    entry equal to an earlier one (default: keep it, as the official evaluation does)."""

    annotations: Path = input_path("--annotations", help="OASIS's metadata/eval_streambench.json.")
    drop_repeated_entries: bool = option("Leave out an entry equal to an earlier one (the official evaluation asks "
                                         "its questions twice; kept by default).", default=False)


@dataclass
class StreamBenchReport(QuirkReport):
    """The quirk report plus the number of entries read and of entries dropped as repeats."""

    entries: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "entries": self.entries, "dropped": dict(sorted(self.dropped.items()))}


def _stripped(value: str) -> bool:
    return value != value.strip()


def _question(bp: Any, n: int, k: int, file: Path, report: StreamBenchReport) -> dict[str, Any]:
    rid, where = f"#{n}", f"breakpoint[{k}]."
    if not isinstance(bp, dict):
        raise InputError(f"expected an object, got {type(bp).__name__}", file=file, record=rid,
                         field=f"breakpoint[{k}]")
    kind = required(bp, "type", file, rid, where)
    if kind != "open_ended":
        raise InputError(f"expected type 'open_ended', got {kind!r}", file=file, record=rid, field=where + "type")
    cls = required(bp, "class", file, rid, where)
    if not isinstance(cls, str) or cls not in CLASSES:
        raise InputError(f"unknown class {cls!r}; StreamBench classes: {', '.join(CLASSES)}", file=file, record=rid,
                         field=where + "class")
    out = {}
    for name in ("question", "answer"):
        value = text(bp, name, file, rid, where)
        if not value.strip():
            raise InputError(f"empty {name}", file=file, record=rid, field=where + name)
        out[name] = value
    if _stripped(out["question"]) or _stripped(out["answer"]):
        report.quirk("untrimmed_text", f"streambench-{n}-{k}")
    t_s = parse_time(required(bp, "time", file, rid, where), file, rid, where + "time", report)
    return {"task": cls, **out, "query_time_s": t_s}


def build(config: Config, report: StreamBenchReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield the ``video`` records, then one ``open_question`` per breakpoint, in file order; fill ``report``."""
    report = report if report is not None else StreamBenchReport()
    file = Path(config.annotations)
    data = read_video_list(file)
    source = file.name
    report.sources.append(source)
    videos = VideoIndex("streambench", LICENSE.format("a"))
    seen_entries: dict[str, int] = {}
    entries_of_video: dict[str, int] = {}
    out: list[tuple[str, dict[str, Any]]] = []
    for n, entry in enumerate(data):
        rid = f"#{n}"
        if not isinstance(entry, dict):
            raise InputError(f"expected an object, got {type(entry).__name__}", file=file, record=rid)
        report.entries += 1
        info = required(entry, "info", file, rid)
        dataset = required(info, "dataset", file, rid, "info.")
        if dataset != "streambench":
            raise InputError(f"not a StreamBench entry (dataset {dataset!r})", file=file, record=rid,
                             field="info.dataset")
        breakpoints = items(entry, "breakpoint", file, rid)
        uri = relative_uri(required(info, "video_path", file, rid, "info."), file, rid, "info.video_path")
        domain = text(info, "class_1", file, rid, "info.")
        category = text(info, "class_2", file, rid, "info.")
        key = repr(entry)  # entries are plain JSON: equal entries have equal reprs
        if key in seen_entries:
            report.quirk("repeated_entry", f"{rid} (= #{seen_entries[key]})")
            if config.drop_repeated_entries:
                report.dropped["entries"] = report.dropped.get("entries", 0) + 1
                report.dropped["open_question"] = report.dropped.get("open_question", 0) + len(breakpoints)
                continue
        else:
            seen_entries[key] = n
        if uri in entries_of_video:
            report.quirk("video_in_two_entries", f"{rid} (and #{entries_of_video[uri]})")
        entries_of_video.setdefault(uri, n)
        name = info.get("video_name")
        if name is None:
            report.quirk("no_video_name", rid)
        elif name != PurePosixPath(uri).stem:
            report.quirk("video_name_differs", rid)
        if PurePosixPath(uri).parent.name != domain:
            report.quirk("domain_differs_from_folder", rid)
        video_id = videos.add(uri, LICENSE.format(domain))
        if not breakpoints:
            report.quirk("no_questions", rid)
        questions = [_question(bp, n, k, file, report) for k, bp in enumerate(breakpoints)]
        times = [q["query_time_s"] for q in questions]
        if times != sorted(times):
            report.quirk("breakpoints_not_in_time_order", rid)
        texts = [q["question"] for q in questions]
        if len(set(texts)) < len(texts):
            report.quirk("repeated_question", rid)
        turn = {k: i + 1 for i, k in enumerate(sorted(range(len(questions)), key=lambda k: times[k]))}
        for k, q in enumerate(questions):
            record = {"schema_version": SCHEMA_VERSION, "question_id": f"streambench-{n}-{k}", "video_id": video_id,
                      "benchmark": "streambench", "group": domain, "category": category, **q,
                      "context": {"group_id": f"streambench-{n}", "turn": turn[k]},
                      "provenance": {"builder": "streambench", "version": __version__, "source": source},
                      "verification": {"status": "unverified"}}
            report.count("open_question", domain, q["task"])
            out.append(("open_question", canonical(record, "open_question")))
    report.counts["video"] = len(videos.by_uri)
    for video in videos.records():
        yield "video", video
    yield from out


def example_config(data_root: Path) -> Config:
    """The smallest real input, for the contract tests and a first try: the whole file (``streambench/`` under
    ``data_root``; MIT)."""
    return Config(Path(data_root) / "streambench" / "eval_streambench.json")


def print_summary(result: Any, report: Any) -> None:
    """What ``streamcue build streambench`` prints: questions by video domain and class, then the quirks."""
    from streamcue import console

    details = report.details
    rows = {f"{domain} {cls}": {"questions": n} for domain, classes in details["by_task"].items()
            for cls, n in classes.items()}
    console.out.print(console.table("questions by video domain and class", ["questions"], rows, "class"))
    quirks = ", ".join(f"{n} {name}" for name, n in details["quirks"].items()) or "none"
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(result.counts.items()))
    console.out.print(f"wrote {counts} from {details['entries']} entries to {result.out} (quirks: {quirks}; "
                      "see build_report.json)")
