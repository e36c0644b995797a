"""The real compiler's placement of every node, held against npufit's prediction: what npufit.placement reads.

Judges (`mode`):
  compile      the vendor compiler itself (Vela, the Ethos-N support library, RKNN-Toolkit2 in its env) in a
               temporary folder; placement is mapped back to the model's nodes by npufit.compilers.mapping.
  vela-checks  Vela's own operator checks through its library, no compile (TFLite on Ethos-U55/U65): the legacy
               core's checks, with the reason text Vela prints. Vela 5.2.0 compiles with its C++ core (Regor), whose
               limits differ for some operators (TRANSPOSE), so this judge is asked for by name only.
  auto         the compile.
The compiler is optional: when it is absent, fails or runs past its time limit, the Measurement says why in one
line and the prediction stands alone. Vendor tools are imported only inside the functions.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..check.engine import is_float_model
from ..errors import NpufitError, NpufitWarning
from ..graph import Graph
from ..targets.base import Executes, Fallback, Profile
from ..toolchains import VELA, for_platform
from ..util.io import private_tempdir
from ..vocab import MEASURE_JUDGE, MEASURE_JUDGES, MEASURE_TIMEOUT_S
from . import adapter, compile_model
from .base import Placement, run_tool
from .compare import compare_placement

WORKER = Path(__file__).resolve().parent.parent / "envs" / "workers" / "vela_checks.py"


@dataclass
class Measurement:
    target: str
    mode: str  # the judge that ran: vela-checks | compile | none
    compiler: str = ""  # its status name (npufit doctor): vela, rknn-toolkit2, ...
    version: str | None = None
    message: str = ""  # one line: why nothing was measured
    comparison: Any = None  # npufit.compilers.compare.PredictionComparison
    notes: list[str] = field(default_factory=list)
    title: str = ""  # the compiler in words (Vela, RKNN-Toolkit2, ...)
    wall_s: float = 0.0

    def __repr__(self) -> str:
        return f"<Measurement {self.target} ({self.compiler or 'no compiler'}): {self.message[:80]}>"

    @property
    def measured(self) -> bool:
        return self.comparison is not None

    @property
    def judge_words(self) -> str:
        return "operator checks" if self.mode == "vela-checks" else "compile"


def measure(
    graph: Graph,
    report,
    profile: Profile,
    mode: str = MEASURE_JUDGE,
    input_shapes=None,
    timeout_s: float | None = MEASURE_TIMEOUT_S,
) -> Measurement:
    """Measure where the real compiler puts every node of `graph` for `profile` and hold it against `report`."""
    if mode not in MEASURE_JUDGES:
        raise NpufitError(f"unknown --measure judge '{mode}' (choose from {', '.join(MEASURE_JUDGES)})")

    target = profile.name
    chain = for_platform(target)
    if chain is None:
        return Measurement(target, "none", message=f"no compiler for {target} runs here")
    comp = adapter(chain)
    st = comp.status()
    title = compiler_title(chain)
    if not st["available"]:
        return Measurement(
            target,
            "none",
            st["name"],
            title=title,
            # a short install step is said here; a long one (a login-gated download) is npufit doctor's to tell
            message=f"no compiler for {target} runs here ({title} is not installed; "
            + (f"{st['install']})" if len(st["install"]) <= 40 else "npufit doctor says how to add it)"),
        )
    if not profile.measure_judges:
        why = " (no CPU fallback inside the compiled binary)" if profile.fallback is Fallback.NONE else ""
        return Measurement(target, "none", st["name"], title=title, message=f"{title} gives no per-node placement{why}")
    # Vela's checks read TFLite; a compiler reads the formats its toolchain takes (ONNX through npufit's converter)
    judges = [j for j in profile.measure_judges if j != "vela-checks" or graph.format == "tflite"]
    if mode not in ("auto", *judges):
        raise NpufitError(
            f"--measure {mode} does not judge this {graph.format} model on {target} (it judges: "
            f"{', '.join(judges) or 'none'}; vela-checks reads TFLite models)"
        )
    judge = "compile" if mode == "auto" and "compile" in judges else (judges[0] if mode == "auto" else mode)
    if _float_asked(graph, report, profile):
        return Measurement(
            target,
            "none",
            st["name"],
            st.get("version"),
            f"--judge float asks about the float graph, and {title} would place the int8 model converted from it",
            title=title,
        )
    try:
        if judge == "vela-checks":
            return _vela_checks(graph, report, profile, timeout_s, title)
        return _compile(graph, report, profile, input_shapes, timeout_s, title)
    except (_NotMeasured, NpufitError) as e:  # the compiler failed or ran too long: say it, keep the prediction
        if isinstance(e, NpufitError):  # refused before the compiler ran (a converter gap names its node first)
            why = e.message.split("; way out")[0]
            msg = why if why.startswith(title) else f"{title} could not be run: {why}"
        else:
            msg = str(e)
        return Measurement(target, "none", st["name"], st.get("version"), one_line(msg), title=title)


def _float_asked(graph: Graph, report, profile: Profile) -> bool:
    """A float ONNX model judged as it is (--judge float) on an int8-only target: what the compiler would place is
    npufit's int8 conversion of it, another model than the one asked about."""
    return (
        graph.format == "onnx"
        and report.target.get("judged_as") == "as is"
        and profile.executes is Executes.INT8
        and is_float_model(graph)
    )


