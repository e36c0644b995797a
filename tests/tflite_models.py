"""Small int8 TFLite graphs written with npufit's own builder, shared by the Vela tests."""
from __future__ import annotations

import numpy as np

from npufit.convert.tflite_writer import TFLiteBuilder


def conv_stem(b: TFLiteBuilder):
    """input [1,16,16,3] -> 3x3 CONV_2D + RELU -> [1,16,16,8]; returns (input, conv output)."""
    rng = np.random.default_rng(0)
    x = b.tensor("input", (1, 16, 16, 3), "int8", scale=0.02, zero_point=0)
    w = b.tensor("conv1/w", (8, 3, 3, 3), "int8", data=rng.integers(-100, 100, (8, 3, 3, 3)), scale=[0.01] * 8, axis=0)
    bias = b.tensor("conv1/b", (8,), "int32", data=np.zeros(8), scale=[0.0002] * 8)
    y = b.tensor("conv1", (1, 16, 16, 8), "int8", scale=0.05, zero_point=-128)
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU", dilation_w_factor=1, dilation_h_factor=1)
    return x, y


def stateful_conv(b: TFLiteBuilder):
    """A streaming model's shape: conv stem + a variable read, added, written back (ASSIGN_VARIABLE has no output)
    and pooled. Returns (input, output)."""
    x, y = conv_stem(b)
    res = b.tensor("state_handle", (), "resource")
    b.op("VAR_HANDLE", [], [res])
    st = b.tensor("state", (1, 16, 16, 8), "int8", scale=0.05, zero_point=-128)
    b.op("READ_VARIABLE", [res], [st])
    z = b.tensor("sum", (1, 16, 16, 8), "int8", scale=0.1, zero_point=-128)
    b.op("ADD", [y, st], [z], "AddOptions", fused_activation_function="NONE")
    b.op("ASSIGN_VARIABLE", [res, z], [])
    q = b.tensor("avg", (1, 16, 16, 8), "int8", scale=0.1, zero_point=-128)
    b.op("AVERAGE_POOL_2D", [z], [q], "Pool2DOptions", padding="SAME", stride_w=1, stride_h=1, filter_width=3,
         filter_height=3)
    return x, q
