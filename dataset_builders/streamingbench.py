"""StreamingBench question files (``questions_*.json``) -> ``mc_question``, ``active_item`` and ``video`` records.

By default the paper's set is converted: ``questions_real.json``, ``questions_omni.json``,
``questions_sqa.json`` and ``questions_proactive.json`` (:data:`PAPER_FILES`: 2,500 + 1,500 + 250
multiple-choice questions and 250 proactive items, the paper's 4,500); ``all_files``
(``--all-files``) converts every ``questions_*.json`` of the folder (the ``_stream`` and ``_50``
variants too, which repeat the paper's questions), ``subsets`` (``--subset``) the files named. Each
record keeps its ``subset`` and the benchmark's own
``group`` (the ``count.py`` task: real, omni, sqa, proactive) and ``task`` (``task_type`` as in
the files). ``paper_group`` is the paper's category, which differs for the omni file's
Misleading and Anomaly Context Understanding (the paper files them under contextual
understanding, beside SQA and Proactive Output).

Quirks, handled and counted in the build report: times as HH:MM:SS strings (``hms_time``),
other clock strings such as ``00:24`` or the typo ``00:12450``, read as the official code reads
them (``irregular_time``),
options without their ``A. `` prefix (``options_without_prefix``, SQA; the official prompt adds
them), empty option strings (``empty_options``: dropped, the others keep their letters), options
whose letters are not A, B, C, ... in order (``mislabelled_options``: an answer letter names the
first option shown with it), an option broken over two strings (``split_options``: joined), an SQA file given as a
list of lists (``sqa_list_of_lists``), a question (or a proactive ground-truth time) after the
end of its ``time`` span (``question_after_clip``, ``target_after_clip``), spans written
without brackets, with a full-width bracket or one-digit seconds (``irregular_span``), spans
that end before they start (``inverted_span``: the record gets no clip), and, in the default
build, a file of the paper's set the folder lacks (``paper_file_missing``: built without it).
"""

from __future__ import annotations

import re
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

