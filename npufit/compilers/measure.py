"""check --measure: the real compiler's placement beside npufit's prediction, node by node.

`check(..., measure=...)` here is the library's `npufit.check`: check.engine.predict, then the measurement.
It lives with the compilers, above check, so that the check package never imports a compiler.

Judges (`mode`):
  vela-checks  Vela's own operator checks through its library, no compile (TFLite on Ethos-U55/U65; the default
               there): the semantic and supported-operator checks, with the reason text Vela prints.
  compile      the vendor compiler itself (Vela, RKNN-Toolkit2 in its env) in a temporary folder; placement is
               mapped back to the model's nodes by npufit.compilers.mapping.
  auto         vela-checks where it applies, else compile.
The compiler is optional: when it is absent the measurement says so in one line and the prediction stands alone.
Vendor tools are imported only inside the functions, and only when a measurement is asked for.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NpufitError
from ..graph import Graph
from ..targets.base import Executes, Fallback, Profile
from ..toolchains import VELA
from ..vocab import JUDGE, MEASURE_JUDGE, MEASURE_JUDGES
from .compare import compare_placement

SCHEMA = "npufit.check.measure/1"
WORKER = Path(__file__).resolve().parent.parent / "envs" / "workers" / "vela_checks.py"


@dataclass
class Measurement:
    target: str
    mode: str  # the judge that ran: vela-checks | compile | none
    compiler: str = ""
    version: str | None = None
    message: str = ""  # one line: why nothing was measured, or what the judge was
    comparison: Any = None  # npufit.compilers.compare.PredictionComparison
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"<Measurement {self.target} ({self.compiler or 'no compiler'}): {self.message[:80]}>"

    @property
    def measured(self) -> bool:
        return self.comparison is not None

    @property
    def differing(self) -> list:
        return self.comparison.disagreements if self.comparison else []

    def to_dict(self) -> dict:
        d = {
            "schema": SCHEMA,
            "target": self.target,
            "judge": self.mode,
            "compiler": self.compiler,
            "compiler_version": self.version,
            "message": self.message,
            "notes": self.notes,
        }
        if self.comparison is not None:
            cmp = self.comparison.to_dict()
            d.update(
                scores=cmp["scores"],
                differing=[n["node"] for n in cmp["disagreements"]],
                nodes=[_row(n) for n in self.comparison.nodes],
            )
        return d


def check(
    model,
    target,
    input_shapes=None,
    judge: str = JUDGE,
    assume_int8: bool = False,
    measure: bool | str = False,
):
    """Judge every node of `model` against `target`: which runs on the NPU, which does not, why, how to fix it.

    The library side of `npufit check MODEL --target T`. The model file is only read.

    Parameters
    ----------
    model : str, os.PathLike or Graph
        An .onnx or .tflite file (or a Graph from `npufit.load`).
    target : str
        A target name or alias ("hailo8", "ethos-u55-256", "rk3588", ...; `npufit.targets()` lists them).
    input_shapes : dict or str, optional
        Shapes for the inputs, {"images": (1, 3, 640, 640)} or "images=1,3,640,640" (a dynamic batch alone is
        pinned to 1; other unknown dims must be given).
    judge : str
        How a float model is judged: "auto" (as its int8 conversion on an int8-only target, as it is elsewhere),
        "int8" or "float".
    assume_int8 : bool
        The older spelling of judge="int8".
    measure : bool or str
        Also run the real compiler when it is installed and put its placement beside the prediction
        (report.extra["measurement"]): True or "auto", "vela-checks", "compile".

    Returns
    -------
    CheckReport
        Per-node verdicts and reasons (each a sentence and a rule id; `npufit.explain(rule_id)` has the evidence),
        partitions, NPU/host boundaries and the largest NPU prefix; `.render("table" | "json" | "markdown" |
        "html")`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> report = npufit.check("yolov8n.onnx", "hailo8")
    >>> report  # doctest: +SKIP
    <CheckReport hailo8 yolov8n.onnx: 96.6% nodes, 4 NPU / 8 host>
    >>> [(n.name, n.reasons[0].rule) for n in report.failing][:1]  # doctest: +SKIP
    [('/model.22/Reshape', 'hailo8.shuffle.rank3')]
    """
    from ..check.engine import predict, resolve

    graph, profile = resolve(model, target, input_shapes)
    report = predict(graph, profile, judge=judge, assume_int8=assume_int8)
    if measure:
        attach_measurement(report, graph, profile, MEASURE_JUDGE if measure is True else measure, input_shapes)
    return report


def _row(n) -> dict:
    why = "; ".join(
        f"{r['text']}" + (f" ({r['detail']})" if r.get("detail") else "") + f" [{r['rule']}]" for r in n.rules
    )
    return {
        "node": n.node,
        "op": n.op,
        "predicted": n.predicted,
        "measured": n.actual,
        "differs": n.kind in ("fp", "fn"),
        "npufit_explanation": why,
        "compiler_reason": n.compiler_reason,
        "mapped": n.how,
    }


def measure(
    graph: Graph, report, profile: Profile, mode: str = MEASURE_JUDGE, input_shapes=None, timeout_s: float | None = 600
) -> Measurement:
    """Measure where the real compiler puts every node of `graph` for `profile` and hold it against `report`."""
    if mode not in MEASURE_JUDGES:
        raise NpufitError(f"unknown --measure judge '{mode}' (choose from {', '.join(MEASURE_JUDGES)})")
    from . import compiler_for

    target = profile.name
    try:
        comp = compiler_for(target)
    except NpufitError:
        return Measurement(target, "none", message=f"not measured: no compiler for {target} runs here")
    st = comp.status()
    if not st["available"]:
        return Measurement(
            target, "none", st["name"], message=f"not measured: {st['name']} is not installed ({st['install']})"
        )
    if not profile.measure_judges:
        return Measurement(
            target,
            "none",
            st["name"],
            message=f"not measured: {st['name']} gives no per-node placement"
            + (" (no CPU fallback inside the compiled binary)" if profile.fallback is Fallback.NONE else ""),
        )
    judges = [
        j for j in profile.measure_judges if j != "vela-checks" or graph.format == "tflite"
    ]  # Vela's checks read TFLite
    if mode != "auto" and mode not in judges:
        raise NpufitError(
            f"--measure {mode} does not judge this {graph.format} model on {target} (it judges: "
            f"{', '.join(judges) or 'none'}; vela-checks reads TFLite models)"
        )
    if not judges:
        return Measurement(
            target, "none", st["name"], message=f"not measured: {target}'s judges read TFLite models only"
        )
    try:
        if (judges[0] if mode == "auto" else mode) == "vela-checks":
            return _vela_checks(graph, report, profile, input_shapes, timeout_s, confirm=mode == "auto")
        return _compile(graph, report, profile, input_shapes, timeout_s)
    except (_NotMeasured, NpufitError) as e:  # e.g. RKNN is driven from ONNX only: say it, keep the prediction
        return Measurement(target, "none", st["name"], st.get("version"), f"not measured: {e}")


class _NotMeasured(Exception):
    pass


def _by_output(graph: Graph) -> dict[str, str]:
    return {o: n.name for n in graph.top_nodes for o in n.outputs if o}


def _checks_placement(graph: Graph, timeout_s) -> tuple[list, str | None]:
    """Vela's supported-operator checks, run by a child process (envs/workers/vela_checks.py) on the TFLite file."""
    import json

    from ..util.io import private_tempdir
    from .base import Placement, run_tool

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
            else {"ok": False, "error": f"exit code {run.returncode}"}
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
    return placement, resp.get("version")