def one_line(text: str, width: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def compiler_title(chain) -> str:
    """The compiler in a user's words: its environment's title names the tool ("Rockchip RKNN-Toolkit2 2.5.0")."""
    return {"rknn": "RKNN-Toolkit2", "ethos-n": "the Ethos-N support library", "hailo": "the Hailo DFC"}.get(
        chain.name, chain.title
    )


class _NotMeasured(Exception):
    pass


def _by_output(graph: Graph) -> dict[str, str]:
    return {o: n.name for n in graph.top_nodes for o in n.outputs if o}


def _vela_checks(graph: Graph, report, profile: Profile, timeout_s, title: str) -> Measurement:
    """Vela's supported-operator checks, run by a child process (envs/workers/vela_checks.py) on the TFLite file."""
    import json

    with private_tempdir("measure") as d:
        resp_path = Path(d) / "vela_checks.json"
        run = run_tool(
            [sys.executable, str(WORKER), str(Path(graph.path).resolve()), str(resp_path)],
            Path(d) / "vela_checks.log",
            cwd=d,
            timeout_s=timeout_s,
        )
        resp = (
            json.loads(resp_path.read_text())
            if resp_path.exists()
            else {"ok": False, "error": run.killed or f"exit code {run.returncode}"}
        )
    if not resp.get("ok"):
        raise _NotMeasured(f"Vela's operator checks failed ({resp.get('error')})")
    owner = _by_output(graph)
    placement = [
        Placement(
            owner[o["ofm"]],
            graph.node(owner[o["ofm"]]).op_type,
            "npu" if o["npu"] else "cpu",
            f"Vela: {o['reason']}" if o["reason"] else "",
            [o["ofm"]],
        )
        for o in resp["ops"]
        if o["ofm"] in owner
    ]
    m = Measurement(
        profile.name,
        "vela-checks",
        VELA.status_name,
        resp.get("version"),
        comparison=compare_placement(report, placement, VELA.status_name),
        title=title,
        wall_s=run.wall_s or 0.0,
    )
    m.notes.append(
        "Vela 5.2.0 compiles with its C++ core (Regor), whose limits differ for some operators (TRANSPOSE): the "
        "default judge is the compile"
    )
    return m


def _compile(graph: Graph, report, profile: Profile, input_shapes, timeout_s, title: str) -> Measurement:
    import time

    t0 = time.perf_counter()
    with private_tempdir("measure") as d:
        judge_int8 = report.target.get("judged_as") == "int8"
        # a target that also builds float is asked for its int8 build (int8-only compilers take the model as given);
        # an ONNX model converted for Ethos-U/N is placed as its int8 form, unverified: the verification against
        # ONNX Runtime (LiteRT) says how close the numbers are, not where a node runs
        with warnings.catch_warnings():
            # where the nodes run does not depend on the calibration data: the compile's own "calibrated on random
            # data" warning is about the artifact, which a placement throws away
            warnings.simplefilter("ignore", NpufitWarning)
            res = compile_model(
                graph.path,
                profile.name,
                out_dir=d,
                simulate=False,
                timeout_s=timeout_s,
                input_shapes=input_shapes,
                quantize=judge_int8 and profile.executes is Executes.FP16_INT8,
                activations="int8",
                verify=False,
            )
    if not res.ok or not res.placement:
        why = res.error or "no placement"
        if "s timeout" in why:
            raise _NotMeasured(f"{title} ran past the {timeout_s:g} s limit (--measure-timeout) and was stopped")
        raise _NotMeasured(why if why.startswith(title) else f"{title} did not finish: {why}")
    m = Measurement(
        profile.name,
        "compile",
        res.compiler,
        res.compiler_version,
        comparison=compare_placement(report, res.placement, res.compiler),
        title=title,
        wall_s=time.perf_counter() - t0,  # what the user waited for: conversion and compile
    )
    m.notes.extend(n for n in res.notes if "converted ONNX" in n)
    if graph.format == "onnx" and profile.input_formats and "onnx" not in profile.input_formats:
        m.notes.append(
            "the ONNX model was placed as npufit's int8 conversion of it (its numbers were not verified here: "
            "npufit compile does that)"
        )
    return m
