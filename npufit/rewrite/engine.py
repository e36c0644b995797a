"""fix(): apply a target's rules to a fixed point; keep each rule only if ONNX Runtime says the model still
computes the same thing (and, for default rules, if the target's verdicts do not get worse)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir

from ..check import check_graph
from ..errors import NpufitError
from ..graph.onnx_loader import graph_from
from ..graph.onnx_prepare import from_proto, infer, pin_inputs, read_onnx, require_shapes, strip_weights
from ..targets import get_profile
from ..util.commands import npufit_command, output_folder
from ..util.io import atomic_save_onnx, private_tempdir
from ..util.limits import graph_within_budget
from ..util.progress import track
from ..verify.compare import (
    EXACT_ATOL,
    EXACT_RTOL,
    compare_outputs,
    exact_mismatch,
    exact_tolerance,
    make_session,
    random_inputs,
    run_onnx,
)
from ..vocab import JUDGE
from .base import RuleContext, RuleNotApplicable
from .registry import RULE_NAMES, get_rule, rule_options, rules_for_target
from .result import FixResult, RuleOutcome, TargetState

MAX_ROUNDS = 4  # rounds over the whole rule list; a round in which nothing is kept ends the loop
RULE_TAG = "pkg.onnxscript.rewriter.rule_name"


def fix(
    model: str | os.PathLike,
    target: str,
    output: str | os.PathLike | None = None,
    rules: list[str] | None = None,
    skip_rules: list[str] | None = None,
    allow_approx: bool = False,
    dry_run: bool = False,
    input_shapes=None,
    samples: int = 3,
    seed: int = 0,
    rtol: float = EXACT_RTOL,
    atol: float = EXACT_ATOL,
    approx_rtol: float = 1e-2,
    judge: str = JUDGE,
    placement=None,
) -> FixResult:
    """Rewrite `model` so that more of it runs on `target`'s NPU, verify every rewrite with ONNX Runtime, and write
    the result to `output` only if every kept rule verified. The input file is never modified.

    The library side of `npufit fix MODEL --target T -o OUT`.

    Parameters
    ----------
    model : str or os.PathLike
        An .onnx file.
    target : str
        The target whose verdicts the rules are kept for (a rule that does not help there is rolled back).
    output : str or os.PathLike, optional
        Where to write the fixed model; None: nothing is written (the result still says what would change).
    rules, skip_rules : list of str, optional
        Rewrite rules to run (default: the target's own set, as a report's "suggested" line names them) or to leave
        out; `docs/rewrite-rules.md` lists them.
    allow_approx : bool
        Also run approximate rules (e.g. gelu_tanh), checked against `approx_rtol`.
    dry_run : bool
        Judge and verify, write nothing.
    input_shapes : dict or str, optional
        Shapes for the inputs, {"images": (1, 3, 640, 640)} or "images=1,3,640,640" (a dynamic batch alone is
        pinned to 1; other unknown dims must be given).
    samples, seed : int
        Seeded random input samples the verification runs.
    rtol, atol : float
        Tolerance of exact rules: |diff| <= atol + rtol * max|reference| per output (integer outputs must be equal).
    approx_rtol : float
        Tolerance of approximate rules, relative to the output's largest value.
    judge : str
        How a float model is judged ("auto", "int8", "float"), as in `npufit.check`.
    placement : CheckReport, optional
        The placement of `model` on `target` (npufit.placement: the compiler's where one runs; `npufit.fix` passes
        it in): the "before" figures. Each rule is weighed by npufit's prediction before and after it (a compile per
        candidate would be too slow); the "after" of a changed model is its prediction until the caller places the
        written file (`settle_after`).

    Returns
    -------
    FixResult
        What each rule did (fired, rolled back, refused and why), coverage before and after, the verification, the
        nodes still off the NPU; `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> r = npufit.fix("classifier.onnx", "hailo8", output="classifier.fixed.onnx")
    >>> r  # doctest: +SKIP
    <FixResult hailo8 classifier.onnx: applied conv1d_to_conv2d,mean_to_global_pool; 60.0% -> 100.0% nodes; ...>
    """
    src = Path(model)
    # with external weights (rewriting and verifying need them); the shapes the verdicts are judged on are the
    # shapes written (as onnxsim's --overwrite-input-shape does): a fixed model that is judged static but written
    # dynamic would not compile as judged
    prep = read_onnx(src, pin_inputs(input_shapes), external_data="loaded")
    require_shapes(prep, "fix runs the model to verify each rewrite")
    given, input_shapes, proto = input_shapes, prep.shapes.pinned, prep.model  # given, or a dynamic batch of 1
    graph_within_budget("fix", len(proto.graph.node))
    if output is not None and not dry_run and Path(output).resolve() == src.resolve():
        raise NpufitError("--output must differ from the input model (fix never overwrites its input)")
    profile = get_profile(target)
    names = _select(profile, rules, skip_rules)
    session = _session(proto, "the original model")

    feeds = random_inputs(session, seed=seed, samples=samples, shapes=input_shapes or None)
    refs = [run_onnx(session, f) for f in feeds]
    int_outputs = {k for k, v in refs[0].items() if not np.issubdtype(v.dtype, np.floating)}
    state0, report0 = _judge(proto, profile, input_shapes, judge)  # the prediction each rule is weighed against
    before = state_of(placement) if placement is not None else state0
    state, current = state0, proto
    outcomes = {n: RuleOutcome(n, get_rule(n).exact, "not fired", reason=_idle_reason(get_rule(n))) for n in names}
    disabled: set[str] = set()
    for n in names:
        if not get_rule(n).exact and not allow_approx:
            outcomes[n].status, outcomes[n].reason = "skipped", "approximate: needs --allow-approx"
            disabled.add(n)
    explicit = set(rules or ())
    worst_abs = worst_rel = worst_scaled = 0.0
    for _ in range(MAX_ROUNDS):
        kept_any = False
        for name in track([n for n in names if n not in disabled], f"fix: rules (target {profile.name})"):
            rule, out = get_rule(name), outcomes[name]
            ctx = RuleContext(opset=_opset(current), target=profile.name, options=rule_options(profile, name))
            try:
                cand, fired = rule.apply(ir.serde.deserialize_model(current), ctx)
            except RuleNotApplicable as e:
                out.status, out.reason = "not applicable", str(e)
                disabled.add(name)
                continue
            if not fired:
                if out.status == "not fired":
                    why = rule.refusals(ir.serde.deserialize_model(current), ctx)
                    out.reason = (
                        "; ".join(why[:3]) + (f"; +{len(why) - 3} more" if len(why) > 3 else "") if why else out.reason
                    )
                continue
            _name_new_nodes(cand, name)
            cand_proto = ir.serde.serialize_model(cand)
            verdict = _verify(cand_proto, feeds, refs, rtol if rule.exact else approx_rtol, atol)
            if isinstance(verdict, str):
                out.status, out.reason, out.fired = "rolled back", verdict, fired
                disabled.add(name)
                continue
            new_state, _ = _judge(cand_proto, profile, input_shapes, judge)
            if name not in explicit and not _pays(new_state, state, rule.keep_when_neutral):
                out.status, out.fired = "rolled back", fired
                out.reason = (
                    f"does not pay on {profile.name}: nodes not on npu {state.not_npu} -> {new_state.not_npu}, "
                    f"partitions {state.partitions} -> {new_state.partitions}, nodes {state.nodes} -> {new_state.nodes}"
                )
                out.before, out.after = state, new_state
                disabled.add(name)
                continue
            _record(out, current, cand_proto, fired, state, new_state, verdict)
            worst_abs, worst_rel = max(worst_abs, verdict[0]), max(worst_rel, verdict[1])
            worst_scaled = max(worst_scaled, verdict[2])
            current, state, kept_any = cand_proto, new_state, True
        if not kept_any:
            break
    final_state, final_report = (
        _judge(current, profile, input_shapes, judge)
        if current is not proto
        else (before, placement if placement is not None else report0)
    )
    written = output is not None and not dry_run
    remaining, advice = _remaining(
        final_report, profile.name, src, names, outcomes, Path(output) if written else None, given, judge
    )
    n_advice = len(advice)
    if input_shapes:
        pinned = ", ".join(f"{k}={','.join(map(str, v))}" for k, v in input_shapes.items())
        advice.insert(0, f"input shapes pinned in the fixed model: {pinned}")
    advice[:0] = prep.shapes.notes
    if written:
        atomic_save_onnx(current, output)
    tol = f"exact rules: {exact_tolerance(rtol, atol)}" + (
        f"; approximate rules: rel {approx_rtol:g}" if allow_approx else ""
    )
    verification = {
        "samples": samples,
        "seed": seed,
        "max_abs": worst_abs,
        "max_rel": worst_rel,
        # the largest difference as a share of its output's largest |value|: meaningful where element-wise relative
        # differences are not (outputs near zero divide by almost nothing)
        "max_abs_of_range": worst_scaled,
        "tolerance": tol,
        "integer_outputs": sorted(int_outputs),
    }
    return FixResult(
        str(src),
        profile.name,
        None if output is None else str(output),
        written,
        dry_run,
        [outcomes[n] for n in names],
        before,
        final_state,
        verification,
        remaining,
        advice,
        (_opset(proto), _opset(current)),
        {"before": _headline(placement), "after": _headline(placement) if current is proto else _PREDICTED},
        shape_advice=len(advice) - n_advice,
    )


_PREDICTED = "placement predicted by npufit's rules"


def _headline(report) -> str:
    return ((report.extra.get("placement") or {}).get("headline") if report is not None else None) or _PREDICTED


def state_of(report) -> TargetState:
    """fix's figures of a CheckReport: nodes off the NPU, partitions, coverage, nodes."""
    return TargetState(
        sum(n.verdict.value in ("cpu", "unsupported") for n in report.running),
        len(report.partitions),
        report.coverage_nodes,
        len(report.nodes),
    )


def settle_after(result: FixResult, report, shapes=None, judge: str = JUDGE) -> FixResult:
    """The "after" figures and the nodes still off the NPU from the placement of the written model (`report`);
    shapes and judge: those the fix ran with (the split command it advises carries them)."""
    names = [r.name for r in result.rules]
    outcomes = {r.name: r for r in result.rules}
    result.after = state_of(report)
    written = Path(result.output) if result.written and result.output else None
    result.remaining, advice = _remaining(
        report, result.target, Path(result.model), names, outcomes, written, shapes, judge
    )
    result.advice = result.advice[: result.shape_advice] + advice
    result.placement["after"] = _headline(report)
    return result


def _opset(proto: onnx.ModelProto) -> int:
    for o in proto.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 0


def _select(profile, rules, skip_rules) -> list[str]:
    chosen = list(rules) if rules else rules_for_target(profile)
    for n in list(chosen) + list(skip_rules or ()):
        get_rule(n)  # unknown names -> one clear error
    skip = set(skip_rules or ())
    return [n for n in RULE_NAMES if n in chosen and n not in skip]


def _idle_reason(rule) -> str:
    return "no match in this model" if rule.ops else "nothing to do for this model"


def _session(proto: onnx.ModelProto, what: str):
    try:
        if proto.ByteSize() < 1_800_000_000:
            return make_session(proto.SerializeToString())
        with private_tempdir("rewrite") as d:  # >2 GB protobufs must go through a file with external data
            p = Path(d) / "m.onnx"
            onnx.save_model(proto, str(p), save_as_external_data=True, location="m.onnx.data")
            return make_session(p)
    except NpufitError as e:
        raise NpufitError(f"cannot verify {what}: {e.message}") from None


def _verify(cand: onnx.ModelProto, feeds, refs, rtol, atol):
    """(max_abs, max_rel, max_abs / the output's largest |value|) when every output matches on every sample, else
    the reason (str)."""
    try:
        sess = _session(cand, "the rewritten model")
        got = [run_onnx(sess, f) for f in feeds]
    except Exception as e:
        return f"ONNX Runtime cannot run the rewritten model ({str(e).splitlines()[0][:160]})"
    total = None
    for ref, g in zip(refs, got):
        c = compare_outputs(ref, g)
        total = c if total is None else total.merge(c)
    if total.missing:
        return f"outputs missing after the rewrite: {', '.join(total.missing)}"
    mismatch = exact_mismatch(total, rtol, atol)
    if mismatch:
        return mismatch
    scaled = max(
        (d["max_abs"] / d["ref_max_abs"] for d in total.per_output.values() if d["ref_max_abs"] > 0), default=0.0
    )
    return total.max_abs, total.max_rel, scaled


def _judge(proto: onnx.ModelProto, profile, input_shapes, judge: str = JUDGE):
    # verdicts need shapes, not weights: the copy judged is stripped as check strips a file's weights
    graph = graph_from(from_proto(proto, pin_inputs(input_shapes), strip_weights, infer, name="<fix>"))
    rep = check_graph(graph, profile, judge)
    return state_of(rep), rep


def _pays(new: TargetState, old: TargetState, keep_when_neutral: bool) -> bool:
    """A default rule must move nodes to the NPU or merge partitions; a neutral one must at least not grow the
    graph (folding, Identity removal). It must never put more nodes off the NPU or add partitions."""
    if new.not_npu != old.not_npu:
        return new.not_npu < old.not_npu
    if new.partitions != old.partitions:
        return new.partitions < old.partitions
    return keep_when_neutral or new.nodes <= old.nodes


def _name_new_nodes(model: ir.Model, rule: str) -> None:
    """Nodes a rule created are named '<rule>/<Op>_<i>' so check/split output shows where they came from."""
    taken = {n.name for n in model.graph.all_nodes() if n.name}
    i = 0
    for n in model.graph.all_nodes():
        if n.metadata_props.pop(RULE_TAG, None) is None and n.name:
            continue
        while f"{rule}/{n.op_type}_{i}" in taken:
            i += 1
        n.name = f"{rule}/{n.op_type}_{i}"
        taken.add(n.name)


def _op_counts(proto: onnx.ModelProto) -> Counter:
    return Counter(n.op_type for n in proto.graph.node if n.op_type != "Constant")


def _record(out: RuleOutcome, before: onnx.ModelProto, after: onnx.ModelProto, fired: int, s0, s1, verdict) -> None:
    c0, c1 = _op_counts(before), _op_counts(after)
    if out.status != "applied":  # first kept application (a later round may fire the rule again)
        out.status, out.fired, out.before, out.removed, out.added = "applied", 0, s0, {}, {}
    out.fired += fired
    for k, v in (c0 - c1).items():
        out.removed[k] = out.removed.get(k, 0) + v
    for k, v in (c1 - c0).items():
        out.added[k] = out.added.get(k, 0) + v
    out.after = s1
    out.max_abs = max(out.max_abs or 0.0, verdict[0])
    out.max_rel = max(out.max_rel or 0.0, verdict[1])
    out.reason = ""


def _remaining(
    report,
    target: str,
    src: Path,
    names: list[str],
    outcomes: dict[str, RuleOutcome],
    written: Path | None,
    shapes,
    judge: str,
):
    """Failing nodes after fix, and honest advice: which are left for `npufit split`, with the command that does it
    (runnable as pasted: the fixed model, or the original with split's own fix, its shapes and an output folder)."""
    remaining, unaddressed = [], []
    for n in report.failing:
        if n.parent is not None:
            continue
        reason = n.reasons[0].sentence() if n.reasons else ""
        hints = sorted({f for r in n.reasons for f in r.fix_rules})
        rule = n.reasons[0].rule if n.reasons else ""
        remaining.append(
            {
                "name": n.name,
                "op_type": n.op_type,
                "verdict": n.verdict.value,
                "rule": rule,
                "reason": reason,
                "fix_rules": hints,
            }
        )
        if not any(h in names and outcomes[h].status not in ("skipped",) for h in hints):
            unaddressed.append(n)
    advice = []
    if not remaining:
        advice.append(f"every running node is judged npu on {target}")
        return remaining, advice
    ops = sorted({n.op_type for n in unaddressed} | {r["op_type"] for r in remaining})
    model = written or src
    split = npufit_command(
        "split",
        model,
        "--target",
        target,
        *(() if written else ("--mode", "auto")),  # the original: split's auto mode runs the same fix first
        "--output-dir",
        output_folder(model, "split"),
        *(("--judge", judge) if judge != JUDGE else ()),
        shapes=None if written else shapes,  # the fixed model carries its pinned shapes
    )
    advice.append(
        f"{len(remaining)} node(s) still do not run on the {target} NPU ({', '.join(ops)}): no rewrite rule "
        f"here turns them into NPU operations. Cut them away and run them on the host: {split}"
    )
    skipped = sorted(
        {h for r in remaining for h in r["fix_rules"] if h in outcomes and outcomes[h].status == "skipped"}
    )
    if skipped:
        advice.append(
            f"rule(s) {', '.join(skipped)} address some of them but were skipped (approximate: add --allow-approx)"
        )
    return remaining, advice
