"""npufit bench's own overhead: a raw `session.run` loop vs `npufit.bench(..., "ort-cpu")` on the same model.

Same ONNX Runtime session options (full graph optimisation, the same thread count), same iterations and
warm-up, a fresh session per block on both sides, blocks interleaved A-B, B-A, A-B ... over several rounds
so drift (thermal, other load) hits both sides alike. Goal: npufit's median within 1 % of the raw loop's.

    python benchmarks/bench_overhead.py [--iterations 2000] [--rounds 6] [--threads 1] [--progress]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def conv_net(path: Path, channels: int, size: int, layers: int) -> Path:
    rng = np.random.default_rng(0)
    inits, nodes, prev, cin = [], [], "x", 3
    for i in range(layers):
        w = nh.from_array((rng.standard_normal((channels, cin, 3, 3)) * 0.1).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes += [
            h.make_node("Conv", [prev, w.name], [f"c{i}"], pads=[1, 1, 1, 1]),
            h.make_node("Relu", [f"c{i}"], [f"r{i}"]),
        ]
        prev, cin = f"r{i}", channels
    nodes.append(h.make_node("GlobalAveragePool", [prev], ["y"]))
    g = h.make_graph(
        nodes,
        "net",
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, size, size])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, channels, 1, 1])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def raw_block(model: Path, iterations: int, warmup: int, threads: int) -> float:
    """What a user writes by hand: a session with the same options, then a perf_counter loop."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    feeds = {"x": np.random.default_rng(0).standard_normal(sess.get_inputs()[0].shape).astype(np.float32)}
    for _ in range(warmup + 1):
        sess.run(None, feeds)
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times)) / 1e6


def npufit_block(model: Path, iterations: int, warmup: int, threads: int) -> float:
    from npufit.bench import bench

    return bench(model, "ort-cpu", iterations=iterations, warmup=warmup, threads=threads).results[0].latency_ms["p50"]


def measure(model: Path, iterations: int, rounds: int, warmup: int, threads: int) -> dict:
    raw, nf = [], []
    for r in range(rounds):
        order = (("raw", raw_block, raw), ("npufit", npufit_block, nf))
        for _, fn, sink in order if r % 2 == 0 else order[::-1]:
            sink.append(fn(model, iterations, warmup, threads))
    raw_med, nf_med = statistics.median(raw), statistics.median(nf)
    return {
        "raw_ms": raw_med,
        "npufit_ms": nf_med,
        "diff_pct": 100.0 * (nf_med - raw_med) / raw_med,
        "raw_blocks": raw,
        "npufit_blocks": nf,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--progress", action="store_true", help="keep npufit's progress bar (drawn only when stderr is a terminal)"
    )
    args = ap.parse_args()
    if not args.progress:
        os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")
    import onnxruntime as ort

    print(
        f"onnxruntime {ort.__version__}, {os.cpu_count()} cores, threads={args.threads}, "
        f"{args.iterations} iterations x {args.rounds} rounds per side, blocks interleaved, "
        f"progress bar {'on' if args.progress and sys.stderr.isatty() else 'off'}"
    )
    with tempfile.TemporaryDirectory() as d:
        models = {
            "conv 16ch 64x64 x4": conv_net(Path(d) / "mid.onnx", 16, 64, 4),
            "conv 8ch 16x16 x1 (tiny)": conv_net(Path(d) / "tiny.onnx", 8, 16, 1),
        }
        worst = 0.0
        for name, path in models.items():
            m = measure(path, args.iterations, args.rounds, args.warmup, args.threads)
            blocks = " ".join(f"{a:.4f}/{b:.4f}" for a, b in zip(m["raw_blocks"], m["npufit_blocks"]))
            print(
                f"{name}: raw p50 {m['raw_ms']:.4f} ms, npufit p50 {m['npufit_ms']:.4f} ms, "
                f"difference {m['diff_pct']:+.2f} % ({(m['npufit_ms'] - m['raw_ms']) * 1e3:+.2f} us)"
            )
            print(f"  per-round medians raw/npufit: {blocks}")
            if name.startswith("conv 16ch"):
                worst = abs(m["diff_pct"])
    verdict = "met" if worst <= 1.0 else "NOT met"
    print(f"goal |difference| <= 1 % on the conv 16ch model: {verdict} ({worst:.2f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
