"""RK3576, RK3566/RK3568 and RV1106/RV1103: RK3588's rules under their own names, with the differences their probe
records measured (docs/probe/<soc>-measured.json; the records themselves are replayed in test_probe_records.py)."""
from __future__ import annotations

import pytest

from npufit.errors import NpufitError
from npufit.targets import available_targets, get_profile

from .quant_builders import float_op
from .target_cases import judge

SOCS = ("rk3576", "rk3566", "rv1106")


def test_socs_are_targets_and_aliases_resolve_to_them():
    names = available_targets()
    assert set(SOCS) <= set(names) and not {"rk3568", "rv1103"} & set(names)  # an alias is not a second target
    assert get_profile("rk3568").name == "rk3566" and get_profile("RV1103").name == "rv1106"
    with pytest.raises(NpufitError, match="unknown target 'rv1109'"):
        get_profile("rv1109")


@pytest.mark.parametrize("soc", SOCS)
def test_every_rule_carries_the_socs_name_and_cites_its_record(soc):
    p = get_profile(soc)
    ids = [r.id for r in p.rules()] + [c.id for c in p.composites]
    assert ids and all(i.startswith(soc + ".") for i in ids), [i for i in ids if not i.startswith(soc + ".")]
    assert f"docs/probe/{soc}-matrix.md" in p.sources["PROBE-SOC"]  # the readable page of the record


def test_rv1106_judges_float_models_as_int8_and_rk3588_as_they_are():
    m = float_op("Relu", [1, 8, 4, 4], [1, 8, 4, 4])
    from npufit.check import check_graph
    from npufit.graph.onnx_loader import build_graph

    g = build_graph(m, "t.onnx", {"ai.onnx": 13}, [])
    assert check_graph(g, get_profile("rv1106")).target["judged_as"] == "int8"
    assert check_graph(g, get_profile("rk3588")).target["judged_as"] == "as is"
    # integer index math stays off the NPU, with the RV1106 sentence
    from onnx import TensorProto

    from .onnx_builders import model, vi
    from onnx import helper

    m64 = model([helper.make_node("Relu", ["x"], ["y"], name="op")], [vi("x", [1, 8], TensorProto.INT64)], [vi("y", [1, 8], TensorProto.INT64)])
    v, why = judge(m64, "rv1106")
    assert v == "cpu" and "int8 only" in why["rv1106.dtype"]


@pytest.mark.parametrize("op,x,y,attrs", [
    ("Div", [[1, 8, 4, 4], [1, 8, 4, 4]], [1, 8, 4, 4], {}),
    ("GRU", [4, 1, 8], [4, 1, 1, 16], {"hidden_size": 16}),
])
def test_rv1106_runs_on_the_cpu_what_rk3588_runs_on_the_npu(op, x, y, attrs):
    # probe cases div and gru: RV1106's int8 builds put Div and exGRU on the CPU, RK3588's builds on the NPU
    import numpy as np
    from onnx import numpy_helper

    inits = ()
    if op == "GRU":
        inits = (numpy_helper.from_array(np.ones((1, 48, 8), np.float32), "w"), numpy_helper.from_array(np.ones((1, 48, 16), np.float32), "r"))
    m = float_op(op, x, y, attrs, inits=inits, n_inputs=2 if op == "Div" else 1)
    assert judge(m, "rk3588")[0] == "npu"
    v, why = judge(m, "rv1106")
    assert v == "cpu" and "RV1106" in " ".join(why.values()), why


def test_rv1106_output_reshape_runs_on_the_npu():
    # probe case flatten_output_1x1: [1, 12, 1, 1] -> [1, 12] model output; RK3588 float16: CPU, RV1106 int8: NPU
    from onnx import TensorProto, helper

    from .onnx_builders import model, vi

    w = helper.make_tensor("w", TensorProto.FLOAT, [12, 12, 1, 1], [0.1] * 144)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"), helper.make_node("Flatten", ["c"], ["y"], name="op")]
    m = model(nodes, [vi("x", [1, 12, 1, 1])], [vi("y", [1, 12])], [w])
    assert judge(m, "rk3588")[0] == "cpu"
    assert judge(m, "rv1106") == ("npu", {})


def test_rk3566_runs_softmax_on_the_cpu_along_every_axis():
    # rk3566's Softmax sweep (every axis of 2-D to 4-D tensors, a DFL head's bins among them) and all 82 last-axis
    # softmaxes of the corpus: CPU on RK3566, NPU on RK3588. The axis-1 case was called NPU before the sweep measured it
    # (the YOLOv8 DFL's Softmax ran on the CPU in every real-world rk3566 build)
    for axis, shape in ((3, [1, 8, 16, 16]), (1, [1, 8, 16, 16]), (1, [1, 16, 4, 8400]), (1, [1, 2])):
        sm = float_op("Softmax", shape, shape, {"axis": axis})
        assert judge(sm, "rk3588")[0] == "npu"
        v, why = judge(sm, "rk3566")
        assert v == "cpu" and "rk3566.softmax.npu_axes" in why, (axis, shape)


def test_rk3576_runs_more_on_the_npu_and_ceil_average_pooling_on_the_cpu():
    # probe reduce_max_*, sin: CPU on RK3588, NPU on RK3576
    for m in (float_op("ReduceMax", [1, 8, 4, 4], [1, 1, 4, 4], {"axes": [1]}, opset=13), float_op("Sin", [1, 8, 4, 4], [1, 8, 4, 4])):
        assert judge(m, "rk3588")[0] == "cpu" and judge(m, "rk3576") == ("npu", {})
    # probe avgpool2d_ceil: 3x3/2 on 16x16 with ceil_mode (8x8 instead of 7x7) ran on the CPU on RK3576 (torch exports
    # count_include_pad=1; with 0 the partial window runs on the CPU on RK3588 too, sweep case pool-avg-k3s2p0-ceil-cip0)
    pool = {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1}
    ceil = float_op("AveragePool", [1, 8, 16, 16], [1, 8, 8, 8], pool)
    floor = float_op("AveragePool", [1, 8, 17, 17], [1, 8, 8, 8], pool)  # no partial window
    assert judge(ceil, "rk3588")[0] == "npu" and judge(floor, "rk3576")[0] == "npu"
    v, why = judge(ceil, "rk3576")
    assert v == "cpu" and "rk3576.pool.ceil" in why


def test_rv1106_divides_by_a_constant_on_the_npu_and_keeps_reducel2_on_the_cpu():
    # int8 corpus builds (docs/calibration/rv1106-int8-op17.json): every Div by a constant ran on the NPU; ReduceL2 is
    # one of RV1106's CPU kernels (R-PDF §4.1), where RK3588 ran it on the NPU
    import numpy as np
    from onnx import numpy_helper

    div_c = float_op("Div", [1, 8, 4, 4], [1, 8, 4, 4], inits=[numpy_helper.from_array(np.full((1,), 2.0, np.float32), "c")])
    assert judge(div_c, "rv1106") == ("npu", {})
    l2 = float_op("ReduceL2", [1, 8, 4, 4], [1, 1, 4, 4], {"axes": [1]})
    assert judge(l2, "rk3588")[0] == "npu" and judge(l2, "rv1106")[0] == "cpu"
