"""Recorded videos -> ``dense_caption`` records (VSAS-Bench style), and from them ``interval_qa`` and ``guidance``.

For every task of the tasks file the builder

1. makes sure the video is anonymized: it blurs it into ``OUT/videos/`` (kept when a passing
   report for the same input already exists), or, with ``anonymized=True``, requires a
   passing ``<stem>.anonymization.json`` beside the input that matches the file;
2. samples the anonymized video at 1 fps;
3. asks a vision model behind an OpenAI-compatible endpoint for the caption of each second,
   showing the task prompt, the frames that the SW+U memory keeps (k/2 most recent and k/2
   spread over the older ones, k = 42 as in VSAS-Bench's annotation) and its previous
   caption, so that unchanged scenes keep the same wording.

With ``interval_qa``, ESTP-Gen's caption stages turn each video's captions into proactive multi-interval
questions (:mod:`streamcue.dataset_builders.recorded_qa`); with ``guidance``, the task plan of a video
(a task with ``steps``) and its step marks, from annotators (``step_marks``) or drafted by the LLM from the
captions, become a LiveCook guidance record (:mod:`streamcue.dataset_builders.recorded_guidance`), with
LiveCook's augmentation of the train split (instruction-time jitter, :mod:`~streamcue.dataset_builders.jitter`)
and, with ``mistake_summaries``, LiveCook's mistake summaries for the validation and test plans
(:mod:`streamcue.dataset_builders.recorded_summaries`).

Answers go through streamcue's LLM layer: validated, retried, cached and counted. A killed
build resumes from the cache without repeating a call.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from streamcue import console
from streamcue.concurrency import in_order
from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, already_done, anonymize_video, output_paths
from streamcue.anonymize.report import report_problem
from streamcue.dataset_builders.output import BuildReport
from streamcue.dataset_builders.recorded_guidance import draft_marks, guidance_record, read_marks
from streamcue.dataset_builders.jitter import jitter_guidance
from streamcue.dataset_builders.recorded_qa import QAConfig, question_task, questions
from streamcue.dataset_builders.recorded_summaries import summaries
from streamcue.errors import InputError, RecordValidationError, check_every
from streamcue.extras import require
from streamcue.io import iter_jsonl
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.frame_memory import Frame, select_frames
from streamcue.paths import resolve_uri
from streamcue.prologue import check_numbers, input_path, output_path
from streamcue.progress import track
from streamcue.prompts import load_prompt
from streamcue.schemas import check
from streamcue.shared_options import LLMRetries, LLMTimeout, VisionBaseURL, VisionModel, VisionStructured
from streamcue.version import __version__

__all__ = ["PROMPT", "CAPTION_SCHEMA", "Config", "read_tasks", "prepare_video", "caption_task", "build"]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("dense_caption", "interval_qa", "guidance", "mistake_summary", "video")
SUMMARY = ("dense_caption (VSAS-Bench style), interval_qa (ESTP-Gen) and guidance (LiveCook) records from "
           "anonymized recorded videos")


PROMPT = "recorded_caption.v1"
CAPTION_SCHEMA = {"type": "object", "properties": {"caption": {"type": "string", "minLength": 1}},
                  "required": ["caption"], "additionalProperties": False}


@dataclass(frozen=True)
class Config:
    """``out`` is the build's output folder: blurred copies go to ``OUT/videos/``, and paths are relative to it."""

    videos: Path = input_path("--video-root", folder=True)
    tasks: Path = input_path("--tasks")
    out: Path = output_path("--out", "videos")
    llm: LLMSettings
    k: int = 42
    frame_side: int = 448          # frames sent to the model are scaled to this longest side
    jpeg_quality: int = 85
    anonymized: bool = False       # inputs are already blurred, each with a passing report beside it
    anonymize: AnonymizeConfig = field(default_factory=AnonymizeConfig)
    license: str = "CC BY 4.0"
    use_cache: bool = True
    concurrency: int | None = None  # videos processed at once (default: llm.max_concurrency)
    interval_qa: bool = False      # proactive questions from the captions (ESTP-Gen stages 3-5)
    qa: QAConfig = field(default_factory=QAConfig)
    guidance: bool = False         # guidance for every video whose task has steps
    step_marks: Path | None = input_path("--step-marks", default=None)  # annotators' marks (else an LLM draft)
    mistake_summaries: bool = False  # LiveCook mistake summaries for validation/test plans (index: train split)
    summary_k: int = 5               # neighbours per instruction
    jitter_s: float = 0.0            # train-split guidance: instructions shifted by up to +-jitter_s (LiveCook: 30)
    jitter_seed: int = 0
    # sentence-transformers folder for retrieval (None: the packaged MiniLM)
    embedding_model: str | None = input_path("--embedding-model", folder=True, default=None)

    def __post_init__(self) -> None:  # before any video is anonymized or captioned
        check_numbers(("--k", self.k, 1, None), ("--frame-side", self.frame_side, 16, 8192),
                      ("--jpeg-quality", self.jpeg_quality, 1, 100), ("--concurrency", self.concurrency, 1, None),
                      ("--summary-k", self.summary_k, 1, None), ("--jitter-s", self.jitter_s, 0, None))


