"""A compiler-driven sweep generator: tiny graphs over op x attributes x shapes x neighbouring ops, run through the real
compilers, so that rule bounds come from measured records rather than from the models where a class happened to show.

    python -m calibration.sweep list [--families conv2d transpose ...]
    python -m calibration.sweep run --target rk3588|ethos-u55-256|ethos-u85-256|ethos-n78 [--families ...]
        [--cases GLOB,...] [--record]

Families (FAMILIES), each a product over its axes:
- conv2d: kernel 1x1 .. 9x9 and 1-D-like 1x7 / 7x1 / 1x31 x stride 1 / 2 x dense / depthwise;
- conv1d: 1-D convolutions on [1, C, L], short to long kernels, and STFT-style front ends (1 -> 258 channels, kernel
  256 / 400 / 512 with hop 128 / 160 / 256, the 1x256 kernel of a VAD's STFT);
- transpose: every batch-keeping 4-D permutation x shapes from 8x16x16 to [1, 400, 2, 400] (the shape range Vela
  leaves a TRANSPOSE on the CPU for);
- focus: strided slices as in YOLOX's Focus stem (four step-2 slices + Concat) and single step-2 slices;
- head: YOLOv8's DFL (Reshape [1, 4, 16, A] -> Transpose -> Softmax -> 1x1 Conv -> Reshape) for A = 8400 / 2100 / 525,
  and the multi-scale Reshape + Concat of detection heads;
- arity: Sum / Mean / Max / Min of 2, 3 and 4 inputs;
- cast: float -> int32 / int64 / int8 / uint8 / float16 / bool -> float round trips, and integer Add paths;
- attention: batch-1 multi-head attention in the sequence-first layout torch's nn.MultiheadAttention exports and in the
  batch-first one, 1 / 4 heads, 16 / 64 / 400 tokens.
The earlier hand-written sweeps (rknn_sweep.py: Resize, pooling, Reshape, Slice; rknn_sweep2.py: integer arithmetic,
GELU forms, Gather, Pad, window attention) are families "rknn_sweep" and "rknn_sweep2" here: run through any compiler
with --families (their rk3588 records stay in rk3588-cases.json, made by rknn_cases.py).

Each graph is conv 1x1 -> the pattern -> [a reshape to 4-D] -> conv 1x1 (rknn_sweep._graph), written as ONNX directly
so every attribute is the one named, opset 17. A case records the placement of EVERY top-level node (op "*", with the
op types), so one compile answers for the pattern's neighbours too. RKNN builds are float16 (simulator off); Vela and
the Ethos-N support library get npufit's int8 TFLite conversion. --record writes docs/calibration/sweep/<target>.json
(the case-record format, builder "sweep"); tests/test_calibration_realworld.py replays them."""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import math
import tempfile
from pathlib import Path

import numpy as np

from . import form
from .judge import compile_onnx, compiler_of, is_rknn
from .rknn_sweep import _graph

OPSET = 17
FOLDER = form.RECORDS / "sweep"
TARGETS = ("rk3588", "ethos-u55-256", "ethos-u85-256", "ethos-n78")
ALL = "*"  # a sweep case records every top-level node


def _init(inits: list, name: str, value, dtype=np.float32) -> str:
    from onnx import numpy_helper

    inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
    return name


def _node(nodes: list, op: str, ins, outs, name: str, **attrs) -> str:
    from onnx import helper

    nodes.append(helper.make_node(op, list(ins), list(outs), name=name, **attrs))
    return outs[0]


def _weights(shape, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) / math.sqrt(max(1, math.prod(shape[1:])))).astype(
        np.float32
    )


# -- the pattern builders (each returns an ONNX model) -----------------------------------------------------------------


