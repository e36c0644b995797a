"""Result fields in plain words: a verb's to_dict() shown as label / value tables (never `npu_macs_pct` or
`chosen True`, never a JSON dump). Known fields have a label here; any other field is spelled out from its name
(`peak_rss_mb` -> "peak RSS (MiB)"). Values go through the one number formatter (style.num); html.fields_html
draws the tables."""

from __future__ import annotations

from html import escape
from typing import Any

from .style import human_bytes, human_count, num

LABELS = {
    # split plans and candidates
    "est_ms": "estimated latency",
    "npu_macs_pct": "MACs on the NPU",
    "npu_macs": "MACs on the NPU",
    "total_macs": "MACs in total",
    "macs": "MACs",
    "boundaries": "tensors crossing NPU ↔ host",
    "bytes_crossing": "bytes crossing NPU ↔ host",
    "unknown_size_boundaries": "crossings of unknown size",
    "npu_stages": "NPU stages",
    "host_stages": "host stages",
    "node_count": "nodes",
    "helper_nodes": "helper nodes",
    "initializers": "weights (initializers)",
    "external_data": "external weight file",
    "external_bytes": "external weight bytes",
    "start_node_names": "first nodes",
    "end_node_names": "last nodes",
    "parse_stage": "parse this stage",
    "parse_original": "parse the original up to the cut",
    "plan_s": "planning",
    "extract_s": "extracting stages",
    "verify_s": "verifying",
    "total_s": "total",
    "sha256": "SHA-256",
    "output_dir": "output folder",
    # verification
    "equivalent": "outputs match",
    "max_abs": "largest absolute difference",
    "max_rel": "largest relative difference",
    "samples": "samples",
    "seed": "seed",
    "settings": "ONNX Runtime settings",
    "close": "outputs close",
    # compile
    "compiler": "compiler",
    "compiler_version": "compiler version",
    "ok": "succeeded",
    "artifact": "compiled file",
    "wall_s": "compile time",
    "peak_rss_mb": "peak memory",
    "log_path": "log",
    "npu_cycles_total": "NPU cycles",
    "internal_memory_kb": "on-chip memory",
    "weight_memory_kb": "weight memory",
    "cpu_layers": "layers on the CPU",
    "simulator_min_cosine": "simulator: lowest output cosine",
    # bench
    "warmup": "warm-up runs",
    "iterations": "timed runs",
    "duration_s": "time budget",
    "batch": "batch",
    "threads": "threads",
    "fresh_inputs": "fresh inputs each run",
    "input_pool": "distinct input samples",
    "boundary": "what the time includes",
    "percentile_method": "percentiles",
    "throughput": "throughput",
    "cold": "cold start",
    "gc": "garbage collector",
    "noise_thresholds": "noise thresholds",
    "p99_over_p50": "p99 / p50 above",
    "cv": "coefficient of variation",
    "min_samples_for_p99": "samples needed for p99",
    "throughput_ips": "throughput",
    "cold_ms": "first call",
    "build_s": "build time",
    "inputs": "inputs",
    "timer": "timer",
}
UNITS = {
    "est_ms": "ms",
    "cold_ms": "ms",
    "wall_s": "s",
    "build_s": "s",
    "plan_s": "s",
    "extract_s": "s",
    "verify_s": "s",
    "total_s": "s",
    "duration_s": "s",
    "peak_rss_mb": "MiB",
    "throughput_ips": "inferences/s",
    "internal_memory_kb": "KiB",
    "weight_memory_kb": "KiB",
}
NAMES = ("packages", "runtime_versions", "per_output", "simulator_cosine")  # dicts keyed by names, not fields
_WORDS = {
    "gib": "(GiB)",
    "mib": "(MiB)",
    "npu": "NPU",
    "cpu": "CPU",
    "gpu": "GPU",
    "macs": "MACs",
    "pct": "%",
    "ms": "(ms)",
    "s": "(s)",
    "mb": "(MiB)",
    "kb": "(KiB)",
    "ips": "(inferences/s)",
    "rss": "RSS",
    "ort": "ONNX Runtime",
    "id": "id",
    "onnx": "ONNX",
    "sqnr": "SQNR",
    "db": "(dB)",
    "num": "number of",
    "qdq": "QDQ",
}


def label(key: str) -> str:
    """The plain-words label of a field: known ones from LABELS, others spelled out from the name."""
    if key in LABELS:
        return LABELS[key]
    words = [_WORDS.get(w.lower(), w) for w in str(key).replace("-", "_").split("_") if w]
    return " ".join(words) or str(key)


def value(v: Any, key: str = "") -> str:
    """A field's value as escaped text: one number format, units from the field, yes/no, lists joined."""
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        if key.endswith("bytes") or key == "bytes_crossing":
            return escape(human_bytes(v))
        if key.endswith("macs") or key == "macs":
            return escape(human_count(v))
        if key.endswith("_pct"):
            return f"{v:.1f}%"
        return escape(num(v, UNITS.get(key, "")))
    if isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v):
        return escape(", ".join(str(x) for x in v)) or "-"
    return escape(str(v))


def rows(d: dict[str, Any], skip: tuple[str, ...] = (), prefix: str = "", raw: bool = False) -> list[tuple[str, str]]:
    """(label, value HTML) of every scalar field, nested dicts flattened as "group › field"; `raw`: the keys are
    names (packages, outputs), shown as they are."""
    out: list[tuple[str, str]] = []
    for k, v in d.items():
        if k in skip or k in ("schema", "npufit_version"):
            continue
        name = f"{prefix}{k if raw else label(k)}"
        if isinstance(v, dict):
            out += rows(v, skip, f"{name} › ", k in NAMES)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            continue  # a list of records is a table of its own (records_table)
        else:
            out.append((name, value(v, k)))
    return out
