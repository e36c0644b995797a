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


def streaming_wakeword(b: TFLiteBuilder):
    """A streaming keyword spotter's shape, as TensorFlow's converter writes it (the micro-wakeword models): two
    subgraphs, the main one calling the second once (CALL_ONCE) to zero the resource variables that hold the
    previous frames; per stream layer the main graph reads its state, concatenates the new frame, writes back the
    tail (ASSIGN_VARIABLE, no output) and convolves. Vela keeps the variable ops on the CPU and runs the rest inside
    one `ethos-u` operator. Returns (input, output); 7 of the main graph's 16 operators run on the CPU."""
    rng = np.random.default_rng(1)
    q = dict(scale=0.05, zero_point=-128)
    init = b.subgraph("init")
    b.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=1)
    x = b.tensor("input_audio", (1, 1, 1, 8), "int8", scale=0.02, zero_point=0)
    cur, ch = x, 8
    for k, width in enumerate((3, 3)):
        # the initialiser: the state starts at zero
        h0 = init.tensor(f"stream_{k}/states", (), "resource")
        init.op("VAR_HANDLE", [], [h0], "VarHandleOptions")
        z = init.tensor(f"stream_{k}/zeros", (1, width - 1, 1, ch), "int8", data=np.zeros((1, width - 1, 1, ch)), **q)
        init.op("ASSIGN_VARIABLE", [h0, z], [])
        h = b.tensor(f"stream_{k}/states", (), "resource")
        b.op("VAR_HANDLE", [], [h], "VarHandleOptions")
        st = b.tensor(f"stream_{k}/read", (1, width - 1, 1, ch), "int8", **q)
        b.op("READ_VARIABLE", [h], [st])
        cat = b.tensor(f"stream_{k}/concat", (1, width, 1, ch), "int8", **q)
        b.op("CONCATENATION", [st, cur], [cat], "ConcatenationOptions", axis=1, fused_activation_function="NONE")
        begin = b.tensor(f"stream_{k}/begin", (4,), "int32", data=np.array([0, 1, 0, 0]))
        end = b.tensor(f"stream_{k}/end", (4,), "int32", data=np.array([1, width, 1, ch]))
        strides = b.tensor(f"stream_{k}/strides", (4,), "int32", data=np.array([1, 1, 1, 1]))
        tail = b.tensor(f"stream_{k}/tail", (1, width - 1, 1, ch), "int8", **q)
        b.op("STRIDED_SLICE", [cat, begin, end, strides], [tail], "StridedSliceOptions")
        b.op("ASSIGN_VARIABLE", [h, tail], [])
        w = b.tensor(f"conv{k}/w", (ch, width, 1, ch), "int8", data=rng.integers(-60, 60, (ch, width, 1, ch)),
                     scale=[0.01] * ch, axis=0)
        bias = b.tensor(f"conv{k}/b", (ch,), "int32", data=np.zeros(ch), scale=[0.0005] * ch)
        y = b.tensor(f"conv{k}", (1, 1, 1, ch), "int8", **q)
        b.op("CONV_2D", [cat, w, bias], [y], "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1,
             fused_activation_function="RELU", dilation_w_factor=1, dilation_h_factor=1)
        cur = y
    flat_shape = b.tensor("flat/shape", (2,), "int32", data=np.array([1, ch]))
    flat = b.tensor("flat", (1, ch), "int8", **q)
    b.op("RESHAPE", [cur, flat_shape], [flat], "ReshapeOptions")
    fw = b.tensor("fc/w", (1, ch), "int8", data=rng.integers(-60, 60, (1, ch)), scale=0.01)
    fb = b.tensor("fc/b", (1,), "int32", data=np.zeros(1), scale=0.0005)
    logit = b.tensor("logit", (1, 1), "int8", scale=0.1, zero_point=0)
    b.op("FULLY_CONNECTED", [flat, fw, fb], [logit], "FullyConnectedOptions", fused_activation_function="NONE")
    prob = b.tensor("probability", (1, 1), "int8", scale=1 / 256, zero_point=-128)
    b.op("LOGISTIC", [logit], [prob])
    return x, prob


def conv1x1(b: TFLiteBuilder, x: int, cin: int, cout: int, name: str, hw: int, in_scale: float = 0.05, seed: int = 0):
    """int8 3x3 SAME CONV_2D + RELU, [1,hw,hw,cin] -> [1,hw,hw,cout] (bias scale = input scale x weight scale)."""
    rng = np.random.default_rng(seed)
    w = b.tensor(f"{name}/w", (cout, 3, 3, cin), "int8", data=rng.integers(-60, 60, (cout, 3, 3, cin)),
                 scale=[0.01] * cout, axis=0)
    bias = b.tensor(f"{name}/b", (cout,), "int32", data=np.zeros(cout), scale=[in_scale * 0.01] * cout)
    y = b.tensor(name, (1, hw, hw, cout), "int8", scale=0.05, zero_point=-128)
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU", dilation_w_factor=1, dilation_h_factor=1)
    return y


