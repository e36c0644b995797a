"""`npufit check` against the cost of reading the graph, and its memory on a model with 1 GiB of weights.

Cases (each run in fresh processes, best of --repeats, the two commands interleaved so both see the same load):
- Conv/Relu/Add blocks (a Mod island every 125 blocks, one 8x8x3x3 weight per Conv), opset 17, at 2,000 and
  100,000 nodes (the latter ~82 MB): whole-process `npufit check --format json` (stdout to /dev/null) against
  a bare `python -c "onnx.load(f); onnx.shape_inference.infer_shapes(m)"`. Goal: ratio <= 2 at both sizes.
- an MLP with >= 1 GiB of weights in external data: peak RSS of `npufit check` < 300 MB (weights never read).
Ratios are printed for wall time and for CPU time (user + sys of the child): on a shared machine the CPU
ratio is the steadier of the two. Both commands run with Python's bytecode cache written and read, as for an
installed package (one untimed warm-up run of check writes it).
With several targets (--target given more than once, a comma-separated list, or --targets all) every row is one
size x target, each check run interleaved with the baseline's runs of that size, so each ratio sees the same load.
Run: .venv/bin/python benchmarks/bench_check.py [--keep DIR] [--repeats N] [--skip-big] [--target T ... | --targets all]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BASELINE = "import onnx, sys; m = onnx.load(sys.argv[1]); onnx.shape_inference.infer_shapes(m)"
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across execve, so a child would report the parent's peak.
RSS_WRAPPER = r"""
import runpy, sys
sys.argv = ["npufit"] + sys.argv[1:]
try:
    runpy.run_module("npufit", run_name="__main__")
finally:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            print(int(line.split()[1]) / 1024, file=sys.stderr)
"""


def chain_model(n_nodes: int, opset: int = 17) -> onnx.ModelProto:
    """Residual conv blocks (Conv, Relu, Add; a Mod island every 125 blocks), one weight per Conv."""
    c, hw = 8, 8
    rng = np.random.default_rng(0)
    m = numpy_helper.from_array(np.array(2.0, np.float32), "m")
    nodes, inits, cur, i = [], [m], "x", 0
    while len(nodes) < n_nodes:
        a, b, d = f"t{i}a", f"t{i}b", f"t{i}c"
        inits.append(numpy_helper.from_array(rng.standard_normal((c, c, 3, 3)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("Conv", [cur, f"w{i}"], [a], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [a], [b], name=f"relu{i}"))
        if i % 125 == 124:
            nodes.append(helper.make_node("Mod", [b, "m"], [d], name=f"mod{i}", fmod=1))
        else:
            nodes.append(helper.make_node("Add", [b, cur], [d], name=f"add{i}"))
        cur, i = d, i + 1
    g = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, c, hw, hw])],
        inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
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
    g = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, k])],
        inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = dst / "big.onnx"
    onnx.save_model(model, str(path))
    return path


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({out.returncode}): {out.stderr[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out.stderr


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parent.parent)  # this checkout's npufit, also when not installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
    # Bytecode cached, as an installed package has it (pip compiles on install; onnx's is cached already):
    # with PYTHONDONTWRITEBYTECODE set, every check would compile npufit's modules again (~0.2 s of CPU).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compare(path: Path, targets: list[str], repeats: int) -> dict[str, dict]:
    """Per target: best wall and CPU of check and of the baseline, the runs interleaved (base, check T1, check T2,
    ...)."""
    checks = {
        # --predict: the prediction's speed (by default check runs the installed compiler where one runs here)
        t: [sys.executable, "-m", "npufit", "check", str(path), "--target", t, "--predict", "--format", "json"]
        for t in targets
    }
    base = [sys.executable, "-c", BASELINE, str(path)]
    b: list[tuple[float, float]] = []
    c: dict[str, list[tuple[float, float]]] = {t: [] for t in targets}
    timed(checks[targets[0]])  # warm-up, not counted: writes the bytecode cache
    for _ in range(repeats):
        for t in targets:
            b.append(timed(base)[:2])
            c[t].append(timed(checks[t])[:2])
    bw, bc = min(x[0] for x in b), min(x[1] for x in b)
    out = {}
    for t in targets:
        cw, cc = min(x[0] for x in c[t]), min(x[1] for x in c[t])
        out[t] = {
            "base_wall": bw,
            "base_cpu": bc,
            "check_wall": cw,
            "check_cpu": cc,
            "ratio_wall": cw / bw,
            "ratio_cpu": cc / bc,
        }
    return out


def _targets(args: argparse.Namespace) -> list[str]:
    if args.targets:
        sys.path.insert(
            0, str(Path(__file__).resolve().parent.parent)
        )  # this checkout's npufit, as the children get it
        from npufit.targets import resolve_targets

        return resolve_targets(args.targets)
    names = [n for arg in (args.target or ["hailo8"]) for n in arg.split(",") if n]
    return list(dict.fromkeys(names))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", help="write the generated models here instead of a temp dir")
    ap.add_argument(
        "--repeats", type=int, default=3, help="runs of each command per case; the best is kept (default 3)"
    )
    ap.add_argument(
        "--target", action="append", help="target to check (repeatable, or comma-separated; default hailo8)"
    )
    ap.add_argument("--targets", help="'all', or a comma-separated list: every target npufit names that way")
    ap.add_argument("--skip-big", action="store_true", help="skip the 1 GiB external-data case")
    args = ap.parse_args()
    targets = _targets(args)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="npufit-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    width = 28 + (max(len(t) for t in targets) + 1 if len(targets) > 1 else 0)
    print(
        f"{'case':{width}} {'load+infer s':>12} {'check s':>9} {'ratio':>6}  {'load+infer cpu':>14} "
        f"{'check cpu':>9} {'ratio':>6}  goal"
    )
    for n in (2_000, 100_000):
        p = root / f"chain{n}.onnx"
        if not p.exists():
            onnx.save_model(chain_model(n), str(p))
        for t, r in compare(p, targets, args.repeats).items():
            name = f"{n:,} nodes ({p.stat().st_size / 1e6:.1f} MB)" + (f" {t}" if len(targets) > 1 else "")
            print(
                f"{name:{width}} {r['base_wall']:>12.2f} {r['check_wall']:>9.2f} {r['ratio_wall']:>5.2f}x  "
                f"{r['base_cpu']:>14.2f} "
                f"{r['check_cpu']:>9.2f} {r['ratio_cpu']:>5.2f}x  <= 2x",
                flush=True,
            )
    if not args.skip_big:
        big = root / "big.onnx"
        if not big.exists():
            big = big_external_model(root)
        size = (root / "big.onnx.data").stat().st_size
        wall, cpu, err = timed(
            [
                sys.executable,
                "-c",
                RSS_WRAPPER,
                "check",
                str(big),
                "--target",
                targets[0],
                "--predict",
                "--format",
                "json",
            ]
        )
        rss = float(err.strip().splitlines()[-1])
        print(f"{size / (1 << 30):.2f} GiB external weights: check {wall:.2f} s, peak RSS {rss:.0f} MB (goal < 300 MB)")
    print(
        f"(python {sys.version.split()[0]}, onnx {onnx.__version__}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f} at the end)"
    )


if __name__ == "__main__":
    main()
