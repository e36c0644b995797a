"""Rockchip RKNN-Toolkit2: ONNX -> .rknn, per-layer NPU/CPU placement, simulator vs ONNX Runtime.

The toolkit pins numpy<2 / onnx 1.18, so it runs in its own env (npufit env install rknn) through
npufit.envs.bridge. Placement comes from the verbose build's "Network Layer Information Table"
(Target column), mapped back to ONNX nodes with the toolkit's logged fuse_ops lineage."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

from ..envs import bridge, env_status
from ..errors import NpufitError
from ..graph import Graph, load
from ..util.readers import ArrayFile
from ..verify.compare import make_session, random_inputs, run_onnx
from .base import (
    RANDOM_TAG,
    Adapter,
    CompileOptions,
    CompileResult,
    default_out_dir,
    env_tool_status,
    private_copy,
    random_calibration,
)
from .failure import explain, rknn_cause
from .mapping import Layer, origins_from_lineage, resolve
from .vela import layer_lineage, tflite_lineage

MAX_RULE_RETRIES = 4

_PREFIX = re.compile(r"^[IDWE] RKNN: \[[\d:.]+\] ?")
_REWRITE = re.compile(r"^\S*\s+(\w+): remove node = (\[.*?\])(?:, add node = (\[.*?\]))?\s*$")
_DISABLE = re.compile(r"disable_rules=\[([^\]]*)\]")
_CYCLES = re.compile(r"\d+/\d+/\d+")
_MEM = re.compile(r"Total (Internal|Weight) Memory Size: ([\d.]+)\s*([KMG]?B)")


class RknnCompiler(Adapter):
    calibration_format = "npy-folder"
    extra_options = ("rknn_config",)

    def calibrates_at_random(self, model: Path, options: CompileOptions) -> bool:
        return options.quantize and random_calibration(options)  # an int8 build on the simulator's random inputs

    def status(self) -> dict:
        return env_tool_status(self.toolchain)

    def compile(self, model: Path, target: str, options: CompileOptions) -> CompileResult:
        tflite = model.suffix.lower() == ".tflite"
        if not tflite and model.suffix.lower() != ".onnx":
            raise NpufitError(
                f"{model.name}: RKNN-Toolkit2 reads ONNX and TFLite models; give an .onnx or .tflite file"
            )
        if tflite and "tflite" not in env_status(self.toolchain.env_name)["extras"]:
            raise NpufitError(
                f"RKNN-Toolkit2 reads TFLite models through TensorFlow 2.14, which its env lacks: add it with "
                f"'npufit env install {self.toolchain.env_name} --extra tflite' (about 1.1 GB)"
            )
        out = default_out_dir(model, target, options.out_dir)
        src = private_copy(model, out)
        graph = load(model, options.input_shapes)
        # ONNX Runtime is the simulator's reference; a TFLite model has none here (and keeps its own quantization)
        feeds, ref = ([], {}) if tflite else _reference_run(src, graph, options, out)
        tag = f"_{RANDOM_TAG}" if self.calibrates_at_random(model, options) else ""  # the name says what it knows
        request = {
            "platform": target.lower(),
            "model": str(src),
            "out": str(out / f"{model.stem}{tag}.rknn"),
            "quantize": options.quantize,
            "disable_rules": list(options.disable_rules),
            "sim_inputs": [str(p) for p in feeds] if options.simulate and not tflite else [],
            "sim_prefix": str(out / "sim_out_"),
            "config": dict(options.extra.get("rknn_config", {})),
        }
        if options.input_shapes:  # the toolkit takes the graph's inputs as named here: every one, in order
            pinned = {n: graph.tensor(n).shape for n in graph.input_names}
            request["inputs"] = list(pinned)
            request["input_size_list"] = [list(s or ()) for s in pinned.values()]
        if options.quantize:
            request["dataset"] = str(_dataset_file(options, feeds, out))
        retries: list[dict] = []
        while True:
            log_path = out / ("build.log" if not retries else f"build.retry{len(retries)}.log")
            resp, run = bridge.call(self.toolchain.env_name, "rknn_build", request, out, log_path, options.timeout_s)
            text = run.log
            if resp.get("ok") or len(retries) >= MAX_RULE_RETRIES:
                break
            rules = [r for r in _suggested_rules(text) if r not in request["disable_rules"]]
            if not rules:
                break
            retries.append(
                {
                    "disable_rules": rules,
                    "failed_stage": resp.get("stage"),
                    "error": resp.get("error"),
                    "log": str(log_path),
                }
            )
            request["disable_rules"] = request["disable_rules"] + rules
        res = CompileResult(
            self.toolchain.status_name,
            resp.get("version"),
            target.lower(),
            str(model),
            bool(resp.get("ok")),
            log_path=str(run.log_path),
            command=run.command_line,
            wall_s=run.wall_s,
            peak_rss_mb=run.peak_rss_mb,
            timings=resp.get("timings", {}),
            retries=retries,
        )
        res.outputs["onnx_copy"] = str(src)
        if retries:
            res.notes.append(
                f"the toolkit crashed in its own rewrite rule(s); rebuilt with disable_rules={request['disable_rules']}"
            )
        if not res.ok:  # the toolkit's one-line cause, once (its traceback stays in the log), and the way around it
            failure = explain(rknn_cause(text, resp.get("error")), model, target.lower(), graph)
            res.error = f"RKNN {resp.get('stage')} failed: {failure.cause}"
            res.next_step = failure.next_step
            return res
        res.artifact = request["out"]
        layers, rewrites = parse_layer_table(text), parse_rewrites(text)
        known = {n.name for n in graph.nodes}
        # 'bypass_two_*' without a replacement deletes a pair that cancels out (Reshape -> Reshape back to the same
        # shape)
        removed = {**parse_removed(text), **parse_removed(text, "bypass_two_")}
        if tflite:  # the toolkit names a layer after the TFLite operator's output tensor ('conv1' -> 'conv1_prequant')
            lineage = layer_lineage(layers, tflite_lineage(model)[1])
        else:
            lineage = origins_from_lineage(rewrites, known)
        res.placement = resolve(
            graph,
            layers,
            lineage,
            "RKNN-Toolkit2",
            removed,
            parse_removed(text, "fuse_two_"),
        )
        res.metrics.update(_table_metrics(text, layers, res.placement))
        own = res.metrics.get("toolkit_cpu_layers")
        if own:
            res.notes.append(
                f"RKNN-Toolkit2 added {len(own)} CPU layer(s) of its own ({', '.join(own[:3])}"
                f"{', ...' if len(own) > 3 else ''}): no node of the model is placed by them"
            )
        res.metrics["quantized"] = options.quantize
        if not options.quantize:
            res.metrics["float_dtype"] = "float16"
        if resp.get("sim_error"):
            res.notes.append(f"simulator run failed: {resp['sim_error']}")
        if options.simulate and resp.get("sim_outputs"):
            res.metrics["simulator_cosine"] = _cosines(ref, resp["sim_outputs"])
            res.metrics["simulator_min_cosine"] = min(res.metrics["simulator_cosine"].values(), default=None)
        return res


# -- log parsing ----------------------------------------------------------------------------


def _strip(line: str) -> str:
    return _PREFIX.sub("", line.rstrip())


def parse_layer_table(log: str) -> list[Layer]:
    """The last 'Network Layer Information Table' of a verbose build -> layers with their Target."""
    lines = [_strip(ln) for ln in log.splitlines()]
    starts = [i for i, ln in enumerate(lines) if "Network Layer Information Table" in ln]
    if not starts:
        return []
    rows: list[Layer] = []
    hdr = None
    for ln in lines[starts[-1] + 1 :]:
        if ln.startswith("ID ") and "Target" in ln:
            hdr = ln.split()
            continue
        if hdr is None or set(ln.strip()) <= {"-", "+"}:
            if hdr is not None and rows:
                break  # closing rule
            continue
        f = ln.split()
        if len(f) < 5 or not f[0].isdigit():
            break
        # FullName ("OpType:name") is the last column; a column before it may be blank (rk3576's SparseRatio), so it
        # is found by its form, not by counting fields
        start = next((i for i in range(4, len(f)) if f[i].startswith(f[1] + ":")), len(hdr) - 1)
        full = " ".join(f[start:])
        op, _, name = full.partition(":")
        if f[1] in ("InputOperator", "OutputOperator"):
            continue
        dev = f[hdr.index("Target")].lower()
        rows.append(
            Layer(
                name or full,
                f[1],
                "cpu" if dev == "cpu" else "npu",
                f"RKNN-Toolkit2 placed {f[1]} layer '{name or full}' on the CPU" if dev == "cpu" else "",
                next((x for x in f[4:start] if _CYCLES.fullmatch(x)), ""),
            )
        )
    return rows


def parse_rewrites(log: str) -> list[tuple[list[str], list[str]]]:
    """'rule: remove node = [..], add node = [..]' lines from the toolkit's graph-optimizer stages."""
    out = []
    for ln in log.splitlines():
        m = _REWRITE.match(ln)
        if not m:
            continue
        try:
            removed = ast.literal_eval(m.group(2))
            added = ast.literal_eval(m.group(3)) if m.group(3) else []
        except (ValueError, SyntaxError):
            continue
        out.append(([str(x) for x in removed], [str(x) for x in added]))
    return out


