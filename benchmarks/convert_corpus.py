"""ONNX -> int8 TFLite (npufit.convert) -> Vela over a corpus of real architectures: per model, converted yes/no,
conversion time, peak memory, LiteRT-vs-ONNX Runtime cosine, Vela's NPU op share; totals at the end.

    python benchmarks/convert_corpus.py                       # exports its own set (calibration/convert_archs.py)
    python benchmarks/convert_corpus.py calibration/ some.onnx --target ethos-u55-256
    python benchmarks/convert_corpus.py --calibration [--opset 17] [--only NAME ...]   # issue 14's 48-model corpus

Each model runs in a fresh worker process, so its peak RSS is that model's own (imports, conversion and the LiteRT
check included; the worker never imports torch). Time = the converter's own wall time in that fresh process
(imports it triggers + prepare + calibrate + lower + write; the verification after it is not counted). Cosine:
min over outputs, LiteRT int8 vs ONNX Runtime float, on the 8 calibration samples (the issue's bound) and on 4
held-out seeded samples. Goal (issue 16): >= 90% convert and compile, each < 5 s and < 1 GB,
min cosine >= 0.999. Activations: the converter's default 'auto' (int8; int16 where int8 misses 0.999 on the
calibration samples: that check and the int16 build are inside the conversion time), or --activations int8 / int16.
The JSON rows also carry Vela's estimated inference time (vela_ms). Models are only read; outputs go to a
temporary folder."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S, GOAL_MB, GOAL_COS = 5.0, 1024.0, 0.999


def _shapes(model: str, shapes_json: str) -> dict | None:
    """--input-shape values, and a dynamic leading (batch) dim pinned to 1; other dynamic dims need --input-shape."""
    import onnx

    from npufit.quantize.calibration import input_specs

    given = {k: tuple(v) for k, v in json.loads(shapes_json).items()}
    for spec in input_specs(onnx.load(model, load_external_data=False)):
        if (
            spec.name not in given
            and spec.shape
            and spec.shape[0] is None
            and all(d is not None for d in spec.shape[1:])
        ):
            given[spec.name] = (1, *spec.shape[1:])
    return given or None


def worker(model: str, out: str, target: str, shapes_json: str = "{}", activations: str = "auto") -> None:
    """Runs in the child: convert, verify, compile the .tflite with Vela; prints one JSON line."""
    from npufit.errors import NpufitError

    row: dict = {"model": model}
    try:
        from npufit.convert import convert, verify_tflite
        from npufit.convert.onnx_prep import prepare
        from npufit.quantize.calibration import input_specs, load_calibration

        shapes = _shapes(model, shapes_json)
        res = convert(
            model, Path(out) / "m_int8.tflite", verify=4, target=target, input_shapes=shapes, activations=activations
        )
        row.update(
            converted=True,
            convert_s=res.timings["total_s"],
            tflite_ops=len(res.ops),
            peak_mb=_hwm_mb(),
            held_out_cosine=res.verification.min_cosine,
            notes=res.notes,
        )
        # the bound is on the calibration data: the same seeded samples the converter calibrated on
        cal = load_calibration(
            "random", input_specs(prepare(Path(model), shapes).model), count=8, seed=0, input_shapes=shapes
        )
        row["min_cosine"] = verify_tflite(
            res.path, model, [cal[i] for i in range(len(cal))], input_shapes=shapes
        ).min_cosine
    except NpufitError as e:
        row.update(converted=False, error=e.message, peak_mb=_hwm_mb())
    if row["converted"]:
        from npufit.compilers import compile_model

        r = compile_model(str(Path(out) / "m_int8.tflite"), target, out_dir=str(Path(out) / "vela"))
        npu, cpu = r.metrics.get("npu_operators", 0), r.metrics.get("cpu_operators", 0)
        row.update(
            compiled=bool(r.ok),
            npu_ops=npu,
            cpu_ops=cpu,
            vela_error=r.error,
            vela_ms=r.metrics.get("inference_time_ms"),
            activations="int16"
            if any("activations int16" in n for n in row["notes"]) or activations == "int16"
            else "int8",
        )
    print("@@ROW " + json.dumps(row, default=str))


def _hwm_mb() -> float:
    """Peak RSS of this process since its exec (VmHWM; ru_maxrss would carry the parent's peak across fork+exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(
    model: Path, target: str, work: Path, timeout: float, shapes: dict | None = None, activations: str = "auto"
) -> dict:
    out = work / model.stem
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, __file__, "--worker", str(model), str(out), target, json.dumps(shapes or {}), activations],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        return {"model": str(model), "converted": False, "error": f"timed out after {timeout:.0f} s"}
    for line in so.splitlines():
        if line.startswith("@@ROW "):
            row = json.loads(line[6:])
            row["wall_s"] = time.perf_counter() - t0
            return row
    return {"model": str(model), "converted": False, "error": (se.strip().splitlines() or ["worker failed"])[-1][:200]}


