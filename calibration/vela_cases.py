"""Where Vela really places the ops behind the Ethos-U conditions that only one corpus family shows.

    python -m calibration.vela_cases [--record] [--targets ethos-u55-256,ethos-u85-256] [--cases GLOB]

The calibration corpus shows several Ethos-U behaviours of npufit's ONNX -> int8 TFLite converter in one family
only: the attention-mask Add that becomes SELECT_V2 (the text encoders), written-out Sqrt norms and size-decided
`If` nodes (t5_encoder, vitdet: transformer), the padded patchify conv whose unread tail is cut off (vitpose) and the
Shape-only Slice of a CPU op (conditional_detr: detector). A condition fitted to one family cannot be scored by
leaving that family out, so each is measured here on small synthetic graphs, with cases on both sides of it. The
graphs are none of the corpus's models: they are evidence independent of its families. vela_cases_ops.py adds the
forms the converter decides for reductions, whole-map pools, IsNaN guards and 2-D BatchNormalization.

Each case is conv 1x1 -> the op(s) under test -> conv 1x1 unless it says otherwise, exported at opset 17 (the
TorchScript exporter, as the corpus), converted by npufit's converter and compiled by Vela through npufit's compile
path, the placement mapped back to ONNX nodes as for the corpus records (records.placement_entry). --record writes
docs/calibration/<target>-cases.json per target: per case, the placement of every node of the op under test, in
graph order ("failed: ..." when the converter or Vela rejects the model). tests/test_calibration_records.py replays
them (records.replay_cases)."""

from __future__ import annotations

import argparse
import fnmatch
import tempfile
from pathlib import Path

from . import form as records  # the record format; records.py imports this module (its case builders)
from .judge import case_verdicts, compile_onnx
from .rknn_cases import _net
from .vela_cases_ops import CASES as OP_CASES

TARGETS, OPSET = ("ethos-u55-256", "ethos-u85-256"), 17
DEVICE = {v: k for k, v in records.LETTER.items()}


