"""Ethos-U placement of ONNX nodes as npufit's converter writes them (CAL-V records): a float body behind integer
token ids is judged as its int8 conversion, an attention-mask Add becomes SELECT_V2 (CPU on the U55, NPU on the U85),
a padded patchify conv whose unread tail the converter cuts off runs on the NPU."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from .target_cases import judge


def _text_encoder_block():
    """int64 ids -> embedding Gather -> MatMul scores; mask = Where(ids == 0, -1e38, 0); scores + mask -> Softmax."""
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "table")
    w = numpy_helper.from_array(rng.standard_normal((8, 6)).astype(np.float32), "w")
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    fill = numpy_helper.from_array(np.array(-3.4e38, np.float32), "fill")
    keep = numpy_helper.from_array(np.array(0.0, np.float32), "keep")
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed"),
        helper.make_node("MatMul", ["emb", "w"], ["scores"], name="proj"),
        helper.make_node("Relu", ["scores"], ["act"], name="relu"),
        helper.make_node("Equal", ["ids", "zero"], ["pad"], name="is_pad"),
        helper.make_node("Unsqueeze", ["pad", "axis"], ["pad3"], name="unsq"),
        helper.make_node("Where", ["pad3", "fill", "keep"], ["mask"], name="mask"),
        helper.make_node("Add", ["act", "mask"], ["masked"], name="op"),
        helper.make_node("Softmax", ["masked"], ["y"], name="softmax", axis=-1),
    ]
    axis = numpy_helper.from_array(np.array([-1], np.int64), "axis")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 6])], [table, w, zero, fill, keep, axis])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_float_body_behind_token_ids_is_judged_as_its_int8_conversion():
    m = _text_encoder_block()
    # before: int64 inputs made it "not a float model", so every float op failed the int8 feature-map rule
    assert judge(m, "ethos-u85-256", node="relu") == ("npu", {})
    v, reasons = judge(m, "ethos-u55-256", node="relu")
    assert v == "npu", reasons
    assert judge(m, "ethos-u55-256", node="relu", mode="float")[0] == "cpu"  # --judge float still judges the float graph


def test_an_attention_mask_add_runs_where_select_v2_does():
    m = _text_encoder_block()
    v, reasons = judge(m, "ethos-u55-256")
    assert v == "cpu" and "SELECT_V2" in reasons["ethos-u55-256.add.mask_select"], reasons
    assert judge(m, "ethos-u85-256")[0] == "npu"  # SELECT_V2 is in the U85's list


def _patchify(pads, hw=(36, 28), k=8):
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, k, k)).astype(np.float32), "w")
    oh = (hw[0] + pads[0] + pads[2] - k) // k + 1
    ow = (hw[1] + pads[1] + pads[3] - k) // k + 1
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="op", kernel_shape=[k, k], strides=[k, k], pads=pads)],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, *hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, oh, ow])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_padded_patchify_conv_with_an_unread_tail_runs_on_the_u55():
    # 36 + 2 + 2 = 40 rows for 5 outputs of stride 8: exactly read, SAME-like -> the stride rules still apply
    exact = _patchify([2, 2, 2, 2])
    assert judge(exact, "ethos-u55-256")[0] != "npu"
    # 36 + 1 + 1 = 38 rows for 4 outputs: the converter cuts the 6 unread rows (vitpose's patch embedding, CAL-V)
    tail = _patchify([1, 1, 1, 1])
    assert judge(tail, "ethos-u55-256") == ("npu", {})


def _size_decided_if(tmp_path):
    """If (width == 4) Flatten(x) else Flatten(x, axis=2), then Relu: exporters trace size branches like this."""
    then_g = helper.make_graph([helper.make_node("Flatten", ["x"], ["a"], axis=1)], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Flatten", ["x"], ["b"], axis=2)], "else", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    idx = numpy_helper.from_array(np.array(3, np.int64), "idx")
    four = numpy_helper.from_array(np.array(4, np.int64), "four")
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "idx"], ["width"], name="width"),
             helper.make_node("Equal", ["width", "four"], ["cond"], name="cond"),
             helper.make_node("If", ["cond"], ["flat"], name="branch", then_branch=then_g, else_branch=else_g),
             helper.make_node("Relu", ["flat"], ["y"], name="op")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [idx, four])
    p = tmp_path / "if.onnx"
    p.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return p


def test_a_size_decided_if_is_judged_as_the_branch_the_converter_inlines(tmp_path):
    from npufit import check
    from npufit.graph import load

    p = _size_decided_if(tmp_path)
    before = p.read_bytes()
    g = load(p)
    assert g.node("op").output_shape(0) == (1, 48)  # the taken branch's shape, not ONNX's merge of both branches
    r = check(g, "ethos-u55-256", measure="never")
    assert r.node("branch").verdict.value == "npu"  # inlined by the converter (CAL-V: vitdet)
    assert p.read_bytes() == before


def _one(op_type, shape, out_shape, extra=(), **attrs):
    """x -> Relu -> `op_type` -> y: one op of a float model, its input computed."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node(op_type, ["r", *extra], ["y"], name="op", **attrs)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_mean_over_tokens_with_no_unit_axis_is_judged_in_the_converters_rows_form():
    # [4, 16, 16] over the features: the converter's [64, 1, 16] MEAN runs (the rank-3 view had no size-1 axis)
    assert judge(_one("ReduceMean", [4, 16, 16], [4, 16, 1], axes=[2]), "ethos-u55-256")[0] == "npu"
    v, why = judge(_one("ReduceMean", [2, 2, 4608], [2, 2, 1], axes=[2]), "ethos-u55-256")
    assert v == "cpu" and "4608" in why["ethos-u55-256.mean.limits"], why  # the rows form keeps Vela's depth limit


def test_a_pool_over_the_whole_map_is_the_converters_global_pool():
    # EfficientNet's AvgPool2d(C, ceil_mode=True): a 320x320 kernel is past Vela's pool limit, the converter's MEAN is not
    kw = dict(kernel_shape=[320, 320], strides=[320, 320], ceil_mode=1)
    assert judge(_one("AveragePool", [1, 16, 10, 10], [1, 16, 1, 1], **kw), "ethos-u55-256")[0] == "npu"
    assert judge(_one("MaxPool", [1, 16, 10, 10], [1, 16, 1, 1], **kw), "ethos-u85-256")[0] == "npu"  # a 10x10 kernel
    v, why = judge(_one("AveragePool", [1, 16, 12, 12], [1, 16, 12, 12], kernel_shape=[9, 9], pads=[4] * 4,
                        count_include_pad=0), "ethos-u55-256")
    assert v == "cpu" and "ethos-u55-256.avgpool.kernel" in why, why


def test_an_isnan_guard_of_int8_values_is_no_op():
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("Softmax", ["x"], ["s"], name="softmax", axis=1), helper.make_node("IsNaN", ["s"], ["nan"], name="isnan"),
             helper.make_node("Where", ["nan", "zero", "s"], ["y"], name="op")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])], [zero])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    for t in ("ethos-u55-256", "ethos-u85-256"):
        assert judge(m, t)[0] == "folded" and judge(m, t, node="isnan")[0] == "folded"
