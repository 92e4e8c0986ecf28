"""PhoStream (ICML 2026), ``phostream_annotations.json`` -> ``active_item`` and ``video`` records.

Source: Lucky-Lance/PhoStream ``dataset/phostream_annotations.json`` (MIT), commit
ed7543d6f580278db795e618c22730ca56a9807b. The file is a JSON list of videos ``{video_path,
verified_responses: [{user_query, timestamp_question "MM:SS", time_type, response, capability,
timestamp_proactive "MM:SS" (forward questions)}]}``: open questions asked at a moment of the stream;
an ``instant`` or ``backward`` question is to be answered at once, a ``forward`` one when the video
reaches its proactive time.

* Every question becomes one ``active_item``: ``item_id`` ``phostream-<video>-<question>`` (0-based
  positions in the file: the official scorer matches a video's responses to its questions in this
  order), ``group`` its time type, ``task`` its capability, ``question``, ``query_time_s``, no probes,
  ``target`` the gold answer time (the proactive time of a forward question, else the question time)
  with the reference answer.
* Every video becomes one ``video`` record (source ``phostream``; not redistributed, duration unknown).

Refused (an :class:`~streamcue.errors.InputError` naming the file, the video ``#n`` and the field): a file
that is not a JSON list, an empty list, a time type other than instant / backward / forward, an empty
question or answer, a time that is not ``MM:SS``, a forward question without its proactive time or with
one before the question, a video path that leaves the video root.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamcue.dataset_builders.bench_sources import VideoIndex, canonical, parse_time, read_video_list, relative_uri
from streamcue.dataset_builders.output import BuildReport
from streamcue.errors import InputError
from streamcue.fields import field as required
from streamcue.fields import text
from streamcue.prologue import input_path
from streamcue.schemas import SCHEMA_VERSION
from streamcue.version import __version__

__all__ = ["TIME_TYPES", "Config", "build", "example_config"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("active_item", "video")
SUMMARY = "active_item records from PhoStream (phostream_annotations.json): open questions by time type"
HELP = """Convert PhoStream: every question becomes an active_item asked at its time, answered by its gold time.

Videos are not copied: videos.jsonl lists each one's path relative to your PhoStream video root."""
EXAMPLE = ("streamcue build phostream --annotations ../shared/data/phostream/phostream_annotations.json "
           "--out out/phostream")

#: PhoStream's three time types (its paper and ``run_stream_eval.py``).
TIME_TYPES = ("instant", "backward", "forward")
LICENSE = "not redistributed: PhoStream video (YouTube, EgoBlind or phone recordings); see Lucky-Lance/PhoStream"


@dataclass(frozen=True)
class Config:
    """``annotations``: PhoStream's ``dataset/phostream_annotations.json``."""

    annotations: Path = input_path("--annotations", help="PhoStream's dataset/phostream_annotations.json.")


def _item(qa: Any, n: int, k: int, file: Path) -> dict[str, Any]:
    """One question as the fields of its ``active_item``."""
    rid, where = f"#{n}", f"verified_responses[{k}]."
    if not isinstance(qa, dict):
        raise InputError(f"expected an object, got {type(qa).__name__}", file=file, record=rid,
                         field=where.rstrip("."))
    kind = required(qa, "time_type", file, rid, where)
    if kind not in TIME_TYPES:
        raise InputError(f"unknown time type {kind!r}; PhoStream's: {', '.join(TIME_TYPES)}", file=file, record=rid,
                         field=where + "time_type")
    out = {}
    for name in ("user_query", "response", "capability"):
        out[name] = text(qa, name, file, rid, where)
        if not out[name].strip():
            raise InputError(f"empty {name}", file=file, record=rid, field=where + name)
    asked = parse_time(required(qa, "timestamp_question", file, rid, where), file, rid, where + "timestamp_question")
    due = asked
    if kind == "forward":
        due = parse_time(required(qa, "timestamp_proactive", file, rid, where), file, rid,
                         where + "timestamp_proactive")
        if due < asked:
            raise InputError(f"proactive time {due:g} s is before the question ({asked:g} s)", file=file, record=rid,
                             field=where + "timestamp_proactive")
    return {"task": out["capability"], "group": kind, "question": out["user_query"], "query_time_s": asked,
            "probes": [], "target": {"t_s": due, "text": out["response"]}}


def build(config: Config, report: BuildReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield the ``video`` records, then one ``active_item`` per question, in file order; fill ``report``'s
    details with the questions by time type and by capability."""
    report = report if report is not None else BuildReport("phostream")
    file = Path(config.annotations)
    data = read_video_list(file)
    videos = VideoIndex("phostream", LICENSE)
    items: list[dict[str, Any]] = []
    for n, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError(f"expected an object, got {type(entry).__name__}", file=file, record=f"#{n}")
        uri = relative_uri(required(entry, "video_path", file, f"#{n}"), file, f"#{n}", "video_path")
        video_id = videos.add(uri)
        questions = required(entry, "verified_responses", file, f"#{n}")
        if not isinstance(questions, list):
            raise InputError("expected a list of questions", file=file, record=f"#{n}", field="verified_responses")
        for k, qa in enumerate(questions):
            items.append({"schema_version": SCHEMA_VERSION, "item_id": f"phostream-{n}-{k}", "video_id": video_id,
                          "benchmark": "phostream", **_item(qa, n, k, file),
                          "provenance": {"builder": "phostream", "version": __version__, "source": file.name},
                          "verification": {"status": "unverified"}})
    report.details = {"videos": len(data), "by_time_type": _counts(items, "group"),
                      "by_capability": _counts(items, "task")}
    for video in videos.records():
        yield "video", video
    for item in items:
        yield "active_item", canonical(item, "active_item")


def _counts(items: list[dict[str, Any]], key: str) -> dict[str, int]:
    return dict(sorted(Counter(item[key] for item in items).items()))


def example_config(data_root: Path) -> Config:
    """The smallest real input, for the contract tests and a first try: the whole file (``phostream/`` under
    ``data_root``; MIT)."""
    return Config(Path(data_root) / "phostream" / "phostream_annotations.json")
