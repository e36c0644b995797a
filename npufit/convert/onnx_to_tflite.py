"""ONNX (float, or QDQ) -> fully int8 TFLite for Arm Vela, in-house and small.

    res = convert("det.onnx", "det_int8.tflite", calibration="calib.npz")   # or calibration=None: seeded random
    res.path, res.sidecar, res.lineage   # lineage: TFLite op output name -> ONNX node name(s)

Steps: pin inputs and fold constants (npufit.graph), run the float model in ONNX Runtime on the calibration
samples with every intermediate exposed (per-tensor min/max), lower node by node (ops_nn / ops_tensor) into
NHWC int8 TFLite through tflite_writer, write the .tflite and a JSON sidecar (io layouts and quantization,
per-op ONNX origin). Why not onnx2tf / litert-torch: docs/compilers.md, "ONNX -> int8 TFLite"."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..check.advice import split_before
from ..errors import NpufitError, UnsupportedModelError
from ..graph import load
from ..quantize.calibration import input_specs, load_calibration
from ..targets.converter_facts import LOWERED, converter_gap
from ..util.io import atomic_write_bytes, atomic_write_json
from . import ops_int as it
from .int_tensors import graph_input, tfl_dtype
from .lower import Lowering, Unsupported
from .onnx_prep import prepare
from .qdq_twin import write_qdq_twin
from .ranges import collect, merge_groups
from .registry import OPS, PASS_THROUGH
from .row_scale import layernorms, rescale_rows
from .verify import verify_tflite

SCHEMA = "npufit.convert/1"
CONVERTER = "npufit.convert.onnx_to_tflite"

MAX_SAMPLES = 64
# 'auto' activations: below this min cosine (LiteRT vs ONNX Runtime on the calibration samples; issue 16's bound)
# the converter also builds the 16x8 form and keeps it when it does better
WIDE_BELOW = 0.999


@dataclass
class ConversionResult:
    path: Path
    sidecar: Path
    source: str
    graph: Any = field(repr=False)  # npufit Graph of the source model (for mapping placements back)
    lineage: dict[str, list[str]] = field(default_factory=dict)
    ops: list[dict] = field(default_factory=list)
    io: dict[str, list[dict]] = field(default_factory=dict)
    calibration: dict = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    verification: Any = None  # verify.Verification, when verified
    qdq_twin: Path | None = None
    layouts: dict[str, tuple[str, str]] = field(
        default_factory=dict, repr=False
    )  # TFLite tensor -> (ONNX tensor, layout)
    activations: str = "int8"  # or "int16" (16x8)

    @property
    def op_counts(self) -> dict[str, int]:
        return dict(Counter(o["op"] for o in self.ops).most_common())

    def summary(self) -> str:
        kind = "int16 (16x8)" if self.activations == "int16" else "int8"
        s = f"{len(self.ops)} {kind} TFLite ops in {self.timings.get('total_s', 0):.2f} s"
        if self.verification is not None:
            s += f"; {self.verification.summary()}"
        return s

    def to_dict(self) -> dict:

        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "converter": CONVERTER,
            "source": self.source,
            "tflite": str(self.path),
            "qdq_twin": None if self.qdq_twin is None else str(self.qdq_twin),
            "io": self.io,
            "calibration": self.calibration,
            "timings": self.timings,
            "op_counts": self.op_counts,
            "activations": self.activations,
            "notes": self.notes,
            "verification": None if self.verification is None else self.verification.to_dict(),
            "ops": self.ops,
            "lineage": self.lineage,
        }

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            import json

            return json.dumps(self.to_dict(), indent=2)
        head = "| | |\n|---|---|\n" if fmt == "markdown" else ""
        rows = [
            ("source", self.source),
            ("tflite", str(self.path)),
            ("ops", ", ".join(f"{k} x{v}" for k, v in self.op_counts.items())),
            ("time", f"{self.timings.get('total_s', 0):.2f} s"),
            ("calibration", self.calibration.get("source", "")),
        ]
        if self.verification is not None:
            rows.append(("verified", self.verification.summary()))
        if fmt == "markdown":
            return head + "\n".join(f"| {k} | {v} |" for k, v in rows)
        return "\n".join(f"{k:12} {v}" for k, v in rows)


def unsupported_nodes(graph) -> dict[str, list[tuple[str, str]]]:
    """op type -> (node name, why) of the nodes the converter cannot convert (folded nodes excluded): what
    targets/converter_facts.converter_gap says (the Ethos-U rules ask it too), and any op the prepass left that has
    no lowering of its own (a decomposition whose form it does not take). The why of a plain missing op is ""."""
    bad: dict[str, list[tuple[str, str]]] = {}
    for n in _work_nodes(graph):
        why = converter_gap(n)
        if why is None and n.op_type not in LOWERED:
            why = "a form the converter's prepass does not decompose"
        if why is not None:
            plain = why == f"no lowering for {n.op_type}" or n.domain not in ("", "ai.onnx")
            bad.setdefault(n.key, []).append((n.name, "" if plain else why))
    return bad


def _work_nodes(graph):
    folded = graph.folded
    return [n for n in graph.top_nodes if n.name not in folded and n.op_type != "Constant"]


def gap_message(
    gaps: list[tuple[str, str, str]],
    model: str | os.PathLike | None = None,
    target: str | None = None,
    graph=None,
    shapes=None,
) -> str:
    """One line: npufit's converter (not the vendor) lacks these nodes, and the command that avoids them.

    gaps: (op type, node name, why). The way out: cut the model before the first gap with `npufit split` (explicit
    end nodes = that node's activation inputs) and compile the NPU stage."""
    by_op: dict[str, list[tuple[str, str]]] = {}
    for op, name, why in gaps:
        by_op.setdefault(op, []).append((name, why))
    parts = []
    for op, items in sorted(by_op.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(f"'{n}'" + (f" ({w})" if w else "") for n, w in items[:3]) + (
            f" +{len(items) - 3} more" if len(items) > 3 else ""
        )
        parts.append(f"{op} x{len(items)}: {shown}" if len(items) > 1 else f"{op} {shown}")
    msg = "npufit's ONNX -> int8 TFLite converter (not the vendor toolchain) has no lowering for " + "; ".join(parts)
    if model is not None and graph is not None:
        msg += f"; way out: {split_before(model, target or 'ethos-u55-256', graph, gaps[0][1], shapes)}"
    return msg


def require_convertible(model: str | os.PathLike, input_shapes=None, target: str | None = None):
    """The prepared model, or UnsupportedModelError naming the op types the converter has no lowering for (with
    the split command that avoids them): what `convert` refuses first, checkable before a compile says anything."""

    src = Path(model)
    prep = prepare(src, input_shapes)
    bad = unsupported_nodes(prep.graph)
    for n in _work_nodes(prep.graph):
        if all(n.name != m for items in bad.values() for m, _ in items) and it.unlowered(prep.graph, n):
            bad.setdefault(n.key, []).append((n.name, "no lowering on integer / bool tensors"))
    if bad:
        gaps = [(op, n, w) for op, items in bad.items() for n, w in items]
        raise UnsupportedModelError(
            gap_message([(op, prep.source_node(n), w) for op, n, w in gaps], src, target, prep.graph, prep.input_shapes)
        )
    return prep


def convert(
    model: str | os.PathLike,
    out_path: str | os.PathLike,
    calibration: str | None = None,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    samples: int = 8,
    seed: int = 0,
    verify: int | None = 4,
    qdq_twin: bool = False,
    target: str | None = None,
    activations: str = "auto",
) -> ConversionResult:
    """Convert `model` into a fully int8 TFLite file at `out_path` (+ `<stem>.json` sidecar); the model is only read.

    calibration: None / 'random' (seeded N(0,1), `samples` of them), an .npz/.npy file or a folder of images
    (npufit.quantize.calibration readers). verify: number of seeded random samples to compare the TFLite
    (LiteRT interpreter) with ONNX Runtime on, or None to skip. qdq_twin: also write `<stem>_qdq.onnx`, the
    source graph with the converter's int8 parameters as Q/DQ pairs (what `--compare-prediction` checks).
    activations: 'int8'; 'int16' (16x8: int16 activations, int8 weights, int64 biases); 'auto' (default): int8,
    and int16 where the int8 file's min cosine vs ONNX Runtime on the calibration samples is below WIDE_BELOW
    and the int16 one does better (said in the notes)."""

    src, out = Path(model), Path(out_path)
    if activations not in ("int8", "int16", "auto"):
        raise NpufitError(f"activations must be int8, int16 or auto, not {activations!r}")
    if src.resolve() == out.resolve():
        raise NpufitError(f"{out}: the output would overwrite the input model")
    t0 = time.perf_counter()
    prep = require_convertible(src, input_shapes, target)
    work = _work_nodes(prep.graph)
    cal = load_calibration(
        calibration or "random", input_specs(prep.model), count=samples, seed=seed, input_shapes=input_shapes
    )
    n = min(len(cal), MAX_SAMPLES if cal.kind != "random" else samples)
    feeds = [cal[i] for i in range(n)]
    t1 = time.perf_counter()
    lns = layernorms(prep.model, prep.const)
    prep, work, ranges = _calibrate(prep, work, feeds, lns)
    scaled = rescale_rows(prep, ranges, lns, src, input_shapes) if lns else None
    if scaled is not None:
        prep, work, ranges = _calibrate(scaled, _work_nodes(scaled.graph), feeds, {})
    links = [
        (i, o)
        for nd in work
        if nd.op_type in PASS_THROUGH
        for i in nd.inputs[: 1 if nd.op_type != "Concat" else None]
        for o in nd.outputs[: 1 if nd.op_type != "Split" else None]
        if i
    ]
    merge_groups(ranges, links, prep.fixed_ranges)
    t2 = time.perf_counter()

    L, data, io = _lower(prep, work, ranges, src, target, 16 if activations == "int16" else 8)
    t3 = time.perf_counter()
    atomic_write_bytes(out, data)
    wide = None
    if activations == "auto":
        wide = _widen_if_needed(prep, work, ranges, src, target, out, data, io, feeds, input_shapes)
        if wide[0] is not None:
            L, data, io = wide[0]

    res = ConversionResult(
        out,
        out.with_suffix(".json"),
        str(src),
        graph=None,
        lineage=L.lineage,
        ops=L.ops,
        io=io,
        calibration={**cal.describe(), "samples_used": n},
        notes=list(prep.notes) + list(cal.warnings),
        timings={
            "prepare_s": round(t1 - t0, 4),
            "calibrate_s": round(t2 - t1, 4),
            "lower_s": round(t3 - t2, 4),
            "total_s": round(time.perf_counter() - t0, 4),
        },
        layouts={t.name: (k, t.layout) for k, t in L.tensors.items()},
        activations=f"int{L.bits}",
    )
    if wide is not None and wide[1]:
        res.notes.append(wide[1])
        res.timings["widen_s"] = wide[2]
    if qdq_twin:
        res.qdq_twin = write_qdq_twin(L, work, out.with_name(out.stem + "_qdq.onnx"))
    if verify:
        tv = time.perf_counter()
        res.verification = verify_tflite(
            out, src, samples=verify, input_shapes=input_shapes, seed=seed + 1000, io=res.io
        )
        res.timings["verify_s"] = round(time.perf_counter() - tv, 4)
        res.notes.extend(res.verification.notes)
    atomic_write_json(res.sidecar, res.to_dict())
    return res


def _lower(prep, work, ranges, src, target, bits: int):
    """Lower every node at activation width `bits` -> (Lowering, .tflite bytes, io rows)."""

    L = Lowering(prep, ranges, bits)
    for name in prep.graph.input_names:
        dt = tfl_dtype(prep.graph.tensor(name).dtype)
        if dt:  # token ids, masks: int32 / bool inputs, not quantized
            graph_input(L, name, dt)
        else:
            L.output(name, "nhwc" if len(L.shape(name)) == 4 else "plain")
    for nd in work:
        if nd.name in L.absorbed:
            continue
        L.current = [prep.source_node(nd.name)]
        try:
            (it.lower if it.claims(L, nd) else OPS[nd.op_type])(L, nd)
        except Unsupported as e:
            raise UnsupportedModelError(
                gap_message([(e.op, prep.source_node(e.node), e.why)], src, target, prep.graph, prep.input_shapes)
            ) from None
        except NpufitError:
            raise
        except (
            ValueError,
            IndexError,
            KeyError,
            TypeError,
            AttributeError,
        ) as e:  # a form of the op this lowering does not expect
            why = f"its lowering does not handle this form ({type(e).__name__}: {str(e)[:120]})"
            raise UnsupportedModelError(
                gap_message([(nd.op_type, prep.source_node(nd.name), why)], src, target, prep.graph, prep.input_shapes)
            ) from None
    ins = [L.tensors[name] for name in prep.graph.input_names]
    outs = []
    for name in prep.graph.output_names:
        t = L.tensors.get(L.resolve(name))
        if t is None or (t.q is None and t.dtype == "int8"):
            raise NpufitError(f"output '{name}' is not computed by any lowered op (a constant or pass-through output)")
        outs.append(t)
    L.b.io([t.index for t in ins], [t.index for t in outs])

    def io_row(name, t):
        return {
            "onnx": name,
            "tflite": t.name,
            "onnx_shape": list(L.shape(name)),
            "tflite_shape": list(t.shape),
            "layout": t.layout,
            "scale": None if t.q is None else t.q.scale,
            "zero_point": None if t.q is None else t.q.zero_point,
            "dtype": t.dtype,
        }

    io = {
        "inputs": [io_row(n, t) for n, t in zip(prep.graph.input_names, ins)],
        "outputs": [io_row(n, t) for n, t in zip(prep.graph.output_names, outs)],
    }
    return L, L.b.build(), io


def _widen_if_needed(prep, work, ranges, src, target, out: Path, data: bytes, io, feeds, input_shapes):
    """'auto' activations: -> ((Lowering, bytes, io) of the 16x8 form or None, note, seconds). The int8 file at
    `out` is checked on the calibration feeds; below WIDE_BELOW the int16 form is built, checked and kept (written
    to `out`) when its min cosine is higher."""

    t0 = time.perf_counter()
    c8 = verify_tflite(out, src, feeds, input_shapes=input_shapes, io=io).min_cosine
    if not c8 < WIDE_BELOW:
        return None, None, round(time.perf_counter() - t0, 4)
    try:
        L16, data16, io16 = _lower(prep, work, ranges, src, target, 16)
    except NpufitError as e:
        return (
            None,
            f"int8 min cosine {c8:.5f} on the calibration samples; the int16 form failed ({e.message[:100]}): "
            "kept int8",
            round(time.perf_counter() - t0, 4),
        )
    atomic_write_bytes(out, data16)
    try:
        c16 = verify_tflite(out, src, feeds, input_shapes=input_shapes, io=io16).min_cosine
    except (NpufitError, RuntimeError, ValueError) as e:  # a kernel LiteRT lacks in int16
        c16, why = float("nan"), f" ({' '.join(str(e).split())[:100]})"
    else:
        why = ""
    if c16 > c8:
        return (
            (L16, data16, io16),
            (
                f"activations int16 (16x8): int8 reached min cosine {c8:.5f} on the calibration "
                f"samples (< {WIDE_BELOW}), int16 {c16:.5f}"
            ),
            round(time.perf_counter() - t0, 4),
        )
    atomic_write_bytes(out, data)
    return (
        None,
        f"int8 min cosine {c8:.5f} on the calibration samples; int16 reached {c16:.5f}{why}: kept int8",
        round(time.perf_counter() - t0, 4),
    )


def _calibrate(prep, work, feeds, lns):
    """ONNX Runtime over the calibration feeds: ranges of every tensor the lowering quantizes (and the row maxima
    of its 3-D tensors where there are LayerNorms `lns` to row-scale); tensors only the run can value become
    constants."""

    unvalued = {
        t
        for nd in work
        for t in nd.inputs
        if t
        and prep.graph.producer(t) is not None
        and prep.graph.producer(t).name in prep.graph.folded
        and prep.const(t) is None
    }
    outs = [o for nd in work for o in nd.outputs if o]
    ranges = collect(prep.model, outs, feeds, keep=unvalued, rows=outs if lns else ())
    prep.consts.update(ranges.values)
    return prep, work, ranges


def onnx_to_int8_tflite(model, out_path, calibration=None, input_shapes=None, **kw) -> ConversionResult:
    """What `npufit compile --target ethos-u*` calls on an ONNX model; attaches the source Graph for mapping."""

    res = convert(model, out_path, calibration=calibration, input_shapes=input_shapes, **kw)
    res.graph = load(model, input_shapes)
    return res
