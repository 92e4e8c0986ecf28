"""CenterFace in int8 for the CPU (``--face-runtime onnxruntime-int8``).

onnxruntime's own post-training quantization (``onnxruntime.quantization.quantize_static``; the recipe is
:data:`RECIPE`, stated in the report) turns the float graph into one whose convolutions run on 8-bit integers
(AVX512-VNNI or AVX-VNNI where the CPU has them). Its activation ranges are calibrated on frames of the labelled
clips the settings were chosen on (``street``, ``crowd``, ``turned``, ``pan`` of ``anonymize/synthetic.py``, never
``holdout``), upright and turned as the sweeps turn them, looked at at the presets' two sizes (640 px and full size,
:data:`CALIBRATION_SIDES`, whatever the run's ``max_side``: one graph per machine).

The graph is made once per machine and kept in the cache folder (``$STREAMCUE_CACHE_DIR/models``, written
atomically), named by the float model's SHA-256, :data:`RECIPE`'s version and onnxruntime's version (another
version may quantize otherwise); a folder where it cannot be kept is one line naming it. The report
states the SHA-256 of the graph that ran (``detectors.face.settings.int8_sha256``): calibration runs the float graph,
whose last bits follow the CPU's instructions, so two machines may make graphs that differ, and the hash says which
one hid a video.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from streamcue.errors import InputError
from streamcue.extras import require
from streamcue.io import atomic_write
from streamcue.paths import cache_dir
from streamcue.progress import track

__all__ = ["RECIPE", "CALIBRATION_SCENES", "CALIBRATION_SIDES", "INT8_UNITS", "int8_units", "calibration_frames",
           "int8_graph"]

#: How the int8 graph is made (its ``version`` changes whenever anything else here does).
RECIPE = {"version": 1, "tool": "onnxruntime.quantization.quantize_static", "format": "QDQ", "per_channel": True,
          "weights": "int8", "activations": "uint8", "calibration": "MinMax", "opset": 13,
          "frames": "street, crowd, turned, pan (anonymize/synthetic.py): 1280x720, a frame at 0 s and 1 s, "
                    "upright and turned 90, 180 and 270 degrees, looked at at 640 px and at full size"}
CALIBRATION_SCENES = ("street", "crowd", "turned", "pan")
CALIBRATION_SIDES = (640, None)  # the looks' max_side: the presets' reduced size, and full size

#: The CPU's 8-bit dot-product instructions, as Linux names them in /proc/cpuinfo, best first. onnxruntime's int8
#: kernels differ by them (without VNNI, AVX2's 8-bit products saturate at 16 bits), so the report states which this
#: CPU has (``int8_units``): the recall figures of docs/anonymize.md were measured with ``avx512_vnni``.
INT8_UNITS = ("avx512_vnni", "avx_vnni")


def int8_units(cpuinfo: str | Path = "/proc/cpuinfo") -> str | None:
    """The first of :data:`INT8_UNITS` this CPU has (its flags in ``cpuinfo``), or None (none, or no such file)."""
    try:
        flags = set(Path(cpuinfo).read_text(errors="replace").split())
    except OSError:
        return None
    return next((unit for unit in INT8_UNITS if unit in flags), None)


def calibration_frames() -> Iterator[np.ndarray]:
    """The frames :data:`RECIPE` names: each scene at 1280x720, at 0 s and 1 s, in each turn."""
    from streamcue.anonymize.synthetic import clip_frames

    for scene in CALIBRATION_SCENES:
        for turn in range(4):
            for frame, _ in clip_frames(1280, 720, fps=1, seconds=2, scene=scene, turn=turn):
                yield frame


def int8_graph(model: Any, source_sha256: str,
               feeds: Callable[[], Iterable[dict[str, np.ndarray]]]) -> tuple[bytes, str]:
    """The int8 graph of ``model`` (a float ONNX ``ModelProto`` whose file has ``source_sha256``) and its SHA-256:
    read from the cache folder, or made by :data:`RECIPE` with ``feeds()`` (the network's inputs) as calibration and
    kept there (a kept file that is not a valid quantized ONNX graph, cut short, damaged or another model, is made
    again); a cache folder where it cannot be kept is one line naming it."""
    ort = require("onnxruntime", "anonymize")
    name = f"centerface-{source_sha256[:16]}-int8-r{RECIPE['version']}-onnxruntime{ort.__version__}.onnx"
    path = cache_dir() / "models" / name
    data = _kept(path)
    if data is None:
        data = _quantized(model, track(feeds(), "making CenterFace's int8 graph for this machine (once)"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(path, "wb") as out:
                out.write(data)
        except OSError as exc:  # said, not skipped: every run would make it again, 20 s each
            raise InputError(f"cache folder unusable for the int8 graph ({exc.strerror or exc}); set "
                             "$STREAMCUE_CACHE_DIR to a writable folder", file=path.parent) from None
    return data, hashlib.sha256(data).hexdigest()


def _kept(path: Path) -> bytes | None:
    """The graph kept at ``path``, or None: no such file, not a valid ONNX graph, or not a quantized one (another model
    copied there)."""
    onnx = require("onnx", "anonymize")
    try:
        data = path.read_bytes()
        graph = onnx.load_from_string(data)
        onnx.checker.check_model(graph)
    except Exception:  # OSError, protobuf's DecodeError, onnx's ValidationError: made again
        return None
    return data if any(node.op_type == "QuantizeLinear" for node in graph.graph.node) else None


def _quantized(model: Any, feeds: Iterable[dict[str, np.ndarray]]) -> bytes:
    """``model`` quantized by :data:`RECIPE`, calibrated on ``feeds``."""
    onnx = require("onnx", "anonymize")
    require("onnx.version_converter", "anonymize")
    require("onnxruntime", "anonymize").set_default_logger_severity(3)  # its notes on unused weights are not ours
    quantization = require("onnxruntime.quantization", "anonymize")
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Feeds(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self._feeds = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._feeds, None)

    with tempfile.TemporaryDirectory(prefix="streamcue-int8-") as tmp:
        floats, prepared, out = (Path(tmp) / n for n in ("float.onnx", "prepared.onnx", "int8.onnx"))
        onnx.save(onnx.version_converter.convert_version(model, RECIPE["opset"]), str(floats))
        quant_pre_process(str(floats), str(prepared), skip_symbolic_shape=True)
        quantization.quantize_static(str(prepared), str(out), Feeds(), quant_format=quantization.QuantFormat.QDQ,
                                     per_channel=True, activation_type=quantization.QuantType.QUInt8,
                                     weight_type=quantization.QuantType.QInt8,
                                     calibrate_method=quantization.CalibrationMethod.MinMax)
        return out.read_bytes()
