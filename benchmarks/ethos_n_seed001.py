"""Seed 001 on the real Arm Ethos-N support library: the seed's table from seed-001-style detectors.

    python benchmarks/ethos_n_seed001.py [OUT_DIR] [--size 64] [--target ethos-n78]

Builds level 2/3/4 ReLU and LeakyReLU detectors (npufit.zoo.detector, int8 TFLite by npufit.convert), compiles
each with the support library (Compile() and EstimatePerformance()) and prints total / NPU / host ops, the NPU
ratio, partitions, the estimated latency and the extra Q/DQ ops per LeakyReLU in the library flow and in TVM's
flow. Needs 'npufit env install ethos-n'."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from npufit.compilers.ethos_n_seed import build_models, measure, render


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", help="work folder (default: a temporary one)")
    ap.add_argument("--size", type=int, default=64, help="input height and width")
    ap.add_argument("--width", type=int, default=16, help="base channel width")
    ap.add_argument("--target", default="ethos-n78", help="ethos-n78 or ethos-n78-<1|2|4|8>tops-<2|4>ple")
    a = ap.parse_args()
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="npufit-seed001-"))
    t0 = time.perf_counter()
    models = build_models(out / "models", a.size, a.width)
    t1 = time.perf_counter()
    rows = measure(models, out, a.target)
    t2 = time.perf_counter()
    print(f"seed-001-style detectors, {a.size}x{a.size} input, width {a.width}, target {a.target}")
    print(render(rows))
    print(
        f"models built in {t1 - t0:.1f} s; compiled in {t2 - t1:.1f} s "
        f"(per model: {', '.join(f'{r.model} {r.compile_wall_s:.2f} s' for r in rows)})"
    )
    (out / "seed001.json").write_text(json.dumps([r.__dict__ for r in rows], indent=2))


if __name__ == "__main__":
    main()
