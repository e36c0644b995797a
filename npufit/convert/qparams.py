"""int8 quantization arithmetic for the ONNX -> TFLite converter (the TFLite int8 spec).

Activations: per-tensor asymmetric int8 over [min(lo, 0), max(hi, 0)] (zero must be exact so that padding
and ReLU are lossless). Weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED: per-channel symmetric int8
(zero point 0, range [-127, 127]); their bias: int32 with scale = input scale * weight scale."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

QMIN, QMAX = -128, 127
TINY = 1e-8  # scale of a degenerate (constant-zero) range: a zero scale is invalid TFLite
# floor for a real range: far below any float activation yet a normal float32 (random-init nets without biases
# shrink layer by layer to ~1e-7: a 1e-8 floor left their outputs +-11 int8 levels, cosine 0.99)
MIN_SCALE = 1e-30


@dataclass(frozen=True)
class Q:
    """Per-tensor affine int8 parameters: real = scale * (q - zero_point)."""

    scale: float
    zero_point: int

    @property
    def range(self) -> tuple[float, float]:
        return self.scale * (QMIN - self.zero_point), self.scale * (QMAX - self.zero_point)

    def close_to(self, other: "Q") -> bool:
        return self.zero_point == other.zero_point and abs(self.scale - other.scale) <= 1e-6 * max(self.scale, other.scale)


# Ops whose int8 kernels have a fixed output scale/zero point (TFLite int8 quantization spec)
FIXED = {"LOGISTIC": Q(1 / 256, -128), "SOFTMAX": Q(1 / 256, -128), "TANH": Q(1 / 128, 0), "LOG_SOFTMAX": Q(16 / 256, 127)}


def activation_q(lo: float, hi: float) -> Q:
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not np.isfinite(lo) or not np.isfinite(hi):
        raise ValueError("non-finite calibration range")
    scale = max((hi - lo) / (QMAX - QMIN), MIN_SCALE) if hi > lo else TINY
    zp = int(np.clip(np.round(QMIN - lo / scale), QMIN, QMAX))
    return Q(scale, zp)


def quantize(x: np.ndarray, q: Q) -> np.ndarray:
    return np.clip(np.round(np.asarray(x, np.float64) / q.scale) + q.zero_point, QMIN, QMAX).astype(np.int8)


def dequantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (np.asarray(x, np.float32) - np.float32(zero_point)) * np.float32(scale)


def per_channel_weights(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output channel along `axis` -> (int8 weights, scales)."""
    w = np.asarray(w, np.float32)
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.abs(w).max(axis=red) if red else np.abs(w)
    scales = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float64)  # all-zero channel: any scale, q = 0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    return q, scales


def bias_int32(b: np.ndarray | None, in_scale: float, w_scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scales = in_scale * np.asarray(w_scales, np.float64)
    if b is None:
        return np.zeros(len(scales), np.int32), scales
    q = np.round(np.asarray(b, np.float64) / scales)
    return np.clip(q, -(2**31), 2**31 - 1).astype(np.int32), scales


def const_q(value: np.ndarray) -> Q:
    """A constant operand of an elementwise op (ADD/MUL/...) gets its own per-tensor range; a non-negative one whose
    values all sit on a power-of-two grid that int8 spans (1, 2, 4 ... 64; 1/2 ... 1/64) gets that grid: exact."""
    v = np.asarray(value, np.float32)
    hi = float(v.max(initial=0.0))
    if v.size and float(v.min()) >= 0 and hi > 0:
        scale = 2.0 ** math.ceil(math.log2(hi / (QMAX - QMIN)))  # the finest power-of-two step reaching hi
        if np.array_equal(np.round(v / scale) * scale, v):
            return Q(scale, QMIN)
    return activation_q(float(v.min(initial=0.0)), hi)
