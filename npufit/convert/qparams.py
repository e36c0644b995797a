"""int8 quantization arithmetic for the ONNX -> TFLite converter (the TFLite int8 spec).

Activations: per-tensor asymmetric int8 over [min(lo, 0), max(hi, 0)] (zero must be exact so that padding
and ReLU are lossless). Weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED: per-channel symmetric int8
(zero point 0, range [-127, 127]); their bias: int32 with scale = input scale * weight scale.
Wide (16x8) mode: activations int16, symmetric (zero point 0, as TFLite's int16 kernels require), weights int8,
biases int64 (TFLite's 16x8 quantization)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..graph.quant import FIXED_OUTPUT_QPARAMS

QMIN, QMAX = -128, 127
LIMITS = {8: (-128, 127), 16: (-32768, 32767)}
TINY = 1e-8  # scale of a degenerate (constant-zero) range: a zero scale is invalid TFLite
# floor for a real range: far below any float activation yet a normal float32 (random-init nets without biases
# shrink layer by layer to ~1e-7: a 1e-8 floor left their outputs +-11 int8 levels, cosine 0.99)
MIN_SCALE = 1e-30


@dataclass(frozen=True)
class Q:
    """Per-tensor affine int8 parameters: real = scale * (q - zero_point)."""

    scale: float
    zero_point: int
    bits: int = 8  # 16: an int16 activation of the wide mode

    @property
    def qmin(self) -> int:
        return LIMITS[self.bits][0]

    @property
    def qmax(self) -> int:
        return LIMITS[self.bits][1]

    @property
    def dtype(self) -> str:
        return f"int{self.bits}"

    @property
    def range(self) -> tuple[float, float]:
        return self.scale * (self.qmin - self.zero_point), self.scale * (self.qmax - self.zero_point)

    def close_to(self, other: "Q") -> bool:
        return (
            self.zero_point == other.zero_point
            and self.bits == other.bits
            and abs(self.scale - other.scale) <= 1e-6 * max(self.scale, other.scale)
        )


# Ops whose int8 kernels have a fixed output scale/zero point (TFLite int8 quantization spec; stated in graph.quant)
FIXED = {op: Q(scale, zp) for op, (scale, zp) in FIXED_OUTPUT_QPARAMS.items()}
# ... and their int16 kernels (LOG_SOFTMAX has none: it runs in int8)
FIXED16 = {"LOGISTIC": Q(1 / 32768, 0, 16), "SOFTMAX": Q(1 / 32768, 0, 16), "TANH": Q(1 / 32768, 0, 16)}


def fixed_q(op: str, bits: int = 8) -> Q | None:
    return (FIXED16 if bits == 16 else FIXED).get(op)


def activation_q(lo: float, hi: float, bits: int = 8) -> Q:
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not np.isfinite(lo) or not np.isfinite(hi):
        raise ValueError("non-finite calibration range")
    if bits == 16:  # symmetric: TFLite's int16 kernels take zero point 0 only
        m = max(-lo, hi)
        return Q(max(m / 32767, MIN_SCALE) if m > 0 else TINY, 0, 16)
    scale = max((hi - lo) / (QMAX - QMIN), MIN_SCALE) if hi > lo else TINY
    zp = int(np.clip(np.round(QMIN - lo / scale), QMIN, QMAX))
    return Q(scale, zp)


def quantize(x: np.ndarray, q: Q) -> np.ndarray:
    return np.clip(np.round(np.asarray(x, np.float64) / q.scale) + q.zero_point, q.qmin, q.qmax).astype(q.dtype)


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


def bias_int32(
    b: np.ndarray | None, in_scale: float, w_scales: np.ndarray, bits: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """Bias at scale input * weight: int32, or int64 (`bits` 64) for an int16 input (16x8)."""
    scales = in_scale * np.asarray(w_scales, np.float64)
    dt = np.int64 if bits == 64 else np.int32
    if b is None:
        return np.zeros(len(scales), dt), scales
    q = np.round(np.asarray(b, np.float64) / scales)
    return np.clip(q, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1).astype(dt), scales


def const_q(value: np.ndarray, bits: int = 8) -> Q:
    """A constant operand of an elementwise op (ADD/MUL/...) gets its own per-tensor range; a non-negative one whose
    values all sit on a power-of-two grid that int8 spans (1, 2, 4 ... 64; 1/2 ... 1/64) gets that grid: exact."""
    v = np.asarray(value, np.float32)
    hi = float(v.max(initial=0.0))
    if bits == 16:
        return activation_q(float(v.min(initial=0.0)), hi, 16)
    if v.size and float(v.min()) >= 0 and hi > 0:
        scale = 2.0 ** math.ceil(math.log2(hi / (QMAX - QMIN)))  # the finest power-of-two step reaching hi
        if np.array_equal(np.round(v / scale) * scale, v):
            return Q(scale, QMIN)
    return activation_q(float(v.min(initial=0.0)), hi)
