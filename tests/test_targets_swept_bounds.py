"""The rules whose bounds are read from the compiler sweeps (npufit/targets/sweeps.py), each on a tiny graph built like
the real model that showed it: both sides of the bound, and the old verdict where the sweep's evidence is not used
(fit_cases False), so each assertion fails without the rule."""

from __future__ import annotations

import copy

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npufit.check import check_graph
from npufit.convert.tflite_writer import TFLiteBuilder
from npufit.graph import load
from npufit.graph.onnx_loader import build_graph
from npufit.targets import common, get_profile

from .onnx_builders import model, vi

NO_SWEEP = dict(fit_families=("cnn", "transformer", "detector", "audio-rnn"), fit_cases=False)


def _profile(target: str, **limits):
    prof = get_profile(target)
    if limits:
        prof = copy.copy(prof)
        prof.limits = {**prof.limits, **limits}
    return prof


def _onnx(m, target: str, node: str = "op", judge: str = "auto", **limits) -> str:
    import onnx

    m = onnx.shape_inference.infer_shapes(m)
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    return check_graph(g, _profile(target, **limits), judge=judge).node(node).verdict.value


def _tflite(b: TFLiteBuilder, tmp_path, target: str, op: str, **limits) -> list[str]:
    p = tmp_path / "m.tflite"
    p.write_bytes(b.build())
    rep = check_graph(load(p), _profile(target, **limits), judge="float")
    return [n.verdict.value for n in rep.nodes if n.op_type == op]


def _w(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.1, name)


# -- rk3588 --------------------------------------------------------------------------------------------------------------


def _stft(k=256, hop=128, samples=640):
    """A VAD's STFT front end: the [1, 1, samples] waveform through a 1-D convolution of kernel k, stride hop, into
    258 channels (Silero's 1x256 STFT convolution)."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="op", kernel_shape=[k], strides=[hop])]
    out = (samples - k) // hop + 1
    return model(nodes, [vi("x", [1, 1, samples])], [vi("y", [1, 258, out])], [_w("w", (258, 1, k))])


def test_a_long_1d_stft_convolution_runs_on_the_rk3588_npu():
    assert _onnx(_stft(), "rk3588") == "npu"
    assert _onnx(_stft(), "rk3588", judge="int8") == "npu"  # the int8 build ran it there too
    assert _onnx(_stft(512, 256, 1024), "rk3588") == "npu"  # the longest kernel the sweep measured
    assert _onnx(_stft(1024, 128, 2048), "rk3588") == "cpu"  # beyond it: the document's kernel bound again
    assert _onnx(_stft(), "rk3588", **NO_SWEEP) == "cpu"  # the 2.3.2 bounds alone call it CPU


def _magnitude(c: int = 129, t: int = 4):
    """A VAD's STFT magnitude on [1, C, T] frames: real and imaginary halves squared, added, Sqrt."""
    nodes, inits = [], []
    for i, (a, b) in enumerate(((0, c), (c, 2 * c))):
        for nm, v in ((f"s{i}", [a]), (f"e{i}", [b]), (f"a{i}", [1])):
            inits.append(numpy_helper.from_array(np.array(v, np.int64), nm))
        nodes.append(helper.make_node("Slice", ["x", f"s{i}", f"e{i}", f"a{i}"], [f"h{i}"], name=f"half{i}"))
        nodes.append(helper.make_node("Mul", [f"h{i}", f"h{i}"], [f"q{i}"], name=f"square{i}"))
    nodes += [helper.make_node("Add", ["q0", "q1"], ["p"], name="power"), helper.make_node("Sqrt", ["p"], ["y"], name="op")]
    return model(nodes, [vi("x", [1, 2 * c, t])], [vi("y", [1, c, t])], inits)


