import numpy as np
import onnx
from onnx import helper, numpy_helper


def _model(conv_bias=True, const_stats=True):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32), "w")]
    conv_in = ["x", "w"]
    if conv_bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "cb"))
        conv_in.append("cb")
    stats = {"g": rng.uniform(0.5, 2, 6), "b": rng.standard_normal(6), "m": rng.standard_normal(6), "v": rng.uniform(0.1, 3, 6)}
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])]
    for k, v in stats.items():
        if const_stats or k != "m":
            inits.append(numpy_helper.from_array(v.astype(np.float32), k))
        else:
            inputs.append(helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, [6]))
    nodes = [helper.make_node("Conv", conv_in, ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"], epsilon=1e-3)]
    g = helper.make_graph(nodes, "bn", inputs, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 6, 8, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_bn_folds_into_conv(kit):
    for bias in (True, False):
        before = _model(conv_bias=bias)
        after, fired = kit.apply("fold_batchnorm", before)
        assert fired == 1 and kit.ops(after) == ["Conv"]
        kit.assert_same(before, after)


def test_runtime_statistics_do_not_fold(kit):
    before = _model(const_stats=False)
    after, fired = kit.apply("fold_batchnorm", before)
    assert fired == 0 and kit.ops(after) == ["Conv", "BatchNormalization"]
    assert any("not constant" in r for r in kit.refusals("fold_batchnorm", before))