def conv2d(kh: int, kw: int, stride: int, depthwise: bool, c: int = 16, hw=(16, 64)):
    out = [1, c] + [(d - k) // stride + 1 for d, k in zip(hw, (kh, kw))]

    def body(x, nodes, inits):
        g = c if depthwise else 1
        w = _init(inits, "k_w", _weights((c, c // g, kh, kw), 1))
        return _node(nodes, "Conv", [x, w], ["k"], "conv", kernel_shape=[kh, kw], strides=[stride, stride], group=g)

    return _graph(c, hw, body, out)


def conv1d(k: int, stride: int, c_in: int, c_out: int, depthwise: bool = False, length: int = 4096):
    """A 1-D convolution of the pre-conv's output viewed as [1, C, L] (an audio front end: C_in 1 -> many channels)."""
    frames = (length - k) // stride + 1

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "c1_in", [1, c_in, length], np.int64)], ["v"], "to1d")
        g = c_in if depthwise else 1
        w = _init(inits, "c1_w", _weights((c_out, c_in // g, k), 2))
        return _node(nodes, "Conv", [t, w], ["k"], "conv1d", kernel_shape=[k], strides=[stride], group=g)

    return _graph(c_in, (1, length), body, [1, c_out, frames])


def transpose(shape, perm):
    """The pre-conv's [1, C, H, W] output (C, H, W from `shape`) transposed by `perm`."""

    def body(x, nodes, inits):
        return _node(nodes, "Transpose", [x], ["t"], "transpose", perm=list(perm))

    return _graph(shape[1], tuple(shape[2:]), body, [shape[p] for p in perm])


def focus(form_: str, c: int = 3, hw=(64, 64)):
    """YOLOX's Focus stem (form "stem": x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]
    concatenated on channels), or one step-2 slice on H ("h"), on W ("w") or on both ("hw")."""
    h, w = hw
    parts = {"stem": [(0, 0), (1, 0), (0, 1), (1, 1)], "hw": [(0, 0)], "h": [(0, None)], "w": [(None, 0)]}[form_]

    def body(x, nodes, inits):
        outs = []
        for i, (sh, sw) in enumerate(parts):
            axes = [a for a, s in ((2, sh), (3, sw)) if s is not None]
            starts = [s for s in (sh, sw) if s is not None]
            ins = [
                x,
                _init(inits, f"f{i}_s", starts, np.int64),
                _init(inits, f"f{i}_e", [2**62] * len(axes), np.int64),
                _init(inits, f"f{i}_a", axes, np.int64),
                _init(inits, f"f{i}_p", [2] * len(axes), np.int64),
            ]
            outs.append(_node(nodes, "Slice", ins, [f"s{i}"], f"slice{i}"))
        return outs[0] if len(outs) == 1 else _node(nodes, "Concat", outs, ["cat"], "concat", axis=1)

    oh = h // 2 if parts[0][0] is not None else h
    ow = w // 2 if parts[0][1] is not None else w
    return _graph(c, hw, body, [1, c * len(parts), oh, ow])


def dfl(anchors: int, reg_max: int = 16):
    """YOLOv8's distribution focal loss head on [1, 4 * reg_max, A] box logits (A = anchors)."""

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "d_s", [1, 4, reg_max, anchors], np.int64)], ["r"], "dfl_r")
        t = _node(nodes, "Transpose", [t], ["t"], "dfl_t", perm=[0, 2, 1, 3])
        t = _node(nodes, "Softmax", [t], ["sm"], "dfl_softmax", axis=1)
        w = _init(inits, "dfl_w", np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1))
        t = _node(nodes, "Conv", [t, w], ["dc"], "dfl_conv", kernel_shape=[1, 1])
        return _node(nodes, "Reshape", [t, _init(inits, "d_o", [1, 4, anchors], np.int64)], ["box"], "dfl_out")

    return _graph(4 * reg_max, (1, anchors), body, [1, 4, anchors])


