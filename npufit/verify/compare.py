"""Seeded inputs, deterministic ONNX Runtime CPU runs, and per-output differences."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import NpufitError


# The two ONNX Runtime settings a result is verified under: rewrites off (bit-exact comparisons), and
# ORT's default full optimizer (what a host application runs; fusions may change rounding).
ORT_SETTINGS = {False: "graph optimizations off", True: "default graph optimizations (ORT_ENABLE_ALL)"}


def make_session(model: str | os.PathLike | bytes, threads: int = 1, optimized: bool = False, external_dir: str | None = None):
    """An ORT CPU session: deterministic (one thread, no graph rewrites that change rounding) by default,
    ORT's full optimizer with `optimized`; `external_dir` resolves external weights of a model given as bytes."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if external_dir is not None:
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", str(external_dir))
    try:
        return ort.InferenceSession(model if isinstance(model, bytes) else str(model), so, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise NpufitError(f"ONNX Runtime cannot load the model: {str(e).splitlines()[0][:300]}") from None


_ORT_TO_NP = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16, "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(bool)": np.bool_,
}


def random_inputs(session, seed: int = 0, samples: int = 1, shapes: Mapping[str, tuple[int, ...]] | None = None) -> list[dict[str, np.ndarray]]:
    """Seeded random feeds for every session input (float ~ N(0,1), ints in [0, 10), bool random)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples):
        feeds = {}
        for i in session.get_inputs():
            shape = tuple((shapes or {}).get(i.name) or [d if isinstance(d, int) and d > 0 else 1 for d in i.shape])
            dt = _ORT_TO_NP.get(i.type, np.float32)
            if np.issubdtype(dt, np.floating):
                feeds[i.name] = rng.standard_normal(shape).astype(dt)
            elif dt is np.bool_:
                feeds[i.name] = rng.integers(0, 2, shape).astype(bool)
            else:
                feeds[i.name] = rng.integers(0, 10, shape).astype(dt)
        out.append(feeds)
    return out


def run_onnx(model_or_session: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = model_or_session if hasattr(model_or_session, "run") else make_session(model_or_session)
    names = [o.name for o in sess.get_outputs()]
    wanted = {i.name for i in sess.get_inputs()}
    vals = sess.run(names, {k: v for k, v in feeds.items() if k in wanted})
    return dict(zip(names, vals))


class OutputDiffs:
    """Worst-case figures over `per_output` ({output: {"max_abs", "max_rel", ...}}); shared by Comparison and the
    split chain check."""

    per_output: dict[str, dict[str, float]]
    missing: list[str]

    @property
    def max_abs(self) -> float:
        return max((d["max_abs"] for d in self.per_output.values()), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((d["max_rel"] for d in self.per_output.values()), default=0.0)

    def worst(self) -> tuple[str, dict[str, float]] | None:
        if not self.per_output:
            return None
        return max(self.per_output.items(), key=lambda kv: kv[1]["max_abs"])


@dataclass
class Comparison(OutputDiffs):
    """Per-output differences between a reference and a candidate run."""

    per_output: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def ok(self, atol: float = 0.0, rtol: float = 0.0) -> bool:
        if self.missing:
            return False
        return all(d["max_abs"] <= atol + rtol * d["ref_max_abs"] for d in self.per_output.values())

    def merge(self, other: "Comparison") -> "Comparison":
        for k, d in other.per_output.items():
            cur = self.per_output.get(k)
            self.per_output[k] = d if cur is None else {m: max(cur[m], d[m]) for m in cur}
        self.missing = sorted(set(self.missing) | set(other.missing))
        return self

    def to_dict(self) -> dict:
        return {"max_abs": self.max_abs, "max_rel": self.max_rel, "per_output": self.per_output, "missing": self.missing}


def compare_outputs(ref: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]) -> Comparison:
    c = Comparison()
    for name, a in ref.items():
        if name not in got:
            c.missing.append(name)
            continue
        b = got[name]
        a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a64.shape != b64.shape:
            c.per_output[name] = {"max_abs": float("inf"), "max_rel": float("inf"), "ref_max_abs": 0.0, "shape_mismatch": 1.0}
            continue
        diff = np.abs(a64 - b64)
        diff = np.where(np.isnan(a64) & np.isnan(b64), 0.0, diff)  # NaN in both = equal
        ref_abs = np.abs(a64)
        max_abs = float(diff.max()) if diff.size else 0.0
        rel = diff / np.maximum(ref_abs, 1e-12)
        c.per_output[name] = {"max_abs": max_abs, "max_rel": float(rel.max()) if rel.size else 0.0,
                              "ref_max_abs": float(ref_abs.max()) if ref_abs.size else 0.0}
    return c
