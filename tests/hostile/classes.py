"""The hostile-input classes of the hostile-input issue (memory, time, internal errors, confinement, external data,
silent runs, temp folders, telemetry) as one catalogue of cases, each a real CLI run through `harness.run_verb`.

benchmarks/fuzz_hostile.py --classes runs the catalogue and counts what each class still gets wrong;
tests/hostile/test_classes.py asserts every case. A case builds its inputs in a fresh folder (small models with
onnx.helper, a split plan, a results folder, a PNG that decompresses to gigabytes) and names the command, the
outputs it may create and what it must end in: a one-line refusal holding `needle`, or a result.

Every run is judged the same way (`judge`): peak resident memory under PEAK_MB (runs are killed by a watchdog at
RSS_CAP_MB, never capped by address space, so a bomb shows as the memory it takes); no hang; no traceback or
internal error; never silent (a non-zero exit with nothing on stderr); the inputs byte-identical, nothing created
outside the named outputs, no byte of a secret planted outside the folder in anything created; no temp file left;
nothing written to the user's cache (ONNX Runtime's usage database).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import model_cases as mc
from .harness import Outcome, run_verb, snapshot

PEAK_MB = 1024  # the goal for every hostile run
RSS_CAP_MB = 2560  # the watchdog's kill line: far above the goal, below what would hurt a shared machine
REFUSE, OK, EITHER = "refuse", "ok", "either"
SECRET = b"NPUFIT-HOSTILE-SECRET-7f3a"  # planted outside the case folder; must never reach an output
CLASSES = ("memory", "time", "internal", "confine", "extdata", "silent", "tmp", "telemetry")
REWORDED = "reworded"  # a clean one-line refusal, for another reason than the case names: counted apart


@dataclass(frozen=True)
class Case:
    cls: str
    name: str
    setup: Callable[[Path], tuple[list, tuple[str, ...]]]  # folder -> (argv, outputs the run may create)
    expect: str = REFUSE
    needle: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    time_cap: float = 120.0
    # tmp class: kill the run once an entry matching this glob appears in the folder or its TMPDIR, then run
    # `then(folder)`'s argv; no entry matching may be left afterwards
    kill_when: str | None = None
    then: Callable[[Path], list] | None = None
    unprivileged: bool = False  # file permissions apply (root runs without its file-permission bypass)

    @property
    def id(self) -> str:
        return f"{self.cls}-{self.name}"


# -- inputs shared by several cases --------------------------------------------------------------------------------
SHAPE = [1, 3, 8, 8]


def _small_model(folder: Path, name: str = "m.onnx", doc: str = "") -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.linspace(-1, 1, 108, dtype=np.float32).reshape(4, 3, 3, 3), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["y"], name="sig"),
    ]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m.doc_string = doc
    p = folder / name
    onnx.save(m, str(p))
    return p


def _secret_outside(folder: Path) -> Path:
    """A file beside the case folder (outside it) holding SECRET: a valid ONNX model, so only confinement stops it."""
    outside = folder.parent / f"{folder.name}-outside"
    outside.mkdir(exist_ok=True)
    _small_model(outside, "theirs.onnx", doc=SECRET.decode())
    (outside / "secret.txt").write_bytes(SECRET * 4)
    return outside


def _plan(folder: Path) -> Path:
    from npufit.split import split

    _small_model(folder)
    split(str(folder / "m.onnx"), "hailo8", output_dir=str(folder / "plan"), verify=False)
    np.savez(folder / "x.npz", x=np.ones(SHAPE, np.float32))
    return folder / "plan"


def _edit_plan(folder: Path, edit) -> None:
    f = folder / "plan" / "plan.json"
    d = json.loads(f.read_text())
    edit(d)
    f.write_text(json.dumps(d))


PLAN_VERBS = {
    "run": (["run", "plan", "--inputs", "x.npz"], ()),
    "bench": (["bench", "plan", "--runtime", "chain", "-n", "2", "--warmup", "0"], ()),
    "compile": (["compile", "m.onnx", "-t", "hailo8", "--plan", "plan/plan.json", "--out-dir", "out"], ("out",)),
}

# -- verbs on one model -------------------------------------------------------------------------------------------
MODEL_VERBS: dict[str, Callable[[Path], tuple[list, tuple[str, ...]]]] = {
    "check": lambda m: (["check", m.name, "-t", "hailo8"], ()),
    "compare": lambda m: (["compare", m.name, "-t", "hailo8"], ()),
    "fix": lambda m: (["fix", m.name, "-t", "hailo8", "-o", "out.onnx"], ("out.onnx",)),
    "split": lambda m: (["split", m.name, "-t", "hailo8", "-d", "plan"], ("plan",)),
    "quantize": lambda m: (["quantize", m.name, "-o", "q.onnx", "-c", "random", "--samples", "2", "--holdout", "1"],
                           ("q.onnx",)),
    "compile": lambda m: (["compile", m.name, "-t", "ethos-u55-256", "--out-dir", "c", "--timeout", "100"], ("c",)),
    "compile-rk3588": lambda m: (["compile", m.name, "-t", "rk3588", "--out-dir", "c", "--timeout", "100"], ("c",)),
    "compile-ethos-n78": lambda m: (["compile", m.name, "-t", "ethos-n78", "--out-dir", "c", "--timeout", "100"],
                                    ("c",)),
    "bench": lambda m: (["bench", m.name, "-n", "2", "--warmup", "0"], ()),
}


def _on_model(build: Callable[[Path], Path], verb: str):
    def setup(folder: Path):
        return MODEL_VERBS[verb](build(folder))

    return setup


BOMBS = ("bomb_constant_of_shape", "bomb_expand", "bomb_range", "bomb_tile", "bomb_pad", "bomb_resize", "bomb_matmul")
MATERIALISING = ("fix", "split", "quantize", "compile", "bench")


# -- memory ------------------------------------------------------------------------------------------------------------
def _png_bomb(folder: Path):
    """A 13,000 x 13,000 RGBA PNG of zeros in a calibration folder: under 1 MB on disk, 676 MB decoded and 507 MB
    more as RGB (Pillow's own decompression-bomb error starts at 179 million pixels; this is 169 million)."""
    _image_model(folder)
    imgs = folder / "imgs"
    imgs.mkdir()
    side = 13_000
    raw = zlib.compressobj(9)
    row = b"\0" + bytes(side * 4)
    body = b"".join(raw.compress(row) for _ in range(side)) + raw.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    ihdr = side.to_bytes(4, "big") * 2 + bytes([8, 6, 0, 0, 0])
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    (imgs / "bomb.png").write_bytes(png)
    return ["quantize", "m.onnx", "-o", "q.onnx", "-c", "imgs", "--holdout", "0"], ("q.onnx",)


def _image_model(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 64, 64])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    return folder / "m.onnx"


