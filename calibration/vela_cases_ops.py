"""Case builders of vela_cases.py for ops whose form npufit's converter decides: the reductions it writes as MEAN
(LayerNorm's decomposed means, ReduceMean: token tensors of rank 3 and 4 with and without a size-1 axis, means over H
and W of an NCHW map the converter holds in ONNX order and of a convolution's NHWC output), pools over the whole map,
and IsNaN / IsInf guards with the Where they feed."""

from __future__ import annotations

from .rknn_cases import _net


def layernorm_tokens(c: int, hw, tokens: tuple[int, ...]):
    """conv 1x1 -> Reshape to `tokens` (its last axis the features) -> LayerNorm over the features -> Reshape back ->
    conv 1x1."""
    import torch

    g = torch.Generator().manual_seed(1)
    w, b = 1.0 + 0.1 * torch.randn(tokens[-1], generator=g), 0.1 * torch.randn(tokens[-1], generator=g)

    def body(y):
        return torch.nn.functional.layer_norm(y.reshape(*tokens), tokens[-1:], w, b).reshape(y.shape)

    return _net(c, hw, body)


def mean_axes(c: int, hw, view: tuple[int, ...] | None, axes: tuple[int, ...]):
    """conv 1x1 -> (Reshape to `view`) -> ReduceMean over `axes` (keepdims 0): the model output."""

    def body(y):
        return (y.reshape(*view) if view else y).mean(list(axes))

    return _net(c, hw, body, head=False)


def pool(c: int, hw, kind: str, k: int, stride: int, pad: int = 0, ceil: bool = False, include: bool = True):
    """conv 1x1 -> AvgPool2d / MaxPool2d (`kind` "avg" / "max") -> conv 1x1."""
    import torch

    p = (
        torch.nn.AvgPool2d(k, stride, pad, ceil_mode=ceil, count_include_pad=include)
        if kind == "avg"
        else torch.nn.MaxPool2d(k, stride, pad, ceil_mode=ceil)
    )
    return _net(c, hw, p)


def nan_guard(c: int, hw, form: str):
    """conv 1x1 -> where(isnan(s), 0, s) of a channel softmax s (DETR's attention guard) -> conv 1x1."""
    import torch

    def body(y):
        s = y.softmax(1)
        return torch.where(torch.isnan(s), torch.zeros(()), s)

    return _net(c, hw, body)


def bn_tokens(c: int, hw, rows: int, act: bool = False, length: int = 0):
    """conv 1x1 -> Reshape to [rows, features] (length: [rows, features, length]) -> BatchNorm1d (inference; LeViT's
    norm after each linear) (-> ReLU) -> Reshape back -> conv 1x1."""
    import torch

    g = torch.Generator().manual_seed(2)
    n = c * hw[0] * hw[1] // rows // max(length, 1)
    stats = [
        1.0 + 0.2 * torch.randn(n, generator=g),
        0.1 * torch.randn(n, generator=g),
        0.1 * torch.randn(n, generator=g),
        0.5 + torch.rand(n, generator=g),
    ]

    def body(y):
        z = torch.nn.functional.batch_norm(
            y.reshape(rows, n, *([length] if length else [])), stats[2], stats[3], stats[0], stats[1], False
        )
        return (torch.relu(z) if act else z).reshape(y.shape)

    return _net(c, hw, body)


# name -> (op under test, builder, arguments); vela_cases.CASES takes them in
CASES = {
    # LayerNorm over the features: rank-3 tokens with no size-1 axis (MobileViT-style [patch area, patches, C] unfolds;
    # rank-4 ones too) against tokens with a batch of 1
    "ln-tokens-4x16x16": ("LayerNormalization", layernorm_tokens, (16, (8, 8), (4, 16, 16))),
    "ln-tokens-2x64x24": ("LayerNormalization", layernorm_tokens, (24, (8, 16), (2, 64, 24))),
    "ln-tokens-2x4x8x16": ("LayerNormalization", layernorm_tokens, (16, (8, 8), (2, 4, 8, 16))),
    "ln-tokens-1x64x16": ("LayerNormalization", layernorm_tokens, (16, (8, 8), (1, 64, 16))),
    "ln-tokens-1x32x32": ("LayerNormalization", layernorm_tokens, (32, (4, 8), (1, 32, 32))),
    # ReduceMean over H and W of an NCHW map held in ONNX order (behind a Reshape), of a conv's own output, over the
    # last axis of rank-3 tokens, and over their middle axis
    "mean-hw-reshaped-2x2": ("ReduceMean", mean_axes, (64, (2, 2), (1, 64, 2, 2), (2, 3))),
    "mean-hw-reshaped-4x8": ("ReduceMean", mean_axes, (16, (8, 4), (1, 16, 4, 8), (2, 3))),
    "mean-hw-conv": ("ReduceMean", mean_axes, (16, (4, 8), None, (2, 3))),
    "mean-last-4x16x16": ("ReduceMean", mean_axes, (16, (8, 8), (4, 16, 16), (2,))),
    "mean-mid-4x16x16": ("ReduceMean", mean_axes, (16, (8, 8), (4, 16, 16), (1,))),
    # the rows form still takes Vela's depth limit: 4608 features
    "mean-last-2x2x4608": ("ReduceMean", mean_axes, (16, (32, 36), (2, 2, 4608), (2,))),
    # pools: one window over the whole map (a kernel past the map, clipped by ceil_mode; one equal to it) against a
    # SAME kernel over Vela's 8 and a padded 3x3 that counts its pads
    "avgpool-whole-ceil": ("AveragePool", pool, (16, (5, 5), "avg", 32, 32, 0, True)),
    "avgpool-whole-exact": ("AveragePool", pool, (16, (6, 6), "avg", 6, 6)),
    "maxpool-whole-ceil": ("MaxPool", pool, (16, (5, 5), "max", 32, 32, 0, True)),
    "avgpool-k9-same": ("AveragePool", pool, (16, (12, 12), "avg", 9, 1, 4, False, False)),
    "avgpool-k3-include": ("AveragePool", pool, (16, (8, 8), "avg", 3, 1, 1)),
    # BatchNormalization over flattened [rows, features] tokens (a 1x1 depthwise conv over a [1, 1, rows, C] map),
    # with a ReLU fused, and over [rows, features, length] ones (MUL / ADD by per-channel constants)
    "bn-tokens-16x64": ("BatchNormalization", bn_tokens, (16, (8, 8), 16)),
    "bn-tokens-64x32-relu": ("BatchNormalization", bn_tokens, (32, (8, 8), 64, True)),
    "bn-tokens-4x16x16": ("BatchNormalization", bn_tokens, (16, (8, 8), 4, False, 16)),
    "bn-tokens-1x32x8": ("BatchNormalization", bn_tokens, (16, (4, 4), 1, False, 8)),
    # IsNaN of a computed tensor and the Where it guards: no op (torch's isinf guard exports a Cast the converter does
    # not lower, and a run-time condition a comparison it does not lower: neither reaches Vela)
    "isnan-softmax": ("IsNaN", nan_guard, (16, (4, 4), "isnan")),
    "where-isnan-softmax": ("Where", nan_guard, (16, (4, 4), "isnan")),
}
