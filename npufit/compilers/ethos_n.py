"""Arm Ethos-N78 through Arm's own Ethos-N support library (driver stack 25.03), the compiler underneath the Arm NN
and TVM Ethos-N backends. `npufit env install ethos-n` builds it; npufit lowers the int8 TFLite graph op by op
(npufit.compilers.ethos_n_lower) and a small C++ program (npufit/envs/ethos_n/shim.cpp) asks the library, per
operation, IsXxxSupported (Supported / EstimateOnly / Unsupported, with its reason text), builds the network of
the supported operations, runs Compile() and EstimatePerformance(). An ONNX model is converted to int8 TFLite
first with npufit.convert (as for Vela) and the placement is mapped back to the ONNX nodes.

Flow: these verdicts are the library's. TVM's flow imports an int8 TFLite LEAKY_RELU as dequantize → leaky_relu →
quantize and runs that island on the host (seed 001); the library itself supports int8 LeakyReLU.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..convert.onnx_to_tflite import require_convertible
from ..envs import env_dir, env_status
from ..envs.ethos_n import ensure_shim
from ..errors import NpufitError
from ..graph import load
from ..toolchains import ETHOS_N
from ..toolchains import ETHOS_N78_VARIANTS as VARIANTS
from ..util.io import atomic_write_bytes, atomic_write_text
from .base import (
    Adapter,
    CompileOptions,
    CompileResult,
    Placement,
    default_out_dir,
    env_tool_status,
    private_copy,
    random_calibration,
    run_tool,
    tail,
)
from .ethos_n_lower import lower, request_with
from .failure import explain, first_line_cause
from .mapping import Layer, resolve
from .vela import convert_onnx, layer_lineage, record_conversion

DEFAULT_VARIANT = "4tops-4ple"  # seed 001's configuration (TOPS=4, PLE=4)
_NAMED = {f"{ETHOS_N.platforms[0]}-{k}": k for k in VARIANTS}  # the target ethos-n78-<key> names variant <key>
# The library's own performance model (EstimationUtils.cpp CalculateMetric): DMA moves 16 bytes per NPU cycle.
DMA_BYTES_PER_CYCLE = 16.0
# The clock at which the variant names' TOPS hold (4TOPS: 8 engines x 2 OGs x 8 MAC units x 16 MACs x 2 ops x 1 GHz).
DEFAULT_CLOCK_MHZ = 1000.0
FLOW = "Arm Ethos-N support library 6.0.0 (driver stack 25.03), as Arm NN and TVM call it"
LEVELS = ("supported", "estimate_only", "unsupported")


def variant_of(target: str, options: CompileOptions | None = None) -> str:
    """The library's variant name: the option's, else the one the target names (`ethos-n78-<key>`), else the default."""
    key = (options.extra.get("ethos_n_variant") if options else None) or _NAMED.get(target.lower()) or DEFAULT_VARIANT
    if key not in VARIANTS:
        raise NpufitError(f"unknown Ethos-N78 variant '{key}' (one of: {', '.join(VARIANTS)})")
    return VARIANTS[key]


class EthosNCompiler(Adapter):
    calibration_format = "npz"
    extra_options = ("ethos_n_variant", "ethos_n_sram_bytes", "ethos_n_estimate", "ethos_n_clock_mhz")

    def calibrates_at_random(self, model: Path, options: CompileOptions) -> bool:
        return model.suffix.lower() != ".tflite" and random_calibration(options)  # npufit's converter quantizes

    def preflight(self, model: Path, target: str, options: CompileOptions) -> None:
        self._refuse(target, options)
        if model.suffix.lower() != ".tflite":
            require_convertible(model, options.input_shapes, target)

    def _refuse(self, target: str, options: CompileOptions) -> None:
        """What refuses the request before any work (and before the random-calibration warning)."""
        if options.activations == "int16":
            raise NpufitError(
                f"{target}: the Ethos-N takes 8-bit tensors only (its profile's dtypes); "
                "--activations int16 is for Ethos-U targets"
            )
        if not env_status(self.toolchain.env_name)["installed"]:
            raise NpufitError(
                "the Ethos-N support library is not built: run 'npufit env install ethos-n' "
                "(--source DIR for a local copy of the driver stack)"
            )

    def status(self) -> dict:
        return env_tool_status(self.toolchain)

    def compile(self, model: Path, target: str, options: CompileOptions) -> CompileResult:
        self._refuse(target, options)
        variant = variant_of(target, options)
        out = default_out_dir(model, target, options.out_dir)
        notes: list[str] = []
        outputs: dict[str, str] = {}
        conv = None
        if model.suffix.lower() == ".tflite":
            tgraph = load(model)  # errors name the user's file; the library side reads the private copy
            src = private_copy(model, out)
        else:
            conv = convert_onnx(model, out, options, notes, outputs, activations="int8")
            src = conv.path
            tgraph = load(src)
        low = lower(tgraph, src)
        work = out / "ethos_n"
        work.mkdir(parents=True, exist_ok=True)
        blob, req, resp_path = work / "constants.bin", work / "request.txt", work / "response.json"
        sram = int(options.extra.get("ethos_n_sram_bytes", 0))
        atomic_write_bytes(blob, low.blob)
        atomic_write_text(req, request_with(low, variant, sram, blob.resolve()))
        for stale in [resp_path, *work.glob("compiled_network_*.bin")]:
            stale.unlink(missing_ok=True)
        cmd = [
            str(ensure_shim(env_dir(self.toolchain.env_name))),
            str(req),
            str(resp_path),
            "--save",
            str(work / "compiled_network_"),
        ]
        if options.extra.get("ethos_n_estimate") is False:
            cmd.append("--no-estimate")
        run = run_tool(cmd, out / "ethos_n.log", cwd=work, timeout_s=options.timeout_s)
        try:
            resp = json.loads(resp_path.read_text())
        except (OSError, ValueError):
            resp = {"error": f"the shim exited with code {run.returncode} without an answer: {tail(run.log, 3)}"}
        comp = resp.get("compile") or {}
        res = CompileResult(
            self.toolchain.status_name,
            resp.get("version"),
            target.lower(),
            str(model),
            bool(comp.get("ok")) and not resp.get("error"),
            log_path=str(run.log_path),
            command=run.command_line,
            wall_s=run.wall_s,
            peak_rss_mb=run.peak_rss_mb,
            outputs=outputs,
            notes=notes,
        )
        res.timings["support_library"] = run.wall_s
        res.outputs.update({"request": str(req), "response": str(resp_path)})
        if conv is not None:
            record_conversion(res, conv)
        if resp.get("error"):
            res.error, res.next_step = _failure("Ethos-N support library", resp["error"], model, target, options)
            return res
        layers, levels = node_layers(tgraph, low, resp)
        res.placement = placements(tgraph, low, layers, conv)
        res.metrics.update(summary_metrics(tgraph, low, resp, levels, variant, options))
        if not comp:  # as for Vela, a model with nothing for the NPU compiles: it all runs on the host
            res.ok = True
            res.notes.append(
                "no operation is supported by the Ethos-N support library: Compile() had nothing to "
                "compile and the whole model runs on the host"
            )
        elif not comp.get("ok"):
            res.error, res.next_step = _failure(
                "Compile()", comp.get("error") or "no compiled network", model, target, options
            )
        else:  # the serialized command stream(s) the Arm NN / driver library would load
            nets = sorted(work.glob("compiled_network_*.bin"))
            res.artifact = str(nets[0]) if nets else None
            res.outputs.update({f"compiled_network_{i}": str(p) for i, p in enumerate(nets)})
        res.notes.append(
            f"verdicts are the Ethos-N support library's ({FLOW}); in TVM's flow an int8 LEAKY_RELU is "
            "imported as dequantize -> leaky_relu -> quantize and runs on the host"
        )
        return res


def _reason(level: str, text: str, host_reason: str | None) -> str:
    if host_reason:
        return host_reason
    label = {"estimate_only": "EstimateOnly", "unsupported": "Unsupported"}.get(level, "Supported")
    return f"Ethos-N support library: {label}" + (f": {text}" if text else "")


def node_layers(graph, low, resp) -> tuple[list[Layer], dict[str, str]]:
    """One Layer per lowered TFLite node (named by its first output, as the converter's lineage is keyed),
    its level the worst of its operations' levels."""
    by_op = {o["id"]: o for o in resp.get("ops", [])}
    layers, levels = [], {}
    for n in graph.top_nodes:
        ops = low.ops_of.get(n.name)
        if not ops:
            continue
        verdicts = [by_op.get(o, {"level": "unsupported", "reason": "no answer from the shim"}) for o in ops]
        worst = max(verdicts, key=lambda v: LEVELS.index(v["level"]))
        levels[n.name] = worst["level"]
        reason = (
            ""
            if worst["level"] == "supported"
            else _reason(worst["level"], worst.get("reason", ""), low.host.get(ops[0]))
        )
        layers.append(
            Layer(
                n.outputs[0] if n.outputs else n.name,
                n.op_type,
                "npu" if worst["level"] == "supported" else "cpu",
                reason,
            )
        )
    for pad, conv in low.fused.items():
        levels[pad] = levels.get(conv, "unsupported")
    return layers, levels


def placements(graph, low, layers: list[Layer], conv) -> list[Placement]:
    if conv is not None:
        return resolve(conv.graph, layers, layer_lineage(layers, conv.lineage), "Ethos-N support library")
    by_out = {lay.name: lay for lay in layers}
    out: dict[str, Placement] = {}
    folded = graph.folded
    for n in graph.top_nodes:
        lay = by_out.get(n.outputs[0] if n.outputs else n.name)
        if lay is not None:
            out[n.name] = Placement(n.name, n.op_type, lay.device, lay.reason, [lay.name])
        elif n.name in folded:
            out[n.name] = Placement(n.name, n.op_type, "folded", "constant: computed at compile time", how="absent")
    for pad, into in low.fused.items():
        p = out.get(into)
        if p is not None:
            out[pad] = Placement(
                pad,
                graph.node(pad).op_type,
                p.device,
                f"fused into the padding of {p.op} '{into}'" + (f"; {p.reason}" if p.reason else ""),
                list(p.layers),
                "fused",
            )
    return [out[n.name] for n in graph.top_nodes if n.name in out]


def partitions(graph, on_npu: set[str]) -> tuple[int, int]:
    """Connected NPU regions and host regions over the TFLite graph's edges."""
    counts = []
    for want in (True, False):
        nodes = {n.name for n in graph.top_nodes if (n.name in on_npu) == want and n.name not in graph.folded}
        seen, k = set(), 0
        for name in nodes:
            if name in seen:
                continue
            k += 1
            stack = [name]
            while stack:
                cur = stack.pop()
                if cur in seen:
                    continue
                seen.add(cur)
                node = graph.node(cur)
                stack.extend(m.name for m in (*graph.predecessors(node), *graph.successors(node)) if m.name in nodes)
        counts.append(k)
    return counts[0], counts[1]


def performance(passes: list[dict], clock_mhz: float) -> dict:
    """Roll the library's per-pass figures up with its own model: DMA read and write, MCE and PLE run in parallel,
    non-parallel DRAM transfers add; stripe overheads left out."""
    total = mce = ple = dram = sram = 0.0
    for p in passes:
        par_r = (p["input"]["dram_parallel"] + p["weights"]["dram_parallel"]) / DMA_BYTES_PER_CYCLE
        par_w = p["output"]["dram_parallel"] / DMA_BYTES_PER_CYCLE
        nonpar = sum(p[k]["dram_non_parallel"] for k in ("input", "weights", "output")) / DMA_BYTES_PER_CYCLE
        total += nonpar + max(par_r, par_w, p["mce_cycles"], p["ple_cycles"])
        mce += p["mce_cycles"]
        ple += p["ple_cycles"]
        dram += sum(p[k]["dram_parallel"] + p[k]["dram_non_parallel"] for k in ("input", "weights", "output"))
        sram += sum(p[k]["sram"] for k in ("input", "weights", "output"))
    return {
        "passes": len(passes),
        "cycles_estimated": int(total),
        "mce_cycles": int(mce),
        "ple_cycles": int(ple),
        "dram_bytes": int(dram),
        "sram_bytes": int(sram),
        "clock_mhz": clock_mhz,
        "latency_ms_estimated": round(total / (clock_mhz * 1e3), 4),
        "model": f"per pass: non-parallel DRAM bytes/{DMA_BYTES_PER_CYCLE:g} + max(parallel DMA read, write, MCE, PLE "
        f"cycles); the library's EstimationUtils model without stripe overheads; at {clock_mhz:g} MHz",
    }


def summary_metrics(graph, low, resp, levels: dict[str, str], variant: str, options: CompileOptions) -> dict:
    counts = {lv: sum(v == lv for v in levels.values()) for lv in LEVELS}
    on_npu = {n for n, v in levels.items() if v == "supported"}
    npu_parts, host_parts = partitions(graph, on_npu)
    qdq_host = sum(
        1 for n in graph.top_nodes if n.op_type in ("QUANTIZE", "DEQUANTIZE") and levels.get(n.name) != "supported"
    )
    lowered = len(levels)
    m = {
        "flow": FLOW,
        "variant": variant,
        "support_levels": counts,
        "nodes": lowered,
        "npu_nodes": counts["supported"],
        "host_nodes": lowered - counts["supported"],
        "npu_ratio": round(counts["supported"] / lowered, 4) if lowered else None,
        "npu_partitions": npu_parts,
        "host_partitions": host_parts,
        "host_quantize_dequantize": qdq_host,
        "network": resp.get("network"),
        "compile": resp.get("compile"),
    }
    est = resp.get("estimate") or {}
    if est.get("ok"):
        clock = float(options.extra.get("ethos_n_clock_mhz", DEFAULT_CLOCK_MHZ))
        m["estimate"] = perf = performance(est.get("passes", []), clock)
        perf["wall_s"] = est.get("wall_s")
        m.update(
            {
                "estimated_latency_ms": perf["latency_ms_estimated"],
                "estimated_cycles": perf["cycles_estimated"],
                "clock_mhz": clock,
                "dram_bytes": perf["dram_bytes"],
            }
        )
        if est.get("failures"):
            m["estimate"]["failures"] = est["failures"]
    elif est:
        m["estimate"] = {"error": est.get("error")}
    return m


def _failure(what: str, text: str, model: Path, target: str, options: CompileOptions) -> tuple[str, str | None]:
    """The library's one-line cause and the command that avoids it (compilers/failure.py)."""

    graph = load(model, options.input_shapes) if model.suffix.lower() == ".onnx" else None
    failure = explain(first_line_cause(text), model, target.lower(), graph)
    return f"{what} failed: {failure.cause}", failure.next_step
