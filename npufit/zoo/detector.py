"""A small YOLO-style detector in two activation variants (seed 001: ReLU vs LeakyReLU on Ethos-N).

Conv-BN-Act blocks, a stride-2 backbone, an upsample+concat neck and two 1x1 detection heads.
"""
from __future__ import annotations

import os

from .export import export_onnx

ACTIVATIONS = ("relu", "leakyrelu")


def build(act: str = "relu", width: int = 16, num_outputs: int = 8):
    import torch
    from torch import nn

    if act not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}")

    def block(cin, cout, stride=1):
        a = nn.ReLU() if act == "relu" else nn.LeakyReLU(0.1)
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), a)

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.stem = block(3, w, 2)
            self.s1 = nn.Sequential(block(w, 2 * w, 2), block(2 * w, 2 * w))
            self.s2 = nn.Sequential(block(2 * w, 4 * w, 2), block(4 * w, 4 * w))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.neck = block(6 * w, 2 * w)
            self.head_small = nn.Conv2d(2 * w, num_outputs, 1)
            self.head_large = nn.Conv2d(4 * w, num_outputs, 1)

        def forward(self, images):
            x1 = self.s1(self.stem(images))
            x2 = self.s2(x1)
            n = self.neck(torch.cat([x1, self.up(x2)], 1))
            return self.head_small(n), self.head_large(x2)

    torch.manual_seed(0)
    return Detector().eval()


def export(act: str, path: str | os.PathLike, size: int = 64, opset: int = 13, **kw) -> bytes:
    import torch

    return export_onnx(build(act, **kw), torch.randn(1, 3, size, size), path, opset, ["images"], ["p3", "p4"])