def c2f_block(b: TFLiteBuilder, residual_reshape: bool = False):
    """YOLOv8's C2f block as TensorFlow's converter writes it: conv -> SPLIT in two halves; the second half feeds a
    bottleneck conv, the residual ADD and the CONCATENATION (a, b, a + m(b)) -> conv. With residual_reshape, the
    half also feeds a RESHAPE -> FULLY_CONNECTED head. Returns (input, outputs)."""
    rng = np.random.default_rng(2)
    x = b.tensor("input", (1, 8, 8, 4), "int8", scale=0.02, zero_point=0)
    c = conv1x1(b, x, 4, 8, "cv1", 8, in_scale=0.02)
    ax = b.tensor("split/axis", (), "int32", data=np.array(3))
    a1 = b.tensor("split/a", (1, 8, 8, 4), "int8", scale=0.05, zero_point=-128)
    a2 = b.tensor("split/b", (1, 8, 8, 4), "int8", scale=0.05, zero_point=-128)
    b.op("SPLIT", [ax, c], [a1, a2], "SplitOptions", num_splits=2)
    m = conv1x1(b, a2, 4, 4, "m", 8, seed=1)
    r = b.tensor("m/add", (1, 8, 8, 4), "int8", scale=0.1, zero_point=-128)
    b.op("ADD", [a2, m], [r], "AddOptions", fused_activation_function="NONE")
    outs = []
    if residual_reshape:
        shape = b.tensor("head/shape", (2,), "int32", data=np.array([1, 256]))
        flat = b.tensor("head/flat", (1, 256), "int8", scale=0.05, zero_point=-128)
        b.op("RESHAPE", [a2, shape], [flat], "ReshapeOptions")
        fw = b.tensor("head/w", (8, 256), "int8", data=rng.integers(-60, 60, (8, 256)), scale=0.01)
        fb = b.tensor("head/b", (8,), "int32", data=np.zeros(8), scale=0.05 * 0.01)
        fc = b.tensor("head", (1, 8), "int8", scale=0.1, zero_point=0)
        b.op("FULLY_CONNECTED", [flat, fw, fb], [fc], "FullyConnectedOptions", fused_activation_function="NONE")
        outs.append(fc)
    cat = b.tensor("cat", (1, 8, 8, 12), "int8", scale=0.1, zero_point=-128)
    b.op("CONCATENATION", [a1, a2, r], [cat], "ConcatenationOptions", axis=3, fused_activation_function="NONE")
    outs.insert(0, conv1x1(b, cat, 12, 4, "cv2", 8, in_scale=0.1, seed=3))
    return x, outs


def split_fanout(b: TFLiteBuilder, bad_bias: bool = False):
    """A SPLIT whose two parts each feed an ADD and a CONCATENATION (and one part a conv), then a pool, a conv and a
    RESHAPE: the fan-out of YOLO-style split/concat blocks. With bad_bias, the conv on the split part has a bias
    scale that is not input scale x weight scale, which the Ethos-N support library refuses only when the
    operation is added to its network. Returns (input, outputs)."""
    q = dict(scale=0.02, zero_point=0)
    x = b.tensor("input", (1, 8, 8, 4), "int8", **q)
    ax = b.tensor("split/axis", (), "int32", data=np.array(3))
    sa = b.tensor("split/a", (1, 8, 8, 2), "int8", **q)
    sb = b.tensor("split/b", (1, 8, 8, 2), "int8", **q)
    b.op("SPLIT", [ax, x], [sa, sb], "SplitOptions", num_splits=2)
    a2 = b.tensor("add2", (1, 8, 8, 2), "int8", scale=0.05, zero_point=0)
    b.op("ADD", [sb, sa], [a2], "AddOptions", fused_activation_function="NONE")
    c3 = conv1x1(b, sb, 2, 4, "c3", 8, in_scale=0.008 if bad_bias else 0.02, seed=1)
    cat = b.tensor("cat4", (1, 8, 8, 4), "int8", **q)
    b.op("CONCATENATION", [sa, sb], [cat], "ConcatenationOptions", axis=3, fused_activation_function="NONE")
    a5 = b.tensor("add5", (1, 8, 8, 2), "int8", scale=0.1, zero_point=0)
    b.op("ADD", [a2, a2], [a5], "AddOptions", fused_activation_function="NONE")
    c6 = conv1x1(b, c3, 4, 4, "c6", 8, seed=2)
    p7 = b.tensor("p7", (1, 8, 8, 2), "int8", scale=0.1, zero_point=0)
    b.op("AVERAGE_POOL_2D", [a5], [p7], "Pool2DOptions", padding="SAME", stride_w=1, stride_h=1, filter_width=3,
         filter_height=3)
    c8 = conv1x1(b, a5, 2, 4, "c8", 8, in_scale=0.1, seed=3)
    shape = b.tensor("r9/shape", (4,), "int32", data=np.array([1, 16, 4, 4]))
    r9 = b.tensor("r9", (1, 16, 4, 4), "int8", scale=0.05, zero_point=-128)
    b.op("RESHAPE", [c8, shape], [r9], "ReshapeOptions")
    return x, [cat, c6, p7, r9]
