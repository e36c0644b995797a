"""Seed 001 reproduced with the real Ethos-N support library: seed-001-style detectors (ReLU and LeakyReLU at
structure levels 2, 3 and 4, npufit.zoo.detector) as int8 TFLite, compiled for Ethos-N78 (4 TOPS, 4 PLE by
default, as in the seed), printed in the seed's table layout (total / NPU / host, NPU ratio, extra Q/DQ ops per
LeakyReLU) for both flows:

- library: what the Ethos-N support library itself supports (it has an int8 LeakyReLU operation);
- TVM: npufit's ethos-n78 profile, which models TVM's import of an int8 LEAKY_RELU as dequantize → leaky_relu →
  quantize running on the host (the islands seed 001 counted: 3 host ops, i.e. 2 extra Q/DQ, per LeakyReLU).

Used by benchmarks/ethos_n_seed001.py and tests/test_compile_ethos_n.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..check import predict
from ..convert import onnx_to_int8_tflite
from ..graph import load
from ..zoo import detector
from . import compile_model

TVM_EXTRA_QDQ_PER_LEAKY = 2  # dequantize + quantize around each leaky_relu in TVM's QNN import (seed 001's relay)


@dataclass
class SeedRow:
    model: str
    level: int
    act: str
    ops: int
    npu: int
    host: int
    npu_partitions: int
    host_partitions: int
    leaky: int
    library_extra_qdq: int  # Q/DQ ops the library flow adds per LeakyReLU (measured: host Q/DQ nodes / LeakyReLUs)
    compiled: bool
    latency_ms: float | None
    compile_wall_s: float | None
    tvm_npu: int = 0
    tvm_host: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.npu / self.ops if self.ops else 0.0

    @property
    def tvm_ratio(self) -> float:
        return self.tvm_npu / (self.tvm_npu + self.tvm_host) if self.tvm_npu + self.tvm_host else 0.0


def build_models(folder: Path, size: int = 64, width: int = 16) -> dict[str, Path]:
    """Level 2/3/4 × ReLU/LeakyReLU detectors as int8 TFLite (npufit.convert, random calibration)."""

    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for level in detector.LEVELS:
        for act in detector.ACTIVATIONS:
            name = f"level{level}_{act}"
            tfl = folder / f"{name}.tflite"
            if not tfl.exists():
                onnx = folder / f"{name}.onnx"
                detector.export(act, onnx, size=size, level=level, width=width)
                onnx_to_int8_tflite(onnx, tfl)
            out[name] = tfl
    return out


def measure(models: dict[str, Path], out: Path, target: str = "ethos-n78") -> list[SeedRow]:

    rows = []
    for name, path in models.items():
        level, act = int(name[5]), name.split("_", 1)[1]
        res = compile_model(path, target, out_dir=out / f"{name}-{target}")
        m = res.metrics
        g = load(path)
        leaky = sum(n.op_type == "LEAKY_RELU" for n in g.nodes)
        rep = predict(g, "ethos-n78")
        run = rep.running
        tvm_npu = sum(n.verdict.value == "npu" for n in run)
        rows.append(
            SeedRow(
                model=f"Level {level} {'ReLU' if act == 'relu' else 'LeakyReLU'}",
                level=level,
                act=act,
                ops=m.get("nodes", 0),
                npu=m.get("npu_nodes", 0),
                host=m.get("host_nodes", 0),
                npu_partitions=m.get("npu_partitions", 0),
                host_partitions=m.get("host_partitions", 0),
                leaky=leaky,
                library_extra_qdq=(m.get("host_quantize_dequantize", 0) // leaky) if leaky else 0,
                compiled=res.ok,
                latency_ms=m.get("estimated_latency_ms"),
                compile_wall_s=res.wall_s,
                tvm_npu=tvm_npu,
                tvm_host=len(run) - tvm_npu,
                notes=[res.error] if res.error else [],
            )
        )
    return rows


def render(rows: list[SeedRow], clock_mhz: float = 1000.0) -> str:
    head = (
        "| model | ops | NPU | host | NPU ratio | NPU / host partitions | Compile() | est. latency @"
        f"{clock_mhz:g} MHz | extra Q/DQ per LeakyReLU (library / TVM) | TVM flow NPU ratio |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        qdq = f"{r.library_extra_qdq} / {TVM_EXTRA_QDQ_PER_LEAKY}" if r.leaky else "– (no LeakyReLU)"
        lat = f"{r.latency_ms:.3f} ms" if r.latency_ms is not None else "n/a"
        lines.append(
            f"| {r.model} | {r.ops} | {r.npu} | {r.host} | {100 * r.ratio:.1f}% | {r.npu_partitions} / "
            f"{r.host_partitions} | {'ok' if r.compiled else 'FAILED'} | {lat} | {qdq} | {100 * r.tvm_ratio:.1f}% |"
        )
    lines.append("")
    lines.append(
        "library = the Ethos-N support library's own IsSupported/Compile (int8 LeakyReLU is Supported); "
        "TVM = npufit's ethos-n78 profile of TVM's flow (each int8 LeakyReLU a dequantize → leaky_relu → "
        "quantize host island, as the measured TVM + Ethos-N78 partitions of a user's YOLO models show)."
    )
    return "\n".join(lines) + "\n"
