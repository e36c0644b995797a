"""A small YOLO-style detector in two activation variants (seed 001: ReLU vs LeakyReLU on Ethos-N).

Conv-BN-Act blocks, a stride-2 backbone, an upsample+concat neck and two 1x1 detection heads.
Three structure levels in the spirit of seed 001's "optimisation levels" (their exact contents are not
published; these are npufit's own, each adding layers): 2 = the plain detector; 3 = + CSP-style blocks (a channel
split into two branches and a concat) and an SPPF block (chained 5x5 stride-1 max pools and a concat); 4 = 3 +
YOLOv8-style head outputs flattened to (B, C, H*W).
"""

from __future__ import annotations

import os

from .export import export_onnx

ACTIVATIONS = ("relu", "leakyrelu")
LEVELS = (2, 3, 4)


def build(act: str = "relu", width: int = 16, num_outputs: int = 8, level: int = 2):
    import torch
    from torch import nn

    if act not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")

    def block(cin, cout, stride=1):
        a = nn.ReLU() if act == "relu" else nn.LeakyReLU(0.1)
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), a)

    class CSP(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a, self.b, self.out = block(c // 2, c // 2), block(c // 2, c // 2), block(c, c, 1)

        def forward(self, x):
            h = x.shape[1] // 2
            return self.out(torch.cat([self.a(x[:, :h]), self.b(x[:, h:])], 1))

    class SPPF(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.pool = nn.MaxPool2d(5, 1, 2)
            self.out = block(4 * c, c)

        def forward(self, x):
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.out(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.stem = block(3, w, 2)
            self.s1 = nn.Sequential(block(w, 2 * w, 2), block(2 * w, 2 * w) if level == 2 else CSP(2 * w))
            self.s2 = nn.Sequential(block(2 * w, 4 * w, 2), block(4 * w, 4 * w) if level == 2 else CSP(4 * w))
            self.sppf = SPPF(4 * w) if level >= 3 else nn.Identity()
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.neck = block(6 * w, 2 * w)
            self.head_small = nn.Conv2d(2 * w, num_outputs, 1)
            self.head_large = nn.Conv2d(4 * w, num_outputs, 1)

        def forward(self, images):
            x1 = self.s1(self.stem(images))
            x2 = self.sppf(self.s2(x1))
            n = self.neck(torch.cat([x1, self.up(x2)], 1))
            p3, p4 = self.head_small(n), self.head_large(x2)
            if level >= 4:  # YOLOv8-style head layout: (batch, outputs, cells)
                p3, p4 = p3.flatten(2), p4.flatten(2)
            return p3, p4

    torch.manual_seed(0)
    return Detector().eval()


def export(act: str, path: str | os.PathLike, size: int = 64, opset: int = 13, **kw) -> bytes:
    """kw: width, num_outputs, level (2, 3 or 4)."""
    import torch

    return export_onnx(build(act, **kw), torch.randn(1, 3, size, size), path, opset, ["images"], ["p3", "p4"])
