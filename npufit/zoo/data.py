"""Multivariate sensor time series for the seed-003 regressors: a bundled synthetic set (seeded,
generated on the fly, never downloaded) or a user CSV, cut into [seq_len] windows with a forecast target.

The synthetic plant has three hidden processes a real machine has too: a slow daily cycle, a smoothed
random-walk load, and a vibration whose amplitude follows the load. Each sensor mixes them with its own
lag and noise, so the next value of sensor 0 is predictable from the window but not trivially so.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import NpufitError
from ..util.io import atomic_path
from ..util.readers import MiB, read_text


def synthetic(
    length: int = 4000, features: int = 4, seed: int = 0, noise: float = 0.05
) -> tuple[np.ndarray, list[str]]:
    """A [length, features] float32 array of coupled sensor readings, and the sensor names."""
    if length < 16 or features < 1:
        raise NpufitError(
            f"synthetic data needs length >= 16 and features >= 1 (got length={length}, features={features})"
        )
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float64)
    daily = np.sin(2 * np.pi * t / 288.0)  # 5-minute samples: 288 per day
    walk = np.cumsum(rng.standard_normal(length)) * 0.05
    kernel = np.ones(24) / 24.0
    load = np.convolve(walk - walk.mean(), kernel, mode="same")
    vibration = (1.0 + 0.5 * np.tanh(load)) * np.sin(2 * np.pi * t / 7.3 + rng.uniform(0, np.pi))
    latent = np.stack([daily, load, vibration])
    cols = []
    for i in range(features):
        mix = rng.uniform(-1.0, 1.0, size=3)
        mix[i % 3] += 1.5  # each sensor is dominated by one process
        lag = int(rng.integers(0, 6))
        col = np.roll(mix @ latent, lag)
        if lag:
            col[:lag] = col[lag]  # no wrap-around from the end of the series
        cols.append(col + noise * rng.standard_normal(length))
    return np.stack(cols, axis=1).astype(np.float32), [f"sensor_{i}" for i in range(features)]


def from_csv(path: str | os.PathLike, columns: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Numeric columns of a CSV with a header row (all numeric columns when `columns` is None)."""
    p = Path(path)
    rows = list(csv.reader(io.StringIO(read_text(p, "CSV file", 256 * MiB), newline="")))
    if len(rows) < 3:
        raise NpufitError(f"{p}: needs a header row and at least two data rows")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    wanted = list(columns) if columns else None
    if wanted:
        missing = [c for c in wanted if c not in header]
        if missing:
            raise NpufitError(f"{p}: no column(s) {', '.join(missing)} (header: {', '.join(header)})")
    picked, values = [], []
    for j, name in enumerate(header):
        if wanted is not None and name not in wanted:
            continue
        try:
            values.append([float(r[j]) for r in body])
            picked.append(name)
        except (ValueError, IndexError):
            if wanted is not None:
                raise NpufitError(f"{p}: column '{name}' has non-numeric or missing values") from None
    if not picked:
        raise NpufitError(f"{p}: no numeric columns found")
    arr = np.asarray(values, dtype=np.float32).T
    if wanted:  # keep the user's column order
        arr = arr[:, [picked.index(c) for c in wanted]]
        picked = list(wanted)
    return arr, picked