def _samples_huge(folder: Path):
    _image_model(folder)  # 48 KiB per sample: 100,000 samples are 4.6 GiB
    return ["quantize", "m.onnx", "-o", "q.onnx", "-c", "random", "--samples", "100000", "--holdout", "0"], ("q.onnx",)


MEMORY = [
    *[Case("memory", f"{b}-{v}", _on_model(getattr(mc, b), v), EITHER, None) for b in BOMBS for v in MATERIALISING],
    *[Case("memory", f"input_3gb-{v}", _on_model(mc.input_3gb, v), REFUSE, "memory budget") for v in MATERIALISING],
    # the 300,000-node chain: every verb that holds more than `check` does; a run past a minute is stopped
    *[Case("memory", f"chain_300k-{v}", _on_model(mc.chain_300k, v), EITHER, None, {"NPUFIT_TIME_LIMIT": "60"}, 150.0)
      for v in ("split", "compile", "bench")],
    Case("memory", "png_bomb-quantize", _png_bomb, REFUSE, "memory budget"),
    Case("memory", "samples_huge-quantize", _samples_huge, EITHER, None, time_cap=300),
]

# -- time --------------------------------------------------------------------------------------------------------------
TIME = [
    *[Case("time", f"loop_no_trip_count-{v}", _on_model(mc.loop_no_trip_count, v), REFUSE, "never ends")
      for v in ("fix", "split", "quantize", "bench")],
    # the time limit is the user's: set to 60 s here so that the bound shows within the harness' 150 s
    *[Case("time", f"chain_300k-{v}", _on_model(mc.chain_300k, v), EITHER, None, {"NPUFIT_TIME_LIMIT": "60"}, 150.0)
      for v in ("fix", "quantize")],
]


