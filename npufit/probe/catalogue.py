"""The probe catalogue: one tiny torch model per operation (seed 000's test script, done as data).

Every case is a builder function plus default parameters, so a case can be swept over a grid
(`probe --sweep`). Builders import torch inside: importing this module needs no torch.
`seed` names the document that reported the case; `label` is that document's wording.
The profile acceptance tests take their models from here, so this is the single source.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import NpufitError

# where a case was first reported, as a user reads it (and a --cases glob matches it: "hailo8-op-test")
SEED_000, SEED_002 = "Hailo-8 op test", "DEIMv2 port"
_LEGACY = {"seed000": SEED_000, "seed002": SEED_002}  # the names these groups had in earlier versions


def _group_key(text: str) -> str:
    return text.lower().replace(" ", "-")


@dataclass(frozen=True)
class Case:
    id: str
    family: str
    ops: tuple[str, ...]  # the torch-level ops the case exercises
    builder: Callable[..., tuple[Any, tuple]]  # (**params) -> (module, example inputs)
    params: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, tuple] = field(default_factory=dict)  # sweepable parameters -> values
    seed: str = ""  # SEED_000 / SEED_002 when a user's document reports this case
    label: str = ""  # how the seed (or we) name it, e.g. "nn.Conv2d 3x3, padding 1"
    min_opset: int = 0  # the exporter cannot emit the op below this opset (GridSample: 16)
    workaround: str = ""  # shown when the case fails before any compiler sees it (export failure)

    def build(self, **overrides):
        params = {**self.params, **overrides}
        unknown = set(overrides) - set(self.params)
        if unknown:
            raise NpufitError(
                f"case '{self.id}' has no parameter(s) {', '.join(sorted(unknown))} "
                f"(has: {', '.join(self.params) or 'none'})"
            )
        return self.builder(**params)

    def variant_id(self, **overrides) -> str:
        if not overrides:
            return self.id
        return self.id + "[" + ",".join(f"{k}={_fmt(v)}" for k, v in overrides.items()) + "]"


def _fmt(v) -> str:
    return "x".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)


# -- module plumbing (torch imported lazily) ------------------------------------------------


def _module(forward: Callable, **children):
    """An nn.Module whose forward is `forward(self, *inputs)`; children become submodules."""
    import torch

    class ProbeCase(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in children.items():
                setattr(self, k, v)

        def forward(self, *xs):
            return forward(self, *xs)

    torch.manual_seed(0)
    return ProbeCase().eval()


def _x(*shape):
    import torch

    torch.manual_seed(0)
    return torch.randn(*shape)


def _nn():
    import torch

    return torch, torch.nn, torch.nn.functional


# -- builders (module-level so parallel workers can pickle the case table) ---------------------


def conv2d(kernel=3, stride=1, padding=1, dilation=1, groups=1, cin=8, cout=16, size=16):
    _, nn, _ = _nn()
    return _module(lambda m, x: m.conv(x), conv=nn.Conv2d(cin, cout, kernel, stride, padding, dilation, groups)), (
        _x(1, cin, size, size),
    )


def conv_transpose2d(kernel=2, stride=2, cin=8, cout=8, size=8):
    _, nn, _ = _nn()
    return _module(lambda m, x: m.conv(x), conv=nn.ConvTranspose2d(cin, cout, kernel, stride)), (
        _x(1, cin, size, size),
    )


def conv1d(kernel=3, padding=1, cin=8, cout=16, length=32):
    _, nn, _ = _nn()
    return _module(lambda m, x: m.conv(x), conv=nn.Conv1d(cin, cout, kernel, padding=padding)), (_x(1, cin, length),)


def pool2d(kind="max", kernel=2, stride=2, padding=0, size=16, functional=False, ceil_mode=False):
    _, nn, F = _nn()
    if functional:
        return _module(lambda m, x: F.max_pool2d(x, kernel, stride, padding)), (_x(1, 8, size, size),)
    layer = (
        nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil_mode)
        if kind == "max"
        else nn.AvgPool2d(kernel, stride, padding, ceil_mode=ceil_mode)
    )
    return _module(lambda m, x: m.pool(x), pool=layer), (_x(1, 8, size, size),)


def adaptive_pool2d(kind="avg", output=1, size=16):
    _, nn, _ = _nn()
    layer = nn.AdaptiveAvgPool2d(output) if kind == "avg" else nn.AdaptiveMaxPool2d(output)
    return _module(lambda m, x: m.pool(x), pool=layer), (_x(1, 8, size, size),)


MATH_OPS = ("abs", "sqrt", "exp", "log", "neg", "reciprocal", "floor", "sin")
POSITIVE_ONLY = {"sqrt", "log", "reciprocal"}  # these get a positive input


def activation(name="relu"):
    torch, nn, F = _nn()
    fns = {
        "relu": lambda m, x: F.relu(x),
        "leaky_relu": lambda m, x: F.leaky_relu(x, 0.1),
        "sigmoid": lambda m, x: torch.sigmoid(x),
        "tanh": lambda m, x: torch.tanh(x),
        "hardswish": lambda m, x: m.act(x),
        "hardsigmoid": lambda m, x: m.act(x),
        "gelu": lambda m, x: F.gelu(x),
        "gelu_tanh": lambda m, x: F.gelu(x, approximate="tanh"),
        "elu": lambda m, x: F.elu(x),
        "prelu": lambda m, x: m.act(x),
        "silu_mul": lambda m, x: x * torch.sigmoid(x),
        "selu": lambda m, x: F.selu(x),
        "erf": lambda m, x: torch.erf(x),
        "softmax": lambda m, x: torch.softmax(x, dim=1),
        **{n: (lambda f: lambda m, x: f(x))(getattr(torch, n)) for n in MATH_OPS},
    }
    children = {
        "hardswish": {"act": nn.Hardswish()},
        "hardsigmoid": {"act": nn.Hardsigmoid()},
        "prelu": {"act": nn.PReLU(8)},
    }.get(name, {})
    x = _x(1, 8, 16, 16)
    return _module(fns[name], **children), (x.abs() + 0.5 if name in POSITIVE_ONLY else x,)


def softmax(axis=1):
    torch, _, _ = _nn()
    return _module(lambda m, x: torch.softmax(x, dim=axis)), (_x(1, 8, 16, 16),)


def pixel_shuffle(factor=2, inverse=False):
    """PixelShuffle exports as DepthToSpace (CRD); PixelUnshuffle as SpaceToDepth, or reshape/transpose."""
    _, _, F = _nn()
    if inverse:
        return _module(lambda m, x: F.pixel_unshuffle(x, factor)), (_x(1, 8, 16, 16),)
    return _module(lambda m, x: F.pixel_shuffle(x, factor)), (_x(1, 8 * factor * factor, 8, 8),)


def norm(kind="batch"):
    _, nn, _ = _nn()
    layer = {"batch": nn.BatchNorm2d(8), "layer": nn.LayerNorm(16), "instance": nn.InstanceNorm2d(8)}[kind]
    return _module(lambda m, x: m.norm(x), norm=layer), (_x(1, 8, 16, 16),)


def linear(fin=64, fout=32):
    _, nn, _ = _nn()
    return _module(lambda m, x: m.fc(x), fc=nn.Linear(fin, fout)), (_x(1, fin),)


def flatten_linear(channels=8, size=4, start_dim=1):
    """conv -> nn.Flatten -> Linear: the classifier head of seed 000."""
    _, nn, _ = _nn()
    fin = channels * size * size if start_dim == 1 else size * size

    def fwd(m, x):
        return m.fc(m.flat(m.conv(x)))

    return _module(fwd, conv=nn.Conv2d(channels, channels, 1), flat=nn.Flatten(start_dim), fc=nn.Linear(fin, 10)), (
        _x(1, channels, size, size),
    )


def binary(op="add", operand="tensor"):
    torch, _, _ = _nn()
    fns = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    f = fns[op]
    if operand == "tensor":
        return _module(lambda m, a, b: f(a, b)), (_x(1, 8, 16, 16), _x(1, 8, 16, 16) + 3.0)
    return _module(lambda m, a: f(a, 2.0)), (_x(1, 8, 16, 16),)


def cat(axis=1):
    torch, _, _ = _nn()
    return _module(lambda m, a, b: torch.cat([a, b], axis)), (_x(1, 8, 16, 16), _x(1, 8, 16, 16))


def squeeze():
    """Global pooling then x.squeeze(-1).squeeze(-1), as seed 000 wrote it."""
    _, nn, _ = _nn()
    return _module(lambda m, x: m.gap(x).squeeze(-1).squeeze(-1), gap=nn.AdaptiveAvgPool2d(1)), (_x(1, 8, 16, 16),)


def permute(perm=(0, 2, 3, 1), rank=4, size=16, channels=8, inside=False):
    """x.permute(perm); inside=True puts it between a 1x1 conv and a ReLU, so it reorders an NPU tensor rather
    than a model input or output (which a toolkit may fold into its input/output layout conversion)."""
    shape = (1, channels, size, size) if rank == 4 else (1, 2, 4, 8, 8)
    if inside:
        _, nn, F = _nn()
        return _module(lambda m, x: F.relu(m.conv(x).permute(*perm)), conv=nn.Conv2d(channels, channels, 1)), (
            _x(*shape),
        )
    return _module(lambda m, x: x.permute(*perm)), (_x(*shape),)


def zeropad2d(pad=1):
    _, nn, _ = _nn()
    return _module(lambda m, x: m.pad(x), pad=nn.ZeroPad2d(pad)), (_x(1, 8, 16, 16),)


def clamp(lo=0.0, hi=6.0):
    return _module(lambda m, x: x.clamp(lo, hi)), (_x(1, 8, 16, 16),)


def reshape(shape=(1, 8, 32, 8), in_shape=(1, 8, 16, 16)):
    return _module(lambda m, x: x.reshape(*shape)), (_x(*in_shape),)


def conv_flatten(channels=3, size=2, start_dim=1):
    """conv 1x1 -> Flatten as the model output: [1, channels*size*size] (a classifier's last reshape), or
    [1, channels, size*size] with start_dim=2 (a detection head's)."""
    _, nn, _ = _nn()
    return _module(lambda m, x: m.flat(m.conv(x)), conv=nn.Conv2d(8, channels, 1), flat=nn.Flatten(start_dim)), (
        _x(1, 8, size, size),
    )


def flatten_from(start_dim=2):
    """x.flatten(start_dim) on an NCHW tensor (flatten(2): the rank-3 [N, C, H*W] of YOLO heads)."""
    return _module(lambda m, x: x.flatten(start_dim)), (_x(1, 8, 16, 16),)


def interpolate(mode="bilinear", scale=2):
    _, _, F = _nn()
    kw = {"align_corners": False} if mode == "bilinear" else {}
    return _module(lambda m, x: F.interpolate(x, scale_factor=scale, mode=mode, **kw)), (_x(1, 8, 8, 8),)


def dropout2d():
    _, nn, _ = _nn()
    return _module(lambda m, x: m.drop(m.conv(x)), conv=nn.Conv2d(8, 8, 3, padding=1), drop=nn.Dropout2d(0.2)), (
        _x(1, 8, 16, 16),
    )


def residual_block():
    _, nn, F = _nn()

    def fwd(m, x):
        return F.relu(m.b2(m.c2(F.relu(m.b1(m.c1(x))))) + x)

    return _module(
        fwd,
        c1=nn.Conv2d(8, 8, 3, padding=1),
        b1=nn.BatchNorm2d(8),
        c2=nn.Conv2d(8, 8, 3, padding=1),
        b2=nn.BatchNorm2d(8),
    ), (_x(1, 8, 16, 16),)


def dense_concat():
    torch, nn, F = _nn()

    def fwd(m, x):
        y = torch.cat([x, F.relu(m.c1(x))], 1)
        return torch.cat([y, F.relu(m.c2(y))], 1)

    return _module(fwd, c1=nn.Conv2d(8, 8, 3, padding=1), c2=nn.Conv2d(16, 8, 3, padding=1)), (_x(1, 8, 16, 16),)


def simple_attention():
    """Spatial gating: x * sigmoid(conv1x1(x)) (the element-wise attention of seed 000)."""
    torch, nn, _ = _nn()
    return _module(lambda m, x: x * torch.sigmoid(m.att(x)), att=nn.Conv2d(8, 1, 1)), (_x(1, 8, 16, 16),)


def mean_reshape_linear(dim=(2, 3), keepdim=False):
    """torch.mean(dim=...) -> reshape -> Linear (seed 000: 'Invalid kernel shape' at Hailo parse)."""
    torch, nn, _ = _nn()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    kept = [d for d in range(4) if d not in dims and d != 0]
    fin = 1
    for d in kept:
        fin *= (1, 8, 16, 16)[d]
    return _module(
        lambda m, x: m.fc(torch.mean(m.conv(x), dim=dims, keepdim=keepdim).reshape(1, -1)),
        conv=nn.Conv2d(8, 8, 3, padding=1),
        fc=nn.Linear(fin, 10),
    ), (_x(1, 8, 16, 16),)


def view_noncontiguous():
    """`x.permute(...).view(...)`: seed 000's export failure. PyTorch itself refuses a view of a
    non-contiguous tensor, so the export fails before any ONNX exists (recorded, not faked)."""
    _, nn, _ = _nn()
    return _module(lambda m, x: m.conv(x).permute(0, 2, 3, 1).view(1, -1), conv=nn.Conv2d(8, 8, 1)), (_x(1, 8, 8, 8),)


def grid_sample(out=8):
    torch, _, F = _nn()
    torch.manual_seed(0)
    grid = torch.rand(1, out, out, 2) * 2 - 1
    return _module(lambda m, x: F.grid_sample(x, grid, align_corners=False)), (_x(1, 8, 16, 16),)


def gather_elements(axis=1, narrow_other=False, indices="const", rank=4):
    """torch.gather with indices 4 long on the gather axis; narrow_other also shortens another axis.
    indices='runtime' computes them in the model (top-4 along the axis, as a detector's query selection does);
    rank=3 gathers from [1, 16, 16] (RT-DETR gathers boxes from [1, queries, 4])."""
    torch, _, _ = _nn()
    x = _x(*((1, 8, 16, 16) if rank == 4 else (1, 16, 16)))
    shape = list(x.shape)
    shape[axis] = 4
    if narrow_other:
        other = 2 if axis != 2 else rank - 1
        shape[other] = 4
    if indices == "runtime":
        return _module(lambda m, x: torch.gather(x, axis, x.topk(4, dim=axis).indices)), (x,)
    idx = torch.zeros(*shape, dtype=torch.long)
    return _module(lambda m, x: torch.gather(x, axis, idx)), (x,)


def topk(k=3, axis=1):
    return _module(lambda m, x: x.topk(k, dim=axis)[0]), (_x(1, 8, 16, 16),)


def reduce_max(axis=1, keepdim=False):
    torch, _, _ = _nn()
    return _module(lambda m, x: torch.amax(x, dim=axis, keepdim=keepdim)), (_x(1, 8, 16, 16),)


def slice_axis(axis=4, rank=5):
    shape = (1, 2, 4, 16, 16) if rank == 5 else (1, 8, 16, 16)
    index = [slice(None)] * rank
    stop = min(6, shape[axis])
    index[axis] = slice(min(2, stop - 1), stop)  # never empty: axis 1 of the 5-D input has only 2 entries
    return _module(lambda m, x: x[tuple(index)]), (_x(*shape),)


def tile(repeats=(2, 1, 1, 1)):
    return _module(lambda m, x: x.repeat(*repeats)), (_x(1, 8, 8, 8),)


def mod(divisor=3.0):
    torch, _, _ = _nn()
    return _module(lambda m, x: torch.fmod(x, divisor)), (_x(1, 8, 16, 16),)


def expand(channels=8):
    return _module(lambda m, x: x[:, :1].expand(-1, channels, -1, -1)), (_x(1, 8, 16, 16),)


def where():
    torch, _, _ = _nn()
    return _module(lambda m, x: torch.where(x > 0, x, x * 0.1)), (_x(1, 8, 16, 16),)


def rnn(cell="lstm", bidirectional=False, hidden=16, features=8, seq_len=16):
    _, nn, _ = _nn()
    layer = (nn.GRU if cell == "gru" else nn.LSTM)(features, hidden, batch_first=True, bidirectional=bidirectional)
    return _module(lambda m, x: m.rnn(x)[0], rnn=layer), (_x(1, seq_len, features),)


def head_split(heads=4, tokens=16, dim=32):
    """Multi-head attention's [B, T, C] -> [B, T, h, d] -> [B, h, T, d] (reshape + Transpose [0,2,1,3])."""
    return _module(lambda m, x: x.reshape(1, tokens, heads, dim // heads).permute(0, 2, 1, 3)), (_x(1, tokens, dim),)


def argmax(axis=1):
    torch, _, _ = _nn()
    return _module(lambda m, x: torch.argmax(x, dim=axis, keepdim=True)), (_x(1, 8, 16, 16),)


# -- the table ---------------------------------------------------------------------------------


def _c(id, family, ops, builder, seed="", label="", grid=None, min_opset=0, workaround="", **params) -> Case:
    # a swept parameter needs its default here, or the case's own run would not know it
    assert set(grid or {}) <= set(params), f"probe case {id}: grid {sorted(set(grid) - set(params))} has no default"
    return Case(id, family, tuple(ops), builder, params, grid or {}, seed, label or id, min_opset, workaround)


_PERMS = tuple(p for p in itertools.permutations(range(4)) if p[0] == 0) + ((1, 0, 2, 3),)

CASES: tuple[Case, ...] = (
    # I. convolution (seed 000)
    _c("conv2d_1x1", "convolution", ["nn.Conv2d"], conv2d, SEED_000, "nn.Conv2d 1x1", kernel=1, padding=0),
    _c(
        "conv2d_3x3",
        "convolution",
        ["nn.Conv2d"],
        conv2d,
        SEED_000,
        "nn.Conv2d 3x3, padding 1",
        grid={
            "kernel": (1, 3, 5, 7, 9, 11),
            "stride": (1, 2, 3, 4, 7, 8, 16),
            "dilation": (1, 2, 3),
            "cout": (8, 64, 256),
        },
        kernel=3,
        padding=1,
        stride=1,
        dilation=1,
        cout=16,
    ),
    _c(
        "conv2d_5x5_s2",
        "convolution",
        ["nn.Conv2d"],
        conv2d,
        SEED_000,
        "nn.Conv2d 5x5, stride 2, padding 2",
        kernel=5,
        stride=2,
        padding=2,
    ),
    _c(
        "conv2d_depthwise",
        "convolution",
        ["nn.Conv2d(groups=C)"],
        conv2d,
        SEED_000,
        "depthwise nn.Conv2d (groups=in_channels)",
        grid={"kernel": (3, 5, 7, 9, 11)},
        kernel=3,
        padding=1,
        groups=8,
        cout=8,
    ),
    _c(
        "conv2d_depthwise_large",
        "convolution",
        ["nn.Conv2d(groups=C)"],
        conv2d,
        "",
        "depthwise nn.Conv2d, large kernel, padding 'same'",
        grid={"kernel": (13, 15, 17, 21, 25, 31)},
        kernel=13,
        padding="same",
        groups=8,
        cout=8,
        size=32,
    ),
    _c(
        "conv2d_grouped",
        "convolution",
        ["nn.Conv2d(groups=2)"],
        conv2d,
        SEED_000,
        "grouped nn.Conv2d (1 < groups < in_channels)",
        kernel=3,
        padding=1,
        groups=2,
    ),
    _c(
        "conv2d_dilated",
        "convolution",
        ["nn.Conv2d(dilation=2)"],
        conv2d,
        SEED_000,
        "dilated nn.Conv2d (dilation 2)",
        kernel=3,
        padding=2,
        dilation=2,
    ),
    _c(
        "conv_transpose2d",
        "convolution",
        ["nn.ConvTranspose2d"],
        conv_transpose2d,
        SEED_000,
        "nn.ConvTranspose2d",
        grid={"kernel": (2, 3, 4), "stride": (1, 2)},
        kernel=2,
        stride=2,
    ),
    _c(
        "conv1d",
        "convolution",
        ["nn.Conv1d"],
        conv1d,
        SEED_000,
        "nn.Conv1d",
        grid={"kernel": (1, 3, 5)},
        kernel=3,
        padding=1,
    ),
    # II. pooling
    _c(
        "maxpool2d_k2s2",
        "pooling",
        ["nn.MaxPool2d"],
        pool2d,
        SEED_000,
        "nn.MaxPool2d 2x2, stride 2",
        grid={"kernel": (2, 3, 5, 7, 8, 9, 12, 16), "stride": (1, 2), "padding": (0, 1)},
        kind="max",
        kernel=2,
        stride=2,
        padding=0,
    ),
    _c(
        "maxpool2d_k3s1p1",
        "pooling",
        ["nn.MaxPool2d"],
        pool2d,
        SEED_000,
        "nn.MaxPool2d 3x3, stride 1, padding 1",
        kind="max",
        kernel=3,
        stride=1,
        padding=1,
    ),
    _c(
        "avgpool2d_k2s2",
        "pooling",
        ["nn.AvgPool2d"],
        pool2d,
        SEED_000,
        "nn.AvgPool2d 2x2, stride 2",
        kind="avg",
        kernel=2,
        stride=2,
        padding=0,
    ),
    _c(
        "avgpool2d_k3s1p1",
        "pooling",
        ["nn.AvgPool2d"],
        pool2d,
        SEED_000,
        "nn.AvgPool2d 3x3, stride 1, padding 1",
        kind="avg",
        kernel=3,
        stride=1,
        padding=1,
    ),
    _c(
        "adaptive_maxpool2d",
        "pooling",
        ["nn.AdaptiveMaxPool2d"],
        adaptive_pool2d,
        SEED_000,
        "nn.AdaptiveMaxPool2d (4, 4)",
        kind="max",
        output=4,
    ),
    _c(
        "adaptive_avgpool2d",
        "pooling",
        ["nn.AdaptiveAvgPool2d"],
        adaptive_pool2d,
        SEED_000,
        "nn.AdaptiveAvgPool2d (1, 1)",
        kind="avg",
        output=1,
    ),
    _c(
        "avgpool2d_ceil",
        "pooling",
        ["nn.AvgPool2d(ceil_mode=True)"],
        pool2d,
        "",
        "nn.AvgPool2d 3x3, stride 2, ceil_mode=True",
        grid={"ceil_mode": (False, True), "kind": ("avg", "max")},
        kind="avg",
        kernel=3,
        stride=2,
        padding=0,
        ceil_mode=True,
    ),
    _c(
        "maxpool2d_large",
        "pooling",
        ["nn.MaxPool2d"],
        pool2d,
        "",
        "nn.MaxPool2d, large kernel on 64x64, stride 2",
        grid={"kernel": (16, 24, 32, 48, 64)},
        kind="max",
        kernel=16,
        stride=2,
        padding=0,
        size=64,
    ),
    _c("f_max_pool2d", "pooling", ["F.max_pool2d"], pool2d, SEED_000, "F.max_pool2d", kind="max", functional=True),
    # III. activations
    *(
        _c(n, "activation", [lbl], activation, SEED_000, lbl, name=n)
        for n, lbl in (
            ("relu", "F.relu"),
            ("leaky_relu", "F.leaky_relu"),
            ("sigmoid", "torch.sigmoid"),
            ("tanh", "torch.tanh"),
            ("hardswish", "nn.Hardswish"),
            ("hardsigmoid", "nn.Hardsigmoid"),
            ("gelu", "F.gelu"),
            ("elu", "F.elu"),
            ("prelu", "nn.PReLU"),
            ("silu_mul", "x * torch.sigmoid(x) (SiLU)"),
        )
    ),
    # IV. normalization
    _c("batchnorm2d", "normalization", ["nn.BatchNorm2d"], norm, SEED_000, "nn.BatchNorm2d", kind="batch"),
    _c("layernorm", "normalization", ["nn.LayerNorm"], norm, SEED_000, "nn.LayerNorm", kind="layer"),
    _c("instancenorm2d", "normalization", ["nn.InstanceNorm2d"], norm, SEED_000, "nn.InstanceNorm2d", kind="instance"),
    # V. linear / flatten
    _c(
        "linear",
        "linear",
        ["nn.Linear"],
        linear,
        SEED_000,
        "nn.Linear",
        grid={"fin": (64, 1024, 4096)},
        fin=64,
        fout=32,
    ),
    _c(
        "flatten",
        "linear",
        ["nn.Flatten"],
        flatten_linear,
        SEED_000,
        "nn.Flatten (conv -> flatten -> Linear)",
        start_dim=1,
    ),
    # VI. element-wise and tensor ops
    *(
        _c(
            op,
            "elementwise",
            [sym],
            binary,
            SEED_000,
            f"{sym} (torch.{op})",
            grid={"operand": ("tensor", "constant")},
            op=op,
            operand="tensor",
        )
        for op, sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"))
    ),
    _c("cat", "tensor", ["torch.cat"], cat, SEED_000, "torch.cat", grid={"axis": (0, 1, 2, 3)}, axis=1),
    _c("squeeze", "tensor", ["torch.squeeze"], squeeze, SEED_000, "torch.squeeze (x.squeeze(-1).squeeze(-1))"),
    _c(
        "permute",
        "tensor",
        ["torch.permute"],
        permute,
        SEED_000,
        "torch.permute (0, 2, 3, 1)",
        grid={"perm": _PERMS},
        perm=(0, 2, 3, 1),
    ),
    _c("zeropad2d", "tensor", ["nn.ZeroPad2d"], zeropad2d, SEED_000, "nn.ZeroPad2d", pad=1),
    _c("clamp", "tensor", ["torch.clamp"], clamp, SEED_000, "torch.clamp"),
    _c(
        "reshape",
        "tensor",
        ["torch.reshape"],
        reshape,
        SEED_000,
        "torch.reshape [1,8,16,16] -> [1,8,32,8]",
        grid={
            "shape": (
                (1, 8, 32, 8),
                (1, 16, 8, 16),
                (1, 2048),
                (1, 8, 256),
                (1, 8, 16, 4, 4),
                (1, 512, 4),
                (1, 128, 16),
                (1, 1024, 2),
                (1, 8, 16, 16, 1),
            )
        },
        shape=(1, 8, 32, 8),
    ),
    # VII. resize
    _c(
        "interpolate_bilinear",
        "resize",
        ["F.interpolate(bilinear)"],
        interpolate,
        SEED_000,
        "F.interpolate (bilinear)",
        grid={"scale": (1.5, 2, 3, 4, 8)},
        mode="bilinear",
        scale=2,
    ),
    _c(
        "interpolate_nearest",
        "resize",
        ["F.interpolate(nearest)"],
        interpolate,
        SEED_000,
        "F.interpolate (nearest)",
        grid={"scale": (1.5, 2, 3, 4, 8)},
        mode="nearest",
        scale=2,
    ),
    # VIII. patterns
    _c("dropout2d", "pattern", ["nn.Dropout2d"], dropout2d, SEED_000, "nn.Dropout2d (no-op at inference)"),
    _c(
        "residual_block",
        "pattern",
        ["residual add"],
        residual_block,
        SEED_000,
        "residual block (skip connection by addition)",
    ),
    _c(
        "dense_concat",
        "pattern",
        ["dense concat"],
        dense_concat,
        SEED_000,
        "dense connection (skip connection by concatenation)",
    ),
    _c(
        "simple_attention",
        "pattern",
        ["x * sigmoid(conv(x))"],
        simple_attention,
        SEED_000,
        "simple attention (element-wise gating)",
    ),
    # seed 000's failures
    _c(
        "mean_dim_linear",
        "reduction",
        ["torch.mean(dim)", "torch.reshape", "nn.Linear"],
        mean_reshape_linear,
        SEED_000,
        "torch.mean(dim=...) -> reshape -> nn.Linear",
        grid={"dim": ((2, 3), 2, 3)},
        dim=(2, 3),
        keepdim=False,
    ),
    _c(
        "view",
        "tensor",
        ["torch.Tensor.view"],
        view_noncontiguous,
        SEED_000,
        "torch.Tensor.view (on a permuted tensor)",
        workaround="use torch.reshape (or torch.squeeze) instead of view: both export and compile",
    ),
    # seed 002 (DEIMv2 on the Hailo parser)
    _c("grid_sample", "sampling", ["F.grid_sample"], grid_sample, SEED_002, "GridSample (F.grid_sample)", min_opset=16),
    _c(
        "gather_elements",
        "indexing",
        ["torch.gather"],
        gather_elements,
        SEED_002,
        "GatherElements (torch.gather)",
        grid={"axis": (1, 2, 3), "narrow_other": (False, True), "indices": ("const", "runtime"), "rank": (4, 3)},
        axis=1,
        narrow_other=False,
        indices="const",
        rank=4,
    ),
    _c("topk", "indexing", ["torch.topk"], topk, SEED_002, "TopK (torch.topk)", grid={"k": (1, 3)}, k=3, axis=1),
    _c(
        "reduce_max_keepdims0",
        "reduction",
        ["torch.amax(keepdim=False)"],
        reduce_max,
        SEED_002,
        "ReduceMax keepdims=0",
        grid={"axis": (1, 2, 3), "keepdim": (False, True)},
        axis=1,
        keepdim=False,
    ),
    _c(
        "slice_axis4_5d",
        "tensor",
        ["tensor[..., a:b] on 5-D"],
        slice_axis,
        SEED_002,
        "Slice on axis 4 of a 5-D tensor",
        grid={"axis": (1, 2, 3, 4)},
        axis=4,
        rank=5,
    ),
    _c(
        "slice_channel",
        "tensor",
        ["tensor[:, a:b] (channels)"],
        slice_axis,
        "",
        "Slice on the channel axis of a 4-D tensor",
        grid={"axis": (1, 2, 3)},
        axis=1,
        rank=4,
    ),
    _c(
        "tile_batch",
        "tensor",
        ["Tensor.repeat (batch)"],
        tile,
        SEED_002,
        "Tile over the batch axis",
        grid={
            "repeats": (
                (2, 1, 1, 1),
                (1, 2, 1, 1),
                (1, 4, 1, 1),
                (1, 1, 2, 1),
                (1, 1, 1, 2),
                (1, 1, 2, 2),
                (1, 2, 2, 1),
            )
        },
        repeats=(2, 1, 1, 1),
    ),
    _c("mod", "elementwise", ["torch.fmod"], mod, SEED_002, "Mod (torch.fmod)"),
    # sequence models (seed 003's regressors; targets.md §1c LSTM)
    _c("gru", "sequence", ["nn.GRU"], rnn, "", "nn.GRU", cell="gru"),
    _c("lstm", "sequence", ["nn.LSTM"], rnn, "", "nn.LSTM", cell="lstm"),
    _c(
        "bilstm",
        "sequence",
        ["nn.LSTM(bidirectional)"],
        rnn,
        "",
        "bidirectional nn.LSTM",
        cell="lstm",
        bidirectional=True,
    ),
    # targets.md §1c evidence beyond the seeds
    _c("erf", "activation", ["torch.erf"], activation, "", "torch.erf (lone Erf)", name="erf"),
    _c("selu", "activation", ["F.selu"], activation, "", "F.selu", name="selu"),
    _c(
        "gelu_tanh",
        "activation",
        ["F.gelu(approximate='tanh')"],
        activation,
        "",
        "F.gelu (tanh approximation)",
        name="gelu_tanh",
    ),
    _c(
        "softmax", "activation", ["torch.softmax(dim=1)"], activation, "", "torch.softmax over channels", name="softmax"
    ),
    _c(
        "softmax_axis",
        "activation",
        ["torch.softmax(dim)"],
        softmax,
        "",
        "torch.softmax along one axis of NCHW",
        grid={"axis": (1, 2, 3)},
        axis=2,
    ),
    # element-wise math (targets.md op lists disagree across vendors and toolkit versions)
    *(_c(n, "math", [f"torch.{n}"], activation, "", f"torch.{n}", name=n) for n in MATH_OPS),
    _c("pixel_shuffle", "tensor", ["F.pixel_shuffle"], pixel_shuffle, "", "F.pixel_shuffle (DepthToSpace)", factor=2),
    _c(
        "pixel_unshuffle",
        "tensor",
        ["F.pixel_unshuffle"],
        pixel_shuffle,
        "",
        "F.pixel_unshuffle (SpaceToDepth)",
        factor=2,
        inverse=True,
    ),
    _c("expand", "tensor", ["Tensor.expand"], expand, "", "Tensor.expand (channel broadcast)"),
    _c("where", "tensor", ["torch.where"], where, "", "torch.where"),
    _c(
        "transpose_0213",
        "tensor",
        ["torch.permute(0, 2, 1, 3)"],
        permute,
        "",
        "torch.permute (0, 2, 1, 3)",
        perm=(0, 2, 1, 3),
    ),
    # RK3588's documented transpose limits depend on C, H and W ("falls back only above some HxW"):
    # one case per permutation
    *(
        _c(
            f"transpose_{''.join(map(str, p))}_size",
            "tensor",
            [f"torch.permute{p}"],
            permute,
            "",
            f"conv -> torch.permute {p} -> relu over spatial sizes",
            grid={"size": (16, 32, 48, 64, 96, 128, 256), "channels": (8, 64, 256)},
            perm=p,
            size=16,
            channels=8,
            inside=True,
        )
        for p in ((0, 1, 3, 2), (0, 2, 3, 1), (0, 3, 1, 2))
    ),
    _c(
        "permute_5d",
        "tensor",
        ["torch.permute on 5-D"],
        permute,
        "",
        "torch.permute of a 5-D tensor",
        perm=(0, 1, 2, 4, 3),
        rank=5,
    ),
    _c(
        "flatten_output",
        "tensor",
        ["nn.Flatten (model output)"],
        conv_flatten,
        "",
        "conv -> nn.Flatten as the model output [1, 12]",
        grid={"channels": (2, 3, 4, 6), "start_dim": (1, 2)},
        channels=3,
        size=2,
        start_dim=1,
    ),
    _c(
        "flatten_output_1x1",
        "tensor",
        ["nn.Flatten (model output)"],
        conv_flatten,
        "",
        "conv -> nn.Flatten of a 1x1 map as the model output",
        grid={"channels": (8, 12, 16, 24)},
        channels=12,
        size=1,
    ),
    _c("flatten_rank3", "tensor", ["Tensor.flatten(2)"], flatten_from, "", "x.flatten(2) -> [N, C, H*W]", start_dim=2),
    _c(
        "head_split",
        "tensor",
        ["reshape + permute (attention heads)"],
        head_split,
        "",
        "attention head split [B,T,C] -> [B,h,T,d]",
    ),
    _c(
        "argmax",
        "reduction",
        ["torch.argmax(dim=1)"],
        argmax,
        "",
        "torch.argmax over channels",
        grid={"axis": (1, 2, 3)},
        axis=1,
    ),
    _c(
        "reduce_max_channel",
        "reduction",
        ["torch.amax(dim=1, keepdim=True)"],
        reduce_max,
        "",
        "ReduceMax over channels, keepdims=1",
        axis=1,
        keepdim=True,
    ),
)

BY_ID = {c.id: c for c in CASES}


def select(pattern: str | None = None) -> list[Case]:
    """Cases whose id, family or seed matches a comma-separated list of glob patterns."""
    if not pattern:
        return list(CASES)
    pats = [p.strip().lower() for p in pattern.split(",") if p.strip()]
    out = [
        c
        for c in CASES
        if any(
            fnmatch.fnmatchcase(c.id, p)
            or fnmatch.fnmatchcase(c.family, p)
            or (c.seed and fnmatch.fnmatchcase(_group_key(c.seed), _group_key(_LEGACY.get(p, p))))
            for p in pats
        )
    ]
    if not out:
        raise NpufitError(
            f"--cases '{pattern}' matches no probe case (ids, families or the groups "
            f"'{_group_key(SEED_000)}'/'{_group_key(SEED_002)}'; see 'npufit probe --list')"
        )
    return out


def sweep_variants(case: Case) -> list[dict[str, Any]]:
    """One-factor-at-a-time grid: each swept parameter walks its values, the others stay at default."""
    out: list[dict[str, Any]] = []
    for name, values in case.grid.items():
        for v in values:
            out.append({name: v})
    return out