def head_concat(c: int, hw=(80, 80), sigmoid: bool = True):
    """A detection head's multi-scale flatten: the map and two pooled copies (stride 2, 4) reshaped to [1, C, HW_i] and
    concatenated on the anchor axis (YOLOv8 / YOLOX write their three scales out this way), then a Sigmoid."""
    h, w = hw
    sizes = [(h, w), (h // 2, w // 2), (h // 4, w // 4)]

    def body(x, nodes, inits):
        outs = []
        for i, (sh, sw) in enumerate(sizes):
            t = x
            if i:
                k = 2**i
                t = _node(nodes, "MaxPool", [x], [f"p{i}"], f"pool{i}", kernel_shape=[k, k], strides=[k, k])
            shp = _init(inits, f"h{i}_s", [1, c, sh * sw], np.int64)
            outs.append(_node(nodes, "Reshape", [t, shp], [f"f{i}"], f"flat{i}"))
        t = _node(nodes, "Concat", outs, ["cat"], "concat", axis=2)
        return _node(nodes, "Sigmoid", [t], ["sg"], "sigmoid") if sigmoid else t

    return _graph(c, hw, body, [1, c, sum(a * b for a, b in sizes)])


def arity(op: str, n: int, c: int = 16, hw=(16, 16)):
    """`op` (Sum, Mean, Max, Min) over n tensors: the pre-conv's output and n - 1 other 1x1 convs of the input."""

    def body(x, nodes, inits):
        ins = [x] + [_node(nodes, "Conv", *_branch(i, c, inits)) for i in range(1, n)]
        return _node(nodes, op, ins, ["v"], op.lower())

    return _graph(c, hw, body, [1, c, *hw])


def _branch(i: int, c: int, inits: list):
    w = _init(inits, f"b{i}_w", _weights((c, c, 1, 1), 10 + i))
    return ["x", w], [f"b{i}"], f"branch{i}"


_INT = {"int32": 6, "int64": 7, "int8": 3, "uint8": 2, "float16": 10, "bool": 9}


def cast(to: str, add: bool = False, c: int = 8, hw=(8, 8)):
    """A float -> `to` -> float round trip of the pre-conv's output; add=True puts an Add of an integer constant between
    the two casts (an integer path, as index arithmetic writes it)."""

    def body(x, nodes, inits):
        t = _node(nodes, "Cast", [x], ["ci"], "cast_to", to=_INT[to])
        if add:
            t = _node(nodes, "Add", [t, _init(inits, "one", 1, getattr(np, to))], ["ai"], "int_add")
        return _node(nodes, "Cast", [t], ["cf"], "cast_back", to=1)

    return _graph(c, hw, body, [1, c, *hw])


def attention(layout: str, heads: int, hw=(4, 4), c: int = 16):
    """Batch-1 multi-head self-attention over the H*W tokens of the pre-conv's output: "seq" is the sequence-first
    layout torch's nn.MultiheadAttention exports ([N, 1, C], heads split as [N, heads, d] -> Transpose(1, 0, 2)),
    "batch" the batch-first one ([1, N, C] -> [1, N, heads, d] -> Transpose(0, 2, 1, 3))."""
    n, d = hw[0] * hw[1], c // heads

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "flat", [1, c, n], np.int64)], ["fl"], "flatten")
        seq = layout == "seq"
        t = _node(nodes, "Transpose", [t], ["tok"], "to_tokens", perm=[2, 0, 1] if seq else [0, 2, 1])
        qkv = []
        for i, nm in enumerate("qkv"):
            w = _init(inits, f"{nm}_w", _weights((c, c), 20 + i))
            p = _node(nodes, "MatMul", [t, w], [f"{nm}_p"], f"{nm}_proj")
            split = [n, heads, d] if seq else [1, n, heads, d]
            r = _node(nodes, "Reshape", [p, _init(inits, f"{nm}_s", split, np.int64)], [f"{nm}_r"], f"{nm}_heads")
            perm = ([1, 2, 0] if nm == "k" else [1, 0, 2]) if seq else ([0, 2, 3, 1] if nm == "k" else [0, 2, 1, 3])
            qkv.append(_node(nodes, "Transpose", [r], [f"{nm}_t"], f"{nm}_transpose", perm=perm))
        s = _node(nodes, "MatMul", qkv[:2], ["scores"], "qk")
        s = _node(nodes, "Mul", [s, _init(inits, "scale", d**-0.5)], ["scaled"], "scale")
        s = _node(nodes, "Softmax", [s], ["attn"], "softmax", axis=-1)
        o = _node(nodes, "MatMul", [s, qkv[2]], ["ctx"], "av")
        o = _node(nodes, "Transpose", [o], ["ctx_t"], "merge_t", perm=[1, 0, 2] if seq else [0, 2, 1, 3])
        o = _node(nodes, "Reshape", [o, _init(inits, "merged", [n, 1, c] if seq else [1, n, c], np.int64)], ["m"], "m")
        return _node(nodes, "Transpose", [o], ["back"], "to_channels", perm=[1, 2, 0] if seq else [0, 2, 1])

    return _graph(c, hw, body, [1, c, n])


