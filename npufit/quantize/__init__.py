"""INT8 post-training quantization (ONNX Runtime static quantizer, QDQ format) with a per-layer accuracy report.

`quantize(model, output, calibration)` is `npufit quantize MODEL --output OUT --calibration SOURCE`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import NpufitError
from ..graph.onnx_loader import graph_from
from ..graph.onnx_prepare import from_proto, infer, pin_inputs, read_onnx, require_shapes, strip_weights
from ..graph.quant import qdq_counts
from ..util.io import atomic_save_onnx, private_tempdir
from ..util.limits import graph_within_budget
from ..util.shapes import parse_input_shapes
from ..vocab import QUANTIZE_ACTIVATIONS, QUANTIZE_METHOD
from .accuracy import clipping_advice, evaluate
from .calibration import CalibrationSet, ImagePreprocessing, input_specs, load_calibration, spread
from .qdq import find_pairs, write_float_probe, write_probes
from .quantizer import BIG_MODEL_BYTES, QuantizeSettings, quantize_static_qdq
from .report import SCHEMA, QuantizeReport
from .target_cost import target_costs

__all__ = ["quantize", "QuantizeReport", "ImagePreprocessing", "SCHEMA"]


class _Pick(Sequence):
    """Some samples of a set, by index (read lazily)."""

    def __init__(self, base: CalibrationSet, indices: Sequence[int]):
        self.base, self.indices = base, list(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i):  # type: ignore[override]
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.base[self.indices[i]]


MIN_CALIBRATION_SAMPLES = 32  # fewer: ranges come from a handful of inputs and clip the rest (seen with 2-12 samples)
DEFAULT_HOLDOUT = 10
EVALUATION_MAX = 1000  # --evaluation without --holdout: every sample, up to this many (spread over the source)


def split_samples(total: int, samples: int, holdout: int | None, warnings: list[str]) -> tuple[int, int]:
    """(calibration count, held-back count) from one source: held-back samples are the last ones, never calibrated on.

    holdout=None holds back DEFAULT_HOLDOUT but never more than a fifth of a small set, so calibration keeps most
    samples; an explicit holdout is honoured as long as one sample is left to calibrate.
    """
    if samples < 1:
        raise NpufitError("--samples must be at least 1")
    if holdout is not None and holdout < 0:
        raise NpufitError("--holdout must be 0 or more")
    if holdout is None:
        holdout = min(DEFAULT_HOLDOUT, max(1, total // 5)) if total >= 2 else 0
        if total < 2:
            warnings.append("the calibration set has 1 sample: nothing is held back, so there is no accuracy report")
    if holdout == 0:
        return min(samples, total), 0
    if total - holdout >= 1:
        return min(samples, total - holdout), holdout
    if total < 2:
        raise NpufitError(
            "the calibration set has 1 sample: nothing can be held back for the accuracy report "
            "(add samples, or pass --holdout 0)"
        )
    held = max(1, total // 5)
    warnings.append(f"only {total} samples: holding back {held} (not {holdout}) for the accuracy report")
    return total - held, held


def clipping_warnings(accuracy, calibration_samples: int) -> list[str]:
    """One warning per model output whose held-back values saturate past the calibrated range."""
    out = []
    for o in accuracy.outputs:
        layer = accuracy.layer(o.name)
        if layer is not None and layer.clips:
            lo, hi = layer.pair.value_range
            out.append("output " + clipping_advice(o.name, layer.clipped_fraction, lo, hi, calibration_samples))
    outputs = {o.name for o in accuracy.outputs}
    inner = sorted((a for a in accuracy.layers if a.clips and a.name not in outputs), key=lambda a: -a.clipped_fraction)
    if inner:
        out.append(
            f"{len(inner)} inner tensor(s) saturate on held-back values past their calibrated range (worst: "
            f"'{inner[0].name}', {inner[0].clipped_fraction:.1%}); see the clip column of the per-layer table"
        )
    return out


def _read_model(path: Path, input_shapes):
    """The float model with its input shapes pinned by the shape policy (the quantized model is written with them:
    a model still dynamic after quantize would not compile), and the policy's answer."""
    # validated, external data inside the model's folder, there and loaded: quantizing runs the model
    prep = read_onnx(path, pin_inputs(input_shapes), external_data="loaded")
    require_shapes(prep, "quantize runs the model on its calibration samples")
    return prep.model, prep.shapes


PER_CHANNEL_OPSET = 13  # DequantizeLinear takes `axis` (per-channel scales) from opset 13 on


