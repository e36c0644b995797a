"""RKNN conditions whose bounds are read from the compiler sweep (targets/sweeps.py: RKNN-Toolkit2 2.5.0 builds of the
small graphs of calibration/sweep.py, record docs/calibration/sweep/rk3588.json).

Each check uses its bound only where the sweep's evidence may be used (cal.fitted with the bound's cases): the corpus-
only score falls back to the 2.3.2 document there. The values are limits of the profile (rockchip/__init__.py reads
them from the sweep), so the sentences quote the same numbers the checks use."""

from __future__ import annotations

from ...graph import NodeView, quant
from .. import calibration as cal
from .. import common, sweeps
from .. import tflite_map as tm
from ..base import Limits
from ..layout import (
    JOIN_MODULUS,
    dfl_split,
    head_map,
    head_output_transpose,
    head_rows,
    joined_flatten,
    qkv_view_transpose,
    reads_head_split,
    split_rows,
    unshared_chain,
)
from ..patterns import norm_denominator

T = "rk3588"  # the SoC the sweep was recorded on; the other SoCs inherit its conditions (rockchip/socs.py)


def at(target: str, name: str) -> str:
    """The SoC whose sweep gives bound `name` to `target`: its own where its record derives the bound, else RK3588's
    (a SoC whose sweep did not measure a pattern inherits RK3588's measured condition)."""
    return target if sweeps.has(target, name) else T


def _swept(lim: Limits, name: str) -> bool:
    return cal.fitted(lim, sweeps.evidence(at(str(lim["chip"]).lower(), name), name))


def conv1d(node: NodeView) -> bool:
    """A 1-D convolution: a 3-D [N, C, L] input (an audio front end's STFT, a TCN)."""
    x = node.input_shape(0)
    return node.op_type == "Conv" and node.graph.format == "onnx" and x is not None and len(x) == 3


def conv1d_swept(node: NodeView, lim: Limits) -> bool:
    """Whether the 1-D bounds of the sweep judge this node (the 2-D kernel and stride rules then leave it)."""
    return conv1d(node) and _swept(lim, "conv1d_kernel") and _swept(lim, "conv1d_stride")


def conv1d_limits(node: NodeView, lim: Limits) -> str | None:
    """A 1-D convolution: every kernel and stride up to the longest the sweep ran on the NPU (12 of 12 did, kernels
    3 to 512, strides 1 to 256: STFT front ends)."""
    if not conv1d_swept(node, lim):
        return None
    k, s = tm.kernel(node), tm.strides(node)
    if any(x > lim["conv1d_kernel"] for x in k):
        return f"kernel {k[0]}"
    if any(x > lim["conv1d_stride"] for x in s):
        return f"stride {s[0]}"
    return None


def sum_inputs(node: NodeView, lim: Limits) -> str | None:
    """Sum: the sweep ran 2 and 3 inputs on the NPU and the build of 4 failed; without the sweep the 2.3.2 operator
    list, which has no Sum, says the converter rejects it."""
    if not _swept(lim, "sum_inputs"):
        return "Sum is not in the 2.3.2 operator list"
    n = len([i for i in node.inputs if i])
    return None if n <= lim["sum_inputs"] else f"{n} inputs"


def focus_chain_cpu(node: NodeView, lim: Limits) -> bool:
    """A space-to-depth reorg written as unshared chains of strided Slices: the CPU in the sweep (8 slices, from the
    model input or after a conv, 64x64 to 640x640), where its shared and two-axis forms ran on the NPU."""
    return lim["focus_chain_cpu"] and unshared_chain(node) and _swept(lim, "focus_chain")


def split_rows_map(node: NodeView, lim: Limits) -> str | None:
    """Reshapes that split channel rows into a [1, C, H, W] map for a convolution: the NPU up to the sweep's largest
    H x W, the CPU above it (YOLOv8's DFL input [1, 64, A] -> [1, 4, 16, A] at 4200 anchors and more; the same split
    before a Transpose, as Ultralytics writes the head, ran on the NPU and is not this pattern)."""
    hw = split_rows(node)
    if hw is None or hw <= lim["split_rows_hw"] or not _swept(lim, "split_rows"):
        return None
    return f"a {hw}-element map"