def parse_removed(log: str, prefix: str = "remove_") -> dict[str, str]:
    """Nodes a 'remove_*' rule deleted outright (no replacement: a no-op Cast/Expand/Add) -> the rule's name; with
    another prefix, the nodes of those rules that add nothing ('bypass_two_reshape': a pair that cancels out;
    'fuse_two_slice': merged into the same-op neighbour)."""
    out: dict[str, str] = {}
    for ln in log.splitlines():
        m = _REWRITE.match(ln)
        if m and m.group(1).startswith(prefix) and not m.group(3):
            try:
                out.update({str(x): m.group(1) for x in ast.literal_eval(m.group(2))})
            except (ValueError, SyntaxError):
                continue
    return out


def _suggested_rules(log: str) -> list[str]:
    rules: list[str] = []
    for m in _DISABLE.finditer(log):
        for r in m.group(1).split(","):
            r = r.strip().strip("'\"")
            if r and r not in rules:
                rules.append(r)
    return rules


def _table_metrics(log: str, layers: list[Layer], placement=()) -> dict:
    """The table's totals. cpu_layers counts the CPU layers that hold a node of the model placed on the CPU, so
    it never contradicts the placement; CPU layers the toolkit added itself (a layout change before an output that
    no model node maps to, or one beside an NPU node's work) are listed apart as toolkit_cpu_layers."""
    total = 0
    for lay in layers:
        try:
            total += int(lay.cycles.split("/")[-1])
        except ValueError:
            pass
    of_cpu_nodes = {name for p in placement if p.device == "cpu" for name in p.layers}
    cpu = [lay for lay in layers if lay.device == "cpu"]
    m: dict = {
        "layers": len(layers),
        "cpu_layers": sum(lay.name in of_cpu_nodes for lay in cpu),
        "npu_cycles_total": total,
    }
    own = [f"{lay.op} '{lay.name}'" for lay in cpu if lay.name not in of_cpu_nodes]
    if own:
        m["toolkit_cpu_layers"] = own
    scale = {"B": 1 / 1024, "KB": 1, "MB": 1024, "GB": 1024 * 1024}
    for kind, val, unit in _MEM.findall(log):
        m[f"{kind.lower()}_memory_kb"] = round(float(val) * scale.get(unit, 1), 2)
    return m


