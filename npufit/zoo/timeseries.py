"""Seed-003 time-series regressors: GRU, LSTM, bidirectional LSTM and a TCN (the conv alternative
seed 000 recommends for NPUs). Input [batch, seq_len, features] -> output [batch, horizon]."""

from __future__ import annotations

import os

from .export import export_onnx

KINDS = ("gru", "lstm", "bilstm", "tcn")


def build(
    kind: str, features: int = 4, hidden: int = 32, seq_len: int = 32, horizon: int = 1, layers: int = 1, seed: int = 0
):
    import torch
    from torch import nn

    class RNNRegressor(nn.Module):
        def __init__(self, cell: str, bidirectional: bool):
            super().__init__()
            rnn = nn.GRU if cell == "gru" else nn.LSTM
            self.rnn = rnn(features, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional)
            self.head = nn.Linear(hidden * (2 if bidirectional else 1), horizon)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.head(y[:, -1, :])

    class TCNRegressor(nn.Module):
        """Dilated causal convolutions over time, 4-D all the way (NPU-friendly, seed 000's advice).

        [N, T, F] is reshaped (not transposed) to [N, 1, T, F]: adding a size-1 axis is a free reshape on
        every target, while a rank-3 transpose is a shuffle layer Hailo's parser rejects. The first conv
        mixes all features with a (3, F) kernel; the rest are (3, 1) kernels dilated along time. The forecast is
        one Linear over every step's features (Flatten + Gemm), so the model weighs recent steps itself: a global
        average pool here threw the most recent values away (demo val MSE 0.157, worse than repeating the last
        value); slicing the last step out is a time-axis Slice Hailo-8 rejects, and a (T, 1) convolution exceeds
        RK3588's 31-tap kernel limit at the demo's T = 32.
        """

        def __init__(self):
            super().__init__()
            blocks, ch = [], 1
            for i, d in enumerate((1, 2, 4)):
                kw = features if i == 0 else 1
                blocks += [nn.ZeroPad2d((0, 0, 2 * d, 0)), nn.Conv2d(ch, hidden, (3, kw), dilation=(d, 1)), nn.ReLU()]
                ch = hidden
            self.body = nn.Sequential(*blocks)
            self.head = nn.Linear(hidden * seq_len, horizon)

        def forward(self, x):
            x = x.reshape(x.shape[0], 1, seq_len, features)  # [N, T, F] -> [N, 1, T, F]
            return self.head(self.body(x).flatten(1))  # [N, hidden, T, 1] -> [N, hidden * T] -> [N, horizon]

    torch.manual_seed(seed)
    if kind == "tcn":
        return TCNRegressor()
    if kind not in KINDS:
        raise ValueError(f"unknown time-series model '{kind}' (choose from {', '.join(KINDS)})")
    return RNNRegressor("gru" if kind == "gru" else "lstm", kind == "bilstm")


def export(
    kind_or_module, path: str | os.PathLike, features: int = 4, seq_len: int = 32, opset: int = 11, **kw
) -> bytes:
    import torch

    module = (
        build(kind_or_module, features=features, seq_len=seq_len, **kw)
        if isinstance(kind_or_module, str)
        else kind_or_module
    )
    return export_onnx(module, torch.randn(1, seq_len, features), path, opset, ["series"], ["forecast"])