# -- the axes ----------------------------------------------------------------------------------------------------------


def _families() -> dict[str, dict]:
    f: dict[str, dict] = {}
    k2 = ((1, 1), (3, 3), (5, 5), (7, 7), (9, 9), (1, 7), (7, 1), (1, 31))
    f["conv2d"] = {
        f"conv2d-k{kh}x{kw}-s{s}-{'dw' if dw else 'dense'}": (conv2d, (kh, kw, s, dw))
        for (kh, kw), s, dw in itertools.product(k2, (1, 2), (False, True))
    }
    f["conv1d"] = {
        f"conv1d-k{k}-s{s}-{'dw' if dw else 'dense'}": (conv1d, (k, s, 16, 16, dw))
        for (k, s), dw in itertools.product(((3, 1), (9, 1), (31, 1), (64, 1)), (False, True))
    }
    f["conv1d"].update(
        {
            f"conv1d-stft-k{k}-hop{s}": (conv1d, (k, s, 1, 258))
            for k, s in ((256, 128), (400, 160), (512, 256), (64, 32))
        }
    )
    shapes = ((1, 8, 16, 16), (1, 64, 2, 64), (1, 16, 32, 300), (1, 400, 2, 400), (1, 2, 400, 400))
    perms = ((0, 1, 3, 2), (0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2), (0, 3, 2, 1))
    f["transpose"] = {
        f"transpose-{'x'.join(map(str, s))}-perm{''.join(map(str, p))}": (transpose, (s, p))
        for s, p in itertools.product(shapes, perms)
    }
    f["focus"] = {f"focus-stem-{h}": (focus, ("stem", 3, (h, h))) for h in (64, 320, 640)}
    f["focus"].update({f"focus-{fm}-64": (focus, (fm, 16, (64, 64))) for fm in ("h", "w", "hw")})
    f["focus"].update({f"focus-{fm}-320": (focus, (fm, 3, (320, 320))) for fm in ("h", "w", "hw")})
    f["head"] = {f"head-dfl-a{a}": (dfl, (a,)) for a in (8400, 2100, 525)}
    f["head"].update({f"head-concat-c{c}-{h}": (head_concat, (c, (h, h))) for c, h in ((64, 80), (144, 40), (84, 80))})
    f["arity"] = {
        f"arity-{op.lower()}-{n}": (arity, (op, n)) for op in ("Sum", "Mean", "Max", "Min") for n in (2, 3, 4)
    }
    f["cast"] = {f"cast-{t}": (cast, (t,)) for t in _INT}
    f["cast"].update({f"cast-{t}-add": (cast, (t, True)) for t in ("int32", "int64")})
    f["attention"] = {
        f"attention-{lay}-h{h}-n{s * s}": (attention, (lay, h, (s, s)))
        for lay, h, s in itertools.product(("seq", "batch"), (1, 4), (4, 8, 20))
    }
    return f


FAMILIES = _families()
DEFAULT = tuple(FAMILIES)  # what `run` sweeps without --families (the hand-written catalogues are opt-in)


def _legacy() -> dict[str, dict]:
    from .rknn_sweep import SWEEP
    from .rknn_sweep2 import SWEEP2

    return {"rknn_sweep": SWEEP, "rknn_sweep2": SWEEP2}


def catalogue(families=DEFAULT) -> dict:
    """name -> (builder, args) over the chosen families; a hand-written catalogue's entries keep their op and build."""
    out: dict = {}
    legacy = _legacy() if any(f in ("rknn_sweep", "rknn_sweep2") for f in families) else {}
    for fam in families:
        if fam in FAMILIES:
            out.update(FAMILIES[fam])
        else:
            out.update({n: (e[1], e[2]) for n, e in legacy[fam].items() if (e[3:] or ("fp16",))[0] == "fp16"})
    return out


CASES = catalogue()  # the case builder interface records.replay_cases reads: CASES and export_case


