"""Score the hailo8 profile against public Dataflow Compiler outcomes (npufit/targets/hailo/evidence.json).

    python benchmarks/hailo_evidence.py [--target hailo8] [--format table|markdown|json]

Each outcome names a case: a small graph with the outcome's op pattern, built here (ONNX with onnx.helper or torch,
TFLite with npufit's own writer), or zoo:NAME, a Model Zoo network rebuilt by npufit/zoo/hailo_zoo.py and judged in
its record (npufit/targets/records/hailo8-zoo.json). A case agrees when the profile puts its pattern's nodes on the
NPU exactly when the parser took the pattern (compiled / parsed) and flags them when it refused it (failed /
crashed). Outcomes without a case are listed and not scored. The benchmark prints the agreement per outcome and in
total; tests/test_hailo_evidence.py asserts the same agreements.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ON_CHIP = ("compiled", "parsed")  # the pattern ran on the chip; failed / crashed: it did not


def _c(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _w(name, shape, seed=0):
    return _c(name, np.random.default_rng(seed).standard_normal(shape) * 0.1)


def _model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "case", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="npufit-evidence")
    m.ir_version = 8
    return m


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _save(m, folder: Path, name: str) -> Path:
    p = folder / f"{name}.onnx"
    onnx.save(m, p)
    return p


# -- cases: (folder) -> (model path, the nodes that carry the pattern; () = every running node) ---------------------
def mha_seq_first(folder: Path):
    """DEIMv2-N's encoder layer: flatten(2) tokens, position embedding, nn.MultiheadAttention at batch 1."""
    import torch
    from torch import nn

    from npufit.zoo.export import export_onnx

    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self, c=32):
            super().__init__()
            self.attn = nn.MultiheadAttention(c, 4, batch_first=True)
            self.pos = nn.Parameter(torch.randn(1, 36, c))
            self.norm = nn.LayerNorm(c)

        def forward(self, x):
            n, c, h, w = x.shape
            src = x.flatten(2).permute(0, 2, 1)
            q = src + self.pos
            src = self.norm(src + self.attn(q, q, value=src)[0])
            return src.permute(0, 2, 1).reshape(n, c, h, w)

    p = folder / "mha_seq_first.onnx"
    export_onnx(Layer().eval(), torch.randn(1, 32, 6, 6), p, 17, ["x"], ["y"])
    return p, ()


def rope(folder: Path):
    d = 8
    inits = [
        _c("h0", [0], np.int64),
        _c("h1", [d // 2], np.int64),
        _c("h2", [d], np.int64),
        _c("ax", [-1], np.int64),
        _c("st", [1], np.int64),
        _c("sin", np.sin(np.arange(16 * d).reshape(1, 1, 16, d))),
        _c("cos", np.cos(np.arange(16 * d).reshape(1, 1, 16, d))),
    ]
    nodes = [
        helper.make_node("Slice", ["x", "h0", "h1", "ax", "st"], ["x1"], name="first_half"),
        helper.make_node("Slice", ["x", "h1", "h2", "ax", "st"], ["x2"], name="second_half"),
        helper.make_node("Neg", ["x2"], ["nx2"], name="neg"),
        helper.make_node("Concat", ["nx2", "x1"], ["rot"], name="rotate", axis=-1),
        helper.make_node("Mul", ["rot", "sin"], ["rs"], name="mul_sin"),
        helper.make_node("Mul", ["x", "cos"], ["xc"], name="mul_cos"),
        helper.make_node("Add", ["xc", "rs"], ["y"], name="add"),
    ]
    return _save(_model(nodes, [_vi("x", [1, 3, 16, d])], [_vi("y", [1, 3, 16, d])], inits), folder, "rope"), ()


def keras_dense_rank3(folder: Path):
    """A Keras Dense on [1, T, C] as tf2onnx writes it: Reshape to [T, C], MatMul, Reshape back."""
    nodes = [
        helper.make_node("Reshape", ["x", "s2"], ["x2"], name="MatMul_pre_reshape"),
        helper.make_node("MatMul", ["x2", "w"], ["m"], name="MatMul"),
        helper.make_node("Reshape", ["m", "s3"], ["y"], name="MatMul_post_reshape"),
    ]
    inits = [_c("s2", [10, 16], np.int64), _c("s3", [1, 10, 24], np.int64), _w("w", (16, 24))]
    m = _model(nodes, [_vi("x", [1, 10, 16])], [_vi("y", [1, 10, 24])], inits)
    return _save(m, folder, "keras_dense_rank3"), ("MatMul_pre_reshape", "MatMul_post_reshape")


def int64_island(folder: Path):
    """Token ids (int64) looked up in an embedding table, then the encoder's float work."""
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], name="token_lookup", axis=0),
        helper.make_node("Add", ["emb", "pos"], ["x"], name="add_position"),
        helper.make_node("MatMul", ["x", "w"], ["y"], name="linear"),
    ]
    inits = [_w("table", (50, 16)), _w("pos", (1, 8, 16), 1), _w("w", (16, 16), 2)]
    m = _model(nodes, [_vi("ids", [1, 8], TensorProto.INT64)], [_vi("y", [1, 8, 16])], inits)
    return _save(m, folder, "int64_island"), ("token_lookup",)


