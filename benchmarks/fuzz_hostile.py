"""Seeded mutation fuzz of every file npufit reads (hostile-input issue, part 5): mutate bytes and fields of small
valid inputs (an ONNX model, a split plan, an .npz, a pipeline YAML, a probe record, a bench result, a results
folder), run the verb that reads each through the hostile harness (real CLI subprocess, address-space and time
caps, private TMPDIR) and count the outcomes.

    python benchmarks/fuzz_hostile.py [--runs 300] [--seed 0] [--kinds plan,npz,yaml,...] [--show 5]
    python benchmarks/fuzz_hostile.py --classes all|memory,time,... [--cases SUBSTRING] [--show 5]

--classes runs the catalogue of the hostile-input classes instead (tests/hostile/classes.py: memory and time
bombs, internal errors, confinement, external data, silent runs, temp folders of killed runs, telemetry), each
run under a resident-memory watchdog, and prints per class how many runs still fail and how.

Outcomes: ok (exit 0), refused (exit 2 with exactly one 'npufit: error:' line), internal (anything else: exit 3,
a traceback, more than one line), hang (killed at the time cap), lost (an input changed or removed, or a file
created outside the output), tmp (temp files left). Peak is the largest resident set of any run. The same
seed and settings give the same mutations.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import random
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile.harness import run_verb, snapshot  # noqa: E402

SHAPE = [1, 3, 8, 8]
HOSTILE_VALUES = [
    -1,
    0,
    2**63,
    -(2**63),
    1e308,
    float("nan"),
    float("inf"),
    "",
    "../../../etc/passwd",
    "/etc/passwd",
    "/dev/zero",
    "\x1b[2J",
    "\x00",
    None,
    True,
    [],
    {},
    [[[[[[[[]]]]]]]],
    "a" * 10_000,
    list(range(5000)),
]


# -- seed inputs --------------------------------------------------------------------------------------------------
def make_seeds(d: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    w = numpy_helper.from_array(np.linspace(-1, 1, 108, dtype=np.float32).reshape(4, 3, 3, 3), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["y"], name="sig"),
    ]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, str(d / "m.onnx"))
    from npufit.split import split

    split(str(d / "m.onnx"), "hailo8", output_dir=str(d / "plan"), verify=False)
    rng = np.random.default_rng(0)
    np.savez(d / "x.npz", x=rng.standard_normal(SHAPE).astype(np.float32))  # one sample (run, split, bench)
    np.savez(d / "cal.npz", x=rng.standard_normal([4, *SHAPE]).astype(np.float32))  # [N, ...] samples (quantize)
    (d / "p.yaml").write_text(
        "version: 1\nname: fz\nmodels:\n  - {name: m, onnx: m.onnx}\ntargets: [hailo8, ethos-u55-128]\n"
        "runtimes: [ort-cpu]\nsteps:\n  export: {}\n  check: {}\n  split: {mode: prefix}\n"
        "  bench: {iterations: 5, warmup: 1}\n  report: {output: report.html}\n"
    )
    (d / "rec.json").write_text(
        json.dumps(
            {
                "schema": "npufit.probe.measured/1",
                "target": "hailo8",
                "compiler": "hailo",
                "opset": 11,
                "cases": {"relu": {"status": "ok", "symbol": "✅"}},
            }
        )
    )
    bench = {
        "schema": "npufit.bench/1",
        "model": {"sha256": "0" * 64},
        "protocol": {},
        "environment": {},
        "results": [
            {
                "runtime": "ort-cpu",
                "status": "ok",
                "batch": 1,
                "iterations": 10,
                "latency_ms": {"mean": 1.0, "p50": 1.0, "p99": 1.2},
                "throughput_ips": 1000.0,
            }
        ],
    }
    (d / "b.json").write_text(json.dumps(bench))
    res = d / "results"
    (res / "bench" / "m" / "ort-cpu").mkdir(parents=True)
    (res / "bench" / "m" / "ort-cpu" / "bench.json").write_text(json.dumps(bench))
    cells = [
        {
            "cell": "bench/m/ort-cpu",
            "step": "bench",
            "model": "m",
            "target": None,
            "runtime": "ort-cpu",
            "folder": "bench/m/ort-cpu",
            "action": "ran",
            "status": "ok",
            "message": "",
            "metrics": {},
            "outputs": {"report": "bench.json"},
        }
    ]
    (res / "pipeline.json").write_text(
        json.dumps(
            {
                "schema": "npufit.pipeline-run/1",
                "seconds": 1.0,
                "counts": {"ran": 1},
                "started": "",
                "environment": {},
                "config": {
                    "name": "p",
                    "path": "p.yaml",
                    "models": [{"name": "m"}],
                    "targets": [],
                    "runtimes": ["ort-cpu"],
                    "steps": ["bench"],
                },
                "cells": cells,
            }
        )
    )


# -- mutations ------------------------------------------------------------------------------------------------------
def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    op = rng.choice(["flip", "truncate", "insert", "dup", "zero"])
    if not b:
        return bytes(rng.randrange(256) for _ in range(16))
    i = rng.randrange(len(b))
    if op == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == "truncate":
        del b[i:]
    elif op == "insert":
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif op == "dup":
        j = min(len(b), i + rng.randint(1, 256))
        b[i:i] = b[i:j] * rng.randint(2, 50)
    else:
        j = min(len(b), i + rng.randint(1, 64))
        b[i:j] = bytes(j - i)
    return bytes(b)


def _paths(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, path + (i,))


def mutate_json(obj, rng: random.Random):
    paths = [p for p in _paths(obj) if p]
    if not paths:
        return rng.choice(HOSTILE_VALUES)
    p = rng.choice(paths)
    parent = obj
    for k in p[:-1]:
        parent = parent[k]
    op = rng.random()
    if op < 0.7:
        parent[p[-1]] = rng.choice(HOSTILE_VALUES)
    elif op < 0.85 and isinstance(parent, dict):
        del parent[p[-1]]
    else:  # deep nesting, spliced in as text by dump() (json.dumps itself would recurse too deep)
        parent[p[-1]] = f"__DEEP_{rng.choice([70, 5000, 200_000])}__"
    return obj


def dump(obj) -> str:
    import re

    text = json.dumps(obj, allow_nan=True)
    return re.sub(r'"__DEEP_(\d+)__"', lambda m: "[" * int(m[1]) + "]" * int(m[1]), text)


def mutate_npz(src: Path, dst: Path, rng: random.Random) -> None:
    op = rng.random()
    if op < 0.4:
        dst.write_bytes(mutate_bytes(src.read_bytes(), rng))
        return
    shape = rng.choice(
        [(4_000_000, *SHAPE), (1, 3, 40_000, 40_000), (0, *SHAPE), (4, 3, 8), (2**40, 1), (4, *SHAPE), (4, 1, 3, 8, 9)]
    )
    descr = rng.choice(["<f4", "<f8", "|u1", "<i8", "|O", "<c16", "|b1", "<f2", "|V8"])
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": descr, "fortran_order": rng.random() < 0.2, "shape": shape})
    name = rng.choice(["x.npy", "y.npy", "../x.npy", "x"])
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open(name, "w", force_zip64=True) as f:
            f.write(hdr.getvalue())
            f.write(bytes(rng.choice([0, 3072, 1 << 20, 64 << 20])))


# -- cases: (kind, files to prepare, argv, outputs allowed) -----------------------------------------------------------
def build_case(kind: str, seeds: Path, tmp: Path, rng: random.Random) -> tuple[list[str], tuple[str, ...]]:
    for p in seeds.iterdir():
        shutil.copytree(p, tmp / p.name, symlinks=True) if p.is_dir() else shutil.copy2(p, tmp / p.name)
    if kind == "model":
        (tmp / "m.onnx").write_bytes(mutate_bytes((seeds / "m.onnx").read_bytes(), rng))
        verb = rng.choice(
            [
                ["check", "m.onnx", "-t", "hailo8"],
                ["check", "m.onnx", "-t", "ethos-u55-128", "-f", "json"],
                ["split", "m.onnx", "-t", "hailo8", "-d", "out"],
                ["fix", "m.onnx", "-t", "hailo8", "-o", "out.onnx"],
            ]
        )
        return verb, ("out", "out.onnx")
    if kind == "plan":
        f = tmp / "plan" / "plan.json"
        if rng.random() < 0.3:
            f.write_bytes(mutate_bytes(f.read_bytes(), rng))
        else:
            f.write_text(dump(mutate_json(json.loads(f.read_text()), rng)))
        verb = rng.choice(
            [
                ["run", "plan", "--inputs", "x.npz", "-o", "out.npz"],
                ["compile", "m.onnx", "-t", "hailo8", "--plan", "plan/plan.json", "--out-dir", "out"],
                ["bench", "plan", "--runtime", "chain", "-n", "2", "--warmup", "0"],
            ]
        )
        return verb, ("out.npz", "out")
    if kind == "npz":
        mutate_npz(seeds / "x.npz", tmp / "x.npz", rng)
        mutate_npz(seeds / "cal.npz", tmp / "cal.npz", rng)
        verb = rng.choice(
            [
                ["run", "plan", "--inputs", "x.npz"],
                ["quantize", "m.onnx", "-o", "q.onnx", "-c", "cal.npz", "--holdout", "1"],
                ["split", "m.onnx", "-t", "hailo8", "-d", "out", "--inputs", "x.npz"],
                ["bench", "m.onnx", "--inputs", "x.npz", "-n", "2", "--warmup", "0"],
            ]
        )
        return verb, ("q.onnx", "out")
    if kind == "yaml":
        text = (seeds / "p.yaml").read_text()
        if rng.random() < 0.5:
            data = mutate_bytes(text.encode(), rng)
        else:  # a field-level mutation through a YAML-compatible JSON dump
            import yaml

            data = dump(mutate_json(yaml.safe_load(text), rng)).encode()
        (tmp / "p.yaml").write_bytes(data)
        return ["pipeline", "validate", "p.yaml"], ()
    if kind == "record":
        f = tmp / "rec.json"
        f.write_text(dump(mutate_json(json.loads(f.read_text()), rng)))
        return ["probe", "--replay", "rec.json", "--cases", "relu"], ()
    if kind == "bench":
        f = tmp / "b.json"
        f.write_text(dump(mutate_json(json.loads(f.read_text()), rng)))
        return ["bench", "--compare", "b.json", "b.json"], ()
    if kind == "results":
        f = tmp / "results" / "pipeline.json"
        f.write_text(dump(mutate_json(json.loads(f.read_text()), rng)))
        return ["report", "results", "-o", "r.html"], ("r.html",)
    if kind == "argv":
        opt, verb = rng.choice(
            [
                ("--fail-under", ["check", "m.onnx"]),
                ("--threads", ["bench", "m.onnx", "-n", "2"]),
                ("--samples", ["quantize", "m.onnx", "-o", "q.onnx", "-c", "random"]),
                ("--repeat", ["run", "plan", "--inputs", "x.npz"]),
                ("--top", ["split", "m.onnx", "-d", "out"]),
                ("--input-shape", ["check", "m.onnx"]),
                ("--target", ["check", "m.onnx"]),
                ("--timeout", ["compile", "m.onnx", "-t", "hailo8", "--out-dir", "out"]),
            ]
        )
        val = str(rng.choice(HOSTILE_VALUES[:12] + ["x=1,3,8", "x=0,3,8,8", "x=-1,3,8,8", "1e9999", "-0", "3.5"]))
        return verb + [opt, val], ("q.onnx", "out")
    raise ValueError(kind)


KINDS = ("model", "plan", "npz", "yaml", "record", "bench", "results", "argv")


def classify(o, before, tmp: Path, allowed: tuple[str, ...]) -> tuple[str, bool]:
    after = snapshot(tmp)
    lost = any(after.get(k) != v for k, v in before.items())
    lost = lost or any(k not in before and not any(k == a or k.startswith(a + "/") for a in allowed) for k in after)
    if o.hung:
        return "hang", lost
    lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
    if "Traceback" in o.stderr or "Traceback" in o.stdout:
        return "internal", lost
    if o.rc in (0, 1):  # 1: a verb's own verdict (a gate failed), not an error
        return "ok", lost
    if o.rc == 2 and len(lines) == 1 and lines[0].startswith("npufit: error:"):
        return "refused", lost
    return "internal", lost


def run_classes(classes: list[str], only: str | None, show: int) -> int:
    from tests.hostile.classes import CATALOGUE, CLASSES, PEAK_MB, REWORDED, RSS_CAP_MB, run_case

    unknown = set(classes) - set(CLASSES)
    if unknown:
        raise SystemExit(f"unknown class(es) {', '.join(sorted(unknown))}; classes: {', '.join(CLASSES)}")
    cases = [c for c in CATALOGUE if c.cls in classes and (only is None or only in c.id)]
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad: dict[str, list[str]] = collections.defaultdict(list)
    peak = 0.0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="npufit-classes-") as base:
        for i, case in enumerate(cases):
            folder = Path(base) / f"case{i}"
            folder.mkdir()
            v = run_case(case, folder)
            per[case.cls]["runs"] += 1
            per[case.cls]["failed"] += bool(set(v.faults) - {REWORDED})
            for f in v.faults:
                per[case.cls][f] += 1
            peak = max(peak, v.outcome.peak_rss_mb)
            print(v.line(), flush=True)
            if v.faults:
                bad[case.cls].append(v.line())
            for p in sorted(Path(base).iterdir()):
                _rmtree(p)
    print(
        f"\n{len(cases)} runs in {time.monotonic() - t0:.0f} s; memory fault above {PEAK_MB} MB peak "
        f"(watchdog kills at {RSS_CAP_MB} MB); max peak {peak:.0f} MB"
    )
    print(f"{'class':<10} {'runs':>5} {'failed':>7}  faults ({REWORDED}: refused in one line, for another reason)")
    for cls in CLASSES:
        c = per.get(cls)
        if not c:
            continue
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(c.items()) if k not in ("runs", "failed"))
        print(f"{cls:<10} {c['runs']:>5} {c['failed']:>7}  {kinds}")
    for cls, lines in bad.items():
        for line in lines[:show]:
            print("  " + line)
    return 1 if any(c["failed"] for c in per.values()) else 0


def _rmtree(p: Path) -> None:
    for q in sorted(p.rglob("*"), reverse=True) if p.is_dir() and not p.is_symlink() else []:
        if q.is_dir() and not q.is_symlink():
            q.chmod(0o700)
            q.rmdir()
        else:
            q.unlink()
    p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--time-cap", type=float, default=120.0)
    ap.add_argument("--show", type=int, default=5, help="print this many findings of each bad kind")
    ap.add_argument("--classes", help="run the hostile-class catalogue instead: 'all' or a comma-separated list")
    ap.add_argument("--cases", help="with --classes: only cases whose id contains this text")
    args = ap.parse_args()
    if args.classes:
        from tests.hostile.classes import CLASSES

        chosen = list(CLASSES) if args.classes == "all" else args.classes.split(",")
        return run_classes(chosen, args.cases, args.show)
    kinds = args.kinds.split(",")
    rng = random.Random(args.seed)
    counts: collections.Counter = collections.Counter()
    by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    findings: dict[str, list[str]] = collections.defaultdict(list)
    peak = 0.0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="npufit-fuzz-") as base:
        seeds = Path(base) / "seeds"
        seeds.mkdir()
        make_seeds(seeds)
        for i in range(args.runs):
            kind = kinds[i % len(kinds)]
            case_rng = random.Random(rng.getrandbits(64))
            tmp = Path(base) / f"case{i}"
            tmp.mkdir()
            argv, allowed = build_case(kind, seeds, tmp, case_rng)
            before = snapshot(tmp)
            o = run_verb(argv, tmp, time_cap=args.time_cap)
            outcome, lost = classify(o, before, tmp, allowed)
            counts["runs"] += 1
            counts[outcome] += 1
            by_kind[kind][outcome] += 1
            counts["lost"] += lost
            counts["tmp"] += bool(o.tmp_left)
            peak = max(peak, o.peak_rss_mb)
            if outcome in ("internal", "hang") or lost or o.tmp_left:
                tag = outcome if outcome in ("internal", "hang") else ("lost" if lost else "tmp")
                findings[tag].append(
                    f"[{kind} #{i}] npufit {' '.join(argv)} -> rc={o.rc} "
                    f"{(o.stderr.strip().splitlines() or [''])[-1][:240]}"
                )
            shutil.rmtree(tmp, ignore_errors=True)
    wall = time.monotonic() - t0
    print(
        f"seed {args.seed}, {counts['runs']} runs over {', '.join(kinds)}; caps: "
        f"{args.time_cap:.0f} s and the harness' address-space limit per run; {wall:.0f} s wall"
    )
    print(
        f"runs {counts['runs']}  ok {counts['ok']}  clean refusals {counts['refused']}  internal errors "
        f"{counts['internal']}  "
        f"hangs {counts['hang']}  files lost {counts['lost']}  temp left {counts['tmp']}  max peak {peak:.0f} MB"
    )
    for kind in kinds:
        c = by_kind[kind]
        print(
            f"  {kind:<8} ok {c['ok']:>3}  refused {c['refused']:>3}  internal {c['internal']:>3}  hang {c['hang']:>3}"
        )
    for tag, items in findings.items():
        print(f"{tag}: {len(items)}")
        for line in items[: args.show]:
            print("  " + line)
    return 0 if not (counts["internal"] or counts["hang"] or counts["lost"]) else 1


if __name__ == "__main__":
    sys.exit(main())
