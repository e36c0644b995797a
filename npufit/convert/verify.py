"""Hold an int8 TFLite file against the float ONNX model: LiteRT interpreter vs ONNX Runtime, same inputs.

Inputs are quantized with the TFLite input's own parameters and laid out NHWC where the converter stored
them so; outputs are dequantized and put back in ONNX axis order before comparing. Per output: cosine
similarity (over all samples) and max absolute error, next to the reference's magnitude."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..graph.onnx_prepare import pin_inputs, read_onnx
from ..quantize.calibration import input_specs, load_calibration
from ..util.native_log import quiet_native_info
from ..util.readers import read_json
from ..verify.compare import make_session, timed_run
from .lower import TO_NCHW, TO_NHWC
from .qparams import dequantize

SCHEMA = "npufit.convert.verify/1"


@dataclass
class Verification:
    samples: int
    per_output: dict[str, dict[str, float]] = field(default_factory=dict)
    interpreter: str = "ai_edge_litert"
    notes: list[str] = field(default_factory=list)

    @property
    def min_cosine(self) -> float:
        return min((d["cosine"] for d in self.per_output.values()), default=float("nan"))

    @property
    def max_abs(self) -> float:
        return max((d["max_abs"] for d in self.per_output.values()), default=float("nan"))

    def summary(self) -> str:
        return (
            f"vs ONNX Runtime on {self.samples} sample(s): min cosine {self.min_cosine:.5f}, "
            f"max abs error {self.max_abs:.4g} over {len(self.per_output)} output(s)"
        )

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "interpreter": self.interpreter,
            "samples": self.samples,
            "min_cosine": round(self.min_cosine, 6),
            "max_abs": self.max_abs,
            "per_output": self.per_output,
            "notes": self.notes,
        }


def _layout_of(tfl_shape, onnx_shape, hint: str | None) -> str:
    if hint:
        return hint
    if list(tfl_shape) == list(onnx_shape):
        return "plain"
    if len(onnx_shape) == 4 and [onnx_shape[p] for p in TO_NHWC] == list(tfl_shape):
        return "nhwc"
    raise NpufitError(f"TFLite tensor shape {list(tfl_shape)} does not match the ONNX shape {list(onnx_shape)}")


def quantize_input(x, detail: dict, layout: str | None) -> np.ndarray:
    """One ONNX input value as the TFLite input `detail` (LiteRT's input details) takes it: NHWC where stored so,
    quantized with the input's own parameters (int8 or int16)."""
    x = np.asarray(x, np.float32)
    if _layout_of(detail["shape"], x.shape, layout) == "nhwc":
        x = x.transpose(TO_NHWC)
    scale, zp = detail["quantization"]
    if not scale:
        return x.astype(detail["dtype"])
    info = np.iinfo(detail["dtype"])
    return np.clip(np.round(x / scale) + zp, info.min, info.max).astype(detail["dtype"])


def _io(path: Path, io: dict | None) -> dict:
    if io is not None:
        return io
    side = path.with_suffix(".json")
    if side.exists():
        try:
            d = read_json(side, "converter side file")
        except NpufitError:
            return {}
        return d.get("io", {}) if isinstance(d, dict) and isinstance(d.get("io", {}), dict) else {}
    return {}


def verify_tflite(
    tflite_path: str | os.PathLike,
    onnx_path: str | os.PathLike,
    samples=4,
    *,
    input_shapes: dict | None = None,
    seed: int = 0,
    io: dict | None = None,
) -> Verification:
    """samples: a count of seeded random samples, an .npz/.npy path, or a list of {input name: array} feeds."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        raise NpufitError(
            "verifying a TFLite file needs the LiteRT interpreter: pip install 'ai-edge-litert>=2.3'"
        ) from None

    tfl, src = Path(tflite_path), Path(onnx_path)
    proto = read_onnx(src, pin_inputs(input_shapes)).model
    if isinstance(samples, (int, np.integer)):
        cal = load_calibration("random", input_specs(proto), count=int(samples), seed=seed, input_shapes=input_shapes)
        feeds = [cal[i] for i in range(len(cal))]
    elif isinstance(samples, (str, os.PathLike)):
        cal = load_calibration(samples, input_specs(proto), input_shapes=input_shapes)
        feeds = [cal[i] for i in range(min(len(cal), 64))]
    else:
        feeds = list(samples)
    sess = make_session(str(src))
    fallback = None
    try:
        with quiet_native_info():  # LiteRT's "INFO: Created TensorFlow Lite XNNPACK delegate" is not ours to print
            it = Interpreter(model_path=str(tfl), num_threads=1)
            it.allocate_tensors()
    except RuntimeError as e:
        # LiteRT's default XNNPACK delegate refuses some valid int8 graphs ("failed to create XNNPACK runtime"); the
        # reference kernels (what TFLite Micro runs next to the Ethos-U) still run them: verify with those
        if "XNNPACK" not in str(e):
            raise
        from ai_edge_litert.interpreter import OpResolverType

        it = Interpreter(
            model_path=str(tfl),
            num_threads=1,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        it.allocate_tensors()
        reason = " ".join(str(e).split())[:120]
        fallback = f"LiteRT's XNNPACK delegate refused the graph ({reason}); verified with the reference kernels"
    meta = _io(tfl, io)
    tin, tout = it.get_input_details(), it.get_output_details()
    in_rows = meta.get("inputs") or [{"onnx": i.name} for i in sess.get_inputs()]
    out_rows = meta.get("outputs") or [{"onnx": o.name} for o in sess.get_outputs()]
    by_name_in = {d["name"]: d for d in tin}
    by_name_out = {d["name"]: d for d in tout}
    ref: dict[str, list[np.ndarray]] = {r["onnx"]: [] for r in out_rows}
    got: dict[str, list[np.ndarray]] = {r["onnx"]: [] for r in out_rows}
    onames = [r["onnx"] for r in out_rows]
    index_outputs: set[str] = set()
    for feed in feeds:
        for k, row in enumerate(in_rows):
            d = by_name_in.get(row.get("tflite"), tin[k])
            it.set_tensor(d["index"], quantize_input(feed[row["onnx"]], d, row.get("layout")))
        it.invoke()
        for name, val in zip(onames, timed_run(sess, onames, feed)):
            if not np.issubdtype(np.asarray(val).dtype, np.floating):
                index_outputs.add(name)
            ref[name].append(np.asarray(val, np.float32))
        for k, row in enumerate(out_rows):
            d = by_name_out.get(row.get("tflite"), tout[k])
            y = it.get_tensor(d["index"])
            scale, zp = d["quantization"]
            y = dequantize(y, scale, zp) if scale else y.astype(np.float32)
            if _layout_of(y.shape, ref[row["onnx"]][-1].shape, row.get("layout")) == "nhwc":
                y = y.transpose(TO_NCHW)
            got[row["onnx"]].append(y)
    res = Verification(len(feeds))
    if fallback:
        res.notes.append(fallback)
    for name in onames:
        a = np.concatenate([r.ravel() for r in ref[name]]).astype(np.float64)
        b = np.concatenate([g.ravel() for g in got[name]]).astype(np.float64)
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        cos = float(a @ b / (na * nb)) if na > 0 and nb > 0 else float(na == nb)
        res.per_output[name] = {
            "cosine": round(cos, 6),
            "max_abs": float(np.abs(a - b).max()) if a.size else 0.0,
            "ref_max_abs": float(np.abs(a).max()) if a.size else 0.0,
        }
        if name in index_outputs:  # indices (ArgMax/TopK): int8 ties pick another index, so count agreement too
            res.per_output[name]["agreement"] = round(float(np.mean(a == b)), 6) if a.size else 1.0
        if res.per_output[name]["ref_max_abs"] < 1e-6:  # int8 cannot represent it; the cosine means nothing
            res.notes.append(
                f"output '{name}': the float reference is ~0 (max |x| {res.per_output[name]['ref_max_abs']:.3g}); "
                "its cosine is not meaningful (random weights?)"
            )
    return res