def _vela_checks(graph: Graph, report, profile: Profile, input_shapes, timeout_s, confirm: bool) -> Measurement:
    """The library checks; with `confirm`, operators they put on the CPU are confirmed by the compile, because Vela
    5.2.0 compiles with its C++ core (Regor), whose limits are wider for some operators (measured: TRANSPOSE)."""
    placement, version = _checks_placement(graph, timeout_s)
    label = "judge: Vela's supported-operator checks (library call, no compile)"
    notes = []
    if confirm and any(p.device == "cpu" for p in placement):
        compiled, res = _compile_placement(graph, report, profile, input_shapes, timeout_s)
        by = {p.node: p for p in compiled}
        for p in placement:
            c = by.get(p.node)
            if p.device == "cpu" and c is not None and c.device != "cpu":
                p.device, p.reason = (
                    c.device,
                    f"Vela's library checks put it on the CPU ({p.reason}); the compile runs it on the NPU",
                )
        label = (
            "judge: Vela's supported-operator checks (library call), their CPU verdicts confirmed by the compile "
            f"({res.wall_s:.1f} s)"
        )
    elif not confirm:
        notes.append(
            "Vela 5.2.0 compiles with its C++ core (Regor), whose limits are wider for some operators (TRANSPOSE): "
            "--measure auto or compile confirms these verdicts with the compile"
        )
    vela = VELA.status_name  # the library checks are Vela's own
    m = Measurement(profile.name, "vela-checks", vela, version, label, compare_placement(report, placement, vela))
    m.notes.extend(notes)
    return m


