"""What `compile` and `fix` print: a one-line verdict first, one unit per figure, no NaN, no third-party log lines,
no element-wise relative error on values near zero, no raw converter messages."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.convert.tflite_writer import TFLiteBuilder

from .hint_models import float_conv_model


def _float_tflite(path, blocks: int = 12):
    """A float32 TFLite: CONV_2D + RELU blocks, every operator off an int8-only NPU."""
    b = TFLiteBuilder()
    rng = np.random.default_rng(0)
    x = cur = b.tensor("input", (1, 16, 16, 8), "float32")
    for i in range(blocks):
        w = b.tensor(f"w{i}", (8, 3, 3, 8), "float32", data=rng.standard_normal((8, 3, 3, 8)).astype(np.float32))
        bias = b.tensor(f"b{i}", (8,), "float32", data=np.zeros(8, np.float32))
        y = b.tensor(f"conv{i}", (1, 16, 16, 8), "float32")
        b.op("CONV_2D", [cur, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
             fused_activation_function="NONE", dilation_w_factor=1, dilation_h_factor=1)
        cur = b.tensor(f"relu{i}", (1, 16, 16, 8), "float32")
        b.op("RELU", [y], [cur])
    b.io([x], [cur])
    path.write_bytes(b.build())
    return path


def test_compile_of_a_float_tflite_for_an_int8_only_npu_says_so_in_its_first_line(tmp_path):
    m = _float_tflite(tmp_path / "float.tflite")
    r = npufit.compile(m, "ethos-u55-256", out_dir=tmp_path / "out")
    text = r.render("table")
    lines = text.splitlines()
    assert lines[0].startswith("float model: 0% of operators on the NPU of ethos-u55-256") and "int8" in lines[0]
    assert r.summary()["cpu"] == 24
    cpu = lines[lines.index(next(x for x in lines if x.startswith("CPU placement"))) + 1 :]
    assert len(cpu) == 2 and cpu[0].startswith("  CONV_2D ×12") and cpu[1].startswith("  RELU ×12"), cpu
    assert len(r.render("table", all_nodes=True).splitlines()) > 24  # every node on request
    assert "nan" not in text.lower().replace("nanny", "")
    assert "inference_time_s" not in text and "inference_time_ms" in text
    assert r.verdict == lines[0] and r.to_dict()["verdict"] == lines[0]


def test_compile_prints_figures_once_and_without_third_party_lines(tmp_path):
    m = float_conv_model(tmp_path / "conv.onnx")
    p = subprocess.run(
        [sys.executable, "-m", "npufit", "compile", str(m), "-t", "ethos-u55-256", "--out-dir", str(tmp_path / "o"),
         "--calibration", "random"],
        capture_output=True, text=True,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.splitlines()[0].startswith("conv.onnx on ethos-u55-256: 100% of running nodes on the NPU")
    assert "inference_time_s" not in out and out.count("inference_time_ms") == 1
    assert "nan" not in out and "INFO:" not in p.stderr + out
    ips = next(x for x in out.splitlines() if "inferences_per_second" in x)
    assert "e+" not in ips  # 252,016, not 2.52e+05


def _opset17_mul_resize(path):
    """x -> Mul -> Resize at opset 17: ONNX's version converter has no Mul adapter below opset 14, and Resize-13's
    inputs are not valid at opset 11, so opset_convert cannot reach Hailo's opset 11."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])
    nodes = [helper.make_node("Mul", ["x", "s"], ["m"], "mul"),
             helper.make_node("Resize", ["m", "", "sc"], ["y"], "resize", mode="nearest")]
    inits = [numpy_helper.from_array(np.full((1,), 2.0, np.float32), "s"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]
    m = helper.make_model(helper.make_graph(nodes, "r", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def test_fix_prints_a_verdict_first_and_no_raw_converter_message(tmp_path):
    m = _opset17_mul_resize(tmp_path / "mulresize.onnx")
    r = npufit.fix(m, "hailo8", output=tmp_path / "mulresize.fixed.onnx")
    text = r.render("table")
    lines = text.splitlines()
    assert lines[0] == f"npufit fix {m} --target hailo8"
    assert lines[1].startswith("wrote ") and "coverage" in lines[1]
    (conv,) = [o for o in r.rules if o.name == "opset_convert"]
    assert conv.status == "not applicable" and "cannot take Mul from opset 14 down" in conv.reason
    assert "No Adapter" not in text and "$1" not in text and "Bad node spec" not in text
    assert "max rel diff" not in text  # the element-wise relative error is no figure to read


def test_fix_shows_relative_error_against_the_output_range_only(tmp_path):
    """An exact rewrite on outputs near zero: the element-wise relative difference explodes (JSON keeps it), the
    printed figure is the difference against the largest output value."""
    from npufit.rewrite.result import verification_text

    v = {"samples": 3, "seed": 0, "max_abs": 2.9e-8, "max_rel": 2.38e5, "max_abs_of_range": 3.1e-7, "tolerance": "t"}
    line = verification_text(v)
    assert "2.90e-08" in line and "3.1e-07 of the largest output value" in line and "2.38e+05" not in line
    assert "of the largest" not in verification_text({**v, "max_abs_of_range": 0.0})
    assert "nan" not in verification_text({**v, "max_abs_of_range": float("nan")})