def raise_opset_for_per_channel(model, notes: list[str]):
    """Per-channel weight scales need DequantizeLinear's `axis` (opset 13): convert the in-memory copy, and say so.

    Converting before calibration keeps one graph for every later step (the float reference included); a
    model the converter cannot take is refused here, before any calibration work.
    """
    import onnx
    from onnx import version_converter

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or opset >= PER_CHANNEL_OPSET:
        return model
    try:
        converted = version_converter.convert_version(model, PER_CHANNEL_OPSET)
        if converted.ByteSize() < BIG_MODEL_BYTES:  # the in-memory checker cannot take a proto past protobuf's limit
            onnx.checker.check_model(
                converted
            )  # the converter passes some ops through unchanged (Scatter): not valid at 13
    except Exception as e:
        raise NpufitError(
            f"--per-channel needs opset {PER_CHANNEL_OPSET} and this opset-{opset} model cannot be converted "
            f"({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else 'no detail'}); "
            f"re-export at opset {PER_CHANNEL_OPSET} or quantize per-tensor"
        ) from None
    notes.append(
        f"per-channel: the quantized copy was raised from opset {opset} to {PER_CHANNEL_OPSET} (per-channel "
        f"DequantizeLinear needs its `axis` attribute); the input file keeps opset {opset}"
    )
    return converted