def _rmsnorm(c: int = 64, t: int = 40, eps_node: bool = False):
    """RMSNorm over the last axis of [1, T, C] tokens, as exporters decompose it: x / sqrt(mean(x^2) + eps);
    eps_node: epsilon from a Constant node written before the Add's other input (as TorchScript often writes it)."""
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("two", 2.0), ("eps", 1e-5))]
    nodes = [
        helper.make_node("Pow", ["x", "two"], ["sq"], name="square"),
        helper.make_node("ReduceMean", ["sq"], ["ms"], name="mean", axes=[-1], keepdims=1),
    ]
    if eps_node:
        inits = inits[:1]
        nodes.append(helper.make_node("Constant", [], ["eps"], name="eps_const",
                                      value=numpy_helper.from_array(np.array(1e-5, np.float32))))
    nodes += [
        helper.make_node("Add", ["eps", "ms"] if eps_node else ["ms", "eps"], ["v"], name="eps_add"),
        helper.make_node("Sqrt", ["v"], ["r"], name="op"),
        helper.make_node("Div", ["x", "r"], ["y"], name="div"),
    ]
    return model(nodes, [vi("x", [1, t, c])], [vi("y", [1, t, c])], inits)


def test_an_int8_sqrt_runs_on_the_rk3588_cpu_except_in_a_normalization():
    """The element-wise function sweep: Sqrt ran on the CPU in every int8 build and on the NPU in every float16 one,
    except a normalization's Sqrt, which the converter fuses (on the NPU in both)."""
    assert _onnx(_magnitude(), "rk3588", judge="int8") == "cpu"
    assert _onnx(_magnitude(), "rk3588") == "npu"  # the float16 build
    assert _onnx(_rmsnorm(), "rk3588", judge="int8") == "npu"
    assert _onnx(_rmsnorm(eps_node=True), "rk3588", judge="int8") == "npu"
    assert _onnx(_magnitude(), "rk3588", judge="int8", **NO_SWEEP) == "npu"  # without the sweep's evidence


