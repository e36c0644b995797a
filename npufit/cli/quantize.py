"""npufit quantize MODEL --output OUT.onnx --calibration SOURCE: INT8 QDQ model + per-layer accuracy report."""

from __future__ import annotations

import argparse
import sys

from ..errors import NpufitError
from ..graph import parse_input_shapes
from ..placement import with_placer
from ..quantize import ImagePreprocessing, quantize
from ..vocab import FORMAT, FORMATS, QUANTIZE_ACTIVATIONS, QUANTIZE_METHOD, QUANTIZE_METHODS
from .common import (
    add_input_shape_option,
    add_measure_options,
    add_verify_timeout_option,
    bounded_number,
    cosine,
    count_int,
    emit,
    finite_float,
    measure_mode,
    name_arg,
    percentile,
    positive_float,
    seed_int,
)


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        return tuple(finite_float(v) for v in text.split(",") if v.strip())
    except argparse.ArgumentTypeError:
        raise NpufitError(f"{what} '{text}': expected comma-separated numbers, e.g. 0.485,0.456,0.406") from None


def _size(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    parts = text.lower().replace("x", ",").split(",")
    try:
        dims = tuple(int(p) for p in parts if p.strip())
    except ValueError:
        dims = ()
    if len(dims) == 1:
        dims = dims * 2
    if len(dims) != 2 or min(dims) < 1:
        raise NpufitError(f"--image-size '{text}': expected H,W (e.g. 224,224) or one number")
    return dims  # type: ignore[return-value]


# calibration statistics settle within a few hundred samples; the bound keeps 'random' from generating forever
calibration_samples = bounded_number(int, 1, 100_000, what="an integer in [1, 100000]")


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "quantize",
        help=help,
        description="Quantize an ONNX model to INT8 (ONNX Runtime static quantizer, QDQ format) from calibration "
        "data, then compare float vs quantized on held-back samples: per output (cosine, SQNR, max abs "
        "error) and per quantized activation, 'entire' (in the quantized model) vs 'single' (the layer "
        "alone with float inputs), so an error born in a layer is told from an inherited one.",
    )
    add_verify_timeout_option(p)
    p.add_argument("model", help="float .onnx model (never modified)")
    p.add_argument(
        "--output", "-o", required=True, metavar="OUT.onnx", help="where to write the quantized QDQ model (atomically)"
    )
    p.add_argument(
        "--calibration",
        "-c",
        required=True,
        metavar="SOURCE",
        help="a folder of images, an .npz (one array per input, [N, ...]) or .npy file, or 'random' "
        "(seeded noise: the accuracy numbers then mean little)",
    )
    p.add_argument(
        "--method",
        choices=QUANTIZE_METHODS,
        default=QUANTIZE_METHOD,
        help=f"activation range calibration (default: {QUANTIZE_METHOD})",
    )
    p.add_argument(
        "--percentile", type=percentile, default=99.999, help="percentile for --method percentile (default 99.999)"
    )
    p.add_argument("--per-channel", action="store_true", help="per-channel weight scales (default: per-tensor)")
    p.add_argument(
        "--activations",
        choices=QUANTIZE_ACTIVATIONS,
        default=QUANTIZE_ACTIVATIONS[0],
        help="activation type (weights are int8)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="NODES",
        default=[],
        help="comma-separated node names to leave in float (repeatable)",
    )
    p.add_argument(
        "--samples",
        type=calibration_samples,
        default=100,
        help="calibration samples to use at most (default 100, at most 100000)",
    )
    p.add_argument(
        "--holdout",
        type=count_int,
        default=None,
        help="samples held back (never calibrated on) for the accuracy report; 0 = no report (default: 10 of the "
        "calibration source, at most a fifth of a small set; every sample of --evaluation)",
    )
    p.add_argument(
        "--evaluation",
        metavar="SOURCE",
        help="held-back samples from this source (same kinds as --calibration, e.g. validation data) instead of "
        "the last samples of the calibration source",
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed for --calibration random (default 0)")
    p.add_argument(
        "--worst", type=count_int, default=5, help="how many worst layers to name with a suggestion (default 5)"
    )
    p.add_argument(
        "--no-preprocess", action="store_true", help="skip ONNX Runtime's pre-processing (constant folding, BN fusion)"
    )
    img = p.add_argument_group("image folder preprocessing (stated in the report)")
    img.add_argument("--image-size", metavar="H,W", help="resize to H,W (default: the model input's static size)")
    img.add_argument("--mean", default="0,0,0", help="per-channel mean subtracted after scaling (default 0,0,0)")
    img.add_argument("--std", default="1,1,1", help="per-channel std divided by after the mean (default 1,1,1)")
    img.add_argument(
        "--scale", type=positive_float, default=1.0 / 255.0, help="pixel multiplier before mean/std (default 1/255)"
    )
    img.add_argument("--layout", choices=("nchw", "nhwc"), help="input layout (default: from the input shape)")
    img.add_argument("--bgr", action="store_true", help="feed BGR channel order instead of RGB")
    p.add_argument(
        "--target",
        "-t",
        type=name_arg,
        metavar="T",
        help="also check the quantized model on target(s) (e.g. ethos-n78, 'all') and report its Q/DQ cost",
    )
    add_input_shape_option(p)
    p.add_argument("--format", "-f", choices=FORMATS, default=FORMAT, help=f"report format (default: {FORMAT})")
    p.add_argument("--report", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    p.add_argument(
        "--min-cosine", type=cosine, metavar="C", help="exit 1 when any output's cosine is below C (CI gate)"
    )
    add_measure_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    image = ImagePreprocessing(
        size=_size(args.image_size),
        mean=_floats(args.mean, "--mean"),
        std=_floats(args.std, "--std"),
        scale=args.scale,
        layout=args.layout,
        bgr=args.bgr,
    )
    exclude = [n.strip() for spec in args.exclude for n in spec.split(",") if n.strip()]
    mode, _ = measure_mode(args)
    report = with_placer(quantize, takes_shapes=False)(
        args.model,
        args.output,
        args.calibration,
        method=args.method,
        per_channel=args.per_channel,
        activations=args.activations,
        exclude=exclude,
        samples=args.samples,
        holdout=args.holdout,
        evaluation=args.evaluation,
        seed=args.seed,
        input_shapes=parse_input_shapes(args.input_shape),
        image=image,
        percentile=args.percentile,
        worst=args.worst,
        preprocess=not args.no_preprocess,
        target=args.target,
        measure=mode,
        measure_timeout=args.measure_timeout,
    )
    if args.calibration == "random":  # after the work: a refused input gets its one line and nothing else
        print(
            "npufit: warning: --calibration random fits scales to seeded noise; the accuracy report says little "
            "about real inputs",
            file=sys.stderr,
        )
    print(f"wrote {args.output}", file=sys.stderr)
    emit(report.render(args.format), args.report)
    cos = report.min_output_cosine
    if args.min_cosine is not None and cos is not None and cos < args.min_cosine:
        print(f"npufit: output cosine {cos:.4f} is below --min-cosine {args.min_cosine:g}", file=sys.stderr)
        return 1
    return 0
