"""Float vs quantized on held-back samples: per output and per quantized activation ("entire" vs "single").

SQNR (dB) = 10·log10(Σref² / Σ(ref−quant)²) over all held-back samples; cosine over the flattened tensors.
"entire": the activation as the fully quantized model computes it (errors from upstream accumulate).
"single": the same layer fed the float reference (quantized as its inputs would be), so only the error
born in this layer shows. Low single = fix this layer; low entire with good single = inherited from upstream.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..util.progress import track
from ..verify.compare import make_session, run_onnx
from .qdq import REF_SUFFIX, ActivationPair

POOR_DB = 20.0  # below this a layer loses visible accuracy (≈ 10% relative noise)
GOOD_DB = 30.0  # int8 per-tensor quantization of a well-behaved activation lands around 30-45 dB
OUTLIER_RATIO = 25.0  # max|x| / rms(x) above this: the range is set by rare outliers, not by the bulk
WEIGHTED_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}


class _Acc:
    """Running sums for one float/quantized tensor pair over all held-back samples."""

    __slots__ = ("sig", "err", "dot", "qq", "max_abs", "ref_max", "n")

    def __init__(self):
        self.sig = self.err = self.dot = self.qq = self.max_abs = self.ref_max = 0.0
        self.n = 0

    def add(self, ref: np.ndarray, got: np.ndarray) -> None:
        r = np.asarray(ref, dtype=np.float64).ravel()
        g = np.asarray(got, dtype=np.float64).ravel()
        if r.shape != g.shape:
            raise ValueError(f"shape mismatch {ref.shape} vs {got.shape}")
        d = r - g
        self.sig += float(r @ r)
        self.err += float(d @ d)
        self.dot += float(r @ g)
        self.qq += float(g @ g)
        if r.size:
            self.max_abs = max(self.max_abs, float(np.abs(d).max()))
            self.ref_max = max(self.ref_max, float(np.abs(r).max()))
        self.n += r.size

    @property
    def sqnr_db(self) -> float:
        if self.err == 0.0:
            return math.inf
        if self.sig == 0.0:
            return -math.inf
        return 10.0 * math.log10(self.sig / self.err)

    @property
    def cosine(self) -> float:
        if self.sig == 0.0 and self.qq == 0.0:
            return 1.0
        if self.sig == 0.0 or self.qq == 0.0:
            return 0.0
        return self.dot / math.sqrt(self.sig * self.qq)

    @property
    def outlier_ratio(self) -> float:
        rms = math.sqrt(self.sig / self.n) if self.n else 0.0
        return self.ref_max / rms if rms > 0 else 0.0


def _db(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else round(x, 2)


@dataclass
class OutputAccuracy:
    name: str
    cosine: float
    sqnr_db: float
    max_abs: float
    ref_max_abs: float

    def to_dict(self) -> dict:
        return {"name": self.name, "cosine": round(self.cosine, 6), "sqnr_db": _db(self.sqnr_db),
                "max_abs_error": self.max_abs, "ref_max_abs": self.ref_max_abs}


@dataclass
class LayerAccuracy:
    pair: ActivationPair
    entire_sqnr_db: float
    entire_cosine: float
    entire_max_abs: float
    single_sqnr_db: float
    single_cosine: float
    outlier_ratio: float
    rank: int = 0  # 1 = worst (lowest single SQNR)
    diagnosis: str = ""  # 'born here' | 'inherited' | 'ok'
    suggestion: str = ""

    @property
    def name(self) -> str:
        return self.pair.name

    def to_dict(self) -> dict:
        p = self.pair
        lo, hi = p.value_range
        d = {"tensor": p.name, "node": p.node, "op_type": p.op_type, "quantized_node": p.qdq_node,
             "quantized_op": p.qdq_op, "inputs": list(p.inputs), "dtype": p.dtype, "scale": p.scale,
             "zero_point": p.zero_point, "range": [lo, hi],
             "entire": {"sqnr_db": _db(self.entire_sqnr_db), "cosine": round(self.entire_cosine, 6), "max_abs_error": self.entire_max_abs},
             "single": {"sqnr_db": _db(self.single_sqnr_db), "cosine": round(self.single_cosine, 6)},
             "outlier_ratio": round(self.outlier_ratio, 2), "rank": self.rank, "diagnosis": self.diagnosis}
        if self.suggestion:
            d["suggestion"] = self.suggestion
        return d


@dataclass
class Accuracy:
    samples: int
    outputs: list[OutputAccuracy] = field(default_factory=list)
    layers: list[LayerAccuracy] = field(default_factory=list)  # in graph order
    worst: list[str] = field(default_factory=list)  # tensor names, worst first

    def layer(self, name: str) -> LayerAccuracy | None:
        return next((l for l in self.layers if l.name == name), None)

    def to_dict(self) -> dict:
        return {"holdout_samples": self.samples, "outputs": [o.to_dict() for o in self.outputs],
                "layers": [l.to_dict() for l in self.layers], "worst": self.worst}


def evaluate(float_path: Path, float_probe: Path, entire_probe: Path, single_probe: Path,
             pairs: Sequence[ActivationPair], holdout: Sequence[dict], per_channel: bool, worst_n: int = 5) -> Accuracy:
    """One run of each probe per held-back sample; every layer's numbers come out of the same runs."""
    threads = min(4, os.cpu_count() or 1)
    s_float, s_fprobe = make_session(float_path, threads), make_session(float_probe, threads)
    s_entire, s_single = make_session(entire_probe, threads), make_session(single_probe, threads)
    out_names = [o.name for o in s_float.get_outputs()]
    single_inputs = {i.name for i in s_single.get_inputs()}
    outs = {n: _Acc() for n in out_names}
    ent = {id(p): _Acc() for p in pairs}
    sgl = {id(p): _Acc() for p in pairs}
    for feeds in track(holdout, "evaluating on held-back samples", total=len(holdout)):
        ref_out = run_onnx(s_float, feeds)
        ref = run_onnx(s_fprobe, feeds)
        ref.update({k: v for k, v in feeds.items()})
        got = run_onnx(s_entire, feeds)
        single_feeds = dict(feeds)
        for p in pairs:
            if p.name + REF_SUFFIX in single_inputs:
                single_feeds[p.name + REF_SUFFIX] = ref[p.name]
        alone = run_onnx(s_single, single_feeds)
        for n in out_names:
            if n in got:
                outs[n].add(ref_out[n], got[n])
        for p in pairs:
            ent[id(p)].add(ref[p.name], got[p.dequantized[0]])
            sgl[id(p)].add(ref[p.name], alone[p.dequantized[0]])
    acc = Accuracy(len(holdout))
    acc.outputs = [OutputAccuracy(n, a.cosine, a.sqnr_db, a.max_abs, a.ref_max) for n, a in outs.items() if a.n]
    acc.layers = [LayerAccuracy(p, ent[id(p)].sqnr_db, ent[id(p)].cosine, ent[id(p)].max_abs, sgl[id(p)].sqnr_db,
                                sgl[id(p)].cosine, ent[id(p)].outlier_ratio) for p in pairs]
    diagnose(acc, per_channel, worst_n)
    return acc


