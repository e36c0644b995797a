"""Time of `npufit quantize` per 100 calibration samples (calibration + ORT quantization), and of the accuracy
report per held-back sample, for small CNNs: the seed-001 detector (ReLU, 64x64 and 160x160 inputs) and a
MobileNetV2 (transformers config, 96x96). Calibration data: seeded random (the time does not depend on it).
Run: .venv/bin/python benchmarks/bench_quantize.py [--samples 100] [--holdout 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")


def cases(folder: Path):
    from npufit.zoo import detector, hf

    detector.export("relu", folder / "det64.onnx", size=64)
    detector.export("relu", folder / "det160.onnx", size=160)
    hf.mobilenet_v2(folder / "mbv2.onnx", size=96)
    return [
        ("detector-relu 64x64", folder / "det64.onnx", ("minmax", "entropy", "percentile")),
        ("detector-relu 160x160", folder / "det160.onnx", ("minmax",)),
        ("mobilenet_v2 96x96", folder / "mbv2.onnx", ("minmax", "entropy")),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--holdout", type=int, default=10)
    args = ap.parse_args()
    import npufit

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(
            f"{'model':24} {'method':10} {'acts':>5} {'calib+quant s':>14} {'s / 100 samples':>16} "
            f"{'eval s / sample':>16} {'min cosine':>11} {'total s':>8}"
        )
        for label, path, methods in cases(folder):
            for method in methods:
                t0 = time.perf_counter()
                r = npufit.quantize(
                    path, folder / "q.onnx", "random", samples=args.samples, holdout=args.holdout, method=method
                )
                total = time.perf_counter() - t0
                t = r.timing
                print(
                    f"{label:24} {method:10} {r.qdq['activations']:>5} {t['quantize_s']:>14.2f} "
                    f"{t['per_100_samples_s']:>16.2f} "
                    f"{t['evaluate_s'] / max(1, args.holdout):>16.3f} {r.min_output_cosine:>11.4f} {total:>8.2f}"
                )


if __name__ == "__main__":
    main()
