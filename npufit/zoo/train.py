"""Train a seed-003 regressor for a few epochs on CPU, recording train/validation loss per epoch.

Seed 003's train_gru.py / train_lstm.py / train_bilstm.py were three copies of one loop; here it is one
function over the zoo's kinds. Deterministic for a given seed (single-process data order, seeded init).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import NpufitError
from ..util.io import atomic_path
from ..util.progress import track
from .data import SeriesDataset
from .timeseries import KINDS, build

SCHEMA = "npufit.train/1"


@dataclass
class TrainResult:
    kind: str
    settings: dict[str, Any]
    history: list[dict[str, float]] = field(default_factory=list)  # one row per epoch
    seconds: float = 0.0
    parameters: int = 0
    baseline_val_loss: float = 0.0  # MSE of predicting "no change" (last value): the bar a model must clear

    @property
    def final(self) -> dict[str, float]:
        return self.history[-1] if self.history else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "kind": self.kind,
            "settings": self.settings,
            "history": self.history,
            "final_train_loss": self.final.get("train_loss"),
            "final_val_loss": self.final.get("val_loss"),
            "baseline_val_loss": self.baseline_val_loss,
            "parameters": self.parameters,
            "seconds": round(self.seconds, 3),
        }

    def to_markdown(self) -> str:
        rows = ["| epoch | train MSE | val MSE |", "|---:|---:|---:|"]
        rows += [f"| {h['epoch']} | {h['train_loss']:.5f} | {h['val_loss']:.5f} |" for h in self.history]
        return f"**{self.kind}** ({self.parameters} parameters, {self.seconds:.1f} s)\n\n" + "\n".join(rows) + "\n"


def build_for(kind: str, dataset: SeriesDataset, hidden: int = 32, layers: int = 1, seed: int = 0):
    if kind not in KINDS:
        raise NpufitError(f"unknown zoo model '{kind}' (choose from {', '.join(KINDS)})")
    return build(
        kind,
        features=len(dataset.features),
        hidden=hidden,
        seq_len=dataset.seq_len,
        horizon=dataset.horizon,
        layers=layers,
        seed=seed,
    )


def train(
    kind: str,
    dataset: SeriesDataset,
    epochs: int = 3,
    hidden: int = 32,
    layers: int = 1,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    max_windows: int | None = None,
):
    """Return (trained torch module, TrainResult). MSE loss, Adam, shuffled mini-batches."""
    try:
        import torch
    except ImportError:
        raise NpufitError("training needs PyTorch: pip install 'npufit[torch]' (torch==2.13.0)") from None
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise NpufitError(f"training needs epochs >= 1, batch_size >= 1 and lr > 0 (got {epochs}, {batch_size}, {lr})")
    module = build_for(kind, dataset, hidden, layers, seed)
    xt, yt = torch.from_numpy(dataset.x_train[:max_windows]), torch.from_numpy(dataset.y_train[:max_windows])
    xv, yv = torch.from_numpy(dataset.x_val[:max_windows]), torch.from_numpy(dataset.y_val[:max_windows])
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    loss_fn = torch.nn.MSELoss()
    gen = torch.Generator().manual_seed(seed)
    settings = {
        "epochs": epochs,
        "hidden": hidden,
        "layers": layers,
        "lr": lr,
        "batch_size": batch_size,
        "seed": seed,
        "train_windows": int(len(xt)),
        "val_windows": int(len(xv)),
    }
    result = TrainResult(kind, settings, parameters=sum(p.numel() for p in module.parameters()))
    ti = dataset.features.index(dataset.target)
    result.baseline_val_loss = float(
        np.mean((dataset.x_val[:max_windows, -1, ti : ti + 1] - dataset.y_val[:max_windows]) ** 2)
    )
    t0 = time.perf_counter()
    for epoch in track(range(1, epochs + 1), f"train {kind}", total=epochs):
        module.train()
        order, total = torch.randperm(len(xt), generator=gen), 0.0
        for i in range(0, len(xt), batch_size):
            idx = order[i : i + batch_size]
            opt.zero_grad()
            loss = loss_fn(module(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        module.eval()
        with torch.no_grad():
            val = float(loss_fn(module(xv), yv))
        result.history.append({"epoch": epoch, "train_loss": total / len(xt), "val_loss": val})
    result.seconds = time.perf_counter() - t0
    return module, result


def save_weights(module, path: str | os.PathLike) -> Path:
    import torch

    with atomic_path(path) as tmp:
        torch.save(module.state_dict(), tmp)
    return Path(path)


def load_trained(kind: str, weights: str | os.PathLike, dataset: SeriesDataset, hidden: int = 32, layers: int = 1):
    """Rebuild the architecture and load weights saved by save_weights()."""
    import torch

    module = build_for(kind, dataset, hidden, layers)
    module.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return module.eval()