def export_case(name: str, folder: Path) -> Path:
    from npufit.util.io import atomic_write_bytes

    builder, args = CASES[name] if name in CASES else catalogue(("rknn_sweep", "rknn_sweep2"))[name]
    built = builder(*args)
    p = folder / f"{name}.onnx"
    if isinstance(built, tuple):  # a torch module from a hand-written catalogue
        from npufit.zoo.export import export_onnx

        export_onnx(*built, p, OPSET, ["x"], ["y"])
    else:
        atomic_write_bytes(p, built.SerializeToString())
    return p


# -- running -----------------------------------------------------------------------------------------------------------


def measure(onnx: Path, target: str, out: Path) -> tuple[list[str] | str, str | None]:
    """The compiler's placement of every top-level node of a case graph, or "failed: ..." with why."""
    from npufit.errors import NpufitError
    from npufit.graph import load

    build = "fp16" if is_rknn(target) else "int8"
    try:
        r = compile_onnx(onnx, target, build, out, timeout_s=600)
    except NpufitError as e:  # npufit's converter (Ethos-U, Ethos-N) has no lowering for a node of the graph
        return f"failed: {str(e).splitlines()[0].split('; way out')[0][:200]}", None
    if not (r.ok and r.placement):
        last = [ln.strip() for ln in str(r.error or "no placement").splitlines() if ln.strip()]
        return f"failed: {(last[-1] if last else 'no placement')[:200]}", r.compiler_version
    letters = form.placement_entry(load(onnx), r.placement)["placement"]
    word = {v: k for k, v in form.LETTER.items()}
    return [word[c] for c in letters], r.compiler_version


def record_file(target: str) -> Path:
    return FOLDER / f"{target}.json"


def run(target: str, names: list[str], record: bool, log=print) -> dict:
    from npufit.graph import load
    from npufit.util.io import atomic_write_json

    from .judge import case_verdicts

    path = record_file(target)
    comp = {"rknn": "rknn-toolkit2"}.get(compiler_of(target), compiler_of(target))
    build = "fp16" if is_rknn(target) else "int8"
    rec = (
        form.load_cases(path)
        if record and path.is_file()
        else {
            "schema": form.CASES_SCHEMA,
            "builder": "sweep",
            "target": target,
            "build": build,
            "opset": OPSET,
            "compiler": comp,
            "compiler_versions": [],
            "cases": {},
        }
    )
    cat = {**catalogue(("rknn_sweep", "rknn_sweep2")), **CASES}
    with tempfile.TemporaryDirectory(prefix="npufit-sweep-") as d:
        for name in names:
            p = export_case(name, Path(d))
            got, ver = measure(p, target, Path(d) / f"{name}-out")
            if ver and ver not in rec["compiler_versions"]:
                rec["compiler_versions"].append(ver)
            ops = [n.op_type for n in load(p).top_nodes]
            rec["cases"][name] = {"op": ALL, "ops": ops, "placement": got}
            pred = case_verdicts(p, ALL, target, build)
            cpu = [o for o, g in zip(ops, got) if g == "cpu"] if isinstance(got, list) else got
            said = [o for o, v in zip(ops, pred) if v in form.OFF]
            log(f"{target} {name:<44} compiler cpu: {cpu}  npufit off-NPU: {said}")
            if record:
                rec["cases"] = {n: rec["cases"][n] for n in cat if n in rec["cases"]}
                FOLDER.mkdir(parents=True, exist_ok=True)
                atomic_write_json(path, rec)
    return rec


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    fams = (*FAMILIES, "rknn_sweep", "rknn_sweep2")
    for nm in ("list", "run"):
        s = sub.add_parser(nm)
        s.add_argument("--families", nargs="+", choices=fams, default=list(DEFAULT))
        s.add_argument("--cases", default="*", help="comma-separated globs over case names (default: all)")
        if nm == "run":
            s.add_argument("--target", required=True, choices=TARGETS)
            s.add_argument("--record", action="store_true", help="write docs/calibration/sweep/<target>.json")
    a = ap.parse_args(argv)
    cat = catalogue(a.families)
    names = [n for n in cat if any(fnmatch.fnmatch(n, g) for g in a.cases.split(","))]
    if not names:
        ap.error(f"no case matches {a.cases!r}")
    if a.cmd == "list":
        for n in names:
            print(n)
        print(f"{len(names)} cases")
        return
    run(a.target, names, a.record, log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()
