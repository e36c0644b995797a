"""One placement per (model, target, shapes, judge): where every node runs, and who says so.

Where the vendor compiler for the target runs on this machine (Vela, always: it is a dependency; Arm's Ethos-N
support library and RKNN-Toolkit2 once their environments are installed; the Hailo DFC when a user installs it),
its placement is the answer and npufit's rules explain it; elsewhere npufit's prediction is the answer and says so.
`place()` returns a CheckReport whose verdicts are those answers: every count, partition, boundary and percentage
of the report is computed from them, and every verb reads this one report (the verbs module computes it and passes
it down: split's planner, fix's "moved to NPU", quantize's target cost, compare, scan, the pipeline).

    place("m.tflite", "ethos-u55-256")                  # measured by Vela (compile), the prediction beside it
    place("m.onnx", "hailo8")                           # predicted: no compiler for hailo8 runs here
    place("m.onnx", "rk3588", measure="never")          # the prediction only (check --predict)
    place("m.onnx", "rk3588", measure="required")       # the compiler's placement, or one line saying why not

Per node: the verdict, `source` ("measured:<compiler> <version>" or "predicted:<rule ids>"), npufit's explanation
(its rules' reasons) and the compiler's own reason when it gives one. Every node where prediction and measurement
differ is listed with both explanations and can be appended to a calibration record (`record=`).
A process-level memo keeps one placement per (model content, target, pinned shapes, judge, measure mode, compiler
version): a verb that asks again in the same run (a pipeline, a split after a check) reads the same placement.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .check.engine import check_graph, converted_warning, resolve, restructure
from .check.result import CheckReport, Reason
from .errors import NpufitError
from .graph import Graph
from .graph.onnx_prepare import read_onnx
from .targets import get_profile
from .targets.base import Profile, Verdict
from .util.limits import NODE_BYTES, graph_within_budget
from .util.shapes import parse_input_shapes
from .vocab import JUDGE, MEASURE_JUDGE, MEASURE_JUDGES, MEASURE_MODE, MEASURE_MODES, MEASURE_TIMEOUT_S

SCHEMA = "npufit.placement/1"
MEMO_SIZE = 16
_MEMO: OrderedDict[tuple, tuple[Any, CheckReport]] = OrderedDict()
_HASHES: dict[tuple, str] = {}
_DEVICE = {"npu": Verdict.NPU, "cpu": Verdict.CPU, "folded": Verdict.FOLDED}


def place(
    model: str | os.PathLike | Graph,
    target: str | Profile,
    input_shapes=None,
    judge: str = JUDGE,
    measure: str | bool = MEASURE_MODE,
    *,
    measure_judge: str = MEASURE_JUDGE,
    timeout_s: float | None = MEASURE_TIMEOUT_S,
    record: str | os.PathLike | None = None,
) -> CheckReport:
    """The placement of every node of `model` on `target` (the model file is only read).

    measure: "auto" (default): the installed compiler for the target is the judge when it runs here, else npufit's
    prediction; "never": the prediction only; "required": the compiler's placement, or a one-line NpufitError when
    none runs (True / False are "auto" / "never"). measure_judge: which compiler run judges ("auto" = the compile;
    "vela-checks": Vela's operator checks, TFLite on Ethos-U only). timeout_s: a compile that runs longer is stopped
    and the prediction is shown, marked as such. record: a calibration record file (JSON) the disagreements between
    prediction and measurement are appended to."""
    mode = _mode(measure)
    profile = target if isinstance(target, Profile) else get_profile(target)
    # the prediction alone is not remembered: it costs about what hashing a large file would, and is the same
    key = None if mode == "never" else _key(model, profile, input_shapes, judge, mode, measure_judge)
    hit = _MEMO.get(key) if key is not None else None
    if hit is not None:
        _MEMO.move_to_end(key)
        report = _copy(hit[1])
    else:
        graph, _ = resolve(model, profile, input_shapes)
        report = _place(graph, profile, judge, mode, measure_judge, input_shapes, timeout_s)
        if key is not None:
            _MEMO[key] = (model if isinstance(model, Graph) else None, report)  # a Graph key holds its graph alive
            while len(_MEMO) > MEMO_SIZE:
                _MEMO.popitem(last=False)
            report = _copy(report)
    if record is not None:
        write_record(report, record)
    return report


def check(
    model: str | os.PathLike | Graph,
    target: str | Profile,
    input_shapes=None,
    judge: str = JUDGE,
    assume_int8: bool = False,
    measure: str | bool = MEASURE_MODE,
    *,
    timeout_s: float | None = MEASURE_TIMEOUT_S,
    record: str | os.PathLike | None = None,
) -> CheckReport:
    """Judge every node of `model` against `target`: which runs on the NPU, which does not, why, how to fix it.

    The library side of `npufit check MODEL --target T`. The model file is only read. Where the target's compiler
    runs here (Vela always; Arm's Ethos-N support library and RKNN-Toolkit2 once their environments are installed)
    its placement is the answer and npufit's rules explain it; elsewhere npufit's prediction is (see `place`).

    Parameters
    ----------
    model : str, os.PathLike or Graph
        An .onnx or .tflite file (or a Graph from `npufit.load`; a compiler places the file it was read from).
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
        "auto" (default): the compiler's placement where one runs here, else the prediction; "never" (True /
        False are "auto" / "never"; the CLI's --predict): the prediction only; "required": the compiler's placement
        or one clear error; "compile" or "vela-checks": that compiler run, required.
    timeout_s : float, optional
        A compile that runs longer is stopped and the prediction shown, marked as such.
    record : str or os.PathLike, optional
        A calibration record file the disagreements between prediction and measurement are appended to.

    Returns
    -------
    CheckReport
        Per-node verdicts and reasons (each a sentence and a rule id; `npufit.explain(rule_id)` has the evidence),
        who placed each node (`source`), partitions, NPU/host boundaries and the largest NPU prefix;
        `report.extra["placement"]` says measured or predicted and lists every disagreement;
        `.render("table" | "json" | "markdown" | "html")`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> report = npufit.check("yolov8n.onnx", "hailo8")
    >>> report  # doctest: +SKIP
    <CheckReport hailo8 yolov8n.onnx: 96.6% nodes, 4 NPU / 8 host>
    >>> [(n.name, n.reasons[0].rule) for n in report.failing][:1]  # doctest: +SKIP
    [('/model.22/Reshape', 'hailo8.shuffle.rank3')]
    """
    judge = "int8" if assume_int8 else judge
    if isinstance(measure, str) and measure not in (*MEASURE_MODES, *MEASURE_JUDGES):
        words = ", ".join(dict.fromkeys((*MEASURE_MODES, *MEASURE_JUDGES)))
        raise NpufitError(f"unknown --measure '{measure}' (choose from {words})")
    if isinstance(measure, str) and measure in MEASURE_JUDGES and measure not in MEASURE_MODES:
        return place(
            model, target, input_shapes, judge, "required", measure_judge=measure, timeout_s=timeout_s, record=record
        )
    return place(model, target, input_shapes, judge, measure, timeout_s=timeout_s, record=record)


# -- the verbs that read the placement ---------------------------------------------------------------------------
# Their work lives in the layers below (split, rewrite, quantize, check.compare), which take the placement as a
# parameter and never measure; wrapped here, each is handed the run's placement (npufit.verbs and the CLI wrap
# them: `reads_placement(split)`, `with_placer(quantize)`).

_MEASURE_DOC = """
    measure: whose placement the verb reads (npufit.placement.place): "auto" (default: the installed compiler's
    where one runs here, else npufit's prediction), "never" (the prediction: --predict), "required";
    measure_timeout: seconds a compile may take before the prediction is used instead."""


def reads_placement(verb):
    """verb(model, target, ..., input_shapes=, judge=, placement=) -> the same verb, handed `place()`'s report."""
    sig = inspect.signature(verb)

    @functools.wraps(verb)
    def placed(*args, measure: str | bool = MEASURE_MODE, measure_timeout: float | None = MEASURE_TIMEOUT_S, **kw):
        bound = sig.bind(*args, **kw)
        bound.apply_defaults()
        a = bound.arguments
        if a.get("placement") is None:
            _within_budget(verb.__name__, a["model"])  # before the placement builds the graph the verb refuses
            a["placement"] = place(
                a["model"],
                a["target"],
                a.get("input_shapes"),
                a.get("judge", JUDGE),
                measure,
                timeout_s=measure_timeout,
            )
            if "placement" in sig.bind_partial(*args).arguments:  # passed as None by position
                args = tuple(a["placement"] if n == "placement" else v for n, v in zip(sig.parameters, args))
            else:
                kw["placement"] = a["placement"]
        result = verb(*args, **kw)  # the caller's own arguments, as it passed them, and the placement
        if verb.__name__ == "fix" and result.written and result.applied:  # the written model, placed like the input
            from .rewrite.engine import settle_after  # rewrite loads onnx_ir and ONNX Runtime: only after a fix

            settle_after(
                result,
                place(a["output"], a["target"], None, a["judge"], measure, timeout_s=measure_timeout),
                a.get("input_shapes"),
                a["judge"],
            )
        return result

    placed.__doc__ = (verb.__doc__ or "").rstrip() + "\n" + _MEASURE_DOC
    return placed


def _within_budget(verb: str, model) -> None:
    """The verb's memory-budget refusal (util.limits.graph_within_budget), made on the bare protobuf before the
    placement loads the graph for it: a graph too large for the verb is refused in one line, within the budget."""
    if verb not in NODE_BYTES or not isinstance(model, (str, os.PathLike)) or Path(model).suffix.lower() != ".onnx":
        return
    graph_within_budget(verb, len(read_onnx(Path(model)).model.graph.node))


def with_placer(verb, takes_shapes: bool):
    """verb(..., placer=) -> the same verb, whose placer is `place()` (quantize places its output, compare each
    model); takes_shapes: the placer is called (model, target, input_shapes, judge), else (model, target)."""

    @functools.wraps(verb)
    def placed(*args, measure: str | bool = MEASURE_MODE, measure_timeout: float | None = MEASURE_TIMEOUT_S, **kw):
        if kw.get("placer") is None:
            if takes_shapes:
                kw["placer"] = lambda m, t, shapes=None, judge=JUDGE: place(
                    m, t, shapes, judge, measure, timeout_s=measure_timeout
                )
            else:
                kw["placer"] = lambda m, t: place(m, t, None, JUDGE, measure, timeout_s=measure_timeout)
        return verb(*args, **kw)

    placed.__doc__ = (verb.__doc__ or "").rstrip() + "\n" + _MEASURE_DOC
    return placed


def placement_of(report: CheckReport) -> dict:
    """The report's placement header (source, compiler, headline, disagreements); {} for a bare prediction."""
    return report.extra.get("placement") or {}


def clear_memo() -> None:
    _MEMO.clear()
    _HASHES.clear()


# -- the work ---------------------------------------------------------------------------------------------------


def _mode(measure) -> str:
    if measure is True:
        return "auto"
    if measure is False or measure is None:
        return "never"
    if measure not in MEASURE_MODES:
        raise NpufitError(f"unknown measure mode '{measure}' (choose from {', '.join(MEASURE_MODES)})")
    return measure


def _place(graph: Graph, profile: Profile, judge, mode, measure_judge, input_shapes, timeout_s) -> CheckReport:
    report = check_graph(graph, profile, judge)
    if mode == "never":
        _attach(report, _predicted("--predict asks for no compiler"))
        return report
    from .compilers.measure import measure  # the compiler adapters: only when a compiler is asked

    m = measure(graph, report, profile, measure_judge, input_shapes, timeout_s)
    if not m.measured:
        if mode == "required":
            raise NpufitError(f"{profile.name}: {m.message}")
        _attach(report, _predicted(m.message))
        return report
    by_node = {n.node: n for n in m.comparison.nodes}
    source = f"measured:{m.compiler} {m.version or ''}".rstrip()
    for node in report.nodes:
        c = by_node.get(node.name) if node.parent is None else None
        if c is None:
            continue
        node.source, node.predicted, node.compiler_reason = source, node.verdict, c.compiler_reason
        node.verdict = _DEVICE[c.actual]
        if node.verdict is Verdict.CPU and not any(r.verdict is not Verdict.NPU for r in node.reasons):
            # a node npufit predicted on the NPU: the compiler's own words are the reason the report shows
            node.reasons.append(
                Reason(
                    f"{profile.name}.measured",
                    c.compiler_reason or f"{m.title} placed it on the CPU",
                    Verdict.CPU,
                    source=source,
                )
            )
        if node.verdict is Verdict.FOLDED:
            node.macs = 0
    restructure(report, graph, profile)
    if converted_warning(profile) in report.warnings:  # measured on the converted file, not predicted through it
        report.warnings.remove(converted_warning(profile))
    headline = f"measured by {m.title} {m.version or ''}".rstrip() + f" ({m.judge_words}, {m.wall_s:.1f} s)"
    disagreements = [_disagreement(c) for c in m.comparison.disagreements]
    info = {
        "schema": SCHEMA,
        "source": "measured",
        "compiler": m.compiler,
        "compiler_version": m.version,
        "judge": m.mode,
        "wall_s": round(m.wall_s, 3),
        "headline": f"placement {headline}",
        "notes": list(m.notes),
        "measured_nodes": len(by_node),
        "scores": m.comparison.scores(),
        "disagreements": disagreements,
    }
    _attach(report, info)
    return report


def _predicted(why: str) -> dict:
    return {
        "schema": SCHEMA,
        "source": "predicted",
        "headline": f"placement predicted by npufit's rules: {why}",
        "why_predicted": why,
        "disagreements": [],
    }


def _disagreement(c) -> dict:
    why = "; ".join(r["text"] + (f" ({r['detail']})" if r.get("detail") else "") + f" [{r['rule']}]" for r in c.rules)
    return {
        "node": c.node,
        "op": c.op,
        "predicted": c.predicted,
        "measured": c.actual,
        "npufit_explanation": why or "no npufit rule fired: predicted on the NPU",
        "compiler_reason": c.compiler_reason or "",
    }


def _attach(report: CheckReport, info: dict) -> None:
    report.extra["placement"] = info
    report.extra.setdefault("_terminal_sections", []).append(lambda con, rep: _terminal(con, info))
    report.extra.setdefault("_markdown_sections", []).append(lambda rep: _markdown(info))


def _terminal(con, info: dict) -> None:
    from rich.text import Text

    d = info.get("disagreements") or []
    if not d:
        if info.get("source") == "measured":
            con.print(Text("prediction and measurement agree on every node", style="dim"))
        return
    con.print(Text(f"prediction and measurement differ on {len(d)} node(s):", style="bold"))
    for x in d:
        con.print(
            Text.assemble(
                ("  ≠ ", "bold red"),
                (f"{x['node']} ({x['op']})", "bold"),
                f": predicted {x['predicted']}, measured {x['measured']}",
            )
        )
        con.print(f"      npufit: {x['npufit_explanation']}")
        if x["compiler_reason"]:
            con.print(f"      compiler: {x['compiler_reason']}")


def _markdown(info: dict) -> str:
    d = info.get("disagreements") or []
    if not d:
        return ""
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = [
        "## Prediction vs measurement",
        "",
        "| node | op | predicted | measured | npufit's explanation | compiler's reason |",
        "|---|---|---|---|---|---|",
    ]
    out += [
        f"| `{esc(x['node'])}` | {x['op']} | {x['predicted']} | {x['measured']} | {esc(x['npufit_explanation'])} | "
        f"{esc(x['compiler_reason']) or '—'} |"
        for x in d
    ]
    return "\n".join(out)


# -- the memo ---------------------------------------------------------------------------------------------------


def _key(model, profile: Profile, input_shapes, judge, mode, measure_judge) -> tuple | None:
    """A Graph read from a file is keyed by that file's content (its caller passes the shapes it was read with, as
    the CLI and scan do); one built in memory by its identity."""
    path = Path(model.path) if isinstance(model, Graph) else Path(model)
    digest = _content_hash(path) if not isinstance(model, Graph) or path.is_file() else None
    if digest is not None:
        ident: Any = ("file", digest)
    elif isinstance(model, Graph):
        ident = ("graph", id(model))
    else:
        return None
    shapes = tuple(sorted((k, tuple(v)) for k, v in parse_input_shapes(input_shapes).items()))
    version = None if mode == "never" else _compiler_version(profile)
    return (ident, profile.name, shapes, judge, mode, measure_judge, version)


def _content_hash(path: Path) -> str | None:
    """sha256 of the file's bytes (and of an ONNX model's external data file beside it), once per file version."""
    try:
        st = path.stat()
    except OSError:
        return None
    stat_key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    got = _HASHES.get(stat_key)
    if got is None:
        h = hashlib.sha256()
        for p in (path, path.with_name(path.name + ".data")):
            if p.is_file():
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
        got = _HASHES[stat_key] = h.hexdigest()
    return got


def _compiler_version(profile: Profile) -> tuple | None:
    """The compiler as the memo tells them apart: its version, where it lives and the extras its env holds."""
    from .compilers import compiler_for  # the compiler adapters: only when a placement is measured
    from .toolchains import for_platform  # the toolchain registry, read with them

    try:
        st = compiler_for(profile.name).status()
    except NpufitError:
        return None
    chain = for_platform(profile.name)
    extras: tuple = ()
    if chain is not None and chain.env is not None and st.get("available"):
        from .envs import env_status  # the vendor environments: only where the target's compiler has one

        extras = tuple(env_status(chain.env_name).get("extras", ()))
    return (st.get("version"), st.get("detail"), extras)


def _copy(report: CheckReport) -> CheckReport:
    """A caller's own view of a remembered report (its dicts and lists; the node results are shared, read-only)."""
    return dataclasses.replace(
        report,
        model=dict(report.model),
        target=dict(report.target),
        warnings=list(report.warnings),
        extra=dict(report.extra),
    )


# -- calibration records -----------------------------------------------------------------------------------------

RECORD_SCHEMA = "npufit.calibration.measured/1"  # the format of calibration/records.py
_LETTER = {"npu": "n", "cpu": "c", "unsupported": "c", "folded": "f"}


def write_record(report: CheckReport, path: str | os.PathLike) -> Path | None:
    """Append this model's measured placement and its disagreements with the prediction to the calibration record
    at `path` (created when missing; one record per target and build). Nothing is written for a prediction."""
    import json

    from .util.io import atomic_write_json  # only when a record is written

    info = placement_of(report)
    if info.get("source") != "measured":
        return None
    path = Path(path)
    build = "int8" if report.target.get("judged_as") == "int8" else "as-is"
    if path.exists():
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise NpufitError(f"{path}: not a calibration record ({e})") from None
        if rec.get("schema") != RECORD_SCHEMA or rec.get("target") != report.target["name"]:
            raise NpufitError(f"{path}: not a {RECORD_SCHEMA} record for {report.target['name']}")
    else:
        rec = {
            "schema": RECORD_SCHEMA,
            "target": report.target["name"],
            "build": build,
            "opset": (report.model.get("opsets") or {}).get("ai.onnx")
            if report.model.get("format") == "onnx"
            else None,
            "compiler": info["compiler"],
            "compiler_versions": [],
            "models": {},
        }
    if info.get("compiler_version") and info["compiler_version"] not in rec["compiler_versions"]:
        rec["compiler_versions"].append(info["compiler_version"])
    nodes = [n for n in report.nodes if n.parent is None]
    letters = "".join(_LETTER[n.verdict.value] for n in nodes)
    ops = ",".join(n.op_type for n in nodes)
    rec["models"][report.model["file"]] = {
        "source": "check --record-disagreements",
        "ok": True,
        "nodes": len(nodes),
        "ops_sha": hashlib.sha256(ops.encode()).hexdigest()[:16],
        "placement": letters,
        "cpu": {n.name: n.op_type for n, c in zip(nodes, letters) if c == "c"},
        "disagreements": info["disagreements"],
    }
    atomic_write_json(path, rec)
    return path