def read_tasks(path: Path) -> list[tuple[int | None, dict[str, Any]]]:
    """The tasks file (YAML list or JSONL), each entry checked against ``recorded_task``."""
    if path.suffix.lower() in (".yaml", ".yml"):
        yaml = require("yaml", "core", "pyyaml")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError("file not found", file=path) from None
        except (IsADirectoryError, UnicodeDecodeError):
            raise InputError("not a UTF-8 text file", file=path) from None
        except RecursionError:
            raise InputError("lists and mappings nested too deeply", file=path) from None
        except yaml.YAMLError as exc:
            raise InputError(f"not valid YAML ({str(exc).splitlines()[0]})", file=path) from None
        entries = data.get("tasks") if isinstance(data, dict) else data
        if not isinstance(entries, list):
            raise InputError("expected a list of tasks (or a mapping with a 'tasks' list)", file=path)
        items = [(None, e) for e in entries]
    else:
        items = list(iter_jsonl(path))
    violations = [v for line, e in items for v in check(e, "recorded_task", file=str(path), line=line)]
    if violations:
        raise RecordValidationError(violations)
    _refuse_repeats(items, path)
    _refuse_bad_plans(items, path)
    return items


def _refuse_bad_plans(items: list[tuple[int | None, dict[str, Any]]], path: Path) -> None:
    """A step id given twice in a plan, or two plans for one video."""
    planned: dict[str, str] = {}
    for line, task in items:
        if "steps" not in task:
            continue
        where = dict(file=path, line=line, record=f"task_id={task['task_id']}")
        ids = [s["step_id"] for s in task["steps"]]
        if len(set(map(repr, ids))) != len(ids):
            raise InputError("a step id is repeated: each step of a plan needs its own", **where, field="steps")
        vid = _video_id(task)
        if vid in planned:
            raise InputError(f"video {vid!r} already has a plan (task {planned[vid]}): one plan per video", **where,
                             field="steps")
        planned[vid] = task["task_id"]


def _refuse_repeats(items: list[tuple[int | None, dict[str, Any]]], path: Path) -> None:
    """A task id given twice (a copied line, or a YAML alias ``- *task`` repeating one) or a video id naming two
    different videos: refused when the tasks are read, before any video is anonymized or captioned."""
    first: dict[str, str] = {}
    video_of: dict[str, tuple[str, str]] = {}
    for n, (line, task) in enumerate(items):
        where = f"line {line}" if line is not None else f"task #{n + 1}"
        tid = str(task["task_id"])
        if tid in first:
            raise InputError(f"task id repeated ({where}; first at {first[tid]}): each task is captioned once",
                             file=path, line=line, record=f"task_id={tid}", field="task_id")
        first[tid] = where
        vid = _video_id(task)
        if vid in video_of and video_of[vid][0] != task["video"]:
            raise InputError(f"video id {vid!r} names {task['video']!r} here and {video_of[vid][0]!r} at "
                             f"{video_of[vid][1]}: give each video its own video_id", file=path, line=line,
                             record=f"task_id={tid}", field="video_id")
        video_of.setdefault(vid, (task["video"], where))


