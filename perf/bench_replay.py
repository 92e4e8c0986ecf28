"""How close `streamcue replay` comes to its floor, decoding the frames (issue 23 item 6).

Generates three 720p 30 fps H.264 videos of about 100 s (ffmpeg's testsrc2) and 22 OVO-Bench-like
multiple-choice questions over them, then times, fresh cache each time (``--no-cache``):

* the floor: ffmpeg alone decoding the three videos at 1 fps (``ffmpeg -i V -vf fps=1 -f null -``);
* ``streamcue replay`` (process start included) against an instant local server (the stub on 127.0.0.1),
  k = 16: wall time over the floor (goal <= 1.2);
* against a server that answers in 1 s, at ``--concurrency`` 1 and 8 (goal at 8: within 1.2x of
  max(floor, calls x 1 s / 8));
* the same at 8 under ``--clock live`` (docs/clock.md): a virtual clock, never a sleep, so no more wall time than
  the free run beyond noise (goal <= 1.05x).

    python perf/bench_replay.py [--work DIR] [--repeat N] [--quick] [--json FILE]

``--quick`` (what ``./dev.sh perf`` runs) makes the videos a fifth as long (about 20 s each: the same 22 questions)
and leaves out the 1 s server at concurrency 1, which no goal reads;
``--json`` also writes the figures and both ratios (lower is better: 1.0 is the floor) to that file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from streamcue.testing.stub_llm import StubLLMServer
from streamcue.video import ffmpeg_exe

VIDEOS = (("v1", 100.0), ("v2", 96.0), ("v3", 104.0))
QUESTIONS = 22


def make_videos(root: Path) -> None:
    for video_id, seconds in VIDEOS:
        path = root / f"{video_id}.mp4"
        if path.is_file():
            continue
        subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "testsrc2=size=1280x720:rate=30", "-t", str(seconds), "-pix_fmt", "yuv420p", "-c:v", "libx264",
                        "-preset", "veryfast", "-g", "60", str(path)], check=True)


def make_records(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for n in range(QUESTIONS):
        video_id, seconds = VIDEOS[n % len(VIDEOS)]
        records.append({"schema_version": "1.0", "question_id": f"q{n}", "video_id": video_id,
                        "benchmark": "ovo-bench", "task": "EPM", "group": "backward",
                        "question": f"What happened before {n}?", "options": ["A thing", "B thing", "C thing",
                                                                                "D thing"],
                        "answer": n % 4, "answer_text": "x", "query_time_s": round(10 + (n * 37) % (seconds - 12), 1),
                        "provenance": {"builder": "bench", "version": "1"},
                        "verification": {"status": "unverified"}})
    (folder / "mc_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    videos = [{"schema_version": "1.0", "video_id": v, "source": "recorded", "duration_s": s, "fps": 30.0,
               "width": 1280, "height": 720, "license": "CC BY 4.0", "uri": f"{v}.mp4", "split": "test",
               "anonymization": {"status": "passed", "report": "r.json"}} for v, s in VIDEOS]
    (folder / "videos.jsonl").write_text("".join(json.dumps(v) + "\n" for v in videos))


def floor_s(root: Path) -> float:
    start = time.perf_counter()
    for video_id, _ in VIDEOS:
        subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-i", str(root / f"{video_id}.mp4"), "-vf", "fps=1",
                        "-f", "null", "-"], check=True)
    return time.perf_counter() - start


def replay_s(work: Path, delay_s: float, concurrency: int, tag: str, *extra: str) -> tuple[float, dict]:
    with StubLLMServer(delay_s=delay_s) as server:
        out = work / f"run_{tag}"
        shutil.rmtree(out, ignore_errors=True)  # the bench's own last run: a run folder is never replaced
        cmd = [sys.executable, "-m", "streamcue", "replay", str(work / "ovo"), "--out", str(out), "--video-root",
               str(work / "videos"), "--k", "16", "--concurrency", str(concurrency), "--no-cache",
               "--llm-base-url", server.base_url, "--llm-model", "stub-vl", *extra]
        env = dict(os.environ, STREAMCUE_CACHE_DIR=str(work / "cache"))
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(done.stderr)
    return wall, json.loads((out / "replay_report.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="folder for the videos and runs (default: a temp one)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each setting (the median is reported)")
    parser.add_argument("--quick", action="store_true", help="videos a fifth as long; no 1 s server at concurrency 1")
    parser.add_argument("--json", type=Path, help="also write the figures and ratios to this JSON file")
    args = parser.parse_args()
    if args.quick:
        global VIDEOS
        VIDEOS = tuple((video_id, seconds / 5) for video_id, seconds in VIDEOS)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_replay_"))
    (work / "videos").mkdir(parents=True, exist_ok=True)
    make_videos(work / "videos")
    make_records(work / "ovo")

    def median(values: list[float]) -> float:
        values = sorted(values)
        return values[len(values) // 2]

    load = os.getloadavg()[0]
    floor = median([floor_s(work / "videos") for _ in range(args.repeat)])
    instant = median([replay_s(work, 0.0, 1, "instant")[0] for _ in range(args.repeat)])
    slow1 = None if args.quick else median([replay_s(work, 1.0, 1, "slow1")[0] for _ in range(args.repeat)])
    slow8, report = replay_s(work, 1.0, 8, "slow8")
    live8, _ = replay_s(work, 1.0, 8, "live8", "--clock", "live")
    calls = report["calls"]
    target8 = max(floor, calls * 1.0 / 8)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average at start "
          f"{load:.1f}; {QUESTIONS} questions over {len(VIDEOS)} 720p 30 fps videos "
          f"({sum(s for _, s in VIDEOS):.0f} s), k=16, 1 fps, 448 px frames, JPEG 85")
    print(f"floor (ffmpeg decode at 1 fps): {floor:.2f} s")
    print(f"instant server, concurrency 1: {instant:.2f} s = {instant / floor:.2f}x the floor (goal <= 1.2)")
    if slow1 is not None:
        print(f"1 s server, concurrency 1: {slow1:.2f} s ({calls} calls)")
    print(f"1 s server, concurrency 8: {slow8:.2f} s = {slow8 / target8:.2f}x max(floor, calls x 1 s / 8) = "
          f"{target8:.2f} s (goal <= 1.2)")
    print(f"1 s server, concurrency 8, --clock live: {live8:.2f} s = {live8 / slow8:.2f}x the free run (goal <= 1.05)")
    print(f"videos decoded: {report['videos_decoded']}")
    if args.json:
        args.json.write_text(json.dumps({
            "load_before": load, "load_after": os.getloadavg()[0], "floor_s": floor, "instant_s": instant,
            "concurrency1_s": slow1, "concurrency8_s": slow8, "calls": calls, "instant_vs_floor": instant / floor,
            "concurrency8_vs_target": slow8 / target8}, indent=1) + "\n")


if __name__ == "__main__":
    main()