__all__ = ["Config", "build", "example_config", "iter_questions", "question_files", "PAPER_GROUP", "GROUPS", "TASKS",
           "PAPER_FILES"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("mc_question", "active_item", "video")
SUMMARY = "mc_question and active_item records from StreamingBench's question files"
#: The report it fills instead of the BuildReport: its ``to_dict()`` becomes the build report's details.
FIGURES = "QuirkReport"
#: ``streamcue build streamingbench`` is generated from :class:`Config`: its help, then its example.
HELP = """Convert StreamingBench: real, omni and SQA questions to mc_question, proactive ones to active_item.

By default the paper's 4,500 questions: questions_real, _omni, _sqa and _proactive.json
(--all-files: every questions_*.json, the _stream and _50 variants too; each record names its
subset). Videos are not copied: videos.jsonl lists relative paths."""
EXAMPLE = "streamcue build streamingbench --questions ../shared/data/streamingbench --out out/sb"
#: What the command prints after the build: records by group and task, then the quirks.
print_summary = print_task_summary

GROUPS = ("real", "omni", "sqa", "proactive")
#: The files of the paper's 4,500 questions (Lin et al., 2024, Table 1), converted by default.
PAPER_FILES = ("real", "omni", "sqa", "proactive")
#: The task types of each count.py group, as named in the files (an unknown one stops the build, as in OVO-Bench;
#: ``--warn-inconsistent`` keeps it as its own task, counted as ``unknown_task_type``).
TASKS: dict[str, tuple[str, ...]] = {
    "real": ("Object Recognition", "Attribute Recognition", "Clips Summarize", "Prospective Reasoning",
             "Action Recognition", "Spatial Understanding", "Event Understanding", "Counting",
             "Text-Rich Understanding", "Causal Reasoning"),
    "omni": ("Misleading Context Understanding", "Source Discrimination", "Emotion Recognition",
             "Anomaly Context Understanding", "Scene Understanding", "Multimodal Alignment"),
    "sqa": ("Sequential Question Answering",),
    "proactive": ("Proactive Output",),
}
CONTEXTUAL = ("Misleading Context Understanding", "Anomaly Context Understanding")
#: The paper's three categories, by the count.py group (omni splits: CONTEXTUAL go to contextual).
PAPER_GROUP = {"real": "real-time visual understanding", "omni": "omni-source understanding",
               "sqa": "contextual understanding", "proactive": "contextual understanding"}
LICENSE = "not redistributed: see StreamingBench's video sources"
_PREFIX = re.compile(r"^\s*([A-Z])\s*[.)]\s*")
_SPAN = re.compile(r"^\s*[\[【]?\s*([0-9:.]+)\s*-\s*([0-9:.]+)\s*[\]】]?\s*$")
_CANONICAL_SPAN = re.compile(r"^\[\d+:\d\d:\d\d - \d+:\d\d:\d\d\]$")


@dataclass(frozen=True)
class Config:
    questions: Path = input_path("--questions", folder=True,
                                 help="StreamingBench's src/data folder with the questions_*.json files.")
    #: empty: the paper's files (PAPER_FILES), or every file with all_files
    subsets: tuple[str, ...] = option("Convert only questions_<SUBSET>.json (repeatable), e.g. real, sqa, proactive, "
                                      "real_stream.", name="--subset", default=())
    #: keep questions no one can answer (a proactive target before its question, an unknown task type), counted
    #: as quirks with a warning each in the build report, instead of stopping the build
    warn_inconsistent: bool = option(WARN_INCONSISTENT, default=False)
    #: every questions_*.json of the folder, the _stream and _50 variants too, instead of the paper's files
    all_files: bool = option("Convert every questions_*.json of the folder, the _stream and _50 variants too (they "
                             "repeat the paper's questions), instead of the paper's four files.", default=False)


def question_files(folder: Path, subsets: tuple[str, ...] = (), *, all_files: bool = False
                   ) -> list[tuple[str, Path]]:
    """``(subset, path)`` of the folder's question files, in name order: those named in ``subsets``, else every
    file (``all_files``) or the paper's files present (:data:`PAPER_FILES`; none of them is an error)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("not a folder (expected StreamingBench's src/data with questions_*.json)", file=folder)
    found = {p.stem.removeprefix("questions_"): p for p in sorted(folder.glob("questions_*.json"))}
    if not found:
        raise InputError("no questions_*.json files", file=folder)
    for subset in subsets:
        if subset not in found:
            raise InputError(f"no questions_{subset}.json (found: {', '.join(found)})", file=folder)
    if subsets or all_files:
        return [(s, p) for s, p in found.items() if all_files and not subsets or s in subsets]
    paper = [(s, p) for s, p in found.items() if s in PAPER_FILES]
    if not paper:
        raise InputError(f"none of the paper's files ({', '.join(f'questions_{s}.json' for s in PAPER_FILES)}); "
                         "--all-files converts every questions_*.json, --subset the ones named", file=folder)
    return paper


def group_of(subset: str, file: Path) -> str:
    group = subset.split("_")[0]
    if group not in GROUPS:
        raise InputError(f"unknown StreamingBench questions file: the name should start with questions_ and one of "
                         f"{', '.join(GROUPS)}", file=file)
    return group


def iter_questions(data: Any, subset: str, file: Path,
                   report: QuirkReport | None = None) -> Iterator[tuple[str, str, int, dict[str, Any], dict[str, Any]]]:
    """``(question_id, video_key, turn, entry, question)`` in file order (flat files and SQA's list of lists).

    ``video_key`` and ``turn`` number the questions of one top-level item (SQA: one video's
    sequence); ids are positions, so a model's answer file (the same file with answers added)
    maps back to the same ids.
    """
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list, got {type(data).__name__}", file=file)
    for i, outer in enumerate(data):
        nested = isinstance(outer, list)
        if nested and report is not None:
            report.quirk("sqa_list_of_lists", f"{subset}-{i}")
        entries = outer if nested else [outer]
        turn = 0
        for j, entry in enumerate(entries):
            where = f"{subset}-{i}" + (f"-{j}" if nested else "")
            questions = field(entry, "questions", file, f"entry {where}")
            if not isinstance(questions, list):
                raise InputError("expected a list of questions", file=file, record=f"entry {where}", field="questions")
            for k, question in enumerate(questions):
                if not isinstance(question, dict):
                    raise InputError("expected an object", file=file, record=f"{where}-{k}")
                turn += 1
                yield f"{where}-{k}", f"{subset}-{i}", turn, entry, question


def _span(text: Any, file: Path, rid: str, name: str, report: QuirkReport) -> dict[str, float] | None:
    if text is None:
        return None
    match = _SPAN.match(text) if isinstance(text, str) else None
    if match and not _CANONICAL_SPAN.match(text):
        report.quirk("irregular_span", rid)
    if not match:
        raise InputError(f"expected a span like [0:00:00 - 0:01:00], got {text!r}", file=file, record=rid, field=name)
    start = parse_time(match.group(1), file, rid, name)
    end = parse_time(match.group(2), file, rid, name)
    if end < start:
        report.quirk("inverted_span", rid)
        return None
    return {"start_s": start, "end_s": end}


def _options(question: dict[str, Any], file: Path, rid: str, report: QuirkReport) -> tuple[list[str], list[str]]:
    """Option texts without prefixes, and the letter each is shown with (what an answer names)."""
    options = field(question, "options", file, rid)
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise InputError("expected a list of option texts", file=file, record=rid, field="options")
    kept = [o for o in options if o.strip()]
    if len(kept) < len(options):
        report.quirk("empty_options", rid)
    if len(kept) < 2:
        raise InputError("expected at least two non-empty options", file=file, record=rid, field="options")
    prefixed = sum(bool(_PREFIX.match(o)) for o in kept)
    if _PREFIX.match(kept[0]) and 2 <= prefixed < len(kept):
        report.quirk("split_options", rid)  # an option broken over two strings: join the pieces
        joined: list[str] = []
        for text in kept:
            if _PREFIX.match(text) or not joined:
                joined.append(text)
            else:
                joined[-1] += " " + text
        kept = joined
    matches = [_PREFIX.match(o) for o in kept]
    positional = [chr(65 + i) for i in range(len(kept))]
    if all(matches):
        labels = [m.group(1) for m in matches]
        if labels != positional:
            report.quirk("mislabelled_options", rid)
        return [o[m.end():] for o, m in zip(kept, matches)], labels
    if not any(matches):
        report.quirk("options_without_prefix", rid)
        return kept, positional
    report.quirk("mixed_option_prefixes", rid)  # e.g. only "A.Lebrun." prefixed: strip where the letter fits
    return [o[m.end():] if m and m.group(1) == p else o for o, m, p in zip(kept, matches, positional)], positional


def _optional_text(obj: dict[str, Any], key: str, file: Path, rid: str) -> str | None:
    """A text field the records copy as it is: a string or absent/null, else refused naming the source."""
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"expected text or null, got {type(value).__name__}", file=file, record=rid, field=key)
    return value


def _time(obj: Any, key: str, file: Path, rid: str, report: QuirkReport) -> float:
    return parse_time(field(obj, key, file, rid), file, rid, key, report)


def _record(subset: str, group: str, qid: str, video_key: str, turn: int, entry: dict[str, Any],
            question: dict[str, Any],
            file: Path, videos: VideoIndex, report: QuirkReport) -> tuple[str, dict[str, Any]]:
    rid = qid
    task = field(question, "task_type", file, rid)
    if not isinstance(task, str) or not task:
        raise InputError(f"expected a task type, got {task!r}", file=file, record=rid, field="task_type")
    if task not in TASKS[group]:
        report.inconsistent("unknown_task_type", f"unknown task type {task!r} for a {group} question; "
                            f"StreamingBench {group} tasks: {', '.join(TASKS[group])}", file=file, record=rid,
                            field="task_type")
    uri = relative_uri(entry.get("video_path", question.get("video_path")), file, rid, "video_path")
    video_id = videos.add(uri)
    clip = _span(question.get("time", entry.get("time")), file, rid, "time", report)
    text = field(question, "question", file, rid)
    if not isinstance(text, str) or not text.strip():
        raise InputError("expected a question text", file=file, record=rid, field="question")
    t_s = _time(question, "time_stamp", file, rid, report)
    if clip and t_s > clip["end_s"]:
        report.quirk("question_after_clip", rid)
    paper = "contextual understanding" if task in CONTEXTUAL else PAPER_GROUP[group]
    base = {"schema_version": SCHEMA_VERSION}
    common = {"video_id": video_id, "benchmark": "streamingbench", "task": task, "group": group,
              "paper_group": paper, "subset": subset, "question": text, "query_time_s": t_s,
              **({"clip": clip} if clip else {}),
              "required_ability": _optional_text(question, "required_ability", file, rid),
              "category": _optional_text(entry, "video_categories", file, rid),
              "provenance": {"builder": "streamingbench", "version": __version__, "source": file.name},
              "verification": {"status": "unverified"}}
    if group == "proactive":
        gt_t = _time(question, "ground_truth_time_stamp", file, rid, report)
        if gt_t < t_s:
            report.inconsistent("target_before_question", f"the answer is due at {gt_t} s, before the question is "
                                f"asked at {t_s} s", file=file, record=rid, field="ground_truth_time_stamp")
        if clip and gt_t > clip["end_s"]:
            report.quirk("target_after_clip", rid)
        output = field(question, "ground_truth_output", file, rid)
        if not isinstance(output, str) or not output:
            raise InputError("expected the ground-truth output text", file=file, record=rid,
                             field="ground_truth_output")
        return "active_item", {**base, "item_id": qid, **common, "probes": [], "target": {"t_s": gt_t, "text": output}}
    options, labels = _options(question, file, rid, report)
    answer = field(question, "answer", file, rid)
    index = labels.index(answer) if answer in labels else None
    if index is None:
        raise InputError(f"answer {answer!r} is not an option letter of {len(options)} options", file=file,
                         record=rid, field="answer")
    record = {**base, "question_id": qid, **common, "options": options, "answer": index, "answer_text": None,
              "audio_uri": relative_uri(question["audio_path"], file, rid, "audio_path")
              if question.get("audio_path") else None}
    if group == "sqa":
        record["context"] = {"group_id": video_key, "turn": turn}
    return "mc_question", record


def build(config: Config, report: QuirkReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(kind, record)`` pairs for every question of every file; fill ``report``."""
    report = report if report is not None else QuirkReport()
    report.warn = config.warn_inconsistent
    videos = VideoIndex("streamingbench", LICENSE)
    out: list[tuple[str, dict[str, Any]]] = []
    files = question_files(config.questions, config.subsets, all_files=config.all_files)
    if not config.subsets and not config.all_files:  # a paper's file the folder lacks: counted, named
        for subset in (s for s in PAPER_FILES if s not in dict(files)):
            report.quirk("paper_file_missing", f"questions_{subset}.json")
    for subset, path in files:
        group = group_of(subset, path)
        report.sources.append(path.name)
        for qid, video_key, turn, entry, question in iter_questions(read_json(path), subset, path, report):
            kind, record = _record(subset, group, qid, video_key, turn, entry, question, path, videos, report)
            report.count(kind, subset, record["task"])
            out.append((kind, canonical(record, kind)))
    if not out:
        raise InputError("no questions in the questions_*.json files: nothing to convert", file=config.questions)
    report.counts["video"] = len(videos.by_uri)
    for video in videos.records():
        yield "video", video
    yield from out


def example_config(data_root: Path) -> Config:
    """The smallest real input, for the contract tests and a first try: the two smallest question files
    of ``streamingbench/`` under ``data_root`` (SQA multiple choice and 50 proactive items)."""
    return Config(Path(data_root) / "streamingbench", ("proactive_50", "sqa"))
