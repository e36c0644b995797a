"""Where RKNN-Toolkit2 really places the ops behind the rk3588 conditions that only one corpus family shows.

    python -m calibration.rknn_cases [--record] [--cases GLOB] [--target rk3588|rk3576|rk3566|rv1106]

The calibration corpus shows several RKNN behaviours in one family only (6-D window transposes and a 6-D q/k/v
split in transformers, Slice step 2 in swinv2, Einsum in cvt, ScatterND box updates in DETRs, DepthToSpace into a
one-channel output in espcn). A rule fitted to one family cannot be scored by leaving that family out, so each
behaviour is measured here on small synthetic graphs, in the corpus's shapes and beyond them, with cases on both
sides of each condition. The graphs are none of the corpus's models: they are evidence independent of its families.

Each case is conv 1x1 -> the op(s) under test -> conv 1x1 (so the op reads and feeds NPU tensors, as in the corpus)
unless it says otherwise, exported at opset 17 and compiled for rk3588 (float16 unless the catalogue entry names
int8, which quantizes on the case's own input; simulator off). --record writes docs/calibration/rk3588-cases.json:
per case, the placement of every node of the op under test, in graph order ("failed: ..." when the converter rejects
the model), and "build": "int8" for an int8 case. tests/test_calibration_records.py replays it, judging an int8 case
as its int8 conversion. The attribute sweeps of rknn_sweep.py and rknn_sweep2.py are part of the catalogue.
--target compiles the chosen cases for another Rockchip SoC (rv1106: int8) into docs/calibration/<target>-cases.json,
replayed against its profile."""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import tempfile
from pathlib import Path

from .form import CASES_SCHEMA as SCHEMA
from .form import RECORDS
from .judge import case_verdicts
from .rknn_sweep import SWEEP
from .rknn_sweep2 import SWEEP2

TARGET, OPSET = "rk3588", 17


def _net(c_in: int, hw: tuple[int, int], body, c_out: int | None = None, head: bool = True):
    """conv 1x1 -> body(y) -> conv 1x1 (head=False: body's result is the model output)."""
    import torch

    torch.manual_seed(0)

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Conv2d(c_in, c_in, 1)
            self.post = torch.nn.Conv2d(c_out or c_in, c_out or c_in, 1) if head else None

        def forward(self, x):
            y = body(self.pre(x))
            return self.post(y) if self.post is not None else y

    return Case().eval(), torch.randn(1, c_in, *hw)


