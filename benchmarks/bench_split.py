"""Benchmark npufit split / run: split + verify time, and the stage chain's latency on ONNX Runtime CPU
against the monolithic model (goal: the chain costs <= 5 % more).

    python benchmarks/bench_split.py [--runs 200] [--threads 1] [--models rtdetr128,rtdetr320,lstm]

Both sides use the same session settings; "deterministic" is what split's verification uses
(ORT_DISABLE_ALL), "optimized" is ORT's default graph optimizer (fusions cannot cross a stage cut).
Runs are interleaved (monolithic, chain, monolithic, ...) so drift hits both sides alike; with one
thread the clock is the thread's CPU time, which a loaded machine does not inflate.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(name: str, folder: Path) -> Path:
    p = folder / f"{name}.onnx"
    if name.startswith("rtdetr"):
        from npufit.zoo import hf

        hf.rtdetr(p, opset=17, size=int(name[len("rtdetr") :] or 128))
    elif name in ("lstm", "gru", "tcn", "bilstm"):
        from npufit.zoo import timeseries

        timeseries.export(name, p)
    else:
        raise SystemExit(f"unknown model {name}")
    return p


def mono_session(path: Path, threads: int, optimized: bool):
    from npufit.split.chain import _session

    return _session(path, threads, optimized)


def bench(model: Path, plan_dir: Path, runs: int, threads: int, optimized: bool) -> tuple[float, float, float, float]:
    from npufit.split.chain import ChainRunner
    from npufit.verify.compare import random_inputs

    mono = mono_session(model, threads, optimized)
    chain = ChainRunner(plan_dir, "onnxruntime-cpu", threads=threads, optimized=optimized)
    feeds = random_inputs(mono, seed=0)[0]
    names = [o.name for o in mono.get_outputs()]
    for _ in range(10):
        mono.run(names, feeds)
        chain.run(feeds)
    # With one intra-op thread ORT computes on the calling thread, so thread CPU time measures the work
    # itself; wall time on a shared machine mostly measures the other processes.
    clock = time.thread_time if threads == 1 else time.perf_counter
    tm, tc = [], []
    for _ in range(runs):
        t0 = clock()
        mono.run(names, feeds)
        t1 = clock()
        chain.run(feeds)
        t2 = clock()
        tm.append(t1 - t0)
        tc.append(t2 - t1)
    return min(tm) * 1e3, min(tc) * 1e3, statistics.median(tm) * 1e3, statistics.median(tc) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="rtdetr128,rtdetr320,lstm")
    ap.add_argument("--target", default="hailo8")
    args = ap.parse_args()
    import onnxruntime

    import npufit

    print(
        f"# npufit {npufit.__version__}, onnxruntime {onnxruntime.__version__}, "
        f"{platform.processor() or platform.machine()}, "
        f"{args.threads} thread(s), {'thread CPU time' if args.threads == 1 else 'wall time'}, "
        f"best (and median) of {args.runs} interleaved runs"
    )
    print(
        f"{'model':<10} {'mode':<9} {'stages':>6} {'split+verify s':>14} {'settings':<13} {'mono ms':>9} "
        f"{'chain ms':>9} "
        f"{'overhead':>9} {'abs':>9} {'median overhead':>16}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model = build(name, Path(tmp))
            for mode in ("prefix", "segments"):
                plan_dir = Path(tmp) / f"{name}_{mode}"
                t0 = time.perf_counter()
                res = npufit.split(model, args.target, plan_dir, mode=mode, min_nodes=8 if mode == "segments" else 1)
                t_split = time.perf_counter() - t0
                assert res.plan.verification["equivalent"]
                for optimized in (False, True):
                    m, c, mm, mc = bench(model, plan_dir, args.runs, args.threads, optimized)
                    print(
                        f"{name:<10} {mode:<9} {len(res.plan.stages):>6} {t_split:>14.2f} "
                        f"{'optimized' if optimized else 'deterministic':<13} {m:>9.3f} {c:>9.3f} "
                        f"{100 * (c - m) / m:>+8.1f}% "
                        f"{1000 * (c - m):>+6.0f} us {100 * (mc - mm) / mm:>+15.1f}%"
                    )


if __name__ == "__main__":
    main()