def _focus(shared: bool):
    """YOLOX's Focus stem on the image: x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]
    concatenated on channels; torch writes each as a step-2 Slice of H then one of W (8 slices), or, with the H
    slices shared by the phases (YOLOv5's export), 6."""
    inits, nodes, outs, rows = [], [], [], {}

    def c(name, v):
        inits.append(numpy_helper.from_array(np.array(v, np.int64), name))
        return name

    for i, (r, q) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
        if shared and r in rows:
            t = rows[r]
        else:
            t = f"h{i}"
            nodes.append(
                helper.make_node(
                    "Slice",
                    ["x", c(f"s{i}", [r]), c(f"e{i}", [9999]), c(f"a{i}", [2]), c(f"p{i}", [2])],
                    [t],
                    name=f"sh{i}",
                )
            )
            rows[r] = t
        nodes.append(
            helper.make_node(
                "Slice",
                [t, c(f"s{i}w", [q]), c(f"e{i}w", [9999]), c(f"a{i}w", [3]), c(f"p{i}w", [2])],
                [f"w{i}"],
                name=f"sw{i}",
            )
        )
        outs.append(f"w{i}")
    nodes.append(helper.make_node("Concat", outs, ["cat"], name="cat", axis=1))
    nodes.append(helper.make_node("Conv", ["cat", "k"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    inits.append(_w("k", (16, 12, 3, 3)))
    return model(nodes, [vi("x", [1, 3, 416, 416])], [vi("y", [1, 16, 208, 208])], inits)


def test_yolox_focus_slices_run_on_the_rk3588_cpu():
    """YOLOX's Focus strided slices (8 on the image) ran on the CPU; YOLOv5's shared form (6) on the NPU."""
    assert [_onnx(_focus(False), "rk3588", node=f"s{k}{i}") for k in "hw" for i in range(4)] == ["cpu"] * 8
    assert _onnx(_focus(True), "rk3588", node="sw3") == "npu"
    assert _onnx(_focus(True), "rk3588", node="sh0") == "npu"
    assert _onnx(_focus(False), "rk3588", node="sw0", **NO_SWEEP) == "npu"


def _yolox_nano():
    """A YOLOX detector at 416 as its export writes it: the Focus stem's 8 strided slices on the image, a 3x3 conv,
    stride-2 convs down to the 52, 26 and 13 maps, and per scale box (4), objectness and class (80) convs, the last two
    through a Sigmoid, joined, flattened, the scales joined on the anchor axis and transposed to [1, 3549, 85]."""
    m = _focus(False)
    g = m.graph
    prev, c = "y", 16
    for i, (name, s) in enumerate((("map0", 4), ("map1", 2), ("map2", 2))):
        g.initializer.append(_w(f"d{i}", (16, c, s, s), 20 + i))
        g.node.append(helper.make_node("Conv", [prev, f"d{i}"], [name], name=f"down{i}", kernel_shape=[s, s],
                                       strides=[s, s]))
        prev = name
    flats = []
    for i, size in enumerate((52, 26, 13)):
        parts = []
        for j, (what, n) in enumerate((("box", 4), ("obj", 1), ("cls", 80))):
            g.initializer.append(_w(f"{what}{i}_w", (n, 16, 1, 1), 30 + 3 * i + j))
            g.node.append(helper.make_node("Conv", [f"map{i}", f"{what}{i}_w"], [f"{what}{i}"], name=f"{what}{i}",
                                           kernel_shape=[1, 1]))
            if what != "box":
                g.node.append(helper.make_node("Sigmoid", [f"{what}{i}"], [f"{what}{i}s"], name=f"{what}{i}_sig"))
            parts.append(f"{what}{i}" if what == "box" else f"{what}{i}s")
        g.node.append(helper.make_node("Concat", parts, [f"out{i}"], name=f"join{i}", axis=1))
        g.initializer.append(numpy_helper.from_array(np.array([1, 85, size * size], np.int64), f"fs{i}"))
        g.node.append(helper.make_node("Reshape", [f"out{i}", f"fs{i}"], [f"f{i}"], name=f"flat{i}"))
        flats.append(f"f{i}")
    g.node.append(helper.make_node("Concat", flats, ["rows"], name="anchors", axis=2))
    g.node.append(helper.make_node("Transpose", ["rows"], ["det"], name="transpose", perm=[0, 2, 1]))
    del g.output[:]
    g.output.append(vi("det", None))
    return m


def test_a_yolox_nano_export_has_the_nine_cpu_layers_rknn_gave_it():
    """The YOLOX detector RKNN-Toolkit2 compiled with 9 CPU layers: the Focus stem's 8 strided slices and one head
    Reshape, the 26x26 map's flatten (676 cells: its rows miss 16 bytes and leave 4 over in eights); the 52x52 one is
    aligned, and the 13x13 one ran on the NPU in the head sweep as the 5x5 of a pose head at 160 did."""
    import onnx

    m = onnx.shape_inference.infer_shapes(_yolox_nano())
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    rep = check_graph(g, _profile("rk3588"), judge="auto")
    cpu = sorted(n.name for n in rep.nodes if n.verdict.value != "npu")
    assert cpu == sorted([f"s{k}{i}" for k in "hw" for i in range(4)] + ["flat1"])


def _yolox_head(sizes, tail="output"):
    """YOLOX's head alone: per scale an 85-channel map flattened to rows, the scales joined on the anchor axis and
    transposed to [1, A, 85], written out (or read by a linear layer)."""
    nodes, inits, ins, flats = [], [], [], []
    for i, s in enumerate(sizes):
        ins.append(vi(f"x{i}", [1, 16, s, s]))
        inits += [_w(f"w{i}", (85, 16, 1, 1), i), numpy_helper.from_array(np.array([1, 85, s * s], np.int64), f"s{i}")]
        nodes.append(helper.make_node("Conv", [f"x{i}", f"w{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[1, 1]))
        nodes.append(helper.make_node("Reshape", [f"c{i}", f"s{i}"], [f"f{i}"], name=f"flat{i}"))
        flats.append(f"f{i}")
    nodes.append(helper.make_node("Concat", flats, ["cat"], name="concat", axis=2))
    out = "y" if tail == "output" else "t"
    nodes.append(helper.make_node("Transpose", ["cat"], [out], name="transpose", perm=[0, 2, 1]))
    if tail != "output":
        inits.append(_w("lw", (85, 8), 7))
        nodes.append(helper.make_node("MatMul", ["t", "lw"], ["y"], name="linear"))
    return model(nodes, ins, [vi("y", None)], inits)


def test_a_640_yolox_heads_output_transpose_runs_on_the_rk3588_cpu():
    """The head sweep: the Transpose of the joined rows into the model output ran on the CPU at 8400 anchors and more
    (640, 704, 768 inputs), on the NPU up to 7581 (608); read by a linear layer it stayed on the NPU."""
    assert _onnx(_yolox_head((80, 40, 20)), "rk3588", node="transpose") == "cpu"
    assert _onnx(_yolox_head((76, 38, 19)), "rk3588", node="transpose") == "npu"
    assert _onnx(_yolox_head((80, 40, 20), "matmul"), "rk3588", node="transpose") == "npu"
    assert _onnx(_yolox_head((80, 40, 20)), "rk3588", node="transpose", **NO_SWEEP) == "npu"


def _sum(n: int):
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"r{i}"], name=f"relu{i}") for i in range(n)]
    nodes.append(helper.make_node("Sum", [f"r{i}" for i in range(n)], ["y"], name="op"))
    return model(nodes, [vi(f"x{i}", [1, 8, 4, 4]) for i in range(n)], [vi("y", [1, 8, 4, 4])])


def test_rknn_adds_a_sum_of_up_to_three_inputs_on_the_npu():
    assert _onnx(_sum(2), "rk3588") == "npu"
    assert _onnx(_sum(3), "rk3588") == "npu"
    assert _onnx(_sum(4), "rk3588") == "unsupported"  # the sweep's build of a 4-input Sum failed
    assert _onnx(_sum(2), "rk3588", **NO_SWEEP) == "unsupported"  # not in the 2.3.2 operator list


def _dfl(anchors: int, then: str = "Conv"):
    """YOLOv8's DFL input: the box rows [1, 64, A] (a conv's [1, 64, 1, A] viewed as rows) split into [1, 4, 16, A],
    read by a convolution, or (then="Transpose") transposed first, as Ultralytics' export writes it."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv0", kernel_shape=[1, 1]),
        helper.make_node("Reshape", ["c", "s0"], ["rows"], name="rows"),
        helper.make_node("Reshape", ["rows", "s1"], ["split"], name="op"),
    ]
    shape = [1, 4, 16, anchors]
    if then == "Transpose":
        nodes.append(helper.make_node("Transpose", ["split"], ["t"], name="tr", perm=[0, 2, 1, 3]))
        shape = [1, 16, 4, anchors]
    nodes.append(helper.make_node("Conv", [nodes[-1].output[0], "k"], ["y"], name="conv1", kernel_shape=[1, 1]))
    inits = [
        _w("w", (64, 64, 1, 1)),
        _w("k", (1, shape[1], 1, 1)),
        numpy_helper.from_array(np.array([1, 64, anchors], np.int64), "s0"),
        numpy_helper.from_array(np.array([1, 4, 16, anchors], np.int64), "s1"),
    ]
    return model(nodes, [vi("x", [1, 64, 1, anchors])], [vi("y", [1, 1, shape[2], anchors])], inits)


def test_yolov8_dfl_rows_split_for_a_convolution_run_on_the_rk3588_cpu_above_the_swept_map():
    """The sweep: [1, 64, A] -> [1, 4, 16, A] before a convolution ran on the CPU at 4200 anchors and more (both
    Reshapes of the run), on the NPU at 2100 and fewer; the split before a Transpose ran on the NPU at 8400."""
    assert [_onnx(_dfl(8400), "rk3588", node=n) for n in ("rows", "op")] == ["cpu", "cpu"]
    assert _onnx(_dfl(4200), "rk3588") == "cpu"
    assert _onnx(_dfl(2100), "rk3588") == "npu"
    assert _onnx(_dfl(8400, "Transpose"), "rk3588") == "npu"
    assert _onnx(_dfl(8400), "rk3588", **NO_SWEEP) == "npu"


def _pose_head(sizes, c=51, k=17, tail="Conv"):
    """A multi-scale head's rows: per scale a 1x1 conv to C channels flattened to [1, C, H*W], the scales joined on the
    anchor axis and split into [1, k, C / k, A] for a 1x1 conv (a pose head's keypoints, C = 51) or for a Transpose
    (YOLOv8's DFL, C = 64). sizes: (H, W) per scale."""
    nodes, inits, ins, flats = [], [], [], []
    for i, (h, w) in enumerate(sizes):
        ins.append(vi(f"x{i}", [1, 16, h, w]))
        inits += [_w(f"w{i}", (c, 16, 1, 1), i), numpy_helper.from_array(np.array([1, c, h * w], np.int64), f"s{i}")]
        nodes.append(helper.make_node("Conv", [f"x{i}", f"w{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[1, 1]))
        nodes.append(helper.make_node("Reshape", [f"c{i}", f"s{i}"], [f"f{i}"], name=f"flat{i}"))
        flats.append(f"f{i}")
    a = sum(h * w for h, w in sizes)
    nodes.append(helper.make_node("Concat", flats, ["cat"], name="concat", axis=2))
    inits.append(numpy_helper.from_array(np.array([1, k, c // k, a], np.int64), "split_s"))
    nodes.append(helper.make_node("Reshape", ["cat", "split_s"], ["sp"], name="split"))
    ch, t = k, "sp"
    if tail == "Transpose":
        nodes.append(helper.make_node("Transpose", ["sp"], ["tr"], name="transpose", perm=[0, 2, 1, 3]))
        ch, t = c // k, "tr"
    inits.append(_w("pw", (8, ch, 1, 1), 9))
    nodes.append(helper.make_node("Conv", [t, "pw"], ["y"], name="post", kernel_shape=[1, 1]))
    return model(nodes, ins, [vi("y", None)], inits)


def test_pose_head_reshapes_run_on_the_rk3588_cpu_when_rows_miss_16_bytes():
    """The sweep's pose heads: at a 320 input (maps 40, 20, 10) the 10x10 map's flatten (100 cells, 51 channels) and
    the split of the joined [1, 51, 2100] rows ran on the CPU; at 640 (8400 anchors) every Reshape on the NPU; a
    DFL's 64 channels split for a Transpose on the NPU; 2008 anchors are 16 bytes in float16, not in int8."""
    at320 = _pose_head([(40, 40), (20, 20), (10, 10)])
    got = [_onnx(at320, "rk3588", node=n) for n in ("flat0", "flat1", "flat2", "split")]
    assert got == ["npu", "npu", "cpu", "cpu"]
    assert [_onnx(at320, "rk3588", node=n, **NO_SWEEP) for n in ("flat2", "split")] == ["npu", "npu"]
    at640 = _pose_head([(80, 80), (40, 40), (20, 20)])
    assert {_onnx(at640, "rk3588", node=n) for n in ("flat0", "flat1", "flat2", "split")} == {"npu"}
    dfl = _pose_head([(40, 40), (20, 20), (10, 10)], c=64, k=4, tail="Transpose")
    assert [_onnx(dfl, "rk3588", node=n) for n in ("flat2", "split")] == ["npu", "npu"]
    odd = _pose_head([(40, 40), (20, 20), (2, 4)])
    assert _onnx(odd, "rk3588", node="split") == "npu"
    assert _onnx(odd, "rk3588", node="split", judge="int8") == "cpu"


def test_a_small_map_flattened_for_the_head_concat_runs_on_the_rk3588_npu():
    """A pose head at a 160 input (maps 20, 10, 5): the 5x5 map's flatten (25 cells, 50 bytes) joined by the Concat ran
    on the NPU in the sweep and in the real 160 exports, where the 10x10 one (100 cells) and the split ran on the CPU;
    a YOLOX head at 416 (maps 52, 26, 13): the 26x26 flatten on the CPU, the 13x13 on the NPU. With no residue
    exempted the 5x5 flatten reads CPU as its unaligned rows say."""
    at160 = _pose_head([(20, 20), (10, 10), (5, 5)])
    got = [_onnx(at160, "rk3588", node=n) for n in ("flat0", "flat1", "flat2", "split")]
    assert got == ["npu", "cpu", "npu", "cpu"]
    assert _onnx(at160, "rk3588", node="flat2", judge="int8") == "npu"
    assert _onnx(at160, "rk3588", node="flat2", head_joined_residues=common.Choices()) == "cpu"
    at416 = _pose_head([(52, 52), (26, 26), (13, 13)], c=85, k=5)
    assert [_onnx(at416, "rk3588", node=n) for n in ("flat0", "flat1", "flat2")] == ["npu", "cpu", "npu"]


def _minmax(op: str, const: bool = False):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Relu", ["x"], ["s"], name="relu2")]
    nodes.append(helper.make_node(op, ["r", "c" if const else "s"], ["y"], name="op"))
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "c")] if const else []
    return model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], inits)


def test_min_of_run_time_tensors_is_cpu_a_clamp_and_max_are_not():
    for target in ("rk3588", "ethos-n78"):
        assert _onnx(_minmax("Min"), target) == "cpu", target
        assert _onnx(_minmax("Min", const=True), target) == "npu", target
    assert _onnx(_minmax("Max"), "rk3588") == "npu"
    assert _onnx(_minmax("Min"), "rk3588", **NO_SWEEP) == "npu"


def test_mean_of_tensors_is_a_cpu_op_on_rknn():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Mean", ["r", "x"], ["y"], name="op"),
    ]
    m = model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])])
    assert _onnx(m, "rk3588") == "cpu"  # before: not in the operator list, "conversion fails"


def test_a_bool_mask_cast_to_float_runs_on_the_rk3588_npu():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Greater", ["r", "z"], ["b"], name="gt"),
        helper.make_node("Cast", ["b"], ["y"], name="op", to=TensorProto.FLOAT),
    ]
    m = model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], [numpy_helper.from_array(np.float32(0), "z")])
    assert _onnx(m, "rk3588") == "npu"
    assert _onnx(m, "rk3588", **NO_SWEEP) == "cpu"


