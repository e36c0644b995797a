"""FAKE `hailo` (Dataflow Compiler CLI) and `hailortcli` (HailoRT CLI) for npufit's tests. NOT Hailo's tools.

The real ones are login-gated (and the runtime half needs a Hailo device), so tests run npufit's Hailo code
against this stand-in: it checks what the real tools check for the flows npufit drives (see README.md), prints
their recorded outputs (recorded/), writes JSON placeholders where they write HAR/HEF files, and appends every
call to $FAKE_HAILO_LOG (one JSON line: tool, argv, cwd).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

RECORDED = Path(__file__).parent / "recorded"
FAKE_MARK = "FAKE: written by tests/fakes/hailo, not by Hailo's tools"
# operators this FAKE parser refuses, with the DFC error class and message shape of the public failures
REFUSED = {
    "TopK": ("UnsupportedOperationError", "TopK operation is unsupported"),
    "GridSample": ("UnsupportedOperationError", "GridSample operation is unsupported"),
    "GatherElements": ("UnsupportedOperationError", "GatherElements operation is unsupported"),
    "Mod": ("UnsupportedOperationError", "Mod operation is unsupported"),
}
ARCHS = ("hailo8", "hailo8l", "hailo8r", "hailo15h", "hailo15m", "hailo10h")
SCRIPT_LINE = re.compile(r"^(\w+\s*=\s*)?\w+\(.*\)$")


def recorded(name: str, **subs) -> str:
    text = (RECORDED / name).read_text()
    for k, v in subs.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def log_call(tool: str, argv: list[str]) -> None:
    path = os.environ.get("FAKE_HAILO_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"tool": tool, "argv": argv, "cwd": os.getcwd()}) + "\n")


def fail(text: str, code: int = 1) -> int:
    print(text.rstrip())
    return code


def har_shape(shape: list[int]) -> list[int]:
    """The DFC's channels-last input layer shape of an ONNX input shape (batch as -1)."""
    if len(shape) == 4:
        return [-1, shape[2], shape[3], shape[1]]
    if len(shape) == 3:
        return [-1, 1, shape[1], shape[2]]
    return [-1, *shape[1:]]


# -- hailo parser onnx ---------------------------------------------------------------------------------------
def _region(model, start: list[str], end: list[str]):
    """Nodes between the start and end names (node names or tensor names), and the tensors the region reads."""
    nodes = list(model.graph.node)
    by_name = {n.name: n for n in nodes}
    producer = {o: n for n in nodes for o in n.output}
    consumers: dict[str, list] = {}
    for n in nodes:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    consts = {t.name for t in model.graph.initializer} | {o for n in nodes if n.op_type == "Constant" for o in n.output}

    def seeds(names, downstream):
        out = []
        for s in names:
            if s in by_name:
                out.append(by_name[s])
            elif downstream:
                out += consumers.get(s, [])
            elif s in producer:
                out.append(producer[s])
        return out

    def walk(start_nodes, step):
        seen, stack = {}, list(start_nodes)
        while stack:
            n = stack.pop()
            if n.name in seen:
                continue
            seen[n.name] = n
            stack.extend(step(n))
        return seen

    down = walk(seeds(start, True), lambda n: [c for o in n.output for c in consumers.get(o, [])]) if start else None
    up = walk(seeds(end, False), lambda n: [producer[i] for i in n.input if i in producer]) if end else None
    region = [n for n in nodes if (down is None or n.name in down) and (up is None or n.name in up)]
    inside = {o for n in region for o in n.output}
    reads = [i for n in region for i in n.input if i and i not in inside and i not in consts]
    return region, list(dict.fromkeys(reads)), producer