def quantize(
    model: str | os.PathLike,
    output: str | os.PathLike,
    calibration: str | os.PathLike = "random",
    *,
    method: str = QUANTIZE_METHOD,
    per_channel: bool = False,
    activations: str = QUANTIZE_ACTIVATIONS[0],
    exclude: Sequence[str] = (),
    samples: int = 100,
    holdout: int | None = None,
    evaluation: str | os.PathLike | None = None,
    seed: int = 0,
    input_shapes=None,
    image: ImagePreprocessing | None = None,
    percentile: float = 99.999,
    worst: int = 5,
    preprocess: bool = True,
    target: str | None = None,
    placer=None,
) -> QuantizeReport:
    """Quantize `model` to an INT8 QDQ ONNX file at `output` and measure what it cost on held-back samples.

    The library side of `npufit quantize MODEL -o OUT --calibration SOURCE`. The input file is never modified;
    `output` is written atomically.

    Parameters
    ----------
    model : str or os.PathLike
        A float .onnx file.
    output : str or os.PathLike
        The quantized model to write.
    calibration : str or os.PathLike
        A folder of images (see `image` for the preprocessing), an .npz/.npy file, or "random" (seeded noise: fine
        to see placement, not to deploy).
    method : str
        How ranges are fitted: "minmax" (default), "percentile" (see `percentile`) or "entropy".
    per_channel : bool
        Per-channel weight scales.
    activations : str
        "int8" (default) or "uint8" activations (weights are int8).
    exclude : sequence of str
        Node names kept in float.
    samples : int
        At most this many calibration samples.
    holdout : int, optional
        Samples held back for the accuracy report (0: no report; None: 10, at most a fifth of a small set).
    evaluation : str or os.PathLike, optional
        A separate source (same kinds as `calibration`) for the held-back samples, e.g. validation data; then
        calibration uses up to `samples` of its own and `holdout` defaults to all of `evaluation`.
    seed : int
        Seed of random calibration data and of sample picking.
    input_shapes : dict or str, optional
        {"images": (1, 3, 640, 640)} or "images=1,3,640,640": the shapes calibration runs at and the output is
        written with (a dynamic batch alone is pinned to 1; other unknown dims must be given).
    image : ImagePreprocessing, optional
        How images are read (size, layout, mean, std) when `calibration` is a folder of images.
    percentile : float
        The percentile of method="percentile".
    worst : int
        How many worst layers the report lists.
    preprocess : bool
        Run ONNX Runtime's quantization pre-processing (shape inference, optimization) first.
    target : str, optional
        Target name(s) ("ethos-n78", "hailo8,rk3588", "all"): check the output there and report what the quantized
        graph costs (float islands, extra Q/DQ ops).
    placer : callable, optional
        placer(model, target) -> CheckReport places the written output (npufit.placement.place, which
        `npufit.quantize` passes in: the compiler's placement where one runs here); None: npufit's prediction.

    Returns
    -------
    QuantizeReport
        Calibration used, Q/DQ counts, per-output and per-layer error, timing, the target's ledger;
        `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> rep = npufit.quantize("det.onnx", "det_int8.onnx", calibration="images/", target="ethos-n78")
    >>> rep  # doctest: +SKIP
    <QuantizeReport det.onnx -> det_int8.onnx, min output cosine 0.9991>
    """
    import onnx

    src, dst = Path(model), Path(output)
    if dst.suffix.lower() != ".onnx":
        raise NpufitError(f"--output {dst}: the quantized model is an ONNX file; name it *.onnx")
    if src.exists() and dst.exists() and src.resolve() == dst.resolve():
        raise NpufitError(f"--output {dst} is the input model; the input is never overwritten, pick another name")
    settings = QuantizeSettings(
        method=method,
        per_channel=per_channel,
        activations=activations,
        exclude=tuple(exclude),
        percentile=percentile,
        preprocess=preprocess,
    )
    settings.validate()
    if samples < 1:
        raise NpufitError("--samples must be at least 1")
    if holdout is not None and holdout < 0:
        raise NpufitError("--holdout must be 0 or more")
    float_model, shapes = _read_model(src, parse_input_shapes(input_shapes))
    graph_within_budget("quantize", len(float_model.graph.node))
    input_shapes = shapes.pinned  # given, or a dynamic batch of 1: calibration samples and the output take them
    opset_notes: list[str] = list(shapes.notes)
    if per_channel:
        float_model = raise_opset_for_per_channel(float_model, opset_notes)
    specs = input_specs(float_model)
    extra = 0 if evaluation is not None else (DEFAULT_HOLDOUT if holdout is None else holdout)
    calib = load_calibration(
        calibration, specs, count=samples + extra, seed=seed, input_shapes=input_shapes, image=image
    )
    warnings = list(calib.warnings)
    if evaluation is None:
        n_cal, n_hold = split_samples(len(calib), samples, holdout, warnings)
        held: Sequence[dict] = _Pick(calib, range(len(calib) - n_hold, len(calib)))
        held_from = f"the last {n_hold} of {calib.source}"
    else:
        n_cal = min(samples, len(calib))
        ev = load_calibration(
            evaluation,
            specs,
            count=EVALUATION_MAX if holdout is None else max(holdout, 1),
            seed=seed + 1,
            input_shapes=input_shapes,
            image=image,
        )
        n_hold = len(ev) if holdout is None else min(holdout, len(ev))
        held, held_from = _Pick(ev, spread(len(ev), n_hold)), ev.source
    # calibrate on samples spread over everything not held back
    cal = _Pick(calib, spread(len(calib) - (n_hold if evaluation is None else 0), n_cal))
    if n_cal < MIN_CALIBRATION_SAMPLES and calib.kind != "random":
        warnings.append(
            f"only {n_cal} sample(s) calibrate the int8 ranges (fewer than {MIN_CALIBRATION_SAMPLES}): values the "
            "calibration did not see saturate; add samples (--samples) or hold fewer back (--holdout)"
        )

    with private_tempdir("quantize") as tmp:
        folder = Path(tmp)
        qm = quantize_static_qdq(float_model, folder, cal, settings)
        del float_model  # the copy in the temp folder is what the rest reads
        qdq = onnx.load(str(qm.qdq_path))
        try:
            onnx.checker.check_model(str(qm.qdq_path))
        except Exception as e:
            raise NpufitError(f"the quantized model fails onnx.checker: {str(e).splitlines()[0][:200]}") from None

        pairs, pair_notes = find_pairs(onnx.load(str(qm.float_path)), qdq)
        # the graph `check` reads from the written file, built in memory (the output is never read back): the
        # definition check's ledger and the target cost use
        qgraph = graph_from(from_proto(qdq, strip_weights, infer, name=str(dst)))
        counts = {**qdq_counts(qgraph), "activations": len(pairs)}
        atomic_save_onnx(qdq, dst)
        accuracy, eval_s = None, None
        if n_hold:
            t0 = time.perf_counter()
            float_probe = write_float_probe(onnx.load(str(qm.float_path)), pairs, folder / "probe_float.onnx")
            entire, single = write_probes(qdq, pairs, folder)
            accuracy = evaluate(folder / "float.onnx", float_probe, entire, single, pairs, held, per_channel, worst)
            eval_s = time.perf_counter() - t0

    cal_info = calib.describe()
    cal_info.update(
        {
            "used": qm.calibration_samples,
            "holdout": n_hold,
            "holdout_source": held_from if n_hold else None,
            "seed": seed if calib.kind == "random" else None,
        }
    )
    if accuracy is not None:
        warnings[:0] = clipping_warnings(accuracy, qm.calibration_samples)  # the likely cause of a bad result: first
    timing = {
        "quantize_s": round(qm.seconds, 3),
        "per_100_samples_s": round(qm.seconds * 100.0 / max(1, qm.calibration_samples), 3),
        "evaluate_s": round(eval_s, 3) if eval_s is not None else None,
    }
    report = QuantizeReport(
        model=str(src),
        output=str(dst),
        settings=settings.to_dict(),
        calibration=cal_info,
        qdq=counts,
        timing=timing,
        accuracy=accuracy,
        warnings=warnings,
        notes=opset_notes + qm.notes + pair_notes,
    )
    if target:
        report.extra["target_cost"] = target_costs(qgraph if placer is None else dst, target, placer)
    return report
