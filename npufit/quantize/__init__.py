"""INT8 post-training quantization (ONNX Runtime static quantizer, QDQ format) with a per-layer accuracy report.

`quantize(model, output, calibration)` is `npufit quantize MODEL --output OUT --calibration SOURCE`.
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import NpufitError
from .calibration import CalibrationSet, ImagePreprocessing, input_specs, load_calibration
from .quantizer import METHODS, QuantizeSettings, quantize_static_qdq
from .report import SCHEMA, QuantizeReport
from ..util.io import private_tempdir

__all__ = ["quantize", "QuantizeReport", "ImagePreprocessing", "METHODS", "SCHEMA"]


class _Subset(Sequence):
    def __init__(self, base: CalibrationSet, start: int, stop: int):
        self.base, self.start, self.stop = base, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, i):  # type: ignore[override]
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.base[self.start + i]


def split_samples(total: int, samples: int, holdout: int, warnings: list[str]) -> tuple[int, int]:
    """(calibration count, held-back count): held-back samples are the last ones and are never calibrated on."""
    if samples < 1:
        raise NpufitError("--samples must be at least 1")
    if holdout < 0:
        raise NpufitError("--holdout must be 0 or more")
    if holdout == 0:
        return min(samples, total), 0
    if total - holdout >= 1:
        return min(samples, total - holdout), holdout
    if total < 2:
        raise NpufitError("the calibration set has 1 sample: nothing can be held back for the accuracy report "
                          "(add samples, or pass --holdout 0)")
    held = max(1, total // 5)
    warnings.append(f"only {total} samples: holding back {held} (not {holdout}) for the accuracy report")
    return total - held, held


def _refuse_huge_inputs(specs, input_shapes) -> None:
    """Calibration holds samples of every input: a hostile 2^40-element input is refused before any is made."""
    import math

    from ..verify.compare import MAX_SAMPLE_BYTES

    for s in specs:
        dims = (input_shapes or {}).get(s.name) or [d or 1 for d in s.shape]
        nbytes = math.prod(dims) * s.dtype.itemsize
        if nbytes > MAX_SAMPLE_BYTES:
            raise NpufitError(f"input '{s.name}' of shape {list(dims)} would take {nbytes / (1 << 30):.1f} GiB per "
                              f"sample, more than the {MAX_SAMPLE_BYTES >> 20} MiB npufit allocates for one input sample")


def _read_model(path: Path):
    import onnx

    from ..graph.onnx_loader import read_model_proto

    from ..graph.validate import require_external_data

    model = read_model_proto(path)  # validates, refuses external data outside the model folder
    require_external_data(model, path.parent)
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(path.parent))
    except Exception as e:
        raise NpufitError(f"{path}: cannot read its external weights ({type(e).__name__})") from None
    return model


def quantize(model: str | os.PathLike, output: str | os.PathLike, calibration: str | os.PathLike = "random", *,
             method: str = "minmax", per_channel: bool = False, activations: str = "int8", exclude: Sequence[str] = (),
             samples: int = 100, holdout: int = 10, seed: int = 0, input_shapes: Mapping[str, Sequence[int]] | None = None,
             image: ImagePreprocessing | None = None, percentile: float = 99.999, worst: int = 5,
             preprocess: bool = True, target: str | None = None) -> QuantizeReport:
    """Quantize `model` to an INT8 QDQ ONNX file at `output` and measure what it cost on held-back samples.

    calibration: a folder of images (see `image` for the preprocessing), an .npz/.npy file, or "random".
    samples: at most this many calibration samples; holdout: samples held back for the report (0 = no report).
    target: optional target name(s) ('ethos-n78', 'hailo8,rk3588', 'all'): `check` the output and report what
    the quantized graph costs there (float islands, extra Q/DQ ops) from the Q/DQ ledger.
    The input file is never modified; `output` is written atomically.
    """
    import onnx

    from ..util.io import atomic_save_onnx

    src, dst = Path(model), Path(output)
    if dst.suffix.lower() != ".onnx":
        raise NpufitError(f"--output {dst}: the quantized model is an ONNX file; name it *.onnx")
    if src.exists() and dst.exists() and src.resolve() == dst.resolve():
        raise NpufitError(f"--output {dst} is the input model; the input is never overwritten, pick another name")
    settings = QuantizeSettings(method=method, per_channel=per_channel, activations=activations,
                                exclude=tuple(exclude), percentile=percentile, preprocess=preprocess)
    settings.validate()
    float_model = _read_model(src)
    specs = input_specs(float_model)
    _refuse_huge_inputs(specs, input_shapes)
    calib = load_calibration(calibration, specs, count=samples + holdout, seed=seed, input_shapes=input_shapes, image=image)
    warnings = list(calib.warnings)
    n_cal, n_hold = split_samples(len(calib), samples, holdout, warnings)

    with private_tempdir("quantize") as tmp:
        folder = Path(tmp)
        qm = quantize_static_qdq(float_model, folder, _Subset(calib, 0, n_cal), settings)
        del float_model  # the copy in the temp folder is what the rest reads
        qdq = onnx.load(str(qm.qdq_path))
        try:
            onnx.checker.check_model(str(qm.qdq_path))
        except Exception as e:
            raise NpufitError(f"the quantized model fails onnx.checker: {str(e).splitlines()[0][:200]}") from None
        from .qdq import count_qdq, find_pairs, write_float_probe, write_probes

        pairs, pair_notes = find_pairs(onnx.load(str(qm.float_path)), qdq)
        counts = count_qdq(qdq)
        counts["activations"] = len(pairs)
        atomic_save_onnx(qdq, dst)
        accuracy, eval_s = None, None
        if n_hold:
            from .accuracy import evaluate

            t0 = time.perf_counter()
            float_probe = write_float_probe(onnx.load(str(qm.float_path)), pairs, folder / "probe_float.onnx")
            entire, single = write_probes(qdq, pairs, folder)
            accuracy = evaluate(folder / "float.onnx", float_probe, entire, single, pairs,
                                _Subset(calib, len(calib) - n_hold, len(calib)), per_channel, worst)
            eval_s = time.perf_counter() - t0

    cal_info = calib.describe()
    cal_info.update({"used": qm.calibration_samples, "holdout": n_hold, "seed": seed if calib.kind == "random" else None})
    timing = {"quantize_s": round(qm.seconds, 3),
              "per_100_samples_s": round(qm.seconds * 100.0 / max(1, qm.calibration_samples), 3),
              "evaluate_s": round(eval_s, 3) if eval_s is not None else None}
    report = QuantizeReport(model=str(src), output=str(dst), settings=settings.to_dict(), calibration=cal_info, qdq=counts,
                            timing=timing, accuracy=accuracy, warnings=warnings, notes=qm.notes + pair_notes)
    if target:
        from .target_cost import target_costs

        report.extra["target_cost"] = target_costs(dst, target)
    return report


class _CallableModule(type(os)):
    """`npufit.quantize` is both this package and the API function: once the package is imported, Python binds
    the attribute to the module, so the module forwards calls to `quantize` (npufit.quantize(...) always works)."""

    def __call__(self, *args, **kwargs) -> QuantizeReport:
        return quantize(*args, **kwargs)


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _CallableModule