def parser(argv: list[str]) -> int:
    import onnx

    p = argparse.ArgumentParser(prog="hailo parser onnx")
    p.add_argument("model")
    p.add_argument("--hw-arch", default="hailo8")
    p.add_argument("--har-path")
    p.add_argument("--net-name")
    p.add_argument("--start-node-names", nargs="+", default=[])
    p.add_argument("--end-node-names", nargs="+", default=[])
    p.add_argument("-y", action="store_true")
    a = p.parse_args(argv)
    if a.hw_arch not in ARCHS:
        return fail(f"hailo parser onnx: error: argument --hw-arch: invalid choice: '{a.hw_arch}'", 2)
    net = a.net_name or Path(a.model).stem
    if "." in net:  # a dot in a network name is refused by the DFC
        return fail(f"[error] Invalid network name {net}", 1)
    model = onnx.shape_inference.infer_shapes(onnx.load(a.model))
    names = {n.name for n in model.graph.node} | {i.name for i in model.graph.input}
    missing = [s for s in a.start_node_names + a.end_node_names if s not in names]
    if missing:
        return fail(f"[error] Failed to produce compiled graph\n[error] Unable to find nodes {missing} in the model")
    region, reads, producer = _region(model, a.start_node_names, a.end_node_names)
    refused = [n for n in region if n.op_type in REFUSED]
    if refused:
        errors = "\n".join(f" {REFUSED[n.op_type][0]} in op {n.name}: {REFUSED[n.op_type][1]}" for n in refused)
        first = refused[0]
        before = [producer[i].name for i in first.input if i in producer and producer[i].op_type != "Constant"]
        return fail(recorded("parser_error.txt", net=net, errors=errors, recommended=", ".join(before)))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
    shapes.update({v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.input})
    shapes.update({v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.output})
    ends = a.end_node_names or [producer[o.name].name for o in model.graph.output if o.name in producer]
    out_tensors = [o for n in region if n.name in ends for o in n.output]
    har = {
        "fake": FAKE_MARK,
        "net": net,
        "hw_arch": a.hw_arch,
        "inputs": [{"layer": f"{net}/input_layer{i + 1}", "onnx": t, "shape": har_shape(shapes[t])} for i, t in enumerate(reads)],
        "outputs": [{"layer": f"{net}/output_layer{i + 1}", "onnx": t, "shape": har_shape(shapes.get(t, [1]))} for i, t in enumerate(out_tensors)],
    }
    path = Path(a.har_path or f"{net}.har")
    path.write_text(json.dumps(har))
    start_map = ", ".join(f"'{x['onnx']}': '{x['layer']}'" for x in har["inputs"])
    print(recorded("parser_ok.txt", net=net, har=path.resolve(), start_map=start_map,
                   end_list=", ".join(f"'{e}'" for e in ends)).rstrip())
    return 0


# -- hailo optimize --------------------------------------------------------------------------------------------
def _load_har(path: str) -> dict:
    d = json.loads(Path(path).read_text())
    assert d.get("fake") == FAKE_MARK, f"{path} is not a HAR this FAKE wrote"
    return d


def _calibration(path: Path, har: dict) -> tuple[int, str | None]:
    """Samples in the calibration set, or the DFC's error for a set that does not fit the input layers."""
    layers = {x["layer"]: x["shape"] for x in har["inputs"]}
    if path.is_dir():
        arrays = {next(iter(layers)): np.stack([np.load(f) for f in sorted(path.glob("*.npy"))])}
    elif path.suffix == ".npz":
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        if set(arrays) != set(layers):
            return 0, f"[error] Calibration set keys {sorted(arrays)} don't match the network's input layers {sorted(layers)}"
    else:
        if len(layers) != 1:
            return 0, f"[error] The network has {len(layers)} input layers: give the calibration set as an npz keyed by {sorted(layers)}"
        arrays = {next(iter(layers)): np.load(path)}
    counts = set()
    for layer, arr in arrays.items():
        want = layers[layer]
        if list(arr.shape[1:]) != want[1:] or arr.dtype != np.float32:
            return 0, recorded("optimize_bad_shape.txt", got=tuple(arr.shape[1:]), layer=layer, want=tuple(want[1:]))
        counts.add(arr.shape[0])
    return min(counts), None


def optimize(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="hailo optimize")
    p.add_argument("har")
    p.add_argument("--hw-arch", default="hailo8")
    p.add_argument("--model-script")
    p.add_argument("--calib-set-path")
    p.add_argument("--use-random-calib-set", action="store_true")
    p.add_argument("--output-har-path")
    a = p.parse_args(argv)
    har = _load_har(a.har)
    if a.model_script:
        for ln in Path(a.model_script).read_text().splitlines():
            s = ln.strip()
            if s and not s.startswith("#") and not SCRIPT_LINE.match(s):
                return fail(f"pyparsing.exceptions.ParseException: Expected end of text, found '{s[:20]}'")
    if a.calib_set_path:
        entries, err = _calibration(Path(a.calib_set_path), har)
        if err:
            return fail(err)
    elif a.use_random_calib_set:
        entries = 64
    else:
        return fail("[error] No calibration set given: use --calib-set-path or --use-random-calib-set")
    out = Path(a.output_har_path or f"{har['net']}_optimized.har")
    out.write_text(json.dumps(dict(har, optimized=True, calib_entries=entries)))
    warn = (
        "[warning] Reducing optimization level to 1 because there's less data than recommended (1024)\n"
        if entries < 1024
        else ""
    )
    snr = ", ".join(f"{o['layer']} SNR: 44.04 dB" for o in har["outputs"])
    print(recorded("optimize_ok.txt", net=har["net"], script=a.model_script, entries=entries, har=out.resolve(),
                   snr=snr, small_set_warning=warn).rstrip())
    return 0


