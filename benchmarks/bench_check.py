"""Wall time and peak RSS of `npufit check` (load + judge + partitions), each case in a fresh process.

Cases: a generated 2,000-node graph, a 100,000-node graph, and a model with >= 1 GB of weights in
external data (check must not read them). Goals: 2k < 0.3 s, 100k < 5 s, 1 GB model peak RSS < 300 MB.
Run: .venv/bin/python benchmarks/bench_check.py [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# VmHWM, not ru_maxrss: Linux carries ru_maxrss across execve, so a child would report the parent's peak.
CHILD = r"""
def hwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
import json, sys, time
t0 = time.perf_counter()
import npufit
from npufit.check import check
t1 = time.perf_counter()
rep = check(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
s = rep.summary()
print(json.dumps({"import_s": t1 - t0, "check_s": t2 - t1, "nodes": s["nodes_total"], "partitions": s["npu_partitions"] + s["host_partitions"],
                  "peak_rss_mb": hwm_mb()}))
"""


def chain_model(n_nodes: int) -> onnx.ModelProto:
    """Residual conv blocks (Conv, Relu, Add, and an unsupported TopK-free Mod island every 500 nodes)."""
    c, hw = 8, 8
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((c, c, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(np.array(2.0, np.float32), "m")
    nodes, cur, i = [], "x", 0
    while len(nodes) < n_nodes:
        a, b, d = f"t{i}a", f"t{i}b", f"t{i}c"
        nodes.append(helper.make_node("Conv", [cur, "w"], [a], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [a], [b], name=f"relu{i}"))
        if i % 125 == 124:
            nodes.append(helper.make_node("Mod", [b, "m"], [d], name=f"mod{i}", fmod=1))
        else:
            nodes.append(helper.make_node("Add", [b, cur], [d], name=f"add{i}"))
        cur, i = d, i + 1
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, c, hw, hw])], [w, m])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def big_external_model(dst: Path, gib: float = 1.0) -> Path:
    """MLP whose weights (>= gib GiB float32) live in external data; written tensor by tensor."""
    k = 8192
    n_layers = int(np.ceil(gib * (1 << 30) / (k * k * 4)))
    data_name = "big.onnx.data"
    inits, nodes, cur, offset = [], [], "x", 0
    with open(dst / data_name, "wb") as f:
        for i in range(n_layers):
            arr = np.full((k, k), 1e-4, dtype=np.float32)
            f.write(arr.tobytes())
            t = TensorProto(name=f"W{i}", data_type=TensorProto.FLOAT, dims=[k, k])
            t.data_location = TensorProto.EXTERNAL
            for key, val in (("location", data_name), ("offset", str(offset)), ("length", str(arr.nbytes))):
                t.external_data.add(key=key, value=val)
            offset += arr.nbytes
            inits.append(t)
            nodes.append(helper.make_node("MatMul", [cur, f"W{i}"], [f"h{i}"], name=f"fc{i}"))
            nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"], name=f"relu{i}"))
            cur = f"r{i}"
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, k])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = dst / "big.onnx"
    onnx.save_model(model, str(path))
    return path


def measure(path: Path, target: str = "hailo8", repeats: int = 3) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, str(path), target], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = min(runs, key=lambda r: r["check_s"])
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--keep", help="write the generated models here instead of a temp dir")
    ap.add_argument("--skip-big", action="store_true", help="skip the 1 GB external-data case")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="npufit-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    results = []
    for n, goal in ((2_000, "< 0.3 s"), (100_000, "< 5 s")):
        p = root / f"chain{n}.onnx"
        onnx.save_model(chain_model(n), str(p))
        r = measure(p)
        results.append((f"{n:,}-node graph", r, goal))
    if not args.skip_big:
        big = big_external_model(root)
        size = (root / "big.onnx.data").stat().st_size
        r = measure(big, repeats=1)
        results.append((f"{size / (1 << 30):.2f} GiB external weights", r, "peak RSS < 300 MB"))
    print(f"{'case':32} {'nodes':>8} {'check (s)':>10} {'import (s)':>10} {'peak RSS (MB)':>14}  goal")
    for name, r, goal in results:
        print(f"{name:32} {r['nodes']:>8} {r['check_s']:>10.3f} {r['import_s']:>10.3f} {r['peak_rss_mb']:>14.1f}  {goal}")


if __name__ == "__main__":
    main()
