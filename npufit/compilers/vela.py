"""Arm Vela (ethos-u-vela) for Ethos-U55/U65/U85: per-operator NPU/CPU placement from its per-layer CSV,
the reason for each CPU operator from its "supported operators" warnings, cycles / SRAM / flash / inference
time from its summary CSV. Input: a fully int8 TFLite file (an ONNX model is converted first, on a copy)."""

from __future__ import annotations

import csv
import math
import re
import shutil
import sys
from pathlib import Path

from ..convert import onnx_to_int8_tflite
from ..convert.onnx_to_tflite import CONVERTER, require_convertible
from ..errors import NpufitError
from ..graph import load
from .base import (
    RANDOM_TAG,
    Adapter,
    CompileOptions,
    CompileResult,
    default_out_dir,
    private_copy,
    random_calibration,
    run_tool,
    tail,
)
from .failure import explain, vela_cause
from .mapping import Layer, resolve

ETHOS_U_OP = "ethos-u"  # the custom operator Vela's output file runs the NPU command stream with
_WARN = re.compile(
    r"Warning \(supported operators\) operator: (\w+), ofm: '([^']*)'\s*\nReason: ([^\n]*)((?:\n(?!\n)[^\n]*)*)"
)
SUMMARY_KEYS = {
    "inference_time": "inference_time_s",
    "inferences_per_second": "inferences_per_second",
    "cycles_total": "cycles_total",
    "cycles_npu": "cycles_npu",
    "sram_memory_used": "sram_used_kib",
    "off_chip_flash_memory_used": "off_chip_flash_used_kib",
    "on_chip_flash_memory_used": "on_chip_flash_used_kib",
    "dram_memory_used": "dram_used_kib",
    "nn_macs": "macs",
    "total_npu_encoded_weights": "npu_encoded_weights_bytes",
    "system_config": "system_config",
    "memory_mode": "memory_mode",
    "accelerator_configuration": "accelerator",
}


def _vela_exe() -> str | None:
    exe = Path(sys.executable).with_name("vela")
    return str(exe) if exe.exists() else shutil.which("vela")


def vela_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("ethos-u-vela")
    except Exception:
        return None


class VelaCompiler(Adapter):
    calibration_format = "npz"
    extra_options = ("vela_args",)

    def calibrates_at_random(self, model: Path, options: CompileOptions) -> bool:
        return model.suffix.lower() != ".tflite" and random_calibration(options)  # npufit's converter quantizes

    def preflight(self, model: Path, target: str, options: CompileOptions) -> None:
        if not _vela_exe():
            raise NpufitError("Vela is not installed: pip install 'ethos-u-vela==5.2.0'")
        if model.suffix.lower() != ".tflite":
            require_convertible(model, options.input_shapes, target)

    def status(self) -> dict:
        v = vela_version()
        exe = _vela_exe()
        return {
            "name": self.toolchain.status_name,
            "available": bool(v and exe),
            "version": v,
            "enables": "npufit compile --target ethos-u55-*/u65-*/u85-*: Vela placement, cycles, SRAM/flash, "
            "inference time",
            "install": "pip install 'ethos-u-vela==5.2.0'",
            "detail": exe or "vela executable not found",
        }

    def compile(self, model: Path, target: str, options: CompileOptions) -> CompileResult:
        exe = _vela_exe()
        if not exe:
            raise NpufitError("Vela is not installed: pip install 'ethos-u-vela==5.2.0'")
        out = default_out_dir(
            model, target, options.out_dir
        ).resolve()  # Vela runs with cwd=out: paths must be absolute
        notes: list[str] = []
        outputs: dict[str, str] = {}
        conv = None
        if model.suffix.lower() == ".tflite":
            src = private_copy(model, out)
            graph, lineage = tflite_lineage(src)
        else:
            conv = convert_onnx(model, out, options, notes, outputs, target.lower())
            src, lineage = conv.path, conv.lineage
            graph = load_graph(src)
        cmd = [
            exe,
            str(src),
            "--accelerator-config",
            target.lower(),
            "--output-dir",
            str(out / "vela"),
            "--verbose-performance",
        ] + list(options.extra.get("vela_args", ()))
        run = run_tool(cmd, out / "vela.log", cwd=out, timeout_s=options.timeout_s)
        text = run.log
        res = CompileResult(
            self.toolchain.status_name,
            vela_version(),
            target.lower(),
            str(model),
            run.returncode == 0,
            log_path=str(run.log_path),
            command=run.command_line,
            wall_s=run.wall_s,
            peak_rss_mb=run.peak_rss_mb,
            outputs=outputs,
            notes=notes,
        )
        res.timings["vela"] = run.wall_s
        if conv is not None:
            record_conversion(res, conv)
        if run.killed:
            res.error = f"Vela {run.killed}"
            return res
        if run.returncode != 0:  # Vela's one-line cause and the way around it (compilers/failure.py)
            onnx_graph = load(model, options.input_shapes) if model.suffix.lower() == ".onnx" else None
            failure = explain(vela_cause(text), model, target.lower(), onnx_graph)
            res.error, res.next_step = f"Vela failed (exit {run.returncode}): {failure.cause}", failure.next_step
            return res
        stem = src.stem
        vdir = out / "vela"
        res.artifact = str(vdir / f"{stem}_vela.tflite")
        reasons = parse_reasons(text)
        cycles = {lay.name: lay.cycles for lay in parse_per_layer_csv(vdir / f"{stem}_per-layer.csv", reasons)}
        if not Path(res.artifact).exists():
            res.ok, res.error = False, f"Vela wrote no output file: {tail(text, 3)}"
            return res
        layers = placed_layers(graph, Path(res.artifact), reasons, cycles)
        res.metrics.update(parse_summary_csv(next(iter(sorted(vdir.glob(f"{stem}_summary_*.csv"))), None)))
        # counted over the operators of the TFLite file Vela compiled (for an ONNX model: the converted file)
        res.metrics["cpu_operators"] = sum(lay.device == "cpu" for lay in layers)
        res.metrics["npu_operators"] = sum(lay.device == "npu" for lay in layers)
        if conv is not None:  # two counts of one placement: say which is which
            res.notes.append(
                "cpu_operators / npu_operators count the operators of the converted TFLite file Vela compiled; "
                "the placement counts the ONNX model's nodes, each mapped back from its operators"
            )

        res.placement = resolve(
            conv.graph if conv is not None else graph, layers, layer_lineage(layers, lineage), "Vela"
        )
        return res