def _as4(shape) -> tuple[int, int, tuple[int, int]]:
    """A 4-D NCHW tensor with as many elements as `shape`: channels = its innermost dimension."""
    n = math.prod(shape)
    c = shape[-1]
    h = max(d for d in range(1, math.isqrt(n // c) + 1) if (n // c) % d == 0)
    return c, n, (h, n // c // h)


def transpose(shape, perm):
    """A tensor reshaped to `shape`, permuted, reshaped back (window partition / reverse)."""
    c, n, hw = _as4(shape)
    return _net(c, hw, lambda y: y.reshape(*shape).permute(*perm).reshape(1, c, *hw))


def split(shape, axis: int):
    """A tensor reshaped to `shape`, split along `axis` into its parts, the parts added back."""
    c, n, hw = _as4(shape)

    def body(y):
        parts = y.reshape(*shape).unbind(axis)
        s = parts[0]
        for p in parts[1:]:
            s = s * p
        return s.reshape(1, 8, -1, 1)

    return _net(c, hw, body, c_out=8)


def strided(c: int, hw, index):
    """x[index] of a 4-D tensor (a Slice with steps), resized back by a 1x1 conv on whatever it gives."""
    import torch

    torch.manual_seed(0)
    probe = torch.zeros(1, c, *hw)[index]

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Conv2d(c, c, 1)
            self.post = torch.nn.Conv2d(probe.shape[1], 8, 1)

        def forward(self, x):
            return self.post(self.pre(x)[index])

    return Case().eval(), torch.randn(1, c, *hw)


def phases(c: int, hw, picks, layout: str):
    """Step-2 slices of H and W at the phases in `picks` ((row, col) starts), concatenated on the channel axis:
    YOLOv5's Focus on NCHW (layout "nchw"), Swin's patch merging on a [1, H, W, C] view (layout "nhwc")."""
    import torch

    def body(y):
        if layout == "nhwc":
            y = y.permute(0, 2, 3, 1)
            z = torch.cat([y[:, r::2, q::2, :] for r, q in picks], -1)
            return z.permute(0, 3, 1, 2)
        return torch.cat([y[:, :, r::2, q::2] for r, q in picks], 1)

    return _net(c, hw, body, c_out=c * len(picks))


def einsum(equation: str, shapes):
    """torch.einsum(equation, a, *consts): `a` is the conv output reshaped to shapes[0], the others constants."""
    import torch

    torch.manual_seed(0)
    consts = [torch.randn(*s) for s in shapes[1:]]
    c, n, hw = _as4(shapes[0])

    def body(y):
        return torch.einsum(equation, y.reshape(*shapes[0]), *consts).reshape(1, 8, -1, 1)

    return _net(c, hw, body, c_out=8)


def scatter(c: int, hw, chained: bool, same: bool = False):
    """Slice assignment with constant indices (ScatterND), once or twice in a row on the same tensor; same=True: the
    second writes the region the first wrote (ConditionalDETR's box update exports that way), else the next one."""

    def body(y):
        y = y.clone()
        s = y[:, :, :, :2].sigmoid()
        y[:, :, :, :2] = s
        if chained and same:
            y[:, :, :, :2] = s * 2.0
        elif chained:
            y[:, :, :, 2:4] = y[:, :, :, 2:4] * 2.0
        return y

    return _net(c, hw, body)


def scatter_pair(
    inner: int, rank: int, first: tuple[int, int], second: tuple[int, int], reads: bool, direct: bool = False
):
    """Two slice assignments (ScatterND) in a row on the innermost axis, to first = (start, stop) and then second, of a
    [1, 20, inner] (rank 3) or [1, 1, 20, inner] view of the conv output, or of the conv's own [1, 8, 8, inner] output
    (direct). The second writes values computed from the first one's output (reads) or from the first one's values
    (ConditionalDETR's box update writes [..., :2] of [1, 20, 4] twice, with values that do not read the first
    write)."""

    def body(y):
        z = y if direct else y.reshape(1, inner, 20).permute(0, 2, 1)
        z = (z.reshape(1, 1, 20, inner) if rank == 4 and not direct else z).clone()
        a = z[..., first[0] : first[1]].sigmoid()
        z[..., first[0] : first[1]] = a
        z[..., second[0] : second[1]] = z[..., second[0] : second[1]] + 1.0 if reads else a * 2.0
        return z if direct else z.reshape(1, 20, inner).permute(0, 2, 1).reshape(1, inner, 4, 5)

    return _net(8 if direct else inner, (8, inner) if direct else (4, 5), body)


def gather(c: int, hw, runtime: bool):
    """A row of a [C*H, W] view picked by a constant index, or by one an ArgMax computes at run time (CLIP's
    end-of-text pooling), reshaped to 4-D."""
    import torch

    def body(y):
        idx = y.sum((1, 3)).argmax(-1) if runtime else torch.tensor([3])
        return y.reshape(-1, hw[1])[idx].reshape(1, hw[1], 1, 1)

    return _net(c, hw, body, c_out=hw[1])


def split_last(heads: int, t: int, c: int, parts: tuple[int, int], linear: bool):
    """WavLM's gated position bias: a [1, heads, t, c] tensor (permuted from the conv's NCHW output, then a Linear's
    MatMul + Add to parts[0] * parts[1] features, or no Linear) reshaped to 5-D with its innermost axis split in
    `parts`, summed over the new innermost axis, permuted back to NCHW for the conv."""
    import torch

    g, k = parts
    lin = torch.nn.Linear(c, g * k) if linear else None

    def body(y):
        y = y.permute(0, 2, 3, 1)
        y = lin(y) if lin is not None else y
        return y.reshape(1, heads, t, g, k).sum(-1).permute(0, 3, 1, 2)

    m, x = _net(c, (heads, t), body, c_out=g)
    m.lin = lin  # registered, so the export keeps its weights
    return m, x


def depth_to_space(c: int, hw, factor: int, head: bool):
    """PixelShuffle (DepthToSpace), into a model output (head=False) or into a 1x1 conv."""
    import torch

    return _net(c, hw, torch.nn.PixelShuffle(factor), c_out=c // factor**2, head=head)


# name -> (op under test, builder, arguments[, build: "int8"])
CASES = {
    # 6-D window partition/reverse: innermost axis kept, as swinv2/swin2sr/hiera; moved, as pixel_unshuffle
    "transpose6-swin-4x4": ("Transpose", transpose, ((1, 4, 4, 4, 4, 16), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-2x8": ("Transpose", transpose, ((1, 2, 8, 2, 8, 8), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-7x7": ("Transpose", transpose, ((1, 2, 7, 2, 7, 24), (0, 1, 3, 2, 4, 5))),
    "transpose6-unroll-5axes": ("Transpose", transpose, ((1, 8, 2, 8, 2, 16), (0, 2, 4, 1, 3, 5))),
    "transpose6-unroll-lead4": ("Transpose", transpose, ((4, 1, 2, 8, 2, 16), (0, 2, 4, 1, 3, 5))),
    "transpose6-unroll-6axes": ("Transpose", transpose, ((2, 4, 2, 4, 2, 16), (0, 2, 4, 1, 3, 5))),
    "transpose6-swin-6axes": ("Transpose", transpose, ((2, 2, 4, 2, 4, 16), (0, 1, 3, 2, 4, 5))),
    "transpose6-hiera-lead4": ("Transpose", transpose, ((4, 4, 2, 4, 2, 16), (0, 2, 4, 1, 3, 5))),
    "transpose6-hiera-lead16": ("Transpose", transpose, ((16, 2, 2, 2, 2, 16), (0, 2, 4, 1, 3, 5))),
    "transpose6-swin-7x7-c16": ("Transpose", transpose, ((1, 2, 7, 2, 7, 16), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-7x7-c32": ("Transpose", transpose, ((1, 2, 7, 2, 7, 32), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-8x8-c24": ("Transpose", transpose, ((1, 2, 8, 2, 8, 24), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-6x6-c16": ("Transpose", transpose, ((1, 2, 6, 2, 6, 16), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-5x5-c16": ("Transpose", transpose, ((1, 2, 5, 2, 5, 16), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-5x5-c8": ("Transpose", transpose, ((1, 4, 5, 4, 5, 8), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-3win": ("Transpose", transpose, ((1, 3, 4, 3, 4, 16), (0, 1, 3, 2, 4, 5))),
    "transpose6-swin-4x4-c12": ("Transpose", transpose, ((1, 4, 4, 4, 4, 12), (0, 1, 3, 2, 4, 5))),
    "transpose6-hiera-lead4-b": ("Transpose", transpose, ((4, 2, 2, 4, 2, 16), (0, 2, 4, 1, 3, 5))),
    "transpose6-hiera-lead8-c8": ("Transpose", transpose, ((8, 4, 2, 4, 2, 8), (0, 2, 4, 1, 3, 5))),
    "transpose6-moves-innermost": ("Transpose", transpose, ((1, 4, 4, 4, 4, 16), (0, 1, 3, 5, 2, 4))),
    # the Reshapes around a window transpose (the toolkit fuses Reshape -> Transpose -> Reshape into one exWindow op)
    "window-7x7-reshapes": ("Reshape", transpose, ((1, 2, 7, 2, 7, 16), (0, 1, 3, 2, 4, 5))),
    "window-5x5-reshapes": ("Reshape", transpose, ((1, 4, 5, 4, 5, 8), (0, 1, 3, 2, 4, 5))),
    "window-4x4-reshapes": ("Reshape", transpose, ((1, 4, 4, 4, 4, 16), (0, 1, 3, 2, 4, 5))),
    "window-moves-innermost-reshapes": ("Reshape", transpose, ((1, 4, 4, 4, 4, 16), (0, 1, 3, 5, 2, 4))),
    "transpose6-moves-innermost-b": ("Transpose", transpose, ((1, 2, 8, 2, 8, 8), (0, 5, 1, 3, 2, 4))),
    # 6-D split: along the outermost axis > 1 (hiera's q/k/v), and along an inner axis
    "split6-outermost": ("Split", split, ((3, 1, 2, 4, 16, 16), 0)),
    "split6-outermost-lead1": ("Split", split, ((1, 3, 2, 4, 16, 16), 1)),
    "split6-inner": ("Split", split, ((2, 4, 3, 2, 8, 16), 2)),
    "split6-innermost": ("Split", split, ((2, 4, 2, 4, 16, 3), 5)),
    # Slice steps: 2 on H/W (YOLOv5 Focus, swin patch merging), 2 on C, 3, and a reversing step (torch.flip)
    "slice-step2-hw": (
        "Slice",
        strided,
        (8, (16, 16), (slice(None), slice(None), slice(0, None, 2), slice(1, None, 2))),
    ),
    "slice-step2-c": ("Slice", strided, (16, (8, 8), (slice(None), slice(0, None, 2)))),
    "slice-step3-w": ("Slice", strided, (8, (12, 12), (slice(None), slice(None), slice(None), slice(0, None, 3)))),
    "slice-step4-h": ("Slice", strided, (8, (16, 16), (slice(None), slice(None), slice(1, None, 4)))),
    # ... and step-2 slices whose phases are concatenated again (a space-to-depth reorg): all four, or two of them
    "slice-focus-nchw": ("Slice", phases, (8, (16, 16), ((0, 0), (1, 0), (0, 1), (1, 1)), "nchw")),
    "slice-merge-nhwc": ("Slice", phases, (16, (16, 16), ((0, 0), (1, 0), (0, 1), (1, 1)), "nhwc")),
    "slice-merge-nhwc-2phases": ("Slice", phases, (16, (16, 16), ((0, 0), (1, 1)), "nhwc")),
    "slice-focus-nchw-2phases": ("Slice", phases, (8, (16, 16), ((0, 0), (1, 1)), "nchw")),
    # Einsum: two operands (attention, relative position, 1x1-conv form), three operands, ellipsis
    "einsum-attention": ("Einsum", einsum, ("bhlk,bhtk->bhlt", ((1, 2, 16, 32), (1, 2, 8, 32)))),
    "einsum-relpos": ("Einsum", einsum, ("bhwc,hkc->bhwk", ((1, 8, 8, 16), (8, 8, 16)))),
    "einsum-channels": ("Einsum", einsum, ("nchw,kc->nkhw", ((1, 16, 8, 8), (24, 16)))),
    "einsum-batched": ("Einsum", einsum, ("bij,bjk->bik", ((4, 16, 8), (4, 8, 16)))),
    "einsum-ellipsis": ("Einsum", einsum, ("...ij,...jk->...ik", ((1, 4, 16, 8), (1, 4, 8, 16)))),
    "einsum-3operands": ("Einsum", einsum, ("bij,bjk,bkl->bil", ((4, 16, 8), (4, 8, 8), (4, 8, 16)))),
    # ScatterND with constant indices: one update, and a second on the first one's output
    "scatternd-once": ("ScatterND", scatter, (8, (8, 8), False)),
    "scatternd-chained": ("ScatterND", scatter, (8, (8, 8), True)),
    "scatternd-same-region": ("ScatterND", scatter, (8, (8, 8), True, True)),
    # ... a second write over the first one's region: innermost axis 4 (ConditionalDETR's boxes) and 8, 3-D and 4-D
    "scatternd-overlap-3d-inner4": ("ScatterND", scatter_pair, (4, 3, (0, 2), (0, 2), False)),
    "scatternd-overlap-3d-inner4-reads": ("ScatterND", scatter_pair, (4, 3, (0, 2), (0, 2), True)),
    "scatternd-overlap-4d-inner4": ("ScatterND", scatter_pair, (4, 4, (0, 2), (0, 2), False)),
    "scatternd-overlap-conv-w4": ("ScatterND", scatter_pair, (4, 4, (0, 2), (0, 2), False, True)),
    "scatternd-overlap-conv-w4-reads": ("ScatterND", scatter_pair, (4, 4, (0, 2), (0, 2), True, True)),
    "scatternd-overlap-3d-inner8": ("ScatterND", scatter_pair, (8, 3, (0, 2), (0, 2), False)),
    "scatternd-overlap-4d-inner16": ("ScatterND", scatter_pair, (16, 4, (0, 2), (0, 2), False)),
    "scatternd-partial-3d-inner4": ("ScatterND", scatter_pair, (4, 3, (0, 2), (1, 3), False)),
    "scatternd-partial-3d-inner4-reads": ("ScatterND", scatter_pair, (4, 3, (0, 2), (1, 3), True)),
    "scatternd-apart-3d-inner4": ("ScatterND", scatter_pair, (4, 3, (0, 2), (2, 4), False)),
    "scatternd-apart-3d-inner4-reads": ("ScatterND", scatter_pair, (4, 3, (0, 2), (2, 4), True)),
    "scatternd-apart-3d-inner8": ("ScatterND", scatter_pair, (8, 3, (0, 2), (2, 4), False)),
    "scatternd-whole-3d-inner4": ("ScatterND", scatter_pair, (4, 3, (0, 4), (0, 4), False)),
    "scatternd-whole-4d-inner4": ("ScatterND", scatter_pair, (4, 4, (0, 4), (0, 4), False)),
    # Gather by a constant index and by one computed at run time, and the Reshape after it
    "gather-const-index": ("Gather", gather, (8, (8, 8), False)),
    "gather-runtime-index": ("Gather", gather, (8, (8, 8), True)),
    "gather-runtime-index-reshape": ("Reshape", gather, (8, (8, 8), True)),
    # DepthToSpace into a model output and into a conv, factor 2 and 3, to 1 and to 8 channels
    "d2s-x3-to1-output": ("DepthToSpace", depth_to_space, (9, (8, 8), 3, False)),
    "d2s-x2-to1-output": ("DepthToSpace", depth_to_space, (4, (8, 8), 2, False)),
    "d2s-x3-to8-output": ("DepthToSpace", depth_to_space, (72, (8, 8), 3, False)),
    "d2s-x3-to1-conv": ("DepthToSpace", depth_to_space, (9, (8, 8), 3, True)),
    "d2s-x2-to8-output": ("DepthToSpace", depth_to_space, (32, (8, 8), 2, False)),
    "d2s-x4-to2-conv": ("DepthToSpace", depth_to_space, (32, (8, 8), 4, True)),
    "d2s-x6-to1-conv": ("DepthToSpace", depth_to_space, (36, (4, 4), 6, True)),
    "d2s-x8-to1-conv": ("DepthToSpace", depth_to_space, (64, (4, 4), 8, True)),
    # 4-D -> 5-D Reshape that splits the innermost axis W into g x k (WavLM's gated position bias [1, 2, 99, 8] ->
    # [1, 2, 99, 2, 4]), after a Linear, with T = 99 unless named: int8 builds, then float16 builds
    "int8-split-last-2x4": ("Reshape", split_last, (2, 99, 16, (2, 4), True), "int8"),
    "int8-split-last-4x4": ("Reshape", split_last, (2, 99, 16, (4, 4), True), "int8"),
    "int8-split-last-2x8": ("Reshape", split_last, (2, 99, 16, (2, 8), True), "int8"),
    "int8-split-last-6x4": ("Reshape", split_last, (2, 99, 16, (6, 4), True), "int8"),
    "int8-split-last-3x8": ("Reshape", split_last, (2, 99, 16, (3, 8), True), "int8"),
    "int8-split-last-2x7": ("Reshape", split_last, (2, 99, 16, (2, 7), True), "int8"),
    "int8-split-last-2x9": ("Reshape", split_last, (2, 99, 16, (2, 9), True), "int8"),
    "int8-split-last-2x2": ("Reshape", split_last, (2, 99, 16, (2, 2), True), "int8"),
    "int8-split-last-3x6": ("Reshape", split_last, (2, 99, 16, (3, 6), True), "int8"),
    "int8-split-last-2x12": ("Reshape", split_last, (2, 99, 16, (2, 12), True), "int8"),
    "int8-split-last-2x4-no-linear": ("Reshape", split_last, (2, 99, 8, (2, 4), False), "int8"),
    "int8-split-last-t96-2x4": ("Reshape", split_last, (2, 96, 16, (2, 4), True), "int8"),
    "int8-split-last-t64-2x4": ("Reshape", split_last, (2, 64, 16, (2, 4), True), "int8"),
    "int8-split-last-t16-2x6": ("Reshape", split_last, (2, 16, 16, (2, 6), True), "int8"),
    "int8-split-last-t8-2x4": ("Reshape", split_last, (2, 8, 16, (2, 4), True), "int8"),
    "int8-split-last-t24-2x4": ("Reshape", split_last, (2, 24, 16, (2, 4), True), "int8"),
    "int8-split-last-t100-2x4": ("Reshape", split_last, (2, 100, 16, (2, 4), True), "int8"),
    "split-last-2x4": ("Reshape", split_last, (2, 99, 16, (2, 4), True)),
    "split-last-2x2": ("Reshape", split_last, (2, 99, 16, (2, 2), True)),
    "split-last-3x4": ("Reshape", split_last, (2, 99, 16, (3, 4), True)),
    "split-last-4x2": ("Reshape", split_last, (2, 99, 16, (4, 2), True)),
    "split-last-2x5": ("Reshape", split_last, (2, 99, 16, (2, 5), True)),
    "split-last-2x9": ("Reshape", split_last, (2, 99, 16, (2, 9), True)),
    "split-last-3x6": ("Reshape", split_last, (2, 99, 16, (3, 6), True)),
    "split-last-2x10": ("Reshape", split_last, (2, 99, 16, (2, 10), True)),
    "split-last-t96-3x4": ("Reshape", split_last, (2, 96, 16, (3, 4), True)),
    "split-last-t8-2x2": ("Reshape", split_last, (2, 8, 16, (2, 2), True)),
}
CASES.update(SWEEP)  # the attribute sweeps of Resize, pooling, Reshape and Slice (rknn_sweep.py)
CASES.update(SWEEP2)  # ... of integer shape arithmetic, Erf, Gather and 3-D Pad (rknn_sweep2.py)


def build_of(name: str) -> str:
    """The RKNN build a case is compiled with: float16 unless its catalogue entry names int8."""
    return CASES[name][3] if len(CASES[name]) > 3 else "fp16"


def export_case(name: str, folder: Path) -> Path:
    from npufit.zoo.export import export_onnx

    op, builder, args = CASES[name][:3]
    built = builder(*args)
    p = folder / f"{name}.onnx"
    if isinstance(built, tuple):
        export_onnx(*built, p, OPSET, ["x"], ["y"])
    else:  # an ONNX model written directly (rknn_sweep.py)
        from npufit.util.io import atomic_write_bytes

        atomic_write_bytes(p, built.SerializeToString())
    return p


def predict(onnx: Path, op: str, profile=None, build: str = "fp16") -> list[str]:
    """npufit's verdict for every top-level node of `op`, in graph order, judged as the case's build."""
    return case_verdicts(onnx, op, profile or TARGET, build)


# the other Rockchip SoCs share rk3588's rule code (rockchip/socs.py): --target records a case record of their own for
# the cases that bound a shared condition; rv1106 takes int8 builds only
SOC_BUILDS = {"rk3588": None, "rk3576": None, "rk3566": None, "rv1106": "int8"}


def measure(
    onnx: Path, op: str, out: Path, build: str = "fp16", target: str = TARGET
) -> tuple[list[str] | str, str | None]:
    from npufit.compilers import compile_model
    from npufit.graph import load

    r = compile_model(onnx, target, quantize=build == "int8", simulate=False, out_dir=out, timeout_s=600)
    if not (r.ok and r.placement):
        return f"failed: {str(r.error or '')[:200]}", r.compiler_version
    by = {p.node: p.device for p in r.placement}
    return [by.get(n.name, "folded") for n in load(onnx).top_nodes if n.op_type == op], r.compiler_version


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="write docs/calibration/<target>-cases.json")
    ap.add_argument(
        "--target", default=TARGET, choices=sorted(SOC_BUILDS), help="the SoC to compile for (default rk3588)"
    )
    ap.add_argument(
        "--cases",
        default="*",
        help="comma-separated globs over case names (default: all); with --record, only these are updated",
    )
    a = ap.parse_args(argv)
    chosen = [n for n in CASES if any(fnmatch.fnmatch(n, g) for g in a.cases.split(","))]
    if not chosen:
        ap.error(f"no case matches {a.cases!r} (see CASES in {Path(__file__).name})")
    from npufit.util.io import atomic_write_json

    path = RECORDS / f"{a.target}-cases.json"
    rec = {
        "schema": SCHEMA,
        "target": a.target,
        "build": SOC_BUILDS[a.target] or "fp16",
        "opset": OPSET,
        "compiler": "rknn-toolkit2",
        "compiler_versions": [],
        "cases": {},
    }
    if a.record and path.is_file():  # a run over some cases updates those and keeps the others
        rec = json.loads(path.read_text())
    print("| case | op | RKNN | npufit |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="npufit-rkc-") as d:
        for name in chosen:
            op, build = CASES[name][0], SOC_BUILDS[a.target] or build_of(name)
            p = export_case(name, Path(d))
            got, ver = measure(p, op, Path(d) / name, build, a.target)
            if ver and ver not in rec["compiler_versions"]:
                rec["compiler_versions"].append(ver)
            rec["cases"][name] = {"op": op, "placement": got, **({"build": build} if build != rec["build"] else {})}
            print(f"| {name} | {op} {build} | {got} | {predict(p, op, a.target, build)} |", flush=True)
    if a.record:
        rec["cases"] = {n: rec["cases"][n] for n in CASES if n in rec["cases"]}  # catalogue order; dropped cases go
        atomic_write_json(path, rec)


if __name__ == "__main__":
    main()