def _conv_case(name: str, x_shape, w_shape, extra=(), extra_inits=(), out_shape=None, pattern=(), **conv):
    def build(folder: Path):
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", **conv), *extra]
        out = extra[-1].output[0] if extra else "c"
        m = _model(nodes, [_vi("x", list(x_shape))], [_vi(out, out_shape)], [_w("w", w_shape), *extra_inits])
        return _save(m, folder, name), pattern

    return build


def tokens_to_map_resize(folder: Path):
    """Tokens [1, T, C] from a Linear back to a map, bilinear Resize, convolution (a DPT head)."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["t"], name="linear"),
        helper.make_node("Transpose", ["t"], ["tt"], name="to_channels", perm=[0, 2, 1]),
        helper.make_node("Reshape", ["tt", "s"], ["map"], name="to_map"),
        helper.make_node("Resize", ["map", "", "scales"], ["up"], name="resize", mode="linear"),
        helper.make_node("Conv", ["up", "cw"], ["y"], name="conv"),
    ]
    inits = [_w("w", (16, 16)), _c("s", [1, 16, 4, 4], np.int64), _c("scales", [1, 1, 2, 2]), _w("cw", (8, 16, 1, 1))]
    m = _model(nodes, [_vi("x", [1, 16, 16])], [_vi("y", [1, 8, 8, 8])], inits)
    return _save(m, folder, "tokens_to_map_resize"), ()


def resmlp_token_mixing(folder: Path):
    """ResMLP's token mixing: a Linear over the token axis between two transpose(1, 2) of [1, T, C]."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["t"], name="channel_linear"),
        helper.make_node("Transpose", ["t"], ["tt"], name="tokens_last", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["tt", "wt"], ["mix"], name="token_linear"),
        helper.make_node("Transpose", ["mix"], ["y"], name="tokens_back", perm=[0, 2, 1]),
    ]
    inits = [_w("w", (16, 16)), _w("wt", (12, 12), 1)]
    m = _model(nodes, [_vi("x", [1, 12, 16])], [_vi("y", [1, 12, 16])], inits)
    return _save(m, folder, "resmlp_token_mixing"), ()