def _ancestors(layer: LayerAccuracy, by_name: dict[str, LayerAccuracy]) -> list[LayerAccuracy]:
    seen, stack, out = set(), list(layer.pair.inputs), []
    while stack:
        n = stack.pop()
        if n in seen or n not in by_name:
            continue
        seen.add(n)
        out.append(by_name[n])
        stack.extend(by_name[n].pair.inputs)
    return out


def _fmt_db(x: float) -> str:
    return "∞" if math.isinf(x) and x > 0 else f"{x:.1f} dB"


def diagnose(acc: Accuracy, per_channel: bool, worst_n: int) -> None:
    """Rank by single SQNR (where error is born), then say what to do about the worst ones."""
    by_name = {l.name: l for l in acc.layers}
    ranked = sorted(acc.layers, key=lambda l: (l.single_sqnr_db, l.entire_sqnr_db))
    for i, l in enumerate(ranked, 1):
        l.rank = i
        if l.single_sqnr_db < POOR_DB:
            l.diagnosis = "born here"
        elif l.entire_sqnr_db < POOR_DB:
            l.diagnosis = "inherited"
        else:
            l.diagnosis = "ok"
    acc.worst = [l.name for l in ranked[:worst_n]]
    for l in ranked[:worst_n]:
        l.suggestion = _suggest(l, by_name, per_channel)


def _suggest(l: LayerAccuracy, by_name: dict[str, LayerAccuracy], per_channel: bool) -> str:
    p = l.pair
    node = p.qdq_node or p.node
    if l.diagnosis == "inherited":
        ups = _ancestors(l, by_name)
        src = min(ups, key=lambda u: u.single_sqnr_db) if ups else None
        where = f"; the worst upstream layer is '{src.name}' (single {_fmt_db(src.single_sqnr_db)})" if src else ""
        return f"inherited: this layer alone is fine (single {_fmt_db(l.single_sqnr_db)}), the error enters upstream{where}"
    if l.diagnosis == "ok" and l.single_sqnr_db >= GOOD_DB:
        return "within int8 noise; nothing to do"
    culprits = [x for x in [l, *(by_name[i] for i in p.inputs if i in by_name)] if x.outlier_ratio > OUTLIER_RATIO]
    if culprits:
        c = max(culprits, key=lambda x: x.outlier_ratio)
        lo, hi = c.pair.value_range
        return (f"the int8 range of '{c.name}' ([{lo:.3g}, {hi:.3g}]) is set by rare outliers (max = {c.outlier_ratio:.0f}x rms): "
                f"re-calibrate with --method percentile or entropy, or keep '{c.name}' in 16-bit")
    if p.qdq_op in WEIGHTED_OPS and not per_channel:
        return f"weight quantization of {p.qdq_op} '{node}': try --per-channel, else keep it in 16-bit"
    if p.is_graph_input:
        return "the model input itself loses precision in int8: check the calibration data matches the preprocessing"
    return (f"keep '{p.name}' in 16-bit on the target, or --exclude {node} to leave it in float "
            "(on Ethos-N/U a float node is a CPU island with Q/DQ at its edges)")