def head_rows_cpu(node: NodeView, lim: Limits) -> str | None:
    """A multi-scale head's Reshape between maps and rows (a map flattened for the Concat of the scales, or the joined
    rows split into a map): the CPU when its rows are not a multiple of the sweep's row alignment in bytes, unless its
    channels are (a flatten, or a split only Transposes read, as YOLOv8's DFL). In the sweep every Reshape with aligned
    rows ran on the NPU, and every head with unaligned rows had one on the CPU, though not always each of them (a
    pose head at 320: the 10x10 scale's flatten and the [1, 51, 2100] split; at 160 the 5x5 scale's flatten ran on the
    NPU). A map flattened for the Concat alone follows its cell count modulo 8 where the sweep measured it: 5x5, 13x13
    and 15x15 (one left over) ran on the NPU, 10x10, 26x26 and 30x30 (four left over) on the CPU; alone, flattened and
    split, the 5x5 ran on the CPU."""
    got = head_rows(node)
    if got is None or not _swept(lim, "head_rows"):
        return None
    kind, c, n = got
    e = 1 if quant.exec_dtype(node) in ("int8", "uint8") else 2
    b = lim["head_row_bytes"]
    if (n * e) % b == 0 or (kind != "split" and (c * e) % b == 0):
        return None
    cells = joined_flatten(node)
    joined = cells is not None and cells % lim["head_joined_modulus"] in lim["head_joined_residues"]
    if joined and _swept(lim, "head_joined_residues"):
        return None
    return f"rows of {n} elements ({n * e} bytes) with {c} channels"


def head_output_transpose_cpu(node: NodeView, lim: Limits) -> str | None:
    """The Transpose of a head's joined rows [1, C, A] into the model output [1, A, C] (YOLOX's last node): the CPU
    above the sweep's bound on A (7581 anchors on the NPU, 8400 and more on the CPU: a 640 YOLOX). Read by a layer
    instead of written out, or made by one flatten, it ran on the NPU at every A measured."""
    a = head_output_transpose(node)
    if a is None or a <= lim["head_output_anchors"] or not _swept(lim, "head_output_transpose"):
        return None
    return f"{a} anchors"


def int8_cpu_function(node: NodeView, lim: Limits) -> str | None:
    """An element-wise function of one tensor that the sweep's int8 builds ran on the CPU while its float16 builds kept
    it on the NPU (Sqrt: an STFT magnitude in a voice-activity detector went to the CPU in the int8 build only), except
    a normalization's denominator, which the converter fuses with the normalization (measured on the NPU)."""
    if node.op_type not in lim["int8_cpu_functions"] or not _swept(lim, "int8_cpu_functions"):
        return None
    if quant.exec_dtype(node) not in ("int8", "uint8") or norm_denominator(node):
        return None
    return f"{node.op_type} in an int8 build"


def _runtime_inputs(node: NodeView) -> int:
    return sum(1 for i, t in enumerate(node.inputs) if t and not node.is_const(i))


def min_runtime(node: NodeView, lim: Limits) -> str | None:
    """Min of two or more run-time tensors: the CPU in the sweep (2, 3 and 4 inputs; Max of the same on the NPU).
    A Min with a constant (a clamp) was not measured and stays as the document says."""
    if not lim["min_runtime_cpu"] or not _swept(lim, "min_cpu"):
        return None
    n = _runtime_inputs(node)
    return f"Min of {n} run-time tensors" if n >= 2 else None


def cast_swept(node: NodeView, lim: Limits) -> bool:
    """A Cast of run-time data whose (from, to) types the sweep ran on the NPU or deleted (float16 <-> float32)."""
    if node.is_const(0) or not _swept(lim, "cast_pairs"):
        return False
    return (node.input_dtype(0), node.output_dtype(0)) in lim["cast_npu_pairs"]


# a SoC's own bounds (calibration/bounds.py: rk3566, rv1106) -> the limit each sets
SOC_LIMITS = {
    "qkv_view_align": "qkv_view_align",
    "head_split": "head_split_hw",
    "head_split_t": "head_split_t_hw",
    "head_merge": "head_merge_hw",
    "dfl_split": "dfl_split_hw",
    "head_split_transpose": "head_split_transpose_cpu",
}
_MAP_BOUND = {"split": "head_split", "split_t": "head_split_t", "merge": "head_merge"}