def eltwise_curve(folder: Path):
    """Zero-DCE's curve x + r * x * (1 - x) with r from a convolution (activation x activation)."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["r0"], name="curve_conv", pads=[1, 1, 1, 1]),
        helper.make_node("Tanh", ["r0"], ["r"], name="tanh"),
        helper.make_node("Sub", ["one", "x"], ["omx"], name="one_minus_x"),
        helper.make_node("Mul", ["x", "omx"], ["xx"], name="x_times"),
        helper.make_node("Mul", ["r", "xx"], ["rxx"], name="r_times"),
        helper.make_node("Add", ["x", "rxx"], ["y"], name="enhance"),
    ]
    m = _model(nodes, [_vi("x", [1, 3, 16, 16])], [_vi("y", [1, 3, 16, 16])], [_w("w", (3, 3, 3, 3)), _c("one", 1.0)])
    return _save(m, folder, "eltwise_curve"), ()


def resize_bilinear(folder: Path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Resize", ["c", "", "scales"], ["y"], name="resize_bilinear", mode="linear"),
    ]
    m = _model(
        nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 16, 16])], [_w("w", (4, 3, 1, 1)), _c("scales", [1, 1, 2, 2])]
    )
    return _save(m, folder, "resize_bilinear"), ()


def depth_to_space(folder: Path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("DepthToSpace", ["c"], ["y"], name="pixel_shuffle", blocksize=2),
    ]
    m = _model(nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 3, 16, 16])], [_w("w", (12, 3, 1, 1))])
    return _save(m, folder, "depth_to_space"), ()


def flatten_fc(folder: Path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Flatten", ["c"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fw"], ["y"], name="linear", transB=1),
    ]
    m = _model(nodes, [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 10])], [_w("w", (8, 3, 1, 1)), _w("fw", (10, 128), 1)])
    return _save(m, folder, "flatten_fc"), ()


def mean_linear(folder: Path):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("ReduceMean", ["c"], ["m"], name="mean", axes=[2, 3], keepdims=0),
        helper.make_node("Reshape", ["m", "s"], ["r"], name="reshape"),
        helper.make_node("Gemm", ["r", "fw"], ["y"], name="linear", transB=1),
    ]
    inits = [_w("w", (8, 3, 1, 1)), _c("s", [1, 8], np.int64), _w("fw", (10, 8), 1)]
    m = _model(nodes, [_vi("x", [1, 3, 4, 4])], [_vi("y", [1, 10])], inits)
    return _save(m, folder, "mean_linear"), ("mean", "reshape", "linear")


def topk_k300(folder: Path):
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flatten", axis=1),
        helper.make_node("TopK", ["f", "k"], ["v", "i"], name="topk", axis=-1),
    ]
    m = _model(
        nodes, [_vi("x", [1, 1, 20, 20])], [_vi("v", [1, 300]), _vi("i", [1, 300], TensorProto.INT64)],
        [_c("k", [300], np.int64)],
    )  # fmt: skip
    return _save(m, folder, "topk_k300"), ("topk",)


def reducemax_keepdims(folder: Path):
    nodes = [helper.make_node("ReduceMax", ["x"], ["y"], name="reducemax", axes=[1], keepdims=0)]
    m = _model(nodes, [_vi("x", [1, 8, 4, 4])], [_vi("y", [1, 4, 4])], [])
    return _save(m, folder, "reducemax_keepdims"), ("reducemax",)


def gridsample(folder: Path):
    nodes = [helper.make_node("GridSample", ["x", "g"], ["y"], name="gridsample")]
    m = _model(nodes, [_vi("x", [1, 8, 8, 8]), _vi("g", [1, 4, 4, 2])], [_vi("y", [1, 8, 4, 4])], [], opset=16)
    return _save(m, folder, "gridsample"), ("gridsample",)


def tflite_head_reshape(folder: Path):
    from npufit.zoo.hailo_zoo import palm_detection_lite

    p = folder / "palm.tflite"
    palm_detection_lite(p)
    from npufit.graph import load

    return p, tuple(n.name for n in load(p).nodes if n.op_type == "RESHAPE")


def tflite_landmark(folder: Path):
    from npufit.zoo.hailo_zoo import hand_landmark_lite

    p = folder / "hand.tflite"
    hand_landmark_lite(p)
    return p, ()


CASES: dict[str, Callable] = {
    "mha_seq_first": mha_seq_first,
    "rope": rope,
    "keras_dense_rank3": keras_dense_rank3,
    "int64_island": int64_island,
    "tokens_to_map_resize": tokens_to_map_resize,
    "resmlp_token_mixing": resmlp_token_mixing,
    "eltwise_curve": eltwise_curve,
    "resize_bilinear": resize_bilinear,
    "depth_to_space": depth_to_space,
    "conv2d_h1": _conv_case("conv2d_h1", (1, 80, 1, 50), (16, 80, 1, 3), out_shape=[1, 16, 1, 50], pads=[0, 1, 0, 1]),
    "conv1d": _conv_case("conv1d", (1, 80, 50), (16, 80, 3), out_shape=[1, 16, 50], pads=[1, 1], pattern=("conv",)),
    "flatten_fc": flatten_fc,
    "mean_linear": mean_linear,
    "topk_k300": topk_k300,
    "reducemax_keepdims": reducemax_keepdims,
    "gridsample": gridsample,
    "tflite_head_reshape": tflite_head_reshape,
    "tflite_landmark": tflite_landmark,
}


def judge_case(case: str, folder: Path, target: str, zoo: dict) -> tuple[bool, str]:
    """(does the profile put the pattern on the NPU, what it says): a built case, or a Zoo rebuild's record row."""
    if case.startswith("zoo:"):
        row = zoo[case[4:]]
        off = row["off_npu_to_end"]
        return not off, f"{row['npu_to_end']}/{row['nodes_to_end']} npu up to the Zoo's end nodes" + (
            f"; off: {', '.join(off)}" if off else ""
        )
    import npufit

    path, pattern = CASES[case](folder)
    r = npufit.check(path, target)
    nodes = [n for n in r.running if not pattern or n.name in pattern]
    off = [n for n in nodes if n.verdict.value != "npu"]
    rules = sorted({n.reasons[0].rule for n in off if n.reasons})
    return not off, f"{len(nodes) - len(off)}/{len(nodes)} npu" + (f"; {', '.join(rules)}" if rules else "")


