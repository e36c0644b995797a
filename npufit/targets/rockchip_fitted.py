"""RK3588 conditions fitted to the calibration records (source CAL-R: rknn-toolkit2 2.5.0 builds of the corpus in
benchmarks/calibration, records docs/calibration/rk3588-*.json).

Each condition names the models and families whose records show it and asks `cal.fitted` whether it may be used,
so leave-one-family-out scoring can switch off what only the held-out family showed (see targets/calibration.py)."""
from __future__ import annotations

from . import calibration as cal, common

# Rank 5 on the NPU: every 5-D op whose data came from another op (not straight from a model input) ran there, in three
# families: yolov5_anchor's anchor decode on [1, 3, 17, 17, 9] (Sigmoid, Slice, Pow, Mul, Concat on axis 4; detector),
# hiera's 5-D attention (Mul, MatMul, Softmax; transformer), wavlm's gated relative position bias (ReduceSum; audio-rnn). A 5-D model input stays on the CPU
# (PROBE-R slice_axis4_5d: axes 2-4), and so does rank 6 (RKNN-C: RT-DETR's 6-D Mul).
RANK5_FAMILIES = ("detector", "transformer", "audio-rnn")


def rank5_from_npu(node, r: int, lim) -> bool:
    """A rank-5 op that reads no model input directly (the corpus's 5-D tensors all came from NPU ops)."""
    if r != 5 or not cal.fitted(lim, RANK5_FAMILIES):
        return False
    return not any(t in node.graph.input_names for t in node.inputs if t)


def _split_outermost(node, r: int) -> bool:
    """(hiera, transformer): a 6-D Split of q/k/v along its outermost axis of size > 1 ran on the NPU."""
    x = node.input_shape(0)
    if not x or not all(isinstance(d, int) for d in x):
        return False
    a = common.norm_axis(int(node.attr("axis", 0)), r)
    return all(d == 1 for d in x[:a])


def rank_exempt(node, r: int, lim) -> bool:
    """Ops that ran on the NPU above rank 4 (the profile's other exemptions are in rockchip._rank_exempt)."""
    if node.op_type == "Transpose":
        # swinv2, swin2sr, hiera (transformer): 6-D window-partition transposes that keep the innermost axis of size > 1
        # in place ran on the NPU; PROBE-R: pixel_unshuffle's, which moves it, and hiera's with six axes > 1, on the CPU
        t = cal.transpose_keeps_innermost(node.input_shape(0), common.transpose_perm(node))
        return t is not None and t[0] <= 5 and t[1] and cal.fitted(lim, ("transformer",))
    if rank5_from_npu(node, r, lim):
        return True
    return node.op_type == "Split" and _split_outermost(node, r) and cal.fitted(lim, ("transformer",))


def softmax_last_axis(node, r, a: int, lim) -> bool:
    """A softmax over the last axis of a tensor with at most 4 axes of size > 1 ran on the NPU: hiera's 5-D attention
    and siglip_vision's [2, 1, 64] pooling head (transformer; the toolkit drops size-1 axes), table_transformer's plain
    3-D [2, 4, 4] / [2, 20, 4] attention (detector)."""
    x = node.input_shape(0)
    u = cal.nonunit(x)
    if not r or a != r - 1 or u is None or len(u) > 4:
        return False
    return cal.fitted(lim, ("transformer", "detector"))


def positive_steps(steps, lim) -> bool:
    """swinv2's patch merging x[:, 0::2, 0::2] (transformer): step 2 on axes 1 and 2 ran on the NPU. The 2.3.2 document's
    "step 1 only" is kept for what was not measured: negative (reversing) steps."""
    return all(s >= 1 for s in steps) and cal.fitted(lim, ("transformer",))


def reduce_l2(node, lim):
    """(convnextv2's GRN, swinv2's and swin2sr's cosine attention; cnn, transformer): every ReduceL2 ran on the
    NPU in float16 and int8 builds, though the 2.3.2 document lists it as a CPU op."""
    return None if cal.fitted(lim, ("cnn", "transformer")) else "ReduceL2 is in the document's CPU op list"


def einsum(node, lim):
    """(cvt's attention 'bhlk,bhtk->bhlt', transformer): a two-operand einsum converted and ran on the NPU
    (the toolkit lowers it to MatMul); other forms are not measured and keep the converter's documented rejection."""
    eq = str(node.attr("equation", "") or "")
    if len(node.inputs) == 2 and "..." not in eq and cal.fitted(lim, ("transformer",)):
        return None
    return f"equation '{eq}' ({len(node.inputs)} operands)"


def unit_channel_squeeze(x, y, lim) -> bool:
    """glpn's depth map [1, 1, 64, 64] -> [1, 64, 64] (cnn) and siglip_vision's pooled [1, 1, 32] -> [1, 32] (transformer):
    an output reshape that only drops size-1 axes of a one-channel tensor whose innermost dimension is on the 8-grid ran
    on the NPU; RKNN-C's RT-DETR [1, 1, 20, 4] -> [1, 20, 4] (innermost 4) and PROBE-R's [1, 12, 1, 1] -> [1, 12] did not."""
    return (len(x) >= 3 and x[1] == 1 and y and y[-1] % lim["output_align"] == 0 and cal.nonunit(x) == cal.nonunit(y)
            and cal.fitted(lim, ("cnn", "transformer")))


def scatter_nd(node, lim):
    """conditional_detr's and dab_detr's box updates (detector): four of five ScatterNDs with constant indices ran on
    the NPU (conditional_detr's second one, on the first one's output, ran on the CPU: an open allowance)."""
    if node.is_const(1) and cal.fitted(lim, ("detector",)):
        return None
    return "indices computed at run time"


def pad_rank3_axis1(node, lim) -> str | None:
    """mobilebert's embedding pad (transformer) and sew's output pad (audio-rnn): a constant Pad at the end of axis 1 of a
    3-D tensor ran on the CPU; mobilebert's pad at the start of axis 1 and tcn's causal pads along the last axis
    (audio-rnn) ran on the NPU."""
    x = node.input_shape(0)
    pads = common.const_ints(node, 1) if len(node.inputs) > 1 and node.inputs[1] else None
    if not x or len(x) != 3 or not pads or len(pads) != 6 or not pads[4]:
        return None
    return "pads the end of axis 1 of a 3-D tensor" if cal.fitted(lim, ("transformer", "audio-rnn")) else None


def int8_div(lim) -> bool:
    """Every Div of the int8 builds ran on the NPU: 101 of them, by constants and by computed tensors (attention scaling,
    GRN, normalisations) in 26 cnn and transformer models, none on the CPU (rk3588-int8-op17.json)."""
    return cal.fitted(lim, ("cnn", "transformer"))