def _check_video(config: Config, task: dict[str, Any]) -> None:
    """One line naming the task unless its video is a file under ``--video-root`` (never one outside it)."""
    resolve_uri(config.videos, task["video"], file=config.tasks, record=f"task_id={task['task_id']}", field="video")
    if not (config.videos / task["video"]).is_file():
        raise InputError("video file not found", file=config.videos / task["video"],
                         record=f"task_id={task['task_id']}", field="$.video")


def _video_id(task: dict[str, Any]) -> str:
    return task.get("video_id") or Path(task["video"]).stem


def _relative(path: Path, out: Path) -> str:
    """``path`` relative to the output folder: records and reports never name a local absolute path."""
    return Path(os.path.relpath(Path(path).resolve(), Path(out).resolve())).as_posix()


def prepare_video(source: Path, config: Config, anonymizer: Any) -> tuple[Path, Path, str]:
    """The anonymized file, its report, and the report path as the video record states it."""
    if config.anonymized:
        report = source.with_name(f"{source.stem}.anonymization.json")
        problem = report_problem(report, source)
        if problem:
            raise InputError(f"{problem} (run streamcue anonymize, or drop --anonymized to blur here)", file=source)
        return source, report, _relative(report, config.out)
    out_dir = config.out / "videos"
    video, report = output_paths(source, out_dir)
    if already_done(source, out_dir, config.anonymize.stated()) is not None:  # as streamcue anonymize re-runs
        return video, report, f"videos/{report.name}"
    anonymize_video(source, out_dir, anonymizer=anonymizer())
    if report_problem(report, video):
        raise InputError(f"anonymization failed: {report_problem(report, video)}", file=source)
    return video, report, f"videos/{report.name}"


def _request(prompt: Any, task: dict[str, Any], memory: list[Frame], t: int, previous: str | None) -> Request:
    import base64

    content: list[dict[str, Any]] = [{"type": "text", "text": f"Current second: {t}."}]
    content.append({"type": "text", "text": f"Your previous caption: {previous}" if previous is not None
                    else "This is the first second: there is no previous caption."})
    for frame in memory:
        label = "Current frame" if frame.index == t else f"Frame at {frame.index} s"
        content.append({"type": "text", "text": label})
        content.append({"type": "image_url", "image_url": {
            "url": "data:image/jpeg;base64," + base64.b64encode(frame.image).decode("ascii")}})
    system = prompt.render(task=task["prompt"])
    return Request(({"role": "system", "content": system}, {"role": "user", "content": content}),
                   CAPTION_SCHEMA, prompt.version, name="caption")


def caption_task(client: LLMClient, task: dict[str, Any], jpegs: list[bytes], k: int) -> list[dict[str, Any]]:
    """Captions for every second, in order (each request shows the previous caption)."""
    prompt = load_prompt("streamcue.dataset_builders", PROMPT)
    frames = [Frame(i, float(i), jpeg) for i, jpeg in enumerate(jpegs)]
    captions: list[dict[str, Any]] = []
    previous = None
    for t in range(len(frames)):
        memory = select_frames(frames[: t + 1], k, "SW+U")
        answer = client.complete(_request(prompt, task, memory, t, previous))
        previous = answer["caption"].strip()
        captions.append({"t_s": float(t), "text": previous})
    return captions