def parse_reasons(log: str) -> dict[str, str]:
    """ofm tensor name -> "Vela: <reason> (<constraint text>)" from the supported-operators warnings."""
    out = {}
    for m in _WARN.finditer(log):
        op, ofm, reason, more = m.groups()
        detail = " ".join(s.strip().lstrip("- ") for s in more.strip().splitlines() if s.strip())
        out[ofm] = f"Vela: {op} {reason.strip()}" + (f" ({detail})" if detail else "")
    return out


def parse_per_layer_csv(path: Path, reasons: dict[str, str]) -> list[Layer]:
    """One Layer per original TFLite operator (Vela splits some, e.g. Conv2D + fused Relu, into NNG ops)."""
    if not path.exists():
        return []
    layers: dict[tuple[str, str], Layer] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["Name"], row["Original Operator"])
            dev = "cpu" if row["Target"].strip().upper() == "CPU" else "npu"
            lay = layers.get(key)
            if lay is None:
                layers[key] = Layer(
                    row["Name"],
                    row["Original Operator"],
                    dev,
                    reasons.get(row["Name"], "Vela: scheduled on the CPU") if dev == "cpu" else "",
                    row.get("Op Cycles", ""),
                )
            elif dev == "cpu":
                lay.device, lay.reason = "cpu", reasons.get(row["Name"], "Vela: scheduled on the CPU")
    return list(layers.values())


def placed_layers(source, vela_tflite: Path, reasons: dict[str, str], cycles: dict[str, str]) -> list[Layer]:
    """One Layer per operator of the main subgraph of the TFLite file Vela compiled (`source`, its Graph), placed
    by what Vela's output file holds: an operator Vela left on the CPU is still there, under its own output
    tensor; every other one runs inside the `ethos-u` custom operator (the NPU command stream).

    Read from the output file rather than the per-layer CSV, which describes one subgraph only: Vela writes it per
    subgraph, so for a model with a second subgraph (a stateful model's CALL_ONCE initialiser) the CSV holds the
    initialiser's variables and none of the main graph's operators. Operators without outputs (ASSIGN_VARIABLE,
    CALL_ONCE) are matched by op type and inputs; a CPU operator whose output Vela renamed (the U85's GATHER
    lowering names its pass-through 'indices#11') by op type and a shared input."""
    out_graph = load_graph(vela_tflite)
    on_cpu = [n for n in out_graph.top_nodes if n.op_type != ETHOS_U_OP]
    by_output = {o: n for n in source.top_nodes for o in n.outputs if o}
    cpu: set[str] = set()
    unmatched = []
    for n in on_cpu:
        hit = next((by_output[o] for o in n.outputs if o in by_output), None)
        if hit is not None:
            cpu.add(hit.name)
        else:
            unmatched.append(n)
    readers: dict[tuple[str, str], list] = {}
    for m in source.top_nodes:
        for t in set(m.present_inputs):
            readers.setdefault((m.op_type, t), []).append(m)
    for n in unmatched:
        same = [
            m
            for m in source.top_nodes
            if m.name not in cpu
            and m.op_type == n.op_type
            and tuple(m.inputs) == tuple(n.inputs)
            and not any(m.outputs)
        ]
        if not same:  # renamed output: the one source operator of this type reading one of its inputs
            cands = {m.name: m for t in n.present_inputs for m in readers.get((n.op_type, t), ()) if m.name not in cpu}
            same = list(cands.values()) if len(cands) == 1 else []
        if not same and not n.inputs and not any(n.outputs):  # CALL_ONCE: nothing but its type to go by
            same = [m for m in source.top_nodes if m.name not in cpu and m.op_type == n.op_type]
        if same:
            cpu.add(same[0].name)
    layers = []
    for i, m in enumerate(source.top_nodes):
        # Vela names a layer by its output (OFM) tensor, an operator without outputs by its index
        name = next((o for o in m.outputs if o), f"placeholder-for-{i}-OFM")
        dev = "cpu" if m.name in cpu else "npu"
        reason = reasons.get(name, "Vela: scheduled on the CPU") if dev == "cpu" else ""
        layers.append(Layer(name, m.op_type, dev, reason, cycles.get(name, "")))
    return layers