def score(target: str = "hailo8", cases: set[str] | None = None) -> list[dict]:
    from npufit.targets.hailo.evidence import outcomes
    from npufit.zoo.hailo_zoo import RECORD

    zoo = {r["network"]: r for r in json.loads(RECORD.read_text())["networks"]}
    rows, done = [], {}
    with tempfile.TemporaryDirectory(prefix="hailo-evidence-") as tmp:
        for o in outcomes():
            case = o.get("case")
            row = {"id": o["id"], "kind": o["kind"], "outcome": o["outcome"], "case": case or "", "url": o.get("url")}
            if not case or (cases is not None and case not in cases):
                rows.append({**row, "agrees": None, "npufit": "not judged"})
                continue
            if case not in done:
                sub = Path(tmp) / case.replace(":", "_")
                sub.mkdir()
                done[case] = judge_case(case, sub, target, zoo)
            npu, said = done[case]
            rows.append({**row, "agrees": npu == (o["outcome"] in ON_CHIP), "npufit": said})
    return rows


def render(rows: list[dict], fmt: str) -> str:
    scored = [r for r in rows if r["agrees"] is not None]
    agree = sum(r["agrees"] for r in scored)
    summary = f"agreement: {agree}/{len(scored)} judged outcomes ({len(rows) - len(scored)} not judged)"
    if fmt == "json":
        return json.dumps({"rows": rows, "agree": agree, "judged": len(scored), "total": len(rows)}, indent=1)
    head = ("outcome", "kind", "parser", "case", "npufit", "agrees")
    body = [
        (
            r["id"],
            r["kind"],
            r["outcome"],
            r["case"] or "-",
            r["npufit"],
            {True: "yes", False: "NO", None: "-"}[r["agrees"]],
        )
        for r in rows
    ]
    if fmt == "markdown":
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(b) + " |" for b in body]
    else:
        w = [max(len(x) for x in col) for col in zip(head, *body)]
        lines = ["  ".join(x.ljust(w[i]) for i, x in enumerate(b)) for b in [head, *body]]
    return "\n".join(lines + ["", summary])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="hailo8")
    ap.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    args = ap.parse_args()
    print(render(score(args.target), args.format))


if __name__ == "__main__":
    main()