# -- internal errors ---------------------------------------------------------------------------------------------------
def _unreadable(kind: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        p = mc.build("tflite_unreadable", folder) if kind == "tflite" else _small_model(folder)
        p.chmod(0)
        return p

    return build


def _symlink_loop(folder: Path):
    (folder / "a.onnx").symlink_to("b.onnx")
    (folder / "b.onnx").symlink_to("a.onnx")
    return ["split", "a.onnx", "-t", "hailo8", "-d", "plan"], ("plan",)


def _long_name(folder: Path):
    m = _small_model(folder, "a" * 250 + ".onnx")  # 255 bytes: the longest name a filesystem takes
    return ["bench", m.name, "-n", "2", "--warmup", "0"], ()


def _string_npz(verb: str):
    def setup(folder: Path):
        _small_model(folder)
        np.savez(folder / "cal.npz", x=np.full([4, *SHAPE], "0.5"))  # the right shape, as text
        np.save(folder / "cal.npy", np.full([4, *SHAPE], "0.5"))
        if verb == "quantize":
            return ["quantize", "m.onnx", "-o", "q.onnx", "-c", "cal.npz"], ("q.onnx",)
        target = verb.split("-", 1)[1]
        return ["compile", "m.onnx", "-t", target, "--out-dir", "c", "--calibration", "cal.npy", "--quantize"], ("c",)

    return setup


INTERNAL = [
    Case("internal", "symlink_loop-split", _symlink_loop, REFUSE, "symbolic links"),
    Case("internal", "long_name-bench", _long_name, EITHER, None),
    *[Case("internal", f"{d}-{v}", _on_model(getattr(mc, d), v), REFUSE, None)
      for d in ("huge_dims", "int64_max_dims") for v in ("compile", "compile-rk3588", "compile-ethos-n78")],
    *[Case("internal", f"{t}-compile", _on_model(getattr(mc, t), "compile"), EITHER, None)
      for t in ("tflite_truncated", "tflite_bad_tensor_index", "tflite_cycle")],
    *[Case("internal", f"unreadable_{t}-{v}", _on_model(_unreadable(t), v), REFUSE, "cannot be read", unprivileged=True)
      for t, verbs in (("tflite", ("compile", "check")), ("onnx", ("compile-rk3588", "compile", "check", "bench")))
      for v in verbs],
    *[Case("internal", f"string_npz-{v}", _string_npz(v), REFUSE, "string")
      for v in ("quantize", "compile-rk3588", "compile-ethos-u55-256")],
]


# -- confinement -------------------------------------------------------------------------------------------------------
def _pipeline_yaml(folder: Path, model: str, data: str | None = None) -> None:
    lines = ["version: 1", "name: p", "models:", f"  - {{name: m, onnx: {json.dumps(model)}}}", "targets: [hailo8]"]
    if data is not None:
        lines += ["data:", f"  csv: {json.dumps(data)}"]
    lines += ["steps:", "  export: {}", "  check: {}"]
    (folder / "p.yaml").write_text("\n".join(lines) + "\n")


def _pipeline(verb: str, model: str | None = None, data: str | None = None):
    def setup(folder: Path):
        outside = _secret_outside(folder)
        _small_model(folder)
        where = {"theirs": f"../{outside.name}/theirs.onnx", "passwd": "../../../../../../../../etc/passwd",
                 "absolute": str(outside / "theirs.onnx")}
        if data == "fifo":
            os.mkfifo(folder / "d.csv")
        elif data == "devzero":
            (folder / "d.csv").symlink_to("/dev/zero")
        _pipeline_yaml(folder, where.get(model, "m.onnx"), None if data is None else "d.csv")
        argv = ["pipeline", verb, "p.yaml"] + (["--output-dir", "results"] if verb == "run" else [])
        return argv, ("results",)

    return setup


def _plan_stage(edit_name: str, verb: str):
    def setup(folder: Path):
        outside = _secret_outside(folder)
        _plan(folder)
        if edit_name == "stage_dotdot":
            _edit_plan(folder, lambda d: d["stages"][0].update(file=f"../../{outside.name}/theirs.onnx"))
        elif edit_name == "stage_link":
            stage = folder / "plan" / json.loads((folder / "plan" / "plan.json").read_text())["stages"][0]["file"]
            stage.unlink()
            stage.symlink_to(outside / "theirs.onnx")
        else:  # the stage's weights stored outside the plan folder
            _external_stage(folder, outside, edit_name)
        argv, outs = PLAN_VERBS[verb]
        return argv, outs

    return setup


def _external_stage(folder: Path, outside: Path, how: str) -> None:
    import onnx

    plan = folder / "plan"
    stage = plan / json.loads((plan / "plan.json").read_text())["stages"][0]["file"]
    m = onnx.load(str(stage))
    (outside / "w.bin").write_bytes(np.linspace(-1, 1, 108, dtype=np.float32).tobytes())
    if how == "ext_link":
        (plan / "w.bin").symlink_to(outside / "w.bin")
        location = "w.bin"
    else:
        location = f"../../{outside.name}/w.bin"
    for t in m.graph.initializer:
        if t.name == "w":
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            t.external_data.add(key="location", value=location)
            t.external_data.add(key="length", value=str(108 * 4))
    stage.write_bytes(m.SerializeToString())


def _report(kind: str):
    def setup(folder: Path):
        outside = _secret_outside(folder)
        root = folder / "results"
        cell = root / "bench" / "m" / "ort-cpu"
        cell.mkdir(parents=True)
        bench = {"schema": "npufit.bench/1", "model": {"sha256": "0" * 64}, "protocol": {}, "environment": {},
                 "results": [{"runtime": "ort-cpu", "status": "ok", "batch": 1, "iterations": 10,
                              "latency_ms": {"mean": 1.0, "p50": 1.0, "p99": 1.2}, "throughput_ips": 1000.0}]}
        (cell / "bench.json").write_text(json.dumps(bench))
        (outside / "bench.json").write_text(json.dumps(bench).replace("ort-cpu", SECRET.decode()))
        from npufit.pipeline.results import BenchStepResult

        metrics = BenchStepResult("ort-cpu", 1.0, 1.0, 1.0, 1000.0, 5).to_dict()
        folder_of = {"absolute": str(outside), "dotdot": f"../../{outside.name}"}.get(kind, "bench/m/ort-cpu")
        outputs = {"report": "bench.json"}
        if kind == "output":
            outputs = {"report": f"../../../../{outside.name}/secret.txt", "plot": str(outside / "secret.txt")}
        c = {"cell": "bench/m/ort-cpu", "step": "bench", "model": "m", "target": None, "runtime": "ort-cpu",
             "folder": folder_of, "action": "ran", "status": "ok", "message": "", "metrics": metrics,
             "outputs": outputs}
        manifest = {"schema": "npufit.pipeline-run/1", "seconds": 1.0, "counts": {"ran": 1}, "started": "",
                    "environment": {}, "cells": [c],
                    "config": {"name": "p", "path": "p.yaml", "models": [{"name": "m"}], "targets": [],
                               "runtimes": ["ort-cpu"], "steps": ["bench"]}}
        (root / "pipeline.json").write_text(json.dumps(manifest))
        return ["report", "results", "-o", "r.html"], ("r.html",)

    return setup


CONFINE = [
    *[Case("confine", f"pipeline_model_{w}-{v}", _pipeline(v, model=w), REFUSE, "outside")
      for w in ("theirs", "passwd", "absolute") for v in ("validate", "run")],
    Case("confine", "pipeline_data_fifo-validate", _pipeline("validate", data="fifo"), REFUSE, "named pipe"),
    Case("confine", "pipeline_data_devzero-validate", _pipeline("validate", data="devzero"), REFUSE, "outside"),
    *[Case("confine", f"plan_{e}-{v}", _plan_stage(e, v), REFUSE, "outside")
      for e in ("stage_dotdot", "stage_link", "ext_dotdot", "ext_link") for v in ("run", "bench", "compile")],
    *[Case("confine", f"report_{k}", _report(k), EITHER, None) for k in ("absolute", "dotdot", "output")],
]

# -- external data that is not there: check and compare answer without it, so they must look -------------------------
EXTDATA = [
    Case("extdata", f"{e}-{v}", _on_model(getattr(mc, e), v), REFUSE, "external data")
    for e in ("ext_missing", "ext_past_eof", "ext_url", "ext_backslash") for v in ("check", "compare")
]


# -- silent runs: every failure says why ---------------------------------------------------------------------------
def _pipeline_failing(build: Callable[[Path], Path]):
    def setup(folder: Path):
        m = build(folder)
        lines = ["version: 1", "name: p", "models:", f"  - {{name: m, onnx: {m.name}}}", "targets: [hailo8]",
                 "runtimes: [ort-cpu]", "steps:", "  export: {}", "  check: {}", "  fix: {}",
                 "  split: {mode: prefix}", "  bench: {iterations: 2, warmup: 0}"]
        (folder / "p.yaml").write_text("\n".join(lines) + "\n")
        return ["pipeline", "run", "p.yaml", "--output-dir", "results"], ("results",)

    return setup


SILENT = [
    Case("silent", f"pipeline_run-{b}", _pipeline_failing(getattr(mc, b)), EITHER, None)
    for b in ("bomb_expand", "loop_no_trip_count", "cyclic", "ext_missing", "sequence_output")
]


# -- temp folders of killed runs --------------------------------------------------------------------------------------
def _killed_split(folder: Path):
    _small_model(folder)
    return ["split", "m.onnx", "-t", "hailo8", "-d", "plan"], ("plan", "plan2")


def _killed_quantize(folder: Path):
    _small_model(folder)
    return ["quantize", "m.onnx", "-o", "q.onnx", "-c", "random", "--samples", "8"], ("q.onnx",)


TMP = [
    Case("tmp", "killed_split-then-split", _killed_split, OK, None, kill_when=".plan.npufit-tmp-*",
         then=lambda d: ["split", "m.onnx", "-t", "hailo8", "-d", "plan2"]),
    Case("tmp", "killed_quantize-then-check", _killed_quantize, OK, None, kill_when=".npufit-quantize.npufit-tmp-*",
         then=lambda d: ["check", "m.onnx", "-t", "hailo8"]),
]

# -- telemetry: ordinary runs write nothing outside their output ------------------------------------------------------
TELEMETRY = [
    Case("telemetry", f"small-{v}", _on_model(lambda d: _small_model(d), v), OK, None)
    for v in ("check", "fix", "split", "quantize", "bench")
]

CATALOGUE: list[Case] = MEMORY + TIME + INTERNAL + CONFINE + EXTDATA + SILENT + TMP + TELEMETRY


# -- running and judging -------------------------------------------------------------------------------------------
@dataclass
class Verdict:
    case: Case
    outcome: Outcome
    faults: list[str]  # empty: the case passes

    def line(self) -> str:
        o = self.outcome
        last = (o.stderr.strip().splitlines() or [""])[-1][:200]
        return (f"[{self.case.id}] {','.join(self.faults) or 'ok'}: npufit {' '.join(o.argv)} -> rc={o.rc} "
                f"peak={o.peak_rss_mb:.0f} MB {last}")


def run_case(case: Case, folder: Path) -> Verdict:
    argv, outputs = case.setup(folder)
    before = snapshot(folder)
    if case.kill_when:
        return _run_killed(case, folder, argv, outputs, before)
    o = run_verb(argv, folder, time_cap=case.time_cap, mem_mb=None, rss_cap_mb=RSS_CAP_MB, env=case.env,
                 unprivileged=case.unprivileged)
    return Verdict(case, o, judge(case, o, before, folder, outputs))


def judge(case: Case, o: Outcome, before: dict, folder: Path, outputs: tuple[str, ...]) -> list[str]:
    faults = []
    lines = [ln for ln in o.stderr.splitlines() if ln.strip() and not ln.startswith("npufit: warning:")]
    if o.mem_killed or o.peak_rss_mb > PEAK_MB:
        faults.append("memory")
    if o.hung:
        faults.append("hang")
    if "Traceback" in o.stderr or "Traceback" in o.stdout or o.rc == 3 or "internal error" in o.stderr:
        faults.append("internal")
    if o.rc not in (0, None) and not lines:
        faults.append("silent")
    if not faults:
        refused = o.rc == 2 and len(lines) == 1 and lines[0].startswith("npufit: error:")
        if case.expect == REFUSE and not refused:
            faults.append("accepted" if o.rc in (0, 1) else "not-one-line")
        elif case.expect == OK and o.rc != 0:
            faults.append("failed")
        elif case.expect == EITHER and o.rc not in (0, 1) and not refused:
            faults.append("not-one-line")
        elif refused and case.needle and case.needle.lower() not in lines[0].lower():
            faults.append(REWORDED)
    after = snapshot(folder)
    if any(after.get(k) != v for k, v in before.items()):
        faults.append("input-changed")
    created = [k for k in after if k not in before]
    if any(not any(k == a or k.startswith(a + "/") for a in outputs) for k in created):
        faults.append("outside-write")
    for k in created:
        v = after[k]
        if isinstance(v, bytes) and SECRET in v:
            faults.append("leak")
            break
    if SECRET.decode() in o.stdout:
        faults.append("leak")
    if o.tmp_left:
        faults.append("tmp")
    if o.cache_writes:
        faults.append("cache-write")
    return faults


def _run_killed(case: Case, folder: Path, argv: list, outputs: tuple[str, ...], before: dict) -> Verdict:
    """Start `argv`, SIGKILL it once its temp entry shows, then run `case.then` with the same TMPDIR: the killed
    run's temp entries must be gone afterwards."""
    tmp = folder.parent / f"{folder.name}-tmpdir"
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "NPUFIT_NO_PROGRESS": "1"}
    p = subprocess.Popen([sys.executable, "-m", "npufit", *map(str, argv)], cwd=folder, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    seen = False
    deadline = time.monotonic() + case.time_cap
    while p.poll() is None and time.monotonic() < deadline:
        if list(folder.glob(case.kill_when)) or list(tmp.glob(case.kill_when)):
            seen = True
            os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    p.wait()
    stale = list(folder.glob(case.kill_when)) + list(tmp.glob(case.kill_when))
    o = run_verb(case.then(folder), folder, time_cap=case.time_cap, mem_mb=None, rss_cap_mb=RSS_CAP_MB,
                 env={"TMPDIR": str(tmp)})
    left = [str(p.name) for p in list(folder.glob(case.kill_when)) + list(tmp.glob(case.kill_when))]
    faults = [] if seen and stale else ["not-reproduced"]
    if left:
        faults.append("tmp")
    if o.rc != 0:
        faults.append("failed")
    o.tmp_left = left
    return Verdict(case, o, faults)