# -- simulator vs ONNX Runtime ----------------------------------------------------------------


def _reference_run(src: Path, graph: Graph, options: CompileOptions, out: Path) -> tuple[list[Path], dict]:
    sess = make_session(src)
    feeds = random_inputs(sess, seed=0, shapes=options.input_shapes)[0]
    ref = run_onnx(sess, feeds)
    paths = []
    for i, inp in enumerate(sess.get_inputs()):
        p = out / f"sim_in_{i}.npy"
        np.save(p, feeds[inp.name])
        paths.append(p)
    return paths, ref


def _dataset_file(options: CompileOptions, feeds: list[Path], out: Path) -> Path:
    """RKNN's dataset.txt: one line per sample, the .npy file of each input separated by spaces."""
    lines: list[str] = []
    if options.calibration:
        c = Path(options.calibration)
        if c.is_dir():
            files = sorted(c.glob("*.npy"))
            if not files:
                raise NpufitError(f"{c}: no .npy calibration files in this folder")
            for f in files:  # the toolkit opens each: a pipe, a device or text among them would hang or crash it
                _numeric_npy(f)
            lines = [str(f.resolve()) for f in files]
        elif c.suffix == ".txt" and c.is_file():
            return c.resolve()
        elif c.suffix == ".npy" and c.is_file():
            _numeric_npy(c)
            lines = [str(c.resolve())]
        else:
            raise NpufitError(f"{c}: --calibration must be a folder of .npy files, one .npy, or an RKNN dataset.txt")
    else:
        lines = [" ".join(str(p.resolve()) for p in feeds)]
    p = out / "dataset.txt"
    p.write_text("\n".join(lines) + "\n")
    return p


def _numeric_npy(f: Path) -> None:
    """A calibration .npy the toolkit may load: a regular file holding numbers (never unpickled, never text)."""
    with ArrayFile(f, "--calibration") as a:
        for name in a:
            a.numeric(name)


def _cosines(ref: dict, sim_paths: list[str]) -> dict[str, float]:
    out = {}
    for (name, a), p in zip(ref.items(), sim_paths):
        b = np.load(p)
        a64, b64 = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
        if a64.size != b64.size:
            out[name] = float("nan")
            continue
        with np.errstate(all="ignore"):  # an overflowing output gives inf/nan norms: its cosine is nan, said as such
            den = np.linalg.norm(a64) * np.linalg.norm(b64)
            out[name] = round(float(a64 @ b64 / den), 6) if den else (1.0 if np.allclose(a64, b64) else 0.0)
    return out
