"""Where does the int8 error of a converted model enter? Per TFLite op: cosine of its output vs ONNX Runtime, and
how much it lost against its inputs; the ops with the largest loss first.

    python benchmarks/convert_error_trace.py model.onnx [--top 25] [--samples 8] [--input-shape x=1,3,224,224]

Converts the model with npufit.convert (seeded random calibration, as `npufit compile` does without --calibration),
runs the int8 TFLite in the LiteRT interpreter with every intermediate kept (reference kernels: XNNPACK would fuse
tensors away) and the converter's float graph in ONNX Runtime with every intermediate exposed, on the calibration
samples. A TFLite tensor is compared where it carries an ONNX tensor's name (the converter names them so; NHWC
tensors are transposed back). loss = min cosine of the op's compared inputs - cosine of its output: the error
that op (its int8 rounding, a LUT, a saturating range) added. Also printed per op: the output's int8 scale over the
reference's standard deviation (levels per sigma: few levels = coarse), and the fraction of reference values
outside the int8 range (clipped). Reading it: a MEAN of a centred tensor (a LayerNorm / GroupNorm mean) or the
elementwise square under a variance can show a large loss that does not matter downstream (the mean is ~0 next to
the values it is subtracted from; the variance averages the squares' rounding away): follow the cosine of the op
that uses it. The model is only read; outputs go to a temporary folder.

    python benchmarks/convert_error_trace.py hubert.onnx --activations int8   # the int8 file, not 'auto'"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else float(na == nb)


def trace(
    model: str, shapes: dict | None = None, samples: int = 8, activations: str = "auto"
) -> tuple[list[dict], dict]:
    """-> (one row per TFLite op whose output is compared, summary); see the module doc."""
    import onnx
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from npufit.convert import convert
    from npufit.convert.lower import TO_NCHW
    from npufit.convert.onnx_prep import prepare
    from npufit.convert.qparams import dequantize
    from npufit.convert.verify import quantize_input
    from npufit.quantize.calibration import input_specs, load_calibration
    from npufit.verify.compare import make_session

    with tempfile.TemporaryDirectory(prefix="npufit-trace-") as d:
        res = convert(
            model, Path(d) / "m.tflite", input_shapes=shapes, samples=samples, verify=None, activations=activations
        )
        it = Interpreter(
            model_path=str(res.path),
            num_threads=1,
            experimental_preserve_all_tensors=True,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        it.allocate_tensors()
    prep = prepare(Path(model), shapes)
    m = onnx.ModelProto()
    m.CopyFrom(prep.model)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(onnx.helper.make_empty_tensor_value_info(o))
                have.add(o)
    sess = make_session(m.SerializeToString())
    onames = [o.name for o in sess.get_outputs()]
    cal = load_calibration("random", input_specs(prep.model), count=samples, seed=0, input_shapes=shapes)
    details = it.get_tensor_details()
    by_index = {t["index"]: t for t in details}
    # TFLite tensor index -> (the ONNX tensor it holds, stored NHWC?), from the converter's own record
    match: dict[int, tuple[str, bool]] = {}
    known = set(onames)
    for t in details:
        name, layout = res.layouts.get(t["name"], (None, None))
        if name in known and t["dtype"] in (np.int8, np.int16) and t["quantization"][0]:
            match[t["index"]] = (name, layout == "nhwc" and len(t["shape"]) == 4)
    ref: dict[str, list] = {}
    got: dict[int, list] = {i: [] for i in match}
    in_rows = res.io["inputs"]
    tin = {x["name"]: x for x in it.get_input_details()}
    for k in range(len(cal)):
        feed = cal[k]
        for row in in_rows:
            dd = tin[row["tflite"]]
            it.set_tensor(dd["index"], quantize_input(feed[row["onnx"]], dd, row.get("layout")))
        it.invoke()
        vals = dict(zip(onames, sess.run(onames, feed)))
        for i, (name, _) in match.items():
            ref.setdefault(name, []).append(np.asarray(vals[name], np.float32))
            scale, zp = by_index[i]["quantization"]
            got[i].append(dequantize(it.get_tensor(i), scale, zp))
    cos: dict[int, float] = {}
    info: dict[int, dict] = {}
    for i, (name, nhwc) in match.items():
        r, g = np.stack(ref[name]), np.stack(got[i])
        if nhwc:
            g = g.transpose(0, *[1 + p for p in TO_NCHW])
        if r.shape != g.shape:
            continue
        scale, zp = by_index[i]["quantization"]
        qmax = 32767 if by_index[i]["dtype"] == np.int16 else 127
        lo, hi = scale * (-qmax - 1 - zp), scale * (qmax - zp)
        cos[i] = _cos(r, g)
        sd = float(r.std())
        info[i] = {
            "onnx": name,
            "scale": float(scale),
            "levels_per_sd": sd / scale if scale else 0.0,
            "clipped": float(np.mean((r < lo - scale / 2) | (r > hi + scale / 2))),
            "dtype": np.dtype(by_index[i]["dtype"]).name,
        }
    lineage = res.lineage
    ops = it._get_ops_details()
    producer = {o: op for op in ops for o in op["outputs"]}

    def cos_of(i: int, seen=()) -> float:
        """A compared tensor's cosine; else that of its producer's inputs (layout ops, requantizations), weights 1."""
        if i in cos:
            return cos[i]
        op = producer.get(i)
        if op is None or i in seen:
            return 1.0
        return min((cos_of(x, (*seen, i)) for x in op["inputs"] if x >= 0), default=1.0)

    rows = []
    for op in ops:
        outs = [o for o in op["outputs"] if o in cos]
        if not outs:
            continue
        o = outs[0]
        c_in = min((cos_of(x) for x in op["inputs"] if x >= 0), default=1.0)
        tname = by_index[o]["name"]
        rows.append(
            {
                "index": op["index"],
                "op": op["op_name"],
                "tensor": tname,
                "onnx_node": ",".join(lineage.get(tname, [])),
                "cos_in": c_in,
                "cos_out": cos[o],
                "loss": c_in - cos[o],
                **info[o],
            }
        )
    final = [cos[i] for i, (name, _) in match.items() if name in {o.name for o in prep.model.graph.output}]
    summary = {
        "model": model,
        "ops": len(rows),
        "compared_tensors": len(cos),
        "samples": len(cal),
        "output_cosine": min(final) if final else None,
        "notes": res.notes,
    }
    return rows, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--top", type=int, default=25, help="rows to print (largest loss first)")
    ap.add_argument("--samples", type=int, default=8, help="calibration samples (also the compared ones)")
    ap.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,..")
    ap.add_argument(
        "--activations", choices=("auto", "int8", "int16"), default="auto", help="the converter's activation width"
    )
    ap.add_argument("--json", help="also write every row to this JSON file")
    a = ap.parse_args(argv)
    shapes = {}
    for item in a.input_shape:
        name, _, dims = item.partition("=")
        shapes[name] = tuple(int(v) for v in dims.split(","))
    if not Path(a.model).is_file():
        print(f"convert_error_trace: error: {a.model}: no such file", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).parent))
    from convert_corpus import _shapes

    rows, summary = trace(
        a.model, _shapes(a.model, json.dumps({k: list(v) for k, v in shapes.items()})), a.samples, a.activations
    )
    print(
        f"{summary['model']}: {summary['ops']} ops compared over {summary['samples']} samples; "
        f"output cosine {summary['output_cosine']}"
    )
    for note in summary["notes"]:
        print(f"  note: {note}")
    print(f"{'loss':>9} {'cos_in':>8} {'cos_out':>8} {'lv/sd':>7} {'clip%':>6}  op / tensor (ONNX node)")
    for r in sorted(rows, key=lambda r: -r["loss"])[: a.top]:
        print(
            f"{r['loss']:9.2e} {r['cos_in']:8.5f} {r['cos_out']:8.5f} {r['levels_per_sd']:7.1f} "
            f"{100 * r['clipped']:6.2f}  "
            f"{r['op']} {r['dtype']} {r['tensor']} ({r['onnx_node']})"
        )
    if a.json:
        Path(a.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