def build(config: Config, report: BuildReport | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("video", record)`` and ``("dense_caption", record)`` pairs for the writer."""
    report = report if report is not None else BuildReport("recorded")
    videos: dict[str, Any] = {}
    caption_count = 0
    tasks = [t for _, t in read_tasks(config.tasks)]
    if config.step_marks is not None and not config.guidance:
        raise InputError("step marks are read for guidance only: add --guidance", file=config.step_marks)
    if config.mistake_summaries and not config.guidance:
        raise InputError("mistake summaries are made from guidance: add --guidance", file=config.tasks)
    check_every(tasks, lambda task: _check_video(config, task))
    by_source: dict[Path, list[dict[str, Any]]] = {}
    for task in tasks:
        by_source.setdefault(config.videos / task["video"], []).append(task)
    workers = max(1, config.concurrency or config.llm.max_concurrency)
    cache: dict[str, Anonymizer] = {}

    def anonymizer() -> Anonymizer:  # never thread-local: a forked ffmpeg child would destroy other threads' sessions
        if "a" not in cache:
            cache["a"] = Anonymizer(config.anonymize)
        return cache["a"]

    from streamcue.video import jpeg_frames, probe

    # every video is anonymized (or its report checked) before the first LLM call, one after the other (the
    # detector already uses every core), then each video's tasks are captioned in order (each second sees
    # the previous caption), videos side by side; every video is prepared before any refusal is raised, so that one
    # run names every video refused (a blurred copy that passed is reused by the next run)
    prepared = dict(zip(by_source, check_every(track(list(by_source), "anonymizing", total=len(by_source)),
                                               lambda src: prepare_video(src, config, anonymizer))))
    client = LLMClient(config.llm, use_cache=config.use_cache)
    prompt = load_prompt("streamcue.dataset_builders", PROMPT)

    def caption_video(source: Path) -> tuple[list[bytes], list[list[dict[str, Any]]]]:
        frames = jpeg_frames(prepared[source][0], fps=1, side=config.frame_side, quality=config.jpeg_quality)
        return frames, [caption_task(client, task, frames, config.k) for task in by_source[source]]

    done = dict(zip(by_source, in_order(caption_video, by_source, workers, "captioning")))
    jpegs = {source: frames for source, (frames, _) in done.items()}
    captions_of = {id(task): captions for source, (_, per_task) in done.items()
                   for task, captions in zip(by_source[source], per_task)}

    seen_videos: set[str] = set()
    durations: dict[str, float] = {}
    for task in tasks:
        source = config.videos / task["video"]
        video, report_path, report_ref = prepared[source]
        vid = _video_id(task)
        if vid in seen_videos:
            continue
        seen_videos.add(vid)
        info = probe(video)
        durations[vid] = info.duration_s
        uri = video.name if not config.anonymized else task["video"]
        videos[vid] = {"anonymized": _relative(video, config.out), "report": _relative(report_path, config.out),
                       "seconds": len(jpegs[source])}
        yield "video", {
            "schema_version": "1.0", "video_id": vid, "source": "recorded", "duration_s": info.duration_s,
            "fps": info.fps, "width": info.width, "height": info.height,
            "license": task.get("license", config.license), "uri": uri, "split": task.get("split", "test"),
            "anonymization": {"status": "passed", "report": report_ref},
        }
    for task in tasks:
        captions = captions_of[id(task)]
        caption_count += len(captions)
        yield "dense_caption", {
            "schema_version": "1.0", "task_id": task["task_id"], "video_id": _video_id(task),
            "task_type": task["task_type"], "category": task["category"], "prompt": task["prompt"], "fps": 1,
            "captions": captions,
            "provenance": {"builder": "streamcue.recorded", "version": __version__, "source": config.tasks.name,
                           "stage": "vision_llm", "model": config.llm.model, "prompt_hash": prompt.sha256[:16],
                           "memory": {"policy": "SW+U", "k": config.k, "frame_side": config.frame_side}},
            "verification": {"status": "unverified", "annotators": [], "checks": 0},
        }
    report.details = {"tasks": len(tasks), "captions": caption_count, "videos": videos}
    if config.interval_qa:
        yield from _interval_qa(config, client, tasks, captions_of, durations, report)
    if config.guidance:
        yield from _guidance(config, client, tasks, captions_of, durations, report)
    report.llm = {"model": config.llm.model, **client.usage.to_dict()}


def _interval_qa(config: Config, client: LLMClient, tasks: list[dict[str, Any]], captions_of: dict[int, Any],
                 durations: dict[str, float], report: BuildReport) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("interval_qa", record)`` for every video, from the captions of its question task."""
    from streamcue.embedding import Embedder

    embedder = Embedder(config.embedding_model)
    by_video: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        by_video.setdefault(_video_id(task), []).append(task)
    made = invalid = 0
    for vid, video_tasks in track(list(by_video.items()), "proactive questions"):
        task = question_task(video_tasks)
        records, bad = questions(vid, task, captions_of[id(task)], durations[vid], client, embedder, config.qa,
                                 f"{config.tasks.name} (captions of task {task['task_id']})")
        made, invalid = made + len(records), invalid + bad
        for record in records:
            yield "interval_qa", record
    report.details.update(interval_qa=made, invalid_groups=invalid)


def _guidance(config: Config, client: LLMClient, tasks: list[dict[str, Any]], captions_of: dict[int, Any],
              durations: dict[str, float], report: BuildReport) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("guidance", record)`` for every video with a plan: from annotators' marks, else an LLM draft."""
    plans = {_video_id(t): t for t in tasks if "steps" in t}
    if not plans:
        raise InputError("--guidance needs a task plan: no task of the tasks file has steps", file=config.tasks)
    marked = read_marks(config.step_marks, plans, durations) if config.step_marks is not None else None
    made: list[dict[str, Any]] = []
    unmarked: list[str] = []
    splits: dict[str, str] = {}  # a video's split: its first task's, as in its video record
    for t in tasks:
        splits.setdefault(_video_id(t), t.get("split", "test"))
    for vid, task in track(list(plans.items()), "guidance"):
        if marked is not None:
            if vid not in marked:
                unmarked.append(vid)
                continue
            record = guidance_record(task, vid, marked[vid], source=config.step_marks.name, stage="annotation")
        else:
            marks, prompt_hash = draft_marks(task, captions_of[id(task)], durations[vid], client)
            record = guidance_record(task, vid, marks, source=f"{config.tasks.name} (captions of task "
                                     f"{task['task_id']})", stage="llm_draft", model=config.llm.model,
                                     prompt_hash=prompt_hash)
        if record is None:
            unmarked.append(vid)
            continue
        made.append(record)
        train = splits[vid] == "train"
        yield "guidance", jitter_guidance(record, config.jitter_s, config.jitter_seed) if train else record
    report.details.update(guidance=len(made), guidance_without_steps=unmarked)
    if config.mistake_summaries:
        from streamcue.embedding import Embedder, model_name

        found = list(summaries(made, splits, client, Embedder(config.embedding_model),
                               model_name(config.embedding_model), config.summary_k, config.tasks.name))
        report.details["mistake_summaries"] = len(found)
        for record in found:
            yield "mistake_summary", record


def command(
    video_root: Annotated[Path, typer.Option("--video-root", help="Folder of recorded videos (the tasks "
                                                                            "file names files relative to it).")],
    tasks: Annotated[Path, typer.Option(help="Tasks file, YAML or JSONL: task_id, video, task_type "
                                             "(present|cumulative|future), category, prompt; optional: split, "
                                             "license, video_id, activity, steps (the task plan).")],
    out: Annotated[Path, typer.Option(help="Output folder: dense_caption.jsonl, videos.jsonl, build_report.json, "
                                           "videos/ (blurred copies and reports); interval_qa.jsonl with "
                                           "--interval-qa, guidance.jsonl with --guidance.")],
    llm_base_url: VisionBaseURL = None,
    llm_model: VisionModel = None,
    llm_structured: VisionStructured = "json_schema",
    llm_concurrency: Annotated[int, typer.Option(help="Videos captioned at once unless --concurrency is "
                                                      "given.")] = 4,
    llm_timeout: LLMTimeout = None,
    llm_retries: LLMRetries = None,
    concurrency: Annotated[Optional[int], typer.Option(min=1, help="Videos processed at once (anonymized, then "
                                                                   "captioned: each video's tasks and seconds in "
                                                                   "order). Default: --llm-concurrency.")] = None,
    k: Annotated[int, typer.Option(help="Frames of memory per request (SW+U: k/2 recent + k/2 older).")] = 42,
    frame_side: Annotated[int, typer.Option(help="Longest side of the frames sent to the model, in pixels.")] = 448,
    anonymized: Annotated[bool, typer.Option("--anonymized", help="The videos are already blurred: each needs a "
                                                                  "passing NAME.anonymization.json beside "
                                                                  "it.")] = False,
    license: Annotated[str, typer.Option(help="Licence of the videos, unless a task names one.")] = "CC BY 4.0",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    interval_qa: Annotated[bool, typer.Option("--interval-qa", help="Also make proactive multi-interval questions "
                                                                    "from each video's captions (ESTP-Gen "
                                                                    "one-to-one, one-to-many, many-to-many).")] = False,
    embedding_model: Annotated[Optional[Path], typer.Option(help="Sentence-transformers folder for the retrieval "
                                                                 "of --interval-qa and --mistake-summaries "
                                                                 "(default: the packaged all-MiniLM-L6-v2).")] = None,
    guidance: Annotated[bool, typer.Option("--guidance", help="Also make step guidance with mistake feedback for "
                                                              "every video whose task has steps: from "
                                                              "--step-marks, else drafted by the LLM from the "
                                                              "captions.")] = False,
    step_marks: Annotated[Optional[Path], typer.Option(help="Annotators' step marks for --guidance (JSONL, "
                                                            "one line per video; docs/building.md).")] = None,
    mistake_summaries: Annotated[bool, typer.Option("--mistake-summaries", help="With --guidance: mistake summaries "
                                                                              "for the validation and "
                                                                              "test plans, retrieved from the "
                                                                              "train split's mistakes.")] = False,
    summary_k: Annotated[int, typer.Option(help="Neighbours per instruction for --mistake-summaries.")] = 5,
    jitter_s: Annotated[float, typer.Option(help="Train-split guidance: shift each instruction by a seeded "
                                                 "uniform amount in [-K, K] seconds (30 as published; 0: off).")] = 0.0,
    jitter_seed: Annotated[int, typer.Option(help="Seed of --jitter-s.")] = 0,
) -> None:
    """Per-second dense captions (VSAS-Bench style) for recorded videos, from anonymized copies only.

    Each video is blurred first (faces and licence plates, see `streamcue anonymize`), then
    sampled at 1 fps; a vision model writes the caption of every second from the task prompt,
    its SW+U frame memory and its previous caption. With --interval-qa, ESTP-Gen's caption stages
    turn the captions into proactive questions; with --guidance, each video's task plan and its
    step marks (annotators' or an LLM draft) become LiveCook guidance. Answers are cached: a killed
    build, or a re-run with more record kinds, repeats no call.

    Example:

        streamcue build recorded --video-root recordings/ --tasks tasks.yaml --out out/recorded \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-VL-7B-Instruct --interval-qa --guidance
    """
    from streamcue.dataset_builders.output import run_builder
    from streamcue.dataset_builders.registry import get_builder

    settings = LLMSettings.resolve(base_url=llm_base_url, model=llm_model, structured=llm_structured,
                                   max_concurrency=llm_concurrency, timeout_s=llm_timeout,
                                   max_retries=llm_retries)
    config = Config(videos=video_root, tasks=tasks, out=out, llm=settings, k=k, frame_side=frame_side,
                    anonymized=anonymized, license=license, use_cache=not no_cache,
                    concurrency=concurrency, interval_qa=interval_qa, guidance=guidance,
                    step_marks=step_marks, mistake_summaries=mistake_summaries, summary_k=summary_k,
                    jitter_s=jitter_s, jitter_seed=jitter_seed,
                    embedding_model=str(embedding_model) if embedding_model else None)
    result, report = run_builder(get_builder("recorded"), config, out)
    u = report.llm
    console.out.print(f"{result.counts.get('dense_caption', 0)} dense-caption tasks, {report.details['captions']} "
                      f"captions "
                      f"on {len(report.details['videos'])} anonymized videos"
                      + "".join(f", {result.counts.get(kind, 0)} {kind}" for kind in
                                ("interval_qa", "guidance", "mistake_summary") if result.counts.get(kind))
                      + f" -> {out}")
    console.out.print(f"LLM {u['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
                      f"{u['invalid_answers']} invalid answers retried, {u['prompt_tokens']} prompt tokens")
    console.out.print(f"to release: streamcue release build --records {out} "
                      f"--video-root {video_root if anonymized else out / 'videos'} ...")
