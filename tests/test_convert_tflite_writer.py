"""The TFLite writer's files are real TFLite: the LiteRT interpreter loads and runs them."""
import numpy as np
import pytest

from npufit.convert.tflite_writer import TFLiteBuilder

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install ai-edge-litert)")


def _run(data, feed):
    it = litert.Interpreter(model_content=data)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], feed)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]), it


def test_int8_fully_connected_matches_reference_math():
    rng = np.random.default_rng(1)
    wq = rng.integers(-127, 127, (4, 6)).astype(np.int8)
    b = TFLiteBuilder()
    x = b.tensor("x", (1, 6), "int8", scale=0.1, zero_point=0)
    w = b.tensor("w", (4, 6), "int8", data=wq, scale=0.01)
    bias = b.tensor("b", (4,), "int32", data=np.array([10, -10, 0, 5]), scale=0.001)
    y = b.tensor("fc", (1, 4), "int8", scale=0.5, zero_point=3)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], "FullyConnectedOptions", fused_activation_function="NONE")
    b.io([x], [y])
    xq = rng.integers(-50, 50, (1, 6)).astype(np.int8)
    got, it = _run(b.build(), xq)
    real = (xq.astype(np.int64) @ wq.T.astype(np.int64) + np.array([10, -10, 0, 5])) * 0.001
    want = np.clip(np.round(real / 0.5) + 3, -128, 127)
    assert np.abs(got.astype(int) - want).max() <= 1
    det = it.get_output_details()[0]
    assert det["name"] == "fc" and det["quantization"] == (0.5, 3)


def test_reshape_with_options_vector():
    b = TFLiteBuilder()
    x = b.tensor("x", (1, 2, 3, 4), "int8", scale=1.0)
    s = b.tensor("shape", (2,), "int32", data=np.array([1, 24]))
    y = b.tensor("y", (1, 24), "int8", scale=1.0)
    b.op("RESHAPE", [x, s], [y], "ReshapeOptions", new_shape=[1, 24])
    b.io([x], [y])
    feed = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    got, _ = _run(b.build(), feed)
    assert got.shape == (1, 24) and (got.ravel() == feed.ravel()).all()
