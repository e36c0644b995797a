"""Scaling of `npufit scan` and `npufit probe` over executors on this machine: models per second.

scan: a generated zoo (tests/onnx_builders.zoo_model: 2-5 conv blocks, some with Mod / rank-3 reshapes) x
4 targets, with the in-process executor, a local pool of 1 and 2 workers, and Ray on this machine (a local
cluster of 2 CPUs, started once; its start-up is reported on its own line). probe: prediction-only probe
cases (torch export + check per case, no vendor compiler) on the same executors.
Each number is one run (wall clock, including worker start-up), so compare them on the same machine only.
Run: .venv/bin/python benchmarks/bench_scan.py [--models 200] [--probe-cases 'conv*,relu,tanh'] [--skip-ray]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's npufit and tests.onnx_builders

TARGETS = "hailo8,rk3588,ethos-u55-128,ethos-n78"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int, default=200, help="generated models in the zoo (default 200)")
    ap.add_argument(
        "--nodes",
        type=int,
        default=0,
        help="0 (default): tiny zoo models (~10 nodes); N: Conv/Relu/Add chains of about N nodes "
        "(benchmarks/bench_check.py), for a per-model cost closer to real networks",
    )
    ap.add_argument(
        "--probe-cases",
        default="conv2d*,relu,tanh,sigmoid,maxpool*,avgpool*,add,mul,concat*",
        help="probe case globs (default: a dozen small cases)",
    )
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--skip-probe", action="store_true")
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    from npufit.scan import scan
    from tests.onnx_builders import write_zoo

    zoo = Path(tempfile.mkdtemp(prefix="npufit-zoo-"))
    if args.nodes:
        import onnx

        from benchmarks.bench_check import chain_model

        for i in range(args.models):  # sizes vary +-25 % around --nodes, so models differ
            onnx.save_model(
                chain_model(int(args.nodes * (0.75 + 0.5 * (i % 11) / 10))), str(zoo / f"chain_{i:04d}.onnx")
            )
    else:
        write_zoo(zoo, args.models)
    runs = [("inprocess", 1), ("pool", 1), ("pool", 2)]
    ray = None
    if not args.skip_ray:
        try:
            import ray
        except ImportError:
            print("ray is not installed: Ray rows skipped (pip install 'npufit[ray]')")
    if ray is not None:
        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        print(f"Ray local cluster start (2 CPUs): {time.perf_counter() - t0:.1f} s (not counted below)")
        runs.append(("ray", 2))
    print(
        f"\nscan: {args.models} models ({'~%d nodes each' % args.nodes if args.nodes else 'tiny'}) x "
        f"{len(TARGETS.split(','))} targets"
    )
    print(f"{'executor':10} {'workers':>7} {'seconds':>8} {'models/s':>9} {'rows/s':>8}")
    reference = None
    for name, jobs in runs:
        t0 = time.perf_counter()
        rep = scan([zoo], TARGETS, executor=name, jobs=jobs)
        dt = time.perf_counter() - t0
        d = rep.to_dict()
        d.pop("run")
        same = "" if reference is None else ("  rows identical" if d == reference else "  ROWS DIFFER")
        reference = reference or d
        print(f"{name:10} {jobs:>7} {dt:>8.2f} {args.models / dt:>9.1f} {len(rep.rows) / dt:>8.1f}{same}", flush=True)
    if not args.skip_probe:
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            print("\nprobe: torch is not installed, skipped")
        else:
            from npufit.probe import probe

            print(f"\nprobe hailo8 (prediction only), cases {args.probe_cases!r}")
            print(f"{'executor':10} {'workers':>7} {'cases':>6} {'seconds':>8} {'cases/s':>8}")
            for name, jobs in runs:
                t0 = time.perf_counter()
                rep = probe("hailo8", cases=args.probe_cases, jobs=jobs, executor=name, timeout=300)
                dt = time.perf_counter() - t0
                print(f"{name:10} {jobs:>7} {len(rep.cases):>6} {dt:>8.2f} {len(rep.cases) / dt:>8.2f}", flush=True)
    if ray is not None:
        ray.shutdown()
    print(
        f"\n(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)"
    )


if __name__ == "__main__":
    main()
