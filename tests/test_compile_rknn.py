"""RKNN-Toolkit2 (real, in its own env) on a small ONNX CNN with a known CPU-fallback op (Erf on rk3588)."""
import hashlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.compilers import compile_model
from npufit.compilers.rknn import _suggested_rules, parse_layer_table, parse_rewrites
from npufit.envs import env_status

needs_rknn = pytest.mark.skipif(not env_status("rknn")["installed"],
                                reason="RKNN-Toolkit2 env missing: run 'npufit env install rknn' (~1 min, ~1.4 GB)")


def _cnn(path):
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.3, "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
             helper.make_node("Erf", ["r1"], ["e1"], "erf1"),  # no RK3588 NPU kernel: CPU fallback
             helper.make_node("Conv", ["e1", "w2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c2"], ["y"], "gap")]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


@needs_rknn
def test_rknn_places_erf_on_cpu_and_simulator_matches(tmp_path):
    m = _cnn(tmp_path / "cnn.onnx")
    before = hashlib.sha256(m.read_bytes()).hexdigest()
    r = compile_model(m, "rk3588", out_dir=tmp_path / "out", compare_prediction=True)
    assert r.ok, r.error
    dev = {p.node: p.device for p in r.placement}
    assert dev == {"conv1": "npu", "relu1": "npu", "erf1": "cpu", "conv2": "npu", "gap": "npu"}
    how = {p.node: p.how for p in r.placement}
    assert how["relu1"] == "fused" and how["erf1"] == "direct"  # Relu fused into ConvRelu
    assert r.metrics["simulator_min_cosine"] >= 0.99 and r.metrics["float_dtype"] == "float16"
    assert r.artifact.endswith("cnn.rknn") and (tmp_path / "out" / "cnn.rknn").stat().st_size > 0
    assert r.compiler_version == "2.5.0" and r.peak_rss_mb > 50 and r.wall_s > 0
    assert "Network Layer Information Table" in r.log_text
    assert hashlib.sha256(m.read_bytes()).hexdigest() == before
    c = r.comparison.scores()
    assert c["compiler_cpu_nodes"] == 1 and c["cpu_fallback_recall"] == 1.0
    assert r.metrics["cpu_layers"] == 1 == r.summary()["cpu"]  # the table's CPU layers are the placed nodes' own
    assert r.to_dict()["comparison"]["schema"] == "npufit.compile.compare/1"


LOG = """D fuse_ops results:
D     convert_reducemean_to_einsum: remove node = ['/ReduceMean'], add node = ['/x_gavg', '/x_gavg_rs']
D     convert_global_avgpool_to_conv: remove node = ['/x_gavg'], add node = ['/x_gavg_2conv0']
D RKNN: [14:59:20.464]                          Network Layer Information Table
D RKNN: [14:59:20.464] ----------------------------------------------------------
D RKNN: [14:59:20.464] ID   OpType             DataType Target InputShape      OutputShape   Cycles(DDR/NPU/Total)    RW(KB)       FullName
D RKNN: [14:59:20.464] ----------------------------------------------------------
D RKNN: [14:59:20.464] 0    InputOperator      FLOAT16  CPU    \\               (1,3,16,16)   0/0/0                    0            InputOperator:x
D RKNN: [14:59:20.464] 1    Erf                FLOAT16  CPU    (1,8,16,16)     (1,8,16,16)   0/0/0                    4            Erf:/Erf
D RKNN: [14:59:20.464] 2    Conv               FLOAT16  NPU    (1,8,16,16)     (1,8,3,3)     218/784/784              4            Conv:/x_gavg_2conv0
D RKNN: [14:59:20.464] ----------------------------------------------------------
W You can add disable_rules=['convert_identity_to_reshape'] in rknn.config() to temporarily disable the error rule!
"""


# rk3576's table has a SparseRatio column, blank for these layers (rknn-toolkit2 2.5.0, target_platform rk3576)
LOG_RK3576 = """D RKNN: [13:03:49.101]                      Network Layer Information Table
D RKNN: [13:03:49.101] --------------------------------------------------------------------------------------------
D RKNN: [13:03:49.101] ID   OpType             DataType Target InputShape          OutputShape            Cycles(DDR/NPU/Total)    SparseRatio  RW(KB)       FullName
D RKNN: [13:03:49.101] --------------------------------------------------------------------------------------------
D RKNN: [13:03:49.101] 0    InputOperator      FLOAT16  CPU    \\                   (1,8,16,16)            0/0/0                                 0            InputOperator:x
D RKNN: [13:03:49.101] 1    Erf                FLOAT16  CPU    (1,8,16,16)         (1,8,16,16)            0/0/0                                 4            Erf:/Erf
D RKNN: [13:03:49.101] 2    Conv               FLOAT16  NPU    (1,8,16,16)         (1,8,16,16)            120/512/512              0.25         4            Conv:/conv
D RKNN: [13:03:49.101] --------------------------------------------------------------------------------------------
"""