def load_graph(path: Path):

    return load(path)


def parse_summary_csv(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    with open(path, newline="") as f:
        row = next(csv.DictReader(f), None)
    if not row:
        return {}
    out = {}
    for k, name in SUMMARY_KEYS.items():
        v = row.get(k)
        if v is None:
            continue
        try:
            out[name] = int(v)
        except ValueError:
            try:
                out[name] = float(v)
            except ValueError:
                out[name] = v
        if isinstance(out[name], float) and not math.isfinite(out[name]):
            del out[name]  # "nan": Vela has no estimate (nothing ran on the NPU); no figure beats a NaN
    if isinstance(out.get("inference_time_s"), (int, float)):
        out["inference_time_ms"] = round(out["inference_time_s"] * 1000, 4)
    return out


# -- ONNX input: npufit's own int8 converter (npufit/convert), on the work dir, never on the user's file -----
def convert_onnx(
    model: Path,
    out: Path,
    options: CompileOptions,
    notes: list[str],
    outputs: dict[str, str],
    target: str | None = None,
    activations: str | None = None,
):
    """A node the converter cannot lower stops here with npufit's gap message (naming the node and the split
    command that avoids it); the exact rewrites it applied first are listed in the notes. `activations` overrides
    options.activations (a compiler that takes 8-bit tensors only)."""

    tag = f"_{RANDOM_TAG}" if random_calibration(options) else ""  # the file's name says what it was calibrated on
    conv = onnx_to_int8_tflite(
        model,
        out / f"{model.stem}_int8{tag}.tflite",
        calibration=options.calibration,
        input_shapes=options.input_shapes,
        qdq_twin=True,
        target=target,
        activations=activations or options.activations,
        **({} if options.verify else {"verify": None}),
    )
    outputs.update(
        {"int8_tflite": str(conv.path), "conversion": str(conv.sidecar), "checked_model": str(conv.qdq_twin)}
    )
    kind = "TFLite (int16 activations, int8 weights)" if conv.activations == "int16" else "int8 TFLite"
    notes.append(f"converted ONNX -> {kind} with npufit.convert ({conv.summary()})")
    notes.extend(conv.notes)
    return conv


def record_conversion(res: CompileResult, conv) -> None:
    """Converter name, time and verification in the result and at the end of the compile log."""

    v = conv.verification
    res.timings["convert"] = conv.timings.get("total_s", 0.0)
    res.metrics["conversion"] = {
        "converter": CONVERTER,
        "wall_s": conv.timings.get("total_s"),
        "tflite_ops": len(conv.ops),
        "calibration": conv.calibration.get("source"),
        "min_cosine_vs_onnx": None if v is None else v.min_cosine,
        "max_abs_vs_onnx": None if v is None else v.max_abs,
    }
    if res.log_path:
        with open(res.log_path, "a", encoding="utf-8") as f:
            f.write(f"\n[npufit] input converted by {CONVERTER}: {conv.summary()}\n[npufit] sidecar: {conv.sidecar}\n")


def tflite_lineage(path: Path):
    """A TFLite model's graph and output tensor -> operator: Vela names each layer by its output (OFM) tensor while
    npufit names TFLite operators by op type and index, so placement is matched through the tensor."""

    graph = load(path)
    lineage: dict[str, list[str]] = {}
    for i, n in enumerate(graph.top_nodes):
        # an operator without outputs (ASSIGN_VARIABLE of a stateful model) is named after its index by Vela
        for o in [o for o in n.outputs if o] or [f"placeholder-for-{i}-OFM"]:
            lineage[o] = [n.name]
    return graph, lineage


def layer_lineage(layers, lineage: dict[str, list[str]] | None) -> dict[str, set[str]] | None:
    """Vela names a layer by its output tensor, sometimes with a suffix of its own (split or fused ops):
    exact converter lineage first, else the longest converter tensor name that prefixes the layer name."""
    if not lineage:
        return None
    keys = sorted(lineage, key=len, reverse=True)
    out = {}
    for lay in layers:
        key = (
            lay.name
            if lay.name in lineage
            else next((k for k in keys if lay.name.startswith(k) and not lay.name[len(k)].isalnum()), None)
        )
        if key is not None and lineage[key]:
            out[lay.name] = set(lineage[key])
    return out