# -- hailo compiler --------------------------------------------------------------------------------------------
def compiler(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="hailo compiler")
    p.add_argument("har")
    p.add_argument("--hw-arch", default="hailo8")
    p.add_argument("--output-dir", default=".")
    p.add_argument("--model-script")
    a = p.parse_args(argv)
    har = _load_har(a.har)
    if not har.get("optimized"):
        return fail("[error] The model is not optimized: run hailo optimize first")
    d = Path(a.output_dir)
    hef, compiled = d / f"{har['net']}.hef", d / f"{har['net']}_compiled.har"
    compiled.write_text(json.dumps(dict(har, compiled=True)))
    hef.write_text(json.dumps(dict(har, hef=True, hw_arch=a.hw_arch)))
    print(recorded("compiler_ok.txt", compiled_har=compiled.resolve(), hef=hef.resolve()).rstrip())
    return 0


def hailo(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print(recorded("versions.txt").rstrip())
        return 0
    if argv[:2] == ["parser", "onnx"]:
        return parser(argv[2:])
    if argv[:1] == ["optimize"]:
        return optimize(argv[1:])
    if argv[:1] == ["compiler"]:
        return compiler(argv[1:])
    return fail(f"hailo: error: FAKE does not know {argv[:2]}", 2)


# -- hailortcli ------------------------------------------------------------------------------------------------
def _vstream(kind: str, layer: str, shape: list[int]) -> str:
    dims = shape[1:]
    fmt = f"NHWC({'x'.join(map(str, dims))})" if len(dims) == 3 else f"NC({'x'.join(map(str, dims))})"
    return f"            {kind:<6} {layer} UINT8, {fmt}"


def hailortcli(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print(recorded("hailortcli_version.txt").rstrip())
        return 0
    if argv[:2] == ["fw-control", "identify"]:
        print(recorded("identify.txt", arch=os.environ.get("FAKE_HAILO_DEVICE", "HAILO8L")).rstrip())
        return 0
    if argv[:1] == ["parse-hef"]:
        hef = _load_har(argv[1])
        rows = [_vstream("Input", x["layer"], x["shape"]) for x in hef["inputs"]]
        rows += [_vstream("Output", x["layer"], x["shape"]) for x in hef["outputs"]]
        print(recorded("parse_hef.txt", arch=hef["hw_arch"].upper(), net=hef["net"], vstreams="\n".join(rows)).rstrip())
        return 0
    if argv[:1] == ["benchmark"]:
        p = argparse.ArgumentParser(prog="hailortcli benchmark")
        p.add_argument("hef")
        p.add_argument("-t", "--time-to-run", type=int, default=15)
        p.add_argument("--csv")
        p.add_argument("--no-power", default="false")
        p.add_argument("--batch-size", type=int, default=1)
        a = p.parse_args(argv[1:])
        hef = _load_har(a.hef)
        if len(hef["inputs"]) > 1:
            return fail(recorded("benchmark_multi_input.txt", net=hef["net"]), 6)
        print(recorded("benchmark.txt", net=hef["net"]).rstrip())
        if a.csv:
            Path(a.csv).write_text(recorded("benchmark.csv", net=hef["net"]))
        return 0
    return fail(f"hailortcli: error: FAKE does not know {argv[:2]}", 2)


def main(tool: str, argv: list[str]) -> int:
    log_call(tool, argv)
    return hailo(argv) if tool == "hailo" else hailortcli(argv)


def cli(tool: str) -> None:
    sys.exit(main(tool, sys.argv[1:]))


if __name__ == "__main__":  # python fake_hailo.py TOOL ARGS... (the FAKE wheel's launcher)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
