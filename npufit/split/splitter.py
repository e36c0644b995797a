"""split(): check verdicts -> a cut -> stage models + plan.json, proven equal to the original."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from .. import toolchains
from ..check import check_graph
from ..errors import NpufitError
from ..graph import require_shapes
from ..graph.validate import external_data_files
from ..rewrite import fix as fix_model
from ..targets import get_profile
from ..targets.base import Profile, Verdict
from ..toolchains import StageParser
from ..util.commands import fix_command
from ..util.io import atomic_dir, atomic_write_json, check_output_dir, private_tempdir
from ..vocab import JUDGE, SPLIT_MIN_NODES, SPLIT_MODE, SPLIT_MODES
from .chain import ORT_CPU, ChainRunner
from .cost import CostModel, switches
from .extract import Extractor, load_source
from .plan import PLAN_FILE, PlanStage, SplitPlan, legacy_plan_entries, sha256_file
from .planner import (
    Cut,
    GraphIndex,
    candidates,
    explicit_cut,
    prefix_cut,
    segments_cut,
    stage_node_names,
    transfers,
)
from .result import SplitResult, how_to_select
from .verify import verify_chain


def split(
    model: str | os.PathLike,
    target: str,
    output_dir: str | os.PathLike | None = None,
    mode: str | None = None,
    min_nodes: int = SPLIT_MIN_NODES,
    start_nodes: list[str] | None = None,
    end_nodes: list[str] | None = None,
    verify: bool = True,
    samples: int = 3,
    seed: int = 0,
    inputs: list[str] | None = None,
    force: bool = False,
    input_shapes=None,
    top: int = 5,
    judge: str = JUDGE,
    verify_against: str | os.PathLike | None = None,
    max_npu_stages: int | None = None,
    placement=None,
) -> SplitResult:
    """Cut `model` into NPU and host stages for `target`, write them with plan.json to `output_dir`, and verify that
    the chain of stages reproduces the original. The model file is only read.

    The library side of `npufit split MODEL --target T -d DIR`.

    Parameters
    ----------
    model : str or os.PathLike
        An .onnx file.
    target : str
        The target whose verdicts decide the cut.
    output_dir : str or os.PathLike, optional
        The plan folder (default: ./npufit-split/<model>-<target>).
    mode : str, optional
        "best" (default: the best-ranked candidate cut), "prefix" (the largest NPU prefix), "segments" (each NPU
        region of at least `min_nodes` nodes), "explicit" (`start_nodes`/`end_nodes`: node or tensor names, Hailo
        semantics) or "auto" (`npufit.fix` with the target's exact rules first, then the best cut of the fixed model,
        verified against the original).
    min_nodes : int
        Segments mode: the smallest NPU region kept.
    start_nodes, end_nodes : list of str, optional
        Explicit mode: where the NPU stage starts and ends.
    verify : bool
        Run the chain and the original on seeded samples; a chain that differs is not written unless `force`.
    samples, seed : int
        The verification's seeded random samples.
    inputs : list of str, optional
        .npz files of real inputs for the verification instead of random samples.
    force : bool
        Write the plan even when the verification fails.
    input_shapes : dict or str, optional
        Shapes for the inputs, {"images": (1, 3, 640, 640)} or "images=1,3,640,640" (a dynamic batch alone is
        pinned to 1; other unknown dims must be given).
    top : int
        How many ranked candidate cuts the result lists.
    judge : str
        How a float model is judged ("auto", "int8", "float"), as in `npufit.check`.
    verify_against : str or os.PathLike, optional
        Another model the chain must reproduce (auto mode verifies against the original this way).
    max_npu_stages : int, optional
        Cap on the NPU stages of the best mode's plan (segments mode: keep the regions with the most MACs); by
        default the target's own cap (Hailo: one NPU stage unless a second pays by a safe margin).
    placement : CheckReport, optional
        The placement of `model` on `target` the cut is made from (npufit.placement: the compiler's placement
        where one runs; `npufit.split` passes it in); None: npufit's prediction.

    Returns
    -------
    SplitResult
        The plan (stages, boundaries, vendor start/end nodes), the ranked candidates, the chosen cut and why, the
        verification; `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> res = npufit.split("yolov8n.onnx", "hailo8", "plan/")
    >>> res  # doctest: +SKIP
    <SplitResult hailo8 yolov8n.onnx: best, 1 NPU / 1 host stages -> plan>
    >>> out = npufit.run("plan/", {"images": x})  # doctest: +SKIP
    """
    t_start = time.perf_counter()
    start_nodes, end_nodes = _names(start_nodes), _names(end_nodes)
    mode = mode or ("explicit" if (start_nodes or end_nodes) else SPLIT_MODE)
    if mode not in SPLIT_MODES:
        raise NpufitError(f"unknown split mode '{mode}' (choose from {', '.join(SPLIT_MODES)})")
    if mode == "explicit" and not (start_nodes or end_nodes):
        raise NpufitError("mode 'explicit' needs --start-nodes and/or --end-nodes (node or tensor names)")
    if mode != "explicit" and (start_nodes or end_nodes):
        raise NpufitError(
            f"--start-nodes/--end-nodes define an explicit cut; they cannot be combined with --mode {mode}"
        )
    if output_dir is None:
        raise NpufitError("an output folder is required (--output-dir DIR)")
    if max_npu_stages is not None and (
        isinstance(max_npu_stages, bool) or not isinstance(max_npu_stages, int) or max_npu_stages < 1
    ):
        raise NpufitError(f"--max-npu-stages must be a whole number of at least 1, not {max_npu_stages!r}")
    if max_npu_stages is not None and mode in ("prefix", "explicit"):
        raise NpufitError(
            f"--max-npu-stages applies to the best, auto and segments modes; --mode {mode} has one NPU stage"
        )
    model_path = Path(model)
    check_output_dir(Path(output_dir), "--output-dir", [model_path], legacy_plan_entries)  # fail before any work
    if mode == "auto":
        return _fix_then_split(
            model_path,
            target,
            output_dir,
            min_nodes=min_nodes,
            verify=verify,
            samples=samples,
            seed=seed,
            inputs=inputs,
            force=force,
            input_shapes=input_shapes,
            top=top,
            judge=judge,
            max_npu_stages=max_npu_stages,
            placement=placement,
        )
    proto, graph = load_source(model_path, input_shapes)
    require_shapes(graph, "split runs the model to prove its stages")
    given_shapes, input_shapes = (
        input_shapes,
        graph.input_shapes,
    )  # the shapes the stages are written with: given, or a dynamic batch of 1

    sources = [model_path, *external_data_files(proto, model_path.parent)]
    profile = get_profile(target)
    report = check_graph(graph, profile, judge) if placement is None else _same_model(placement, graph, profile)
    cost = CostModel.for_profile(profile)
    ix = GraphIndex(graph, report, cost)
    if not ix.order:
        raise NpufitError(f"{model_path.name}: every node is a compile-time constant; there is nothing to split")

    if mode == "prefix":
        chosen = prefix_cut(ix)
    elif mode == "segments":
        chosen = segments_cut(ix, report.partitions, min_nodes, max_npu_stages)
    elif mode == "explicit":
        chosen = explicit_cut(ix, start_nodes, end_nodes)
    else:
        chosen = None
    ranked = candidates(ix, report.partitions, chosen)
    why = None
    if chosen is None:
        chosen, why = choose(ranked, cost, max_npu_stages)
    _place_constant_outputs(ix, chosen)
    t_plan = time.perf_counter()

    warnings = (
        list(graph.shape_notes)
        + list(graph.warnings)
        + _warnings(ix, chosen, profile.name)
        + ([] if verify_against is not None else _fix_hints(ix, report, chosen, model_path, profile.name, given_shapes))
    )
    src_dir = model_path.resolve().parent
    extractor = Extractor(proto, ix, src_dir, [t for st in chosen.stages for t in (*st.inputs, *st.outputs)])
    with atomic_dir(output_dir, "split-plan", "--output-dir", sources, legacy_plan_entries) as tmp:
        stages = []
        for st in chosen.stages:
            facts = extractor.extract(st, tmp / f"{st.name}.onnx")
            stages.append(_plan_stage(ix, chosen, st, facts, model_path.name, profile))
        plan = SplitPlan(
            source=_source_info(model_path, graph),
            target=_target_info(profile, report),
            mode=chosen.mode,
            options=_options(chosen, mode, max_npu_stages),
            stages=stages,
            outputs=[{"name": o, "from": _output_source(chosen, o)} for o in ix.outputs],
            boundaries=transfers(ix, chosen.stages, chosen.sources),
            cost=dict(chosen.cost),
            warnings=warnings,
        )
        t_extract = time.perf_counter()
        check = None
        if verify:
            runner = ChainRunner(tmp, ORT_CPU, plan=plan, lazy=True)
            optimized = ChainRunner(tmp, ORT_CPU, plan=plan, optimized=True, lazy=True)
            # --mode auto: bit for bit against the fixed model it was cut from, and within what fix accepts for
            # exact rules against the user's original
            source = verify_against if verify_against is not None and Path(verify_against) != model_path else None
            check = verify_chain(model_path, runner, inputs, samples, seed, input_shapes, optimized, source)
            plan.verification = check.to_dict()
            if not check.equivalent and not force:
                raise NpufitError(
                    f"the stage chain is not equivalent to the original: {check.worst_sentence()}; "
                    "plan not written (use --force to write it anyway)"
                )
        elif inputs:
            raise NpufitError("--inputs is used for verification; it cannot be combined with --no-verify")

        atomic_write_json(tmp / PLAN_FILE, plan.to_dict())
    t_end = time.perf_counter()
    timings = {
        "plan_s": round(t_plan - t_start, 3),
        "extract_s": round(t_extract - t_plan, 3),
        "verify_s": round(check.seconds, 3) if check else 0.0,
        "total_s": round(t_end - t_start, 3),
    }
    return SplitResult(
        plan,
        Path(output_dir),
        list(ranked),
        chosen,
        timings,
        top,
        why or _why(mode, chosen, ranked, _rejected_on_npu(ix, report, chosen, profile.name)),
        report,
        cost,
    )


def _rejected_on_npu(ix: GraphIndex, report, cut: Cut, target: str) -> str:
    """'' when every node of the cut's NPU stages runs there; else what the target's rules reject in them, by rule
    (the most frequent first): an estimate that counts them as NPU work ranks a cut the parser is expected to refuse."""
    from collections import Counter

    on_npu = {n for s in cut.stages if s.device == "npu" for n in s.nodes}
    rules: Counter[str] = Counter()
    for n in report.failing:
        if n.name in on_npu and n.reasons:
            rules[n.reasons[0].rule] += 1
    if not rules:
        return ""
    top = ", ".join(f"{rule} x{k}" for rule, k in rules.most_common(3))
    return f"its NPU stage(s) hold {sum(rules.values())} node(s) the {target} check rejects ({top})"


def _why(mode: str, chosen: Cut, ranked: list[Cut], rejected: str = "") -> str:
    """One sentence: why this cut was written, when a mode other than best asked for it. A cut whose NPU stages hold
    rejected nodes is ranked as if they ran there: it is never called the best-ranked without saying so."""
    rank = ranked.index(chosen) + 1
    best = ranked[0]
    if rejected:
        return (
            f"chosen: --mode {mode} as asked; {rejected}: it ranks {rank} of {len(ranked)} only by counting them as "
            "NPU work, and the parser is expected to refuse or fail on them"
        )
    if rank == 1:
        return f"chosen: --mode {mode}, which is also the best-ranked of {len(ranked)} candidate cut(s)"
    return (
        f"chosen: --mode {mode} as asked; it ranks {rank} of {len(ranked)} (best: {best.label}, "
        f"est. {best.cost['est_ms']:.3f} ms vs {chosen.cost['est_ms']:.3f} ms: select it with {_select(best)})"
    )


def choose(ranked: list[Cut], cost: CostModel, max_npu_stages: int | None) -> tuple[Cut, str]:
    """The best-ranked cut within the NPU-stage cap, and one sentence saying why.

    An explicit cap is a hard limit. The target's own cap (Hailo: 1) gives way to one more NPU stage only when that
    cut is still faster with each switch between NPU stages costing twice the stated figure: a margin for the one
    figure that decides it."""
    cap = max_npu_stages if max_npu_stages is not None else cost.max_npu_stages
    n = len(ranked)
    if cap is None:
        best, nxt = ranked[0], (ranked[1] if n > 1 else None)
        vs = f"; next: {nxt.label}, {nxt.cost['est_ms']:.3f} ms" if nxt else ""
        return (
            best,
            f"chosen: the best-ranked of {n} candidate cut(s) ({best.label}, est. {best.cost['est_ms']:.3f} ms{vs})",
        )
    best = next(c for c in ranked if c.npu_stages <= cap)
    over = next((c for c in ranked if c.npu_stages > cap), None)
    if over is None or over.cost["est_ms"] >= best.cost["est_ms"]:
        return best, (
            f"chosen: the best-ranked of {n} candidate cut(s) ({best.label}, est. {best.cost['est_ms']:.3f} ms); "
            f"no cut with more than {cap} NPU stage(s) ranks above it"
        )
    chosen, why = (
        best,
        (
            f"chosen: the best-ranked of {n} candidate cut(s) with at most {cap} NPU stage(s) ({best.label}, "
            f"est. {best.cost['est_ms']:.3f} ms)"
        ),
    )
    one_more = next((c for c in ranked if c.npu_stages == cap + 1), None)
    switch = cost.figures["ms_per_npu_switch"]
    if max_npu_stages is None and one_more is not None and _with_switch_cost(one_more, switch) < best.cost["est_ms"]:
        chosen, why = (
            one_more,
            (
                f"chosen: {one_more.label}, {one_more.npu_stages} NPU stages, est. {one_more.cost['est_ms']:.3f} ms: "
                f"a second NPU stage pays against the best cut with {cap} ({best.label}, "
                f"est. {best.cost['est_ms']:.3f} ms) even if each switch between NPU stages cost {2 * switch:g} ms "
                f"instead of {switch:g}"
            ),
        )
    if over is not chosen:
        reason = (
            f"{cost.target} runs each NPU stage as a network group of its own"
            if max_npu_stages is None
            else f"--max-npu-stages {max_npu_stages}"
        )
        why += (
            f"; the best-ranked cut has {over.npu_stages} NPU stages ({over.label}, "
            f"est. {over.cost['est_ms']:.3f} ms), left out because {reason}: "
            f"allow it with --max-npu-stages {over.npu_stages}"
        )
    return chosen, why


def _with_switch_cost(cut: Cut, switch_ms: float) -> float:
    """The cut's estimate with each switch between its NPU stages costing twice `switch_ms`."""
    return cut.cost["est_ms"] + switch_ms * switches(cut.npu_stages)


def _select(c: Cut) -> str:
    return how_to_select(c)


def _fix_hints(ix: GraphIndex, report, cut: Cut, model_path: Path, target: str, shapes) -> list[str]:
    """Host nodes of this cut that a `fix` rule would move to the NPU: say so, with the command (runnable as
    pasted: the same model, shapes and an output file)."""
    host = {n for s in cut.stages if s.device == "host" for n in s.nodes}
    rules: dict[str, None] = {}
    moved = 0
    for n in report.failing:
        if n.name in host:
            fixes = [f for r in n.reasons for f in r.fix_rules]
            moved += bool(fixes)
            rules.update(dict.fromkeys(fixes))
    if not rules:
        return []
    fix = fix_command(model_path, target, list(rules), shapes)
    return [
        f"{moved} host node(s) of this cut have a rewrite that may move them to the NPU: {fix} "
        f"(or split --mode auto: fix + split in one go, verified against the original)"
    ]


def _fix_then_split(model_path: Path, target: str, output_dir, placement=None, **kw) -> SplitResult:
    """--mode auto: the target's exact rewrites on a private copy, then the best cut of the fixed model; the
    chain is verified against the ORIGINAL model, so the rewrites are proven too. The placement of the original
    holds for it when no rewrite applied; a fixed model is cut by its prediction."""
    with private_tempdir("split-auto") as tmp:
        fixed = tmp / model_path.name
        fx = fix_model(
            model_path, target, fixed, input_shapes=kw["input_shapes"], judge=kw["judge"], placement=placement
        )
        if not fx.applied:  # nothing applied: split the original itself
            fixed = model_path
        res = split(
            fixed,
            target,
            output_dir,
            mode="best",
            verify_against=model_path,
            placement=None if fx.applied else placement,
            **kw,
        )
    applied = [o.name for o in fx.applied]
    res.why = f"--mode auto: fix applied {', '.join(applied) if applied else 'no rule'} on a copy; " + res.why.replace(
        "chosen: ", "then ", 1
    )
    return res


def _same_model(placement, graph, profile: Profile):
    """The placement handed in, once it is known to be of this model on this target (same top-level nodes)."""
    if placement.target.get("name") != profile.name or [n.name for n in placement.nodes if n.parent is None] != [
        n.name for n in graph.top_nodes
    ]:
        raise NpufitError(f"the placement given to split is not of this model on {profile.name}")
    return placement


def _target_info(profile: Profile, report) -> dict:
    """The plan's target, and whose placement the cut was made from (the compiler's, or npufit's prediction)."""
    info = {"name": profile.name, "title": profile.title}
    headline = (report.extra.get("placement") or {}).get("headline")
    if headline:
        info["placement"] = headline
    return info


def _names(v) -> list[str]:
    if not v:
        return []
    if isinstance(v, str):
        v = [v]
    return [n.strip() for item in v for n in item.split(",") if n.strip()]


def _place_constant_outputs(ix: GraphIndex, cut: Cut) -> None:
    """A model output computed from constants only is emitted by the last stage (it holds the folded nodes)."""
    for o in ix.outputs:
        if o not in ix.producer and o not in ix.inputs and o not in cut.stages[-1].outputs:
            cut.stages[-1].outputs.append(o)


def _output_source(cut: Cut, name: str) -> str:
    for st in cut.stages:
        if name in st.outputs:
            return st.name
    return "input"


def _options(cut: Cut, mode: str, max_npu_stages: int | None) -> dict:
    opts = {"requested_mode": "auto", **cut.options} if mode == "auto" else dict(cut.options)
    if max_npu_stages is not None:
        opts["max_npu_stages"] = max_npu_stages
    return opts


def _source_info(path: Path, graph) -> dict:
    def t(name):
        info = graph.tensor(name)
        return {"name": name, "shape": None if info.shape is None else list(info.shape), "dtype": info.dtype}

    return {
        "path": str(path.resolve()),
        "file": path.name,
        "sha256": sha256_file(path),
        "inputs": [t(n) for n in graph.input_names],
        "outputs": [t(n) for n in graph.output_names],
    }


def _tensor_entry(ix: GraphIndex, name: str, **extra) -> dict:
    info = ix.graph.tensor(name)
    return {
        "name": name,
        **extra,
        "shape": None if info.shape is None else list(info.shape),
        "dtype": info.dtype,
        "bytes": info.nbytes,
    }


def _plan_stage(ix: GraphIndex, cut: Cut, st, facts: dict, source_file: str, profile: Profile) -> PlanStage:
    users: dict[str, list[str]] = {}
    for other in cut.stages:
        for t in other.inputs:
            if cut.sources.get(t) == st.name:
                users.setdefault(t, []).append(other.name)
    outs = []
    for o in st.outputs:
        to = users.get(o, []) + (["output"] if o in ix.outputs else [])
        outs.append(_tensor_entry(ix, o, to=to))
    ps = PlanStage(
        st.name,
        f"{st.name}.onnx",
        st.device,
        [_tensor_entry(ix, t, **{"from": cut.sources[t]}) for t in st.inputs],
        outs,
        len(st.nodes),
        st.macs,
        files=facts,
    )
    if st.device == "npu":
        ps.start_node_names, ps.end_node_names = stage_node_names(ix, st)
        tc = toolchains.find(profile.compiler)
        if tc is not None and tc.stage_parser is not None:
            ps.vendor = {tc.name: _stage_commands(tc.stage_parser, ix, st, ps, source_file, profile.name)}
    return ps


def _stage_commands(parser: StageParser, ix: GraphIndex, st, ps: PlanStage, source_file: str, target: str) -> dict:
    """Both ways to hand this NPU stage to a compiler that takes a stage by node names (the Hailo parser: a HEF has no
    CPU fallback, so the parser is told where the NPU part starts and ends): the stage file, or the original model
    with node names."""
    q = shlex.quote
    cmd = [*parser.command, q(source_file)]
    if any(t not in ix.inputs for t in st.inputs):  # starting at the graph inputs needs no start names
        cmd += [parser.start_flag, *map(q, ps.start_node_names)]
    cmd += [parser.end_flag, *map(q, ps.end_node_names), parser.arch_flag, target]
    stage = [*parser.command, q(ps.file), parser.arch_flag, target]
    return {"parse_stage": " ".join(stage), "parse_original": " ".join(cmd)}


def _warnings(ix: GraphIndex, cut: Cut, target: str) -> list[str]:
    out = []
    npu = [s for s in cut.stages if s.device == "npu"]
    if not npu:
        first = next((n for n in ix.order if ix.device_of[n] == "host"), None)
        why = (
            f": the first running node '{first}' ({ix.graph.node(first).op_type}) does not run on {target}"
            if first
            else ""
        )
        out.append(f"no NPU stage in this cut{why}; everything runs on the host (try --mode segments)")
    for s in npu:
        bad = [n for n in s.nodes if ix.verdict[n] != Verdict.NPU]
        if bad:
            eg = ", ".join(f"{n} ({ix.graph.node(n).op_type})" for n in bad[:3])
            out.append(f"{s.name} holds {len(bad)} node(s) the {target} check does not place on the NPU: {eg}")
        if s.macs == 0 and ix.total_macs:
            out.append(f"{s.name} holds no multiply-accumulate work; running it on the NPU saves nothing")
    return out