def _compile_placement(graph: Graph, report, profile: Profile, input_shapes, timeout_s):
    from ..util.io import private_tempdir
    from . import compile_model

    with private_tempdir("measure") as d:
        judge_int8 = report.target.get("judged_as") == "int8"
        # a target that also builds float is asked for its int8 build (int8-only compilers take the model as given)
        res = compile_model(
            graph.path,
            profile.name,
            out_dir=d,
            simulate=False,
            timeout_s=timeout_s,
            input_shapes=input_shapes,
            quantize=judge_int8 and profile.executes is Executes.FP16_INT8,
        )
    if not res.ok or not res.placement:
        raise _NotMeasured(f"{res.compiler} did not finish ({(res.error or 'no placement').splitlines()[0][:200]})")
    return res.placement, res  # already per node of `graph` (compilers map layers back, TFLite included)


def _compile(graph: Graph, report, profile: Profile, input_shapes, timeout_s) -> Measurement:
    placement, res = _compile_placement(graph, report, profile, input_shapes, timeout_s)
    m = Measurement(
        profile.name,
        "compile",
        res.compiler,
        res.compiler_version,
        f"judge: {res.compiler} {res.compiler_version or ''} compile ({res.wall_s:.1f} s)".replace("  ", " "),
        compare_placement(report, placement, res.compiler),
    )
    m.notes.extend(n for n in res.notes if "converted ONNX" in n)
    return m


def attach_measurement(
    report, graph: Graph, profile: Profile, mode: str = MEASURE_JUDGE, input_shapes=None
) -> Measurement:
    """Measure and add the result to report.extra (JSON key "measurement", terminal and Markdown sections)."""
    m = measure(graph, report, profile, mode, input_shapes)
    report.extra["measurement"] = m.to_dict()
    report.extra.setdefault("_terminal_sections", []).append(lambda con, rep: _terminal(con, m))
    report.extra.setdefault("_markdown_sections", []).append(lambda rep: render_markdown(m))
    return m


def _summary_line(m: Measurement) -> str:
    s = m.comparison.scores()
    return (
        f"{len(m.comparison.nodes)} nodes measured: compiler put {s['compiler_cpu_nodes']} on the CPU, npufit predicted "
        f"{s['predicted_off_npu']} off the NPU; {len(m.differing)} differ (CPU-fallback recall "
        f"{_pct(s['cpu_fallback_recall'])}, precision {_pct(s['cpu_fallback_precision'])})"
    )


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def _terminal(con, m: Measurement) -> None:
    from rich.table import Table
    from rich.text import Text

    con.print(Text(f"measured placement ({m.target}): {m.message}", style="bold"))
    if not m.measured:
        return
    for note in m.notes:
        con.print(Text(f"note: {note}", style="dim"))
    con.print(_summary_line(m))
    rows = [n for n in m.comparison.nodes if n.actual != "folded" or n.predicted != "folded"]
    t = Table(show_edge=False, pad_edge=False)
    for col in ("", "node", "op", "predicted", "measured", "npufit's explanation", "compiler's reason"):
        t.add_column(col, overflow="fold")
    for n in rows:
        r = _row(n)
        flag = "≠" if r["differs"] else ""
        t.add_row(
            Text(flag, style="bold red"),
            n.node,
            n.op,
            n.predicted,
            n.actual,
            r["npufit_explanation"] or "—",
            n.compiler_reason or "—",
            style="red" if flag else None,
        )
    con.print(t)


def render_markdown(m: Measurement) -> str:
    out = ["## Measured placement", "", f"{m.target}: {m.message}"]
    if not m.measured:
        return "\n".join(out)
    out += (
        [""]
        + [f"- note: {n}" for n in m.notes]
        + [
            "",
            _summary_line(m),
            "",
            "| differs | node | op | predicted | measured | npufit's explanation | compiler's reason |",
            "|---|---|---|---|---|---|---|",
        ]
    )
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    for n in m.comparison.nodes:
        r = _row(n)
        out.append(
            f"| {'≠' if r['differs'] else ''} | `{esc(n.node)}` | {n.op} | {n.predicted} | {n.actual} | "
            f"{esc(r['npufit_explanation']) or '—'} | {esc(n.compiler_reason) or '—'} |"
        )
    return "\n".join(out)