def test_log_parsers_read_the_toolkit_formats():
    layers = parse_layer_table(LOG)
    assert [(x.name, x.op, x.device) for x in layers] == [("/Erf", "Erf", "cpu"), ("/x_gavg_2conv0", "Conv", "npu")]
    rk3576 = parse_layer_table(LOG_RK3576)
    assert [(x.name, x.op, x.device) for x in rk3576] == [("/Erf", "Erf", "cpu"), ("/conv", "Conv", "npu")]
    assert parse_rewrites(LOG)[1] == (["/x_gavg"], ["/x_gavg_2conv0"])
    assert _suggested_rules(LOG) == ["convert_identity_to_reshape"]


needs_rknn_tflite = pytest.mark.skipif(
    "tflite" not in env_status("rknn")["extras"],
    reason="the RKNN env has no TensorFlow for TFLite models: npufit env install rknn --extra tflite (~1.1 GB)",
)


def _int8_tflite(path):
    """conv+relu -> 3x3 SAME average pool (RKNN-Toolkit2 2.5.0: CPU) -> NCHW transpose -> softmax."""
    from npufit.convert.tflite_writer import TFLiteBuilder

    from .tflite_models import conv_stem

    b = TFLiteBuilder()
    x, y = conv_stem(b)
    q = b.tensor("avg", (1, 16, 16, 8), "int8", scale=0.05, zero_point=-128)
    b.op("AVERAGE_POOL_2D", [y], [q], "Pool2DOptions", padding="SAME", stride_w=1, stride_h=1, filter_width=3,
         filter_height=3)
    perm = b.tensor("perm", (4,), "int32", data=np.array([0, 3, 1, 2]))
    t = b.tensor("nchw", (1, 8, 16, 16), "int8", scale=0.05, zero_point=-128)
    b.op("TRANSPOSE", [q, perm], [t], "TransposeOptions")
    e = b.tensor("sm", (1, 8, 16, 16), "int8", scale=1 / 256, zero_point=-128)
    b.op("SOFTMAX", [t], [e], "SoftmaxOptions", beta=1.0)
    b.io([x], [e])
    path.write_bytes(b.build())
    return path


@needs_rknn_tflite
def test_rknn_compiles_a_tflite_model_and_check_reads_the_same_placement(tmp_path):
    from npufit import check

    m = _int8_tflite(tmp_path / "m.tflite")
    r = compile_model(m, "rk3588", out_dir=tmp_path / "out")
    assert r.ok, r.error
    dev = {p.op: p.device for p in r.placement}
    assert dev == {"CONV_2D": "npu", "AVERAGE_POOL_2D": "cpu", "TRANSPOSE": "npu", "SOFTMAX": "npu"}
    assert {p.op: p.layers for p in r.placement}["CONV_2D"] == ["conv1_prequant"]  # named after its output tensor
    assert r.metrics["cpu_layers"] == 1 == r.summary()["cpu"]
    rep = check(m, "rk3588")
    assert rep.extra["placement"]["headline"].startswith("placement measured by RKNN-Toolkit2 2.5.0")
    assert rep.counts == {"npu": 3, "cpu": 1, "unsupported": 0, "folded": 0}


def test_rknn_tflite_without_tensorflow_says_how_to_add_it(tmp_path, monkeypatch):
    """An env without the tflite extra: compile refuses in one line, check shows the prediction and says why."""
    import json

    from npufit import check
    from npufit.envs import env_dir

    if not env_status("rknn")["installed"]:
        pytest.skip("RKNN-Toolkit2 env missing: run 'npufit env install rknn'")
    # a copy of the env's manifest without extras, in a folder of envs of its own (the env itself is not touched)
    root = tmp_path / "envs"
    (root / "rknn").mkdir(parents=True)
    man = json.loads((env_dir("rknn") / "npufit-env.json").read_text())
    man["extras"] = []
    (root / "rknn" / "npufit-env.json").write_text(json.dumps(man))
    (root / "rknn" / "bin").mkdir()
    (root / "rknn" / "bin" / "python").symlink_to(env_dir("rknn") / "bin" / "python")
    monkeypatch.setenv("NPUFIT_ENVS", str(root))
    m = _int8_tflite(tmp_path / "m.tflite")
    from npufit.errors import NpufitError

    with pytest.raises(NpufitError, match="npufit env install rknn --extra tflite"):
        compile_model(m, "rk3588", out_dir=tmp_path / "out")
    rep = check(m, "rk3588")
    pl = rep.extra["placement"]
    assert pl["source"] == "predicted" and "--extra tflite" in pl["headline"]
