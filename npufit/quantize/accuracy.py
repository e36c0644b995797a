"""Float vs quantized on held-back samples: per output and per quantized activation ("entire" vs "single").

SQNR (dB) = 10·log10(Σref² / Σ(ref−quant)²) over all held-back samples; cosine over the flattened tensors.
"entire": the activation as the fully quantized model computes it (errors from upstream accumulate).
"single": the same layer fed the exact float reference, with its own quantized weights and output, so only
the error born in this layer shows. Low single = fix this layer; low entire with good single = inherited.
Both are also measured per channel (median over axis 1), which a whole-channel outlier cannot hide from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..util.progress import track
from ..verify.compare import make_session, run_onnx
from .qdq import REF_SUFFIX, ActivationPair

POOR_DB = 20.0  # below this a layer loses visible accuracy (≈ 10% relative noise)
GOOD_DB = 30.0  # int8 per-tensor quantization of a well-behaved activation lands around 30-45 dB
SPIKE_RATIO = 25.0  # max|x| / rms(x) above this: the range is set by rare spikes, not by the bulk
CHANNEL_RATIO = 20.0  # widest channel / median channel above this: one channel sets everyone's step size
WEIGHTED_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
# Held-back values past the calibrated range: above CLIP_WARN of them the calibration missed part of what the
# model sees (warned); above CLIP_FRACTION, and carrying most of a layer's own error, clipping is its cause.
# Below that a minmax range misses only the far tail of the same distribution (about 2/N of N calibrated values).
CLIP_WARN = 0.01
CLIP_FRACTION = 0.001
CLIP_CAUSE_SHARE = 0.5


class _Acc:
    """Running sums for one float/quantized tensor pair over all held-back samples.

    Per-channel sums (axis 1) back the channel-median SQNR: a whole-channel outlier leaves the tensor SQNR
    high (its own power dominates) while every other channel is crushed; the median channel shows that.
    """

    __slots__ = ("sig", "err", "dot", "qq", "max_abs", "ref_max", "n", "nonfinite", "sig_c", "err_c", "max_c")

    def __init__(self):
        self.sig = self.err = self.dot = self.qq = self.max_abs = self.ref_max = 0.0
        self.n = self.nonfinite = 0
        self.sig_c = self.err_c = self.max_c = None

    def add(self, ref: np.ndarray, got: np.ndarray) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            self._add(ref, got)

    def _add(self, ref: np.ndarray, got: np.ndarray) -> None:
        # float32 BLAS dots/einsums (no float64 copies): accumulation error is far below the 0.01 dB we print
        r = np.asarray(ref, dtype=np.float32)
        g = np.asarray(got, dtype=np.float32)
        if r.shape != g.shape:
            raise ValueError(f"shape mismatch {ref.shape} vs {got.shape}")
        finite = np.isfinite(r) & np.isfinite(g)
        if not finite.all():  # e.g. a scale that overflowed on a -3.4e38 attention mask: count, measure the rest
            self.nonfinite += int(g.size - np.count_nonzero(np.isfinite(g)))
            r, g = r[finite], g[finite]
        if r.size and max(float(np.abs(r).max()), float(np.abs(g).max())) > 1e15:
            r, g = r.astype(np.float64), g.astype(np.float64)  # squares would overflow float32
        d = r - g
        rf, gf, df = r.reshape(-1), g.reshape(-1), d.reshape(-1)
        self.sig += float(np.dot(rf, rf))
        self.err += float(np.dot(df, df))
        self.dot += float(np.dot(rf, gf))
        self.qq += float(np.dot(gf, gf))
        if rf.size:
            self.max_abs = max(self.max_abs, float(np.abs(df).max()))
            self.ref_max = max(self.ref_max, float(np.abs(rf).max()))
        self.n += rf.size
        if r.ndim >= 2 and r.shape[1] > 1 and r.size:
            r3, d3 = r.reshape(r.shape[0], r.shape[1], -1), d.reshape(r.shape[0], r.shape[1], -1)
            sig_c = np.einsum("ncx,ncx->c", r3, r3).astype(np.float64)
            err_c = np.einsum("ncx,ncx->c", d3, d3).astype(np.float64)
            max_c = np.maximum(r3.max(axis=(0, 2)), -r3.min(axis=(0, 2))).astype(np.float64)
            if self.sig_c is None or self.sig_c.shape != sig_c.shape:
                self.sig_c, self.err_c, self.max_c = sig_c, err_c, max_c
            else:
                self.sig_c += sig_c
                self.err_c += err_c
                self.max_c = np.maximum(self.max_c, max_c)

    @property
    def sqnr_db(self) -> float:
        return -math.inf if self.nonfinite else _sqnr(self.sig, self.err)

    @property
    def channel_sqnr_db(self) -> float:
        """Median over channels (axis 1) of the per-channel SQNR; the tensor SQNR when there are no channels."""
        if self.sig_c is None or self.nonfinite:
            return self.sqnr_db
        live = self.sig_c > 0  # all-zero channels (dead ReLUs) quantize exactly and say nothing
        if not live.any():
            return self.sqnr_db
        vals = [_sqnr(s, e) for s, e in zip(self.sig_c[live], self.err_c[live])]
        return float(np.median(vals))

    @property
    def cosine(self) -> float:
        if self.sig == 0.0 and self.qq == 0.0:
            return 1.0
        if self.sig == 0.0 or self.qq == 0.0:
            return 0.0
        return self.dot / math.sqrt(self.sig * self.qq)

    @property
    def spike_ratio(self) -> float:
        rms = math.sqrt(self.sig / self.n) if self.n else 0.0
        return self.ref_max / rms if rms > 0 else 0.0

    @property
    def channel_ratio(self) -> float:
        if self.max_c is None:
            return 1.0
        live = self.max_c[self.max_c > 0]
        return float(live.max() / np.median(live)) if live.size else 1.0


def _sqnr(sig: float, err: float) -> float:
    if err == 0.0:
        return math.inf
    if sig == 0.0:
        return -math.inf
    return 10.0 * math.log10(sig / err)


def _db(x: float) -> float | str | None:
    """JSON has no inf: exact (no error) is null, -inf (non-finite quantized values) is the string "-inf"."""
    if math.isnan(x) or (math.isinf(x) and x > 0):
        return None
    return "-inf" if math.isinf(x) else round(x, 2)


@dataclass
class OutputAccuracy:
    name: str
    cosine: float
    sqnr_db: float
    max_abs: float
    ref_max_abs: float

    clipped_fraction: float | None = None  # of its values past the calibrated range (None: output not quantized)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "cosine": round(self.cosine, 6),
            "sqnr_db": _db(self.sqnr_db),
            "max_abs_error": self.max_abs,
            "ref_max_abs": self.ref_max_abs,
            "clipped_fraction": None if self.clipped_fraction is None else round(self.clipped_fraction, 6),
        }


@dataclass
class LayerAccuracy:
    pair: ActivationPair
    entire: _Acc = field(repr=False)
    single: _Acc = field(repr=False)
    clipped: int = 0  # float reference values of held-back samples outside the int8 range (they saturate)
    values: int = 0
    clip_error: float = 0.0  # Σ(ref - clamp(ref, range))²: the error energy saturation alone causes
    rank: int = 0  # 1 = worst (lowest single score)
    diagnosis: str = ""  # 'born here' | 'inherited' | 'ok'
    suggestion: str = ""

    @property
    def name(self) -> str:
        return self.pair.name

    @property
    def clipped_fraction(self) -> float:
        return self.clipped / self.values if self.values else 0.0

    @property
    def clips(self) -> bool:
        """So many held-back values saturate that the calibration data cannot represent what the model sees."""
        return self.clipped_fraction > CLIP_WARN

    @property
    def clipping_is_the_cause(self) -> bool:
        """Saturation carries most of the error born in this layer (then range advice comes before weight advice)."""
        share = self.clip_error / self.single.err if self.single.err > 0 else 0.0
        return self.clips or (self.clipped_fraction > CLIP_FRACTION and share >= CLIP_CAUSE_SHARE)

    @property
    def entire_score(self) -> float:
        """min(tensor SQNR, channel-median SQNR): what ranking and diagnosis use."""
        return min(self.entire.sqnr_db, self.entire.channel_sqnr_db)

    @property
    def single_score(self) -> float:
        return min(self.single.sqnr_db, self.single.channel_sqnr_db)

    def to_dict(self) -> dict:
        p = self.pair
        lo, hi = p.value_range

        def side(a: _Acc) -> dict:
            return {
                "sqnr_db": _db(a.sqnr_db),
                "channel_median_sqnr_db": _db(a.channel_sqnr_db),
                "cosine": round(a.cosine, 6),
                "max_abs_error": a.max_abs,
                "nonfinite_values": a.nonfinite,
            }

        def fin(x: float) -> float | None:
            return x if math.isfinite(x) else None

        d = {
            "tensor": p.name,
            "node": p.node,
            "op_type": p.op_type,
            "quantized_node": p.qdq_node,
            "quantized_op": p.qdq_op,
            "inputs": list(p.inputs),
            "dtype": p.dtype,
            "scale": fin(p.scale),
            "zero_point": p.zero_point,
            "range": [fin(lo), fin(hi)],
            "entire": side(self.entire),
            "single": side(self.single),
            "clipped_fraction": round(self.clipped_fraction, 6),
            "spike_ratio": round(self.entire.spike_ratio, 2),
            "channel_ratio": round(self.entire.channel_ratio, 2),
            "rank": self.rank,
            "diagnosis": self.diagnosis,
        }
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
        return next((layer for layer in self.layers if layer.name == name), None)

    def to_dict(self) -> dict:
        return {
            "holdout_samples": self.samples,
            "outputs": [o.to_dict() for o in self.outputs],
            "layers": [layer.to_dict() for layer in self.layers],
            "worst": self.worst,
        }


def evaluate(
    float_path: Path,
    float_probe: Path,
    entire_probe: Path,
    single_probe: Path,
    pairs: Sequence[ActivationPair],
    holdout: Sequence[dict],
    per_channel: bool,
    worst_n: int = 5,
) -> Accuracy:
    """One run of each probe per held-back sample; every layer's numbers come out of the same runs."""
    # one intra-op thread each: four sessions run back to back, and spinning worker threads would fight
    s_float, s_fprobe = make_session(float_path), make_session(float_probe)
    s_entire, s_single = make_session(entire_probe), make_session(single_probe)
    out_names = [o.name for o in s_float.get_outputs()]
    single_inputs = {i.name for i in s_single.get_inputs()}
    outs = {n: _Acc() for n in out_names}
    ent = {id(p): _Acc() for p in pairs}
    sgl = {id(p): _Acc() for p in pairs}
    clip = {id(p): [0, 0, 0.0] for p in pairs}
    # a value saturates past half a step beyond the int8 range: the calibrated range did not cover it
    bounds = {id(p): (p.value_range[0] - p.scale / 2, p.value_range[1] + p.scale / 2) for p in pairs}
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
            lo, hi = bounds[id(p)]
            r = np.asarray(ref[p.name], dtype=np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                c = clip[id(p)]
                c[0] += int(np.count_nonzero(r < lo) + np.count_nonzero(r > hi))
                c[1] += r.size
                excess = r - np.clip(r, *p.value_range)
                c[2] += float(np.nansum(excess * excess))
    acc = Accuracy(len(holdout))
    acc.layers = [
        LayerAccuracy(
            p, ent[id(p)], sgl[id(p)], clipped=clip[id(p)][0], values=clip[id(p)][1], clip_error=clip[id(p)][2]
        )
        for p in pairs
    ]
    # a quantized graph output is one of the pairs
    out_clip = {layer.name: layer.clipped_fraction for layer in acc.layers}
    acc.outputs = [
        OutputAccuracy(n, a.cosine, a.sqnr_db, a.max_abs, a.ref_max, out_clip.get(n)) for n, a in outs.items() if a.n
    ]
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
    return "exact" if math.isinf(x) and x > 0 else f"{x:.1f} dB"


def diagnose(acc: Accuracy, per_channel: bool, worst_n: int) -> None:
    """Rank by the single score (where error is born), then say what to do about the worst ones."""
    by_name = {layer.name: layer for layer in acc.layers}
    ranked = sorted(acc.layers, key=lambda layer: (layer.single_score, layer.entire_score))
    for i, layer in enumerate(ranked, 1):
        layer.rank = i
        if layer.single_score < POOR_DB:
            layer.diagnosis = "born here"
        elif layer.entire_score < POOR_DB:
            layer.diagnosis = "inherited"
        else:
            layer.diagnosis = "ok"
    acc.worst = [layer.name for layer in ranked[:worst_n]]
    for layer in ranked[:worst_n]:
        layer.suggestion = _suggest(layer, by_name, per_channel)


def clipping_advice(name: str, fraction: float, lo: float, hi: float, samples: int | None = None) -> str:
    """What to do when held-back values fall outside the calibrated range (shared by layer and report warnings)."""
    used = f"the {samples} calibration sample(s)" if samples else "the calibration samples"
    return (
        f"{fraction:.1%} of the held-back values of '{name}' fall outside its calibrated range [{lo:.4g}, {hi:.4g}] "
        f"and saturate: {used} do not cover what the model sees; calibrate on more, or more "
        "representative, samples (--samples, data spread over every operating condition); when a few outliers set "
        "the range instead, --method percentile or entropy fits it to the bulk"
    )


def _suggest(layer: LayerAccuracy, by_name: dict[str, LayerAccuracy], per_channel: bool) -> str:
    p = layer.pair
    node = p.qdq_node or p.node
    lo, hi = p.value_range
    if layer.single.nonfinite:
        return (
            f"the quantized '{p.name}' holds non-finite values (int8 range [{lo:.3g}, {hi:.3g}]): its calibrated range "
            f"is unusable (often a -inf/float-min mask); exclude {node} (the exclude option) or keep it in float/16-bit"
        )
    if (
        layer.clipping_is_the_cause and layer.single_score < GOOD_DB
    ):  # saturation is born here whatever the weights do: say it first
        return clipping_advice(p.name, layer.clipped_fraction, lo, hi)
    if layer.diagnosis == "inherited":
        ups = _ancestors(layer, by_name)
        src = min(ups, key=lambda u: u.single_score) if ups else None
        where = f"; the worst layer upstream is '{src.name}' (single {_fmt_db(src.single_score)})" if src else ""
        return (
            f"inherited: this layer alone is fine (single {_fmt_db(layer.single_score)}), "
            f"the error enters upstream{where}"
        )
    if layer.diagnosis == "ok" and layer.single_score >= GOOD_DB:
        return "within int8 noise; nothing to do"
    ch, spike = layer.entire.channel_ratio, layer.entire.spike_ratio
    if layer.single.channel_sqnr_db < layer.single.sqnr_db - 6.0 and p.qdq_op == "Concat" and ch > 2.0:
        return (
            f"the inputs of this Concat span different ranges (widest channel {ch:.0f}x the median) but share one int8 "
            f"scale, so the narrow ones lose precision (median channel {_fmt_db(layer.single.channel_sqnr_db)}): "
            "keep it in 16-bit, or rescale the branches to similar ranges before the Concat"
        )
    if ch > CHANNEL_RATIO and layer.single.channel_sqnr_db < layer.single.sqnr_db - 6.0:
        return (
            f"one channel spans {ch:.0f}x the range of the median channel, so the int8 step of '{p.name}' "
            f"(range [{lo:.3g}, {hi:.3g}]) crushes the others "
            f"(median channel {_fmt_db(layer.single.channel_sqnr_db)}): "
            "keep it in 16-bit, or equalize channel ranges (cross-layer equalization) before quantizing; "
            "percentile calibration does not fix a whole-channel outlier"
        )
    if spike > SPIKE_RATIO:
        return (
            f"the range of '{p.name}' ([{lo:.3g}, {hi:.3g}]) is set by rare spikes (max = {spike:.0f}x rms): "
            "re-calibrate with method percentile or entropy, or keep it in 16-bit"
        )
    if p.qdq_op in WEIGHTED_OPS and not per_channel:
        return f"weight quantization of {p.qdq_op} '{node}': try per-channel weights, else keep it in 16-bit"
    if p.is_graph_input:
        return "the model input loses precision in int8: check the calibration data matches the model's preprocessing"
    return (
        f"keep '{p.name}' in 16-bit on the target, or exclude {node} (the exclude option) to leave it in float "
        "(on Ethos-N/U a float node is a CPU island with Q/DQ at its edges)"
    )
