"""One list of what npufit's ONNX -> int8 TFLite converter converts (targets/converter_facts), read by the converter and
by `check` for Ethos-U: the two cannot drift, and a node the converter cannot convert is a converter gap in `check`
(unsupported, with the way out), never `npu`."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.convert import prepass, registry
from npufit.targets import converter_facts as cf
from npufit.targets.ethos_u import converted as euc
from npufit.targets.ethos_u import fitted as fit

from .target_cases import judge


def test_the_converters_tables_are_the_shared_list():
    assert set(registry.OPS) == cf.LOWERED
    assert set(prepass.DECOMPOSE) - {"BatchNormalization"} | set(cf.RNNS) | set(prepass.SHAPED) == cf.DECOMPOSED
    assert not cf.LOWERED & cf.FRONT and not cf.DECOMPOSED & cf.FRONT


def _graph(op: str, attrs=None, n_in: int = 1):
    """x -> Relu -> op -> y: one node `op` of type `op` on a computed 4-D tensor."""
    ins = ["r"] + [f"c{k}" for k in range(1, n_in)]
    inits = [numpy_helper.from_array(np.ones((1, 8, 1, 1), np.float32), f"c{k}") for k in range(1, n_in)]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node(op, ins, ["y"], name="op", **(attrs or {}))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _node(m):
    from npufit.graph.onnx_loader import build_graph

    g = build_graph(m, "t.onnx", {"ai.onnx": 17}, [])
    return g.node("op")


# one op per converted family and ops no lowering exists for (a standard-domain op outside the list, a custom one)
CONVERTED = ["HardSigmoid", "Sum", "Mean", "Softplus", "Mish", "Selu", "Celu", "Softsign", "Sin", "Cos", "ReduceL1",
             "ReduceLogSumExp", "LpNormalization", "Relu", "Elu"]
GAPS = ["LRN", "Hardmax", "Shrink", "Det"]


@pytest.mark.parametrize("op", CONVERTED + GAPS)
def test_check_and_the_converter_agree_on_every_op(op):
    node = _node(_graph(op))
    gap = cf.converter_gap(node)
    assert (gap is None) == (op in cf.CONVERTED), (op, gap)
    key = fit.op_key(node)
    assert (key == euc.GAP) == (op not in cf.CONVERTED), (op, key)


def test_every_listed_op_is_judged_convertible_and_no_other():
    """Over every op type ONNX defines: converter_gap (what `unsupported_nodes` and the Ethos-U op key ask) says
    gap exactly for the ops outside the list (forms aside: a plain node of each op)."""
    from onnx import defs

    for schema in defs.get_all_schemas():
        if schema.domain not in ("", "ai.onnx") or schema.min_input > 1 or schema.min_output > 1:
            continue
        node = _node(_graph(schema.name))
        why = cf.converter_gap(node)
        if schema.name in cf.CONVERTED:
            assert why is None or schema.name in cf.FORMS, (schema.name, why)
        else:
            assert why == f"no lowering for {schema.name}", (schema.name, why)
            assert fit.op_key(node) == euc.GAP, schema.name


def test_a_gap_is_unsupported_in_check_with_the_way_out():
    v, reasons = judge(_graph("LRN", {"size": 3}), "ethos-u55-256")
    assert v == "unsupported", reasons
    assert list(reasons) == ["ethos-u55-256.op.NPUFIT_CONVERTER_GAP"], reasons
    assert reasons[list(reasons)[0]].startswith("converter gap: npufit's ONNX -> int8 TFLite converter cannot convert")
    from npufit.targets import get_profile

    assert any("npufit split" in f for f in get_profile("ethos-u55-256").ops[euc.GAP].fix)
    v85, _ = judge(_graph("LRN", {"size": 3}), "ethos-u85-256")
    assert v85 == "unsupported"


def test_a_form_gap_names_the_form():
    """An LSTM the prepass does not unroll (a non-default activation) is a gap in both, for the same reason."""
    rng = np.random.default_rng(0)
    W, R = rng.standard_normal((1, 32, 4)).astype(np.float32), rng.standard_normal((1, 32, 8)).astype(np.float32)
    nodes = [helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="op", hidden_size=8,
                              activations=["Sigmoid", "Relu", "Tanh"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert "non-default" in cf.converter_gap(_node(m))
    v, reasons = judge(m, "ethos-u55-256")
    assert v == "unsupported" and "non-default" in reasons["ethos-u55-256.converter.form"], reasons
    default = helper.make_model(helper.make_graph(
        [helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="op", hidden_size=8,
                          activations=["Sigmoid", "Tanh", "Tanh"])], "g", list(g.input), list(g.output), list(g.initializer)),
        opset_imports=[helper.make_opsetid("", 17)])
    assert cf.converter_gap(_node(default)) is None  # ONNX's defaults spelt out are unrolled


@pytest.mark.parametrize("op,form", [("HardSigmoid", "affine"), ("Sum", "sum"), ("Softplus", "softplus"),
                                     ("ThresholdedRelu", "threshold")])
def test_check_judges_the_form_the_converter_writes(op, form):
    """Before, check judged Sum as the SUM reduction and HardSigmoid as HARD_SIGMOID (not in Vela's list: CPU), while
    the converter had no lowering for either; now both are what the converter writes."""
    m = _graph(op, n_in=3 if op == "Sum" else 1)
    assert euc.op_key(_node(m)) == euc.FORM + form
    expect = {"u55": "cpu" if form == "threshold" else "npu", "u85": "npu"}
    for t in ("ethos-u55-256", "ethos-u85-256"):
        assert judge(m, t)[0] == expect[t[6:9]], (t, judge(m, t))


def test_gap_message_and_check_name_the_same_nodes(tmp_path):
    """The converter's refusal and check's unsupported nodes are the same set, for a model with two gaps."""
    import npufit
    from npufit.convert import convert
    from npufit.errors import UnsupportedModelError

    m = _graph("LRN", {"size": 3})
    m.graph.node.append(helper.make_node("Hardmax", ["y"], ["z"], name="hm"))
    m.graph.output[0].name = "z"
    path = tmp_path / "gaps.onnx"
    path.write_bytes(m.SerializeToString())
    with pytest.raises(UnsupportedModelError) as e:
        convert(path, tmp_path / "g.tflite", verify=None)
    rep = npufit.check(path, "ethos-u55-256", measure="never")
    unsupported = {n.name for n in rep.nodes if n.verdict.value == "unsupported"}
    assert unsupported == {"op", "hm"}
    assert "LRN 'op'" in str(e.value) and "Hardmax 'hm'" in str(e.value)


def test_check_cli_names_a_node_the_converter_cannot_lower_a_converter_gap(tmp_path):
    """`npufit check --target ethos-u55-256` of an ONNX model with an LRN (no lowering): the node is `unsupported`
    and its reason says "converter gap" (before: the converter's refusal in other words; earlier still: `npu`)."""
    import json
    import os
    import subprocess
    import sys

    path = tmp_path / "lrn.onnx"
    path.write_bytes(_graph("LRN", {"size": 3}).SerializeToString())
    out = subprocess.run([sys.executable, "-m", "npufit", "check", str(path), "--target", "ethos-u55-256", "-f", "json"],
                         capture_output=True, text=True, env=os.environ | {"NO_COLOR": "1"}, timeout=300)
    assert out.returncode == 0, out.stderr
    nodes = {n["name"]: n for n in json.loads(out.stdout)["nodes"]}
    assert nodes["op"]["verdict"] == "unsupported", nodes["op"]
    assert [r["text"][:14] for r in nodes["op"]["reasons"]] == ["converter gap:"], nodes["op"]
    assert nodes["relu"]["verdict"] == "npu", nodes["relu"]
