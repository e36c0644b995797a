"""`fix --input-shape` writes the shapes it judged (users expect onnxsim's --overwrite-input-shape)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npufit.cli import main


def test_fixed_model_keeps_the_pinned_input_shape(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32) * 0.1, "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1] * 4),
                           helper.make_node("Relu", ["c"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h", "w"])], [w])
    src = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    before = src.read_bytes()
    out = tmp_path / "fixed.onnx"
    rc = main(["fix", str(src), "-t", "hailo8", "-o", str(out), "--input-shape", "x=1,3,32,48"])
    text = capsys.readouterr().out
    assert rc == 0
    dims = [d.dim_value for d in onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 32, 48]
    assert "input shapes pinned in the fixed model: x=1,3,32,48" in text
    assert src.read_bytes() == before