# -- Ethos-U ---------------------------------------------------------------------------------------------------------


def _transpose(shape, perm):
    b = TFLiteBuilder()
    x = b.tensor("input", shape, "int8", scale=0.05, zero_point=0)
    y = b.tensor("out", tuple(shape[p] for p in perm), "int8", scale=0.05, zero_point=0)
    pv = b.tensor("perm", (len(perm),), "int32", data=np.asarray(perm, np.int32))
    b.op("TRANSPOSE", [x, pv], [y], "TransposeOptions")
    b.io([x], [y])
    return b


def test_the_transpose_vela_leaves_on_the_cpu_in_an_int8_yolo_tflite(tmp_path):
    """Vela: "Transpose with permutation 3, 1, 2, 0 has shape out of range: 400, 2, 400, 1" (a user's int8 YOLO
    TFLite): a TRANSPOSE moving a non-unit leading axis, 400 x 400 above the sweep's 2^16 bound."""
    assert _tflite(_transpose((400, 2, 400, 1), (3, 1, 2, 0)), tmp_path, "ethos-u55-256", "TRANSPOSE") == ["cpu"]
    assert _tflite(_transpose((256, 2, 256, 1), (3, 1, 2, 0)), tmp_path, "ethos-u55-256", "TRANSPOSE") == ["npu"]
    assert _tflite(_transpose((1, 400, 2, 400), (0, 3, 2, 1)), tmp_path, "ethos-u55-256", "TRANSPOSE") == ["npu"]
    assert _tflite(_transpose((400, 2, 400, 1), (3, 1, 2, 0)), tmp_path, "ethos-u85-256", "TRANSPOSE") == ["npu"]
    off = _tflite(_transpose((400, 2, 400, 1), (3, 1, 2, 0)), tmp_path, "ethos-u55-256", "TRANSPOSE", **NO_SWEEP)
    assert off == ["npu"]