def soc_limits(target: str) -> dict:
    """The limits of the detection-head (and q/k/v view) bounds `target`'s own sweep record derives (none are
    inherited: RK3588's sweep bounds its heads by row alignment instead, head_rows_cpu, and ran every q/k/v view on
    the NPU)."""
    return {lim: sweeps.value(target, b) for b, lim in SOC_LIMITS.items() if sweeps.has(target, b)}


def _head_map_cpu(node: NodeView, lim: Limits, kind: str) -> str | None:
    """A detection head's Reshape of one kind between rows and a map (layout.head_map: "split" of its joined rows,
    "split_t" read by Transposes alone, "merge" of a pose head's keypoints back into rows): the CPU when the map has
    more cells than the largest of that kind the SoC's sweep ran on the NPU."""
    name = _MAP_BOUND[kind]
    got = head_map(node)
    if got is None or got[0] != kind or SOC_LIMITS[name] not in lim:
        return None
    if got[1] <= lim[SOC_LIMITS[name]] or not _swept(lim, name):
        return None
    return f"a {got[1]}-cell map"


def head_split_cpu(node: NodeView, lim: Limits) -> str | None:
    return _head_map_cpu(node, lim, "split")


def head_split_t_cpu(node: NodeView, lim: Limits) -> str | None:
    return _head_map_cpu(node, lim, "split_t")


def head_merge_cpu(node: NodeView, lim: Limits) -> str | None:
    return _head_map_cpu(node, lim, "merge")


def qkv_view_transpose_cpu(node: NodeView, lim: Limits) -> str | None:
    """The Transpose of a q/k/v projection's 5-D view [1, N, 3, heads, d]: the CPU when the head width d is not a
    multiple of the SoC's sweep bound (PP-OCRv4's recognizer: d = 15)."""
    d, a = qkv_view_transpose(node), lim.get("qkv_view_align")
    if d is None or not a or d % a == 0 or not _swept(lim, "qkv_view_align"):
        return None
    return f"a head width of {d}"


def dfl_split_cpu(node: NodeView, lim: Limits) -> str | None:
    """Rows split into a map that Transposes hand to a Softmax (YOLOv8's DFL): the CPU above the SoC's sweep bound."""
    hw = dfl_split(node)
    if hw is None or "dfl_split_hw" not in lim or hw <= lim["dfl_split_hw"] or not _swept(lim, "dfl_split"):
        return None
    return f"a {hw}-cell map"


def head_split_transpose_cpu(node: NodeView, lim: Limits) -> str | None:
    """A Transpose of a detection head's split rows: the CPU where every one the SoC's sweep measured ran there."""
    if not lim.get("head_split_transpose_cpu") or not reads_head_split(node):
        return None
    return f"perm {list(node.attr('perm', []) or [])}" if _swept(lim, "head_split_transpose") else None


def _bound(target: str, name: str) -> dict:
    return sweeps.bound(at(target, name), name)


def _value(target: str, name: str):
    return _bound(target, name)["value"]


def limits(target: str = T) -> dict:
    """The profile limits read from the sweep records: `target`'s own bound where its record derives one, else
    RK3588's."""
    pairs = tuple((a, b) for a, b, where in _value(target, "cast_pairs") if where != "cpu")
    return {
        "conv1d_kernel": _value(target, "conv1d_kernel"),
        "conv1d_stride": _value(target, "conv1d_stride"),
        "sum_inputs": _value(target, "sum_inputs"),
        "sum_fails_from": _bound(target, "sum_inputs")["fails_from"],
        "mean_cpu": _value(target, "mean_cpu"),
        "min_runtime_cpu": _value(target, "min_cpu"),
        "cast_npu_pairs": pairs,
        "focus_chain_cpu": _value(target, "focus_chain"),
        "split_rows_hw": _value(target, "split_rows"),
        "head_row_bytes": _value(target, "head_rows"),
        "head_joined_modulus": JOIN_MODULUS,
        "head_output_anchors": _value(target, "head_output_transpose"),
        "head_joined_residues": common.Choices(tuple(_value(target, "head_joined_residues"))),
        "int8_cpu_functions": common.Choices(tuple(_value(target, "int8_cpu_functions"))),
    }