def export_builtin(folder: Path, only: list[str] | None) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: the calibration package
    from calibration.convert_archs import ARCHS

    got = []
    for name, build in ARCHS.items():
        if only and name not in only:
            continue
        p = folder / (name.replace(" ", "_").lower() + ".onnx")
        try:
            build(p)
            got.append((name, p))
        except Exception as e:  # an export problem is the exporter's, not the converter's: listed, not counted
            print(f"  (skipped {name}: export failed: {type(e).__name__}: {str(e)[:120]})", file=sys.stderr)
    return got


def export_calibration(opset: int, only: list[str] | None) -> list[tuple[str, Path]]:
    """The calibration corpus (calibration/corpus.py), exported once into its cache; an export the torch exporter
    refuses is listed, not counted (like export_builtin)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from calibration import corpus

    got = []
    for name, arch in corpus.ARCHS.items():
        if only and name not in only:
            continue
        try:
            got.append((name, corpus.export(arch, opset)))
        except Exception as e:
            print(f"  (skipped {name}: export failed: {type(e).__name__}: {str(e)[:120]})", file=sys.stderr)
    return got


def collect(paths: list[str]) -> list[tuple[str, Path]]:
    out = []
    for a in paths:
        p = Path(a)
        files = sorted(p.rglob("*.onnx")) if p.is_dir() else [p]
        out += [(f.stem, f) for f in files]
    return out


def table(rows: list[dict]) -> str:
    lines = [
        "| model | converted | convert s | peak MB | min cosine (calibration / held-out) | Vela NPU ops | compiled | "
        "note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        share = (
            f"{r['npu_ops']}/{r['npu_ops'] + r['cpu_ops']}" if r.get("compiled") is not None and "npu_ops" in r else ""
        )
        note = " ".join((r.get("error") or r.get("vela_error") or "").split())  # one table cell: no line breaks
        cos = f"{r['min_cosine']:.5f} / {r['held_out_cosine']:.5f}" if r.get("min_cosine") is not None else ""
        lines.append(
            f"| {r['name']} | {'yes' if r.get('converted') else 'no'} | "
            f"{r.get('convert_s', '') and round(r['convert_s'], 2)} "
            f"| {r.get('peak_mb', 0):.0f} | {cos} | {share} | {'yes' if r.get('compiled') else 'no'} | {note[:140]} |"
        )
    return "\n".join(lines)


def totals(rows: list[dict]) -> str:
    n = len(rows)
    conv = [r for r in rows if r.get("converted")]
    comp = [r for r in conv if r.get("compiled")]
    ok = [r for r in comp if r["convert_s"] < GOAL_S and r["peak_mb"] < GOAL_MB and r["min_cosine"] >= GOAL_COS]
    npu = sum(r["npu_ops"] for r in comp)
    allops = sum(r["npu_ops"] + r["cpu_ops"] for r in comp)
    times = sorted(r["convert_s"] for r in conv)
    return (
        f"converted {len(conv)}/{n}; converted and compiled with Vela {len(comp)}/{n}; within the goal "
        f"(< {GOAL_S:g} s, < {GOAL_MB:g} MB, cosine >= {GOAL_COS}) {len(ok)}/{n}; convert time median "
        f"{times[len(times) // 2] if times else 0:.2f} s, "
        f"max {max(times, default=0):.2f} s; peak memory max {max((r['peak_mb'] for r in conv), default=0):.0f} MB; "
        f"Vela NPU op share {npu}/{allops}" + (f" ({100 * npu / allops:.0f}%)" if allops else "")
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help=".onnx files or folders (default: export the built-in architectures)")
    ap.add_argument("--target", default="ethos-u55-256")
    ap.add_argument("--only", nargs="*", help="built-in (or --calibration) architecture names to run (default: all)")
    ap.add_argument("--calibration", action="store_true", help="run the calibration corpus (calibration/corpus.py)")
    ap.add_argument("--opset", type=int, default=17, help="opset of the --calibration exports")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-model limit for one worker, seconds")
    ap.add_argument(
        "--activations", choices=("auto", "int8", "int16"), default="auto", help="the converter's activation width"
    )
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,..",
        help="pin a dynamic input (repeatable; a dynamic batch dim alone is pinned to 1)",
    )
    a = ap.parse_args(argv)
    shapes = {}
    for item in a.input_shape:
        name, _, dims = item.partition("=")
        shapes[name] = [int(v) for v in dims.split(",")]
    with tempfile.TemporaryDirectory(prefix="npufit-convert-corpus-") as d:
        d = Path(d)
        if a.calibration:
            models = export_calibration(a.opset, a.only) + collect(a.models)
        else:
            models = collect(a.models) if a.models else export_builtin(d / "models", a.only)
        rows = []
        for name, path in models:
            r = run_one(path, a.target, d / "work", a.timeout, shapes, a.activations)
            r["name"] = name
            rows.append(r)
            print(
                f"  {name}: {'converted' if r.get('converted') else 'NOT converted'}"
                f"{'' if not r.get('converted') else ', compiled' if r.get('compiled') else ', Vela failed'}",
                file=sys.stderr,
            )
    print(
        f"target {a.target}; {len(rows)} model(s); activations {a.activations}"
        + (f" ({sum(r.get('activations') == 'int16' for r in rows)} int16)" if a.activations == "auto" else "")
    )
    print(table(rows))
    print(totals(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    if len(sys.argv) in (5, 6, 7) and sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
    else:
        sys.exit(main())