@dataclass
class SeriesDataset:
    """Normalised windows: x [N, seq_len, F] and y [N, horizon] for the target sensor, split train/validation."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    features: list[str]
    target: str
    seq_len: int
    horizon: int
    mean: np.ndarray
    std: np.ndarray
    source: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "npufit.dataset/1",
            "source": self.source,
            "features": self.features,
            "target": self.target,
            "seq_len": self.seq_len,
            "horizon": self.horizon,
            "train_windows": int(len(self.x_train)),
            "val_windows": int(len(self.x_val)),
            "mean": self.mean.tolist(),
            "std": self.std.tolist(),
        }

    def windows(self, split: str = "val", limit: int | None = None, between: bool = False) -> np.ndarray:
        """At most `limit` windows of a split, evenly spaced over all of it (in time order).

        Why spaced, not the first `limit`: consecutive windows cover a few hours of a series that drifts over
        days, so an int8 range calibrated on them clips the rest (the demo lost 18-40 dB to that).
        between=True picks the windows halfway between those of between=False: held-back samples from the same
        period that the calibration windows never include.
        """
        x = self.x_val if split == "val" else self.x_train
        if not limit or limit >= len(x):
            return x
        idx = np.linspace(0, len(x) - 1, limit)
        if between:
            idx = idx + (len(x) - 1) / max(1, limit - 1) / 2.0
            idx = idx[idx <= len(x) - 1]
        return x[np.unique(idx.round().astype(int))]

    def save_npz(
        self,
        path: str | os.PathLike,
        split: str = "val",
        limit: int | None = None,
        input_name: str = "series",
        stack: bool = False,
        between: bool = False,
    ) -> Path:
        """Write windows under the model's input name (calibration / bench inputs): [N, seq_len, F], or with
        stack=True [N, 1, seq_len, F] -- N separate batch-1 samples, one axis more than the model input."""
        x = self.windows(split, limit, between)
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, **{input_name: x[:, None] if stack else x})
        return Path(path)

    def save_npy_folder(self, folder: str | os.PathLike, split: str = "train", limit: int | None = 64) -> Path:
        """One [1, seq_len, F] .npy per window (the calibration folder format the compilers read)."""
        x = self.windows(split, limit)
        out = Path(folder)
        for i, w in enumerate(x):
            with atomic_path(out / f"sample_{i:04d}.npy", suffix=".npy") as tmp:
                np.save(tmp, w[None])
        return out


def make_dataset(
    values: np.ndarray,
    names: list[str],
    target: str | None = None,
    seq_len: int = 32,
    horizon: int = 1,
    val_fraction: float = 0.2,
    stride: int = 1,
    source: dict | None = None,
) -> SeriesDataset:
    """Windows over time; the validation part is the END of the series (no look-ahead leak into training)."""
    target = target or names[0]
    if target not in names:
        raise NpufitError(f"target column '{target}' is not among the features ({', '.join(names)})")
    if not 0.0 < val_fraction < 1.0:
        raise NpufitError(f"val_fraction must be between 0 and 1 (got {val_fraction})")
    n_windows = (len(values) - seq_len - horizon) // stride + 1
    if n_windows < 4:
        raise NpufitError(f"series of {len(values)} rows is too short for seq_len={seq_len} and horizon={horizon}")
    cut = int(len(values) * (1.0 - val_fraction))
    mean, std = values[:cut].mean(axis=0), values[:cut].std(axis=0) + 1e-6  # statistics of the training part only
    norm = ((values - mean) / std).astype(np.float32)
    ti = names.index(target)
    starts = np.arange(0, len(values) - seq_len - horizon + 1, stride)
    x = np.stack([norm[s : s + seq_len] for s in starts])
    y = np.stack([norm[s + seq_len : s + seq_len + horizon, ti] for s in starts])
    is_train = starts + seq_len + horizon <= cut
    if is_train.sum() < 2 or (~is_train).sum() < 2:
        raise NpufitError(f"val_fraction={val_fraction} leaves too few training or validation windows")
    return SeriesDataset(
        x[is_train],
        y[is_train],
        x[~is_train],
        y[~is_train],
        list(names),
        target,
        seq_len,
        horizon,
        mean.astype(np.float32),
        std.astype(np.float32),
        dict(source or {}),
    )


def load_dataset(spec: dict[str, Any], base_dir: str | os.PathLike = ".") -> SeriesDataset:
    """Build the dataset a pipeline's `data:` section describes (see docs/pipeline.md)."""
    seq_len, horizon = int(spec.get("seq_len", 32)), int(spec.get("horizon", 1))
    if spec.get("csv"):
        path = Path(base_dir) / spec["csv"]
        values, names = from_csv(path, spec.get("columns"))
        source = {"kind": "csv", "path": str(path), "rows": int(len(values))}
    else:
        values, names = synthetic(
            int(spec.get("length", 4000)),
            int(spec.get("features", 4)),
            int(spec.get("seed", 0)),
            float(spec.get("noise", 0.05)),
        )
        source = {"kind": "synthetic", "length": int(len(values)), "seed": int(spec.get("seed", 0))}
    return make_dataset(
        values,
        names,
        spec.get("target"),
        seq_len,
        horizon,
        float(spec.get("val_fraction", 0.2)),
        int(spec.get("stride", 1)),
        source,
    )