def mask_add(c: int, hw, fill: float, mode: str = "mask"):
    """y + Where(mask == 0, fill, 0) with `mask` a second model input of int64 ids, as a text encoder's attention mask
    (a run-time condition between two constants). mode "sub": y - Where(mask == 0, -fill, 0); "shared": one mask
    Where added twice; "const": y + a constant bias (a plain Add, the mask input unused)."""
    import torch

    torch.manual_seed(0)
    bias = torch.randn(1, c, *hw)

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Conv2d(c, c, 1)
            self.post = torch.nn.Conv2d(c, c, 1)

        def forward(self, x, mask):
            y = self.pre(x)
            m = mask == 0
            if mode == "const":
                z = y + bias
            elif mode == "shared":  # one mask, two Adds (a text encoder's layers share theirs)
                w = torch.where(m, torch.tensor(fill), torch.tensor(0.0))
                z = torch.relu(y + w) + w
            elif mode == "sub":
                z = y - torch.where(m, torch.tensor(-fill), torch.tensor(0.0))
            else:
                z = y + torch.where(m, torch.tensor(fill), torch.tensor(0.0))
            return self.post(z)

    mask = torch.ones(1, 1, 1, hw[1], dtype=torch.int64)
    mask[..., hw[1] // 2 :] = 0
    return Case().eval(), (torch.randn(1, c, *hw), mask)


def add_pair(c: int, hw):
    """y + relu(y): an Add of two activations (the plain side of the mask condition)."""
    import torch

    return _net(c, hw, lambda y: y + torch.relu(y))


def sqrt_norm(c: int, hw, form: str):
    """A written-out norm over the channels: "div" (x - mean) / sqrt(var + eps) (LayerNorm), "rsqrt" x * rsqrt(ms + eps)
    (RMSNorm: Sqrt -> Reciprocal), "mul" x * sqrt(x * x + 1) (a Sqrt no division takes)."""
    import torch

    def body(y):
        if form == "div":
            u = y.mean(1, keepdim=True)
            s = (y - u).pow(2).mean(1, keepdim=True)
            return (y - u) / torch.sqrt(s + 1e-6)
        if form == "rsqrt":
            return y * torch.rsqrt(y.pow(2).mean(1, keepdim=True) + 1e-6)
        return y * torch.sqrt(y * y + 1.0)

    return _net(c, hw, body)


def patchify(c: int, hw, k: int, pad: int, c_out: int = 16):
    """A k x k / stride k conv (a ViT patch embedding) with `pad` zero rows and columns on each side, into a 1x1
    conv."""
    import torch

    torch.manual_seed(0)

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Conv2d(c, c, 1)
            self.patch = torch.nn.Conv2d(c, c_out, k, stride=k, padding=pad)
            self.post = torch.nn.Conv2d(c_out, c_out, 1)

        def forward(self, x):
            return self.post(self.patch(self.pre(x)))

    return Case().eval(), torch.randn(1, c, *hw)


def shape_if(c: int, hw, n: int, by: str = "shape"):
    """conv 1x1 -> If -> conv 1x1, written as ONNX directly (the TorchScript exporter folded every condition on the
    static shape of a small torch module tried here, so none gave an If). The If gives
    y * 2 when its condition holds, else y + 1. by "shape": the condition is Shape(y)[3] != n (fixed once the input
    shape is); "value": ReduceMean(y) > 0 (decided at run time); "table": a constant [1, c, 1, 2n - 1] table,
    resized to the width of y when 2n - 1 differs from it (ViTDet's relative-position form), is added to y."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((c, c, 1, 1)).astype(np.float32) * 0.3, f"w{k}") for k in (0, 1)
    ]
    inits += [
        numpy_helper.from_array(np.zeros(c, np.float32), "b"),
        numpy_helper.from_array(np.array([3], np.int64), "i3"),
        numpy_helper.from_array(np.array(n if by != "table" else 2 * n - 1, np.int64), "n"),
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
    ]
    nodes = [helper.make_node("Conv", ["x", "w0", "b"], ["y"], name="pre")]

    def vi(name):  # a branch's output: its own name (a branch may not write a name of the main graph)
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, None)

    if by == "value":
        nodes += [
            helper.make_node("ReduceMean", ["y"], ["m"], keepdims=0, name="mean"),
            helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0.0, np.float32))),
            helper.make_node("Greater", ["m", "zero"], ["cond"], name="gt"),
        ]
    else:
        nodes += [
            helper.make_node("Shape", ["y"], ["s"], name="shape"),
            helper.make_node("Gather", ["s", "i3"], ["w"], axis=0, name="width"),
            helper.make_node("Equal", ["w", "n"], ["eq"], name="eq"),
            helper.make_node("Not", ["eq"], ["cond1"], name="not"),
            helper.make_node("Squeeze", ["cond1"], ["cond"], name="sq"),
        ]
    if by == "table":
        table = numpy_helper.from_array(rng.standard_normal((1, c, 1, 2 * n - 1)).astype(np.float32), "table")
        inits.append(table)
        # the taken branch resizes the table to [1, c, 1, W]: its first three sizes from its own shape, W from y's
        then = helper.make_graph(
            [
                helper.make_node("Shape", ["table"], ["ts"]),
                helper.make_node("Slice", ["ts", "s0", "i3"], ["lead"]),
                helper.make_node("Concat", ["lead", "w"], ["sizes"], axis=0),
                helper.make_node("Resize", ["table", "", "", "sizes"], ["zt"], mode="linear"),
            ],
            "then",
            [],
            [vi("zt")],
        )
        els = helper.make_graph([helper.make_node("Identity", ["table"], ["ze"])], "else", [], [vi("ze")])
        inits.append(numpy_helper.from_array(np.array([0], np.int64), "s0"))
        nodes += [
            helper.make_node("If", ["cond"], ["t"], then_branch=then, else_branch=els, name="if"),
            helper.make_node("Add", ["y", "t"], ["z"], name="add"),
        ]
    else:
        then = helper.make_graph([helper.make_node("Mul", ["y", "two"], ["zt"])], "then", [], [vi("zt")])
        els = helper.make_graph([helper.make_node("Add", ["y", "one"], ["ze"])], "else", [], [vi("ze")])
        nodes.append(helper.make_node("If", ["cond"], ["z"], then_branch=then, else_branch=els, name="if"))
    nodes.append(helper.make_node("Conv", ["z", "w1", "b"], ["out"], name="post"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, *hw])
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, *hw])
    g = helper.make_graph(nodes, "case", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def shape_slice(first: str):
    """Two slice assignments in a row on a [1, 20, 4] view of the conv output, the second reading the first's output:
    the exporter slices the first one's output for nothing but its Shape (to broadcast the second's value), as in
    ConditionalDETR's box update. first "cells": the first writes [..., :2] (40 separate cells: one GATHER), "rows":
    [:, :2] (8 contiguous cells: STRIDED_SLICE/CONCATENATION)."""

    def body(y):
        z = y.reshape(1, 20, 4).clone()
        if first == "cells":
            z[..., :2] = z[..., :2].sigmoid()
        else:
            z[:, :2] = z[:, :2].sigmoid()
        z[..., 2:] = 1.0
        return z.reshape(1, 4, 4, 5)

    return _net(4, (4, 5), body)


# name -> (op under test, builder, arguments)
CASES = {
    # an Add of an activation and a mask Where(run-time condition, 0, fill): SELECT_V2, which the U55 does not list
    "mask-add-finfo": ("Add", mask_add, (8, (8, 8), -3.4e38)),
    "mask-add-1e4": ("Add", mask_add, (8, (8, 8), -1e4)),
    "mask-sub-1e4": ("Sub", mask_add, (8, (8, 8), -1e4, "sub")),
    "mask-add-shared": ("Add", mask_add, (8, (8, 8), -1e4, "shared")),
    "add-const-bias": ("Add", mask_add, (8, (8, 8), 0.0, "const")),
    "add-two-activations": ("Add", add_pair, (8, (8, 8))),
    # Sqrt of a written-out norm: taken by a Div (LayerNorm), by a Reciprocal (RMSNorm's rsqrt), or alone
    "sqrt-layernorm-div": ("Sqrt", sqrt_norm, (16, (8, 8), "div")),
    "sqrt-rmsnorm-rsqrt": ("Sqrt", sqrt_norm, (16, (8, 8), "rsqrt")),
    "sqrt-mul": ("Sqrt", sqrt_norm, (16, (8, 8), "mul")),
    # a patchify conv (kernel = stride > 3) with explicit padding: an unread tail (the converter crops it), pads that
    # fit exactly (SAME), and no padding (VALID)
    "patchify16-pad2-tail": ("Conv", patchify, (3, (64, 48), 16, 2)),
    "patchify8-pad1-tail": ("Conv", patchify, (3, (32, 32), 8, 1)),
    "patchify16-pad2-exact": ("Conv", patchify, (3, (60, 44), 16, 2)),
    "patchify16-valid": ("Conv", patchify, (3, (64, 48), 16, 0)),
    # an If whose condition the input shape decides (the converter inlines the taken branch), either branch taken, the
    # branch resizing a constant table; and one decided by the data at run time
    "if-shape-then": ("If", shape_if, (8, (8, 8), 6)),
    "if-shape-else": ("If", shape_if, (8, (8, 8), 8)),
    "if-shape-table": ("If", shape_if, (8, (8, 8), 6, "table")),
    "if-value": ("If", shape_if, (8, (8, 8), 8, "value")),
    # Slices of an op's output that feed only Shape: of a GATHER (CPU on the U55) and of an NPU op
    "slice-shape-after-gather": ("Slice", shape_slice, ("cells",)),
    "slice-shape-after-rows": ("Slice", shape_slice, ("rows",)),
    **OP_CASES,
}


def export_case(name: str, folder: Path) -> Path:
    from npufit.zoo.export import export_onnx

    op, builder, args = CASES[name]
    p = folder / f"{name}.onnx"
    built = builder(*args)
    if not isinstance(built, tuple):  # an ONNX model written directly
        from npufit.util.io import atomic_write_bytes

        atomic_write_bytes(p, built.SerializeToString())
        return p
    m, x = built
    export_onnx(m, x, p, OPSET, ["x", "mask"][: len(x) if isinstance(x, tuple) else 1], ["y"])
    return p


def measure(onnx: Path, op: str, target: str, out: Path) -> tuple[list[str] | str, str | None]:
    """Vela's placement of every top-level node of `op` (judge.compile_onnx, the record format's mapping), or why it
    failed."""
    from npufit.errors import NpufitError
    from npufit.graph import load

    try:
        r = compile_onnx(onnx, target, "int8", out)
    except NpufitError as e:  # npufit's converter does not take the graph; its way out names a temporary path
        return f"failed: {str(e).splitlines()[0].split('; way out')[0][:200]}", None
    if not (r.ok and r.placement):
        return (
            f"failed: {str(r.error or '').strip().splitlines()[-1][:200] if r.error else 'no placement'}",
            r.compiler_version,
        )
    graph = load(onnx)
    letters = records.placement_entry(graph, r.placement)["placement"]
    return [DEVICE[c] for n, c in zip(graph.top_nodes, letters) if n.op_type == op], r.compiler_version


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="write docs/calibration/<target>-cases.json")
    ap.add_argument(
        "--targets", default=",".join(TARGETS), help="comma-separated Ethos-U targets (default: %(default)s)"
    )
    ap.add_argument(
        "--cases",
        default="*",
        help="comma-separated globs over case names (default: all); with --record, only these are updated",
    )
    a = ap.parse_args(argv)
    targets = a.targets.split(",")
    chosen = [n for n in CASES if any(fnmatch.fnmatch(n, g) for g in a.cases.split(","))]
    if not chosen:
        ap.error(f"no case matches {a.cases!r} (see CASES in {Path(__file__).name})")
    if any(t not in TARGETS for t in targets):
        ap.error(f"--targets takes {', '.join(TARGETS)}")
    from npufit.util.io import atomic_write_json

    recs = {}
    for t in targets:
        path = records.RECORDS / f"{t}-cases.json"
        recs[t] = {
            "schema": records.CASES_SCHEMA,
            "target": t,
            "build": "int8",
            "opset": OPSET,
            "compiler": "vela",
            "converter": "npufit",
            "compiler_versions": [],
            "cases": {},
        }
        if a.record and path.is_file():  # a run over some cases updates those and keeps the others
            recs[t] = records.load_cases(path)
    print("| case | op | " + " | ".join(f"{t} Vela | npufit" for t in targets) + " |")
    print("|---|---|" + "---|---|" * len(targets))
    with tempfile.TemporaryDirectory(prefix="npufit-vc-") as d:
        for name in chosen:
            op = CASES[name][0]
            p = export_case(name, Path(d))
            cells = []
            for t in targets:
                got, ver = measure(p, op, t, Path(d) / f"{name}-{t}")
                if ver and ver not in recs[t]["compiler_versions"]:
                    recs[t]["compiler_versions"].append(ver)
                recs[t]["cases"][name] = {"op": op, "placement": got}
                cells += [str(got), str(case_verdicts(p, op, t, "int8"))]
            print(f"| {name} | {op} | {' | '.join(cells)} |", flush=True)
    if a.record:
        for t, rec in recs.items():
            rec["cases"] = {n: rec["cases"][n] for n in CASES if n in rec["cases"]}  # catalogue order; dropped cases go
            atomic_write_json(records.RECORDS / f"{t}-cases.json", rec)


if __name__ == "__main__":
    main()