def test_vela_runs_a_float16_weight_dequantize_on_the_cpu(tmp_path):
    """A float model with float16 weights (as MediaPipe ships them): Vela folds nothing it does not support, so the
    weights' DEQUANTIZE is a CPU op, where npufit's own folding would call it folded."""
    b = TFLiteBuilder()
    x = b.tensor("input", (1, 8, 8, 4), "float32")
    w16 = b.tensor("w16", (4, 1, 1, 4), "float16", data=np.ones((4, 1, 1, 4)))
    w = b.tensor("w", (4, 1, 1, 4), "float32")
    bias = b.tensor("b", (4,), "float32", data=np.zeros(4))
    y = b.tensor("y", (1, 8, 8, 4), "float32")
    b.op("DEQUANTIZE", [w16], [w])
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    b.io([x], [y])
    assert _tflite(b, tmp_path, "ethos-u55-256", "DEQUANTIZE") == ["cpu"]
    assert _tflite(b, tmp_path, "ethos-u85-256", "DEQUANTIZE") == ["cpu"]
    assert _tflite(b, tmp_path, "rk3588", "DEQUANTIZE") == ["folded"]  # a compiler that folds constants


def test_softmax_over_attention_scores_is_judged_on_the_map_the_converter_writes():
    """YOLO11's attention softmax over [1, 2, 400, 400]: npufit's converter moves the softmax axis innermost, so
    Vela's width x height is 2 x 400; judging the NHWC view (400 x 400) called it CPU, Vela ran it on the NPU."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Softmax", ["r"], ["y"], name="op")]
    m = model(nodes, [vi("x", [1, 2, 400, 400])], [vi("y", [1, 2, 400, 400])])
    assert _onnx(m, "ethos-u55-256") == "npu"
    nodes[1] = helper.make_node("Softmax", ["r"], ["y"], name="op", axis=1)
    m = model(nodes, [vi("x", [1, 2, 400, 400])], [vi("y", [1, 2, 400, 400])])
    assert _onnx(m, "ethos-u55-256") == "cpu"  # over channels: the map is 400 x 400


# -- Ethos-N78 ------------------------------------------------------------------------------------------------------


def _dw(kh, kw, c=16):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="op", kernel_shape=[kh, kw], group=c)]
    return model(nodes, [vi("x", [1, c, 9, 9])], [vi("y", [1, c, 10 - kh, 10 - kw])], [_w("w", (c, 1, kh, kw))])


def test_ethos_n_runs_non_square_depthwise_kernels_on_the_cpu():
    """The streaming wake-word models' 5x1 / 9x1 depthwise convolutions ran on the host, as every non-square
    depthwise kernel of the sweep did."""
    assert _onnx(_dw(5, 1), "ethos-n78") == "cpu"
    assert _onnx(_dw(1, 7), "ethos-n78") == "cpu"
    assert _onnx(_dw(3, 3), "ethos-n78") == "npu"
    assert _onnx(_dw(5, 1), "ethos-n78", **NO_SWEEP) == "npu"


def test_ethos_n_transposes_that_do_not_fit_its_sram_run_on_the_cpu():
    """YOLOv8's DFL transpose [1, 4, 16, 8400] -> [1, 16, 4, 8400]: 2.1 MB in the library's bricks at 640, on the
    host; 0.5 MB at 320 (2100 anchors), on the NPU."""

    def dfl(a):
        nodes = [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Transpose", ["r"], ["y"], name="op", perm=[0, 2, 1, 3]),
        ]
        return model(nodes, [vi("x", [1, 4, 16, a])], [vi("y", [1, 16, 4, a])])

    assert _onnx(dfl(8400), "ethos-n78") == "cpu"
    assert _onnx(dfl(2100), "ethos-n78") == "npu"
    assert _onnx(dfl(8400), "ethos-n78", **NO_SWEEP) == "npu"


def test_an_ethos_n_split_of_height_has_no_channel_rule():
    """YOLO11's attention split of [1, 2, 128, 400] along axis 2 into 32 + 32 + 64: the NPU; a channel split into
    parts that are not multiples of 16 stays on the host."""

    def split(axis, parts, shape):
        nodes = [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Split", ["r", "s"], [f"y{i}" for i in range(len(parts))], name="op", axis=axis),
        ]
        outs = [vi(f"y{i}", [p if a == axis else d for a, d in enumerate(shape)]) for i, p in enumerate(parts)]
        return model(nodes, [vi("x", shape)], outs, [numpy_helper.from_array(np.array(parts, np.int64), "s")])

    assert _onnx(split(2, (32, 32, 64), [1, 2, 128, 400]), "ethos-n78") == "npu"
    assert _onnx(split(1, (8, 8), [1, 16, 8, 8]), "ethos-n78") == "cpu"
