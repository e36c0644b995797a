"""Run a target profile over a graph: facts first (folding, shapes), verdicts second."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..errors import NpufitError
from ..graph import Graph, NodeView, load, quant
from ..graph.facts import NonLocal
from ..graph.macs import MAC_OPS, node_macs
from ..targets import get_profile
from ..targets.base import (
    Composite,
    Executes,
    Fallback,
    OpSupport,
    Profile,
    Rule,
    Verdict,
    conditional,
    hints_for,
    worst,
)
from ..targets.explain import evidence_for
from ..util.gcpause import gc_paused
from ..vocab import JUDGE, JUDGES
from .ledger import attach_ledger
from .local_memo import MARK, ONCE, VIEW_NAME, LocalMemo, value_key
from .partitions import HOST, NPU, RunningDag, boundaries, npu_prefix, partition
from .result import CheckReport, NodeResult, Reason

CONTROL_FLOW = {"If", "Loop", "Scan"}


def predict(
    model: str | os.PathLike | Graph,
    target: str | Profile = "hailo8",
    input_shapes=None,
    judge: str = JUDGE,
    assume_int8: bool = False,
) -> CheckReport:
    """Judge every node of `model` against `target`. The model file (and a Graph passed in) is only read.

    judge: how a float model is judged. "auto" (default): as its int8 conversion on a target that runs int8
    only (the profile's `executes`), as it is elsewhere; "int8": as its int8 conversion on any target;
    "float": the float graph as it is. `assume_int8=True` is the older spelling of judge="int8".
    This is the prediction alone: the verb `npufit.check` (npufit.compilers.measure.check) adds, when asked, the
    real compiler's placement beside it (`check --measure`); the prediction never needs a compiler.
    """
    graph, profile = resolve(model, target, input_shapes)
    return check_graph(graph, profile, "int8" if assume_int8 else judge)


def resolve(model: str | os.PathLike | Graph, target: str | Profile, input_shapes=None) -> tuple[Graph, Profile]:
    """The Graph and Profile that `predict`'s arguments name (a path is loaded, a name looked up)."""
    graph = model if isinstance(model, Graph) else load(model, input_shapes)
    return graph, target if isinstance(target, Profile) else get_profile(target)


def require_judge(judge: str) -> None:
    """Refuse a judge mode that is not one of vocab.JUDGES (one line, exit 2)."""
    if judge not in JUDGES:
        raise NpufitError(f"unknown --judge '{judge}' (choose from {', '.join(JUDGES)})")


def judged_as_int8(graph: Graph, profile: Profile, judge: str = JUDGE, float_model: bool | None = None) -> bool:
    """Whether float activations of `graph` are judged as the int8 tensors a converter would produce."""
    require_judge(judge)
    if float_model is None:
        float_model = is_float_model(graph)
    if judge != "auto":
        return judge == "int8" and float_model
    return profile.executes is Executes.INT8 and float_model


def is_float_model(graph: Graph) -> bool:
    """A model with float activations and no quantization at all (no Q/DQ, no QLinear ops, no quantized inputs).
    Its inputs need not be float: a text encoder takes int64 token ids into a float body, which a converter turns
    into int8 like any other (the Ethos-U and RV1106 corpus records ran BERT-family bodies on the NPU)."""
    quantized = any(
        op in ("QuantizeLinear", "DequantizeLinear", "QUANTIZE", "DEQUANTIZE") or op.startswith("QLinear")
        for op in graph.op_types
    ) or any(t.quant is not None for t in graph.inputs)
    if quantized:
        return False
    return any(t.dtype in ("float32", "float16") for t in graph.inputs) or any(
        n.output_dtype(0) in quant.FLOAT_DTYPES for n in graph.nodes if n.outputs
    )


def refuses_format(graph: Graph, profile: Profile) -> str | None:
    """Why `profile` cannot judge a model of this file format (None when it can). ONNX models are judged on every
    target (through the converter's op mapping where the NPU compiles TFLite); a TFLite model only on targets whose
    profile models that path."""
    if graph.format not in profile.judged_formats:
        return (
            f"{profile.name} judges ONNX models only: npufit does not model this toolchain's TFLite path; check the "
            f"ONNX model the TFLite file was converted from"
        )
    return None


def check_graph(graph: Graph, profile: Profile, judge: str = JUDGE, local_memo: bool | None = None) -> CheckReport:
    """`check` of a loaded graph. local_memo: judge nodes of one local signature once (check.local_memo); False
    judges every node on its own (the same report); None (default): the memo for graphs of MEMO_MIN_NODES nodes or
    more, or as the environment variable NPUFIT_LOCAL_MEMO says (1 / 0: always / never; benchmarks/check_outputs.py
    compares whole reports both ways)."""
    if local_memo is None:
        forced = os.environ.get("NPUFIT_LOCAL_MEMO", "")
        local_memo = forced == "1" if forced in ("0", "1") else len(graph.nodes) >= MEMO_MIN_NODES
    why_not = refuses_format(graph, profile)
    if why_not:
        raise NpufitError(why_not)
    float_model = is_float_model(graph)  # one walk over the nodes, read twice below
    as_int8 = judged_as_int8(graph, profile, judge, float_model)
    with (
        gc_paused(),
        quant.check_scope(graph, as_int8),
    ):  # read by the dtype facts of every rule; the graph is only read
        report = _check_graph(graph, profile, local_memo)
    report.target["judged_as"] = "int8" if as_int8 else "as is"
    report.warnings[:0] = _judge_warnings(graph, profile, judge, as_int8, float_model)
    return report


def _judge_warnings(graph: Graph, profile: Profile, judge: str, as_int8: bool, float_model: bool) -> list[str]:
    """One sentence that says how a float model was judged, and how to judge it the other way."""
    if not float_model:
        return []
    if as_int8 and judge == "auto":
        return [
            f"judged as int8: {profile.name} runs int8 only, so this float model is judged as the int8 model "
            "a converter "
            "produces (npufit quantize or npufit compile make it; judge 'float' judges the float graph)"
        ]
    if as_int8:
        return [
            "judge 'int8': float activations were judged as the int8 tensors a converter would produce on "
            f"{profile.name}"
        ]
    if profile.executes is Executes.INT8:
        return [
            f"judge 'float': the float graph is judged as it is; {profile.name} runs int8 only, so float ops "
            "are off the "
            "NPU (the default judge, 'auto', judges its int8 conversion)"
        ]
    return []


def _check_graph(graph: Graph, profile: Profile, local_memo: bool) -> CheckReport:
    folded = graph.folded
    if profile.runs_constant_ops and graph.format == "tflite" and folded:
        kept = profile.runs_constant_ops
        folded = {n.name for n in graph.nodes if n.name in folded and n.op_type not in kept}
    composite_of = _match_composites(graph, profile)
    judge = _Judge(graph, profile, folded, composite_of, local_memo)
    nodes = graph.nodes
    judged = [judge(node) for node in nodes]
    results = dict(zip([n.name for n in nodes], judged))  # by name; a repeated name keeps its last node's result
    _propagate_control_flow(graph, results)
    _body_macs(results)
    parts, bounds, prefix_summary = _structure(graph, results, judged)
    warnings = list(graph.warnings)
    if graph.format == "onnx" and profile.input_formats and "onnx" not in profile.input_formats:
        warnings.append(converted_warning(profile))
    # one node set for every figure: the model's own nodes are counted, partitioned and listed; body nodes are listed
    # apart (their control-flow node carries them). The loader makes names unique, so `judged` is that list.
    listed = judged if graph.names_unique else [results[n.name] for n in nodes]
    report = CheckReport(
        model=_model_info(graph),
        target={
            "name": profile.name,
            "title": profile.title,
            "fallback": profile.fallback.value,
            "notes": profile.notes_for(graph.format),
        },
        nodes=[r for r in listed if r.parent is None],
        subgraph_nodes=[r for r in listed if r.parent is not None],
        partitions=parts,
        boundaries=bounds,
        prefix=prefix_summary,
        warnings=warnings,
        evidence=evidence_for(profile, {r.rule for n in judged if n.reasons for r in n.reasons}),
    )

    attach_ledger(report, graph, profile)
    return report


def converted_warning(profile: Profile) -> str:
    """What a prediction of an ONNX model for a target that compiles another format rests on (a measured placement
    replaces it: npufit.placement)."""
    return (
        f"{profile.name} compiles {'/'.join(profile.input_formats)} models: verdicts for this ONNX model are predicted "
        f"through the ONNX->{profile.input_formats[0]} op mapping a standard converter produces"
    )


def _structure(graph: Graph, results: dict[str, NodeResult], judged: list[NodeResult] | None = None):
    """Partitions, boundaries and the NPU prefix from the verdicts in `results` (and each node's partition id).
    judged: the results in graph node order, when the caller has them (the check does)."""
    # device and MACs of each running top-level node, read by partitioning, the prefix and the totals
    device_of: dict[str, str] = {}
    macs: dict[str, int] = {}
    total = 0
    runnable: list[NodeView] = []
    dev: list[str | None] = [None] * len(graph.nodes)
    for n in graph.top_nodes:
        name = n.name
        r = results[name]
        v = r.verdict
        if v is not _FOLDED:
            device_of[name] = dev[n.index] = NPU if v is _NPU else HOST
            runnable.append(n)
            m = macs[name] = r.macs
            total += m
    dag = RunningDag(graph, device_of, (runnable, dev))  # shared by partitioning, boundaries and the prefix
    parts = partition(graph, device_of, macs, dag)
    if (
        judged is not None and graph.names_unique and dag.group is not None
    ):  # partition ids by node position, as partition() left them
        for r, g in zip(judged, dag.group):
            if g >= 0:
                r.partition = g
    else:
        for p in parts:
            for name in p.nodes:
                results[name].partition = p.id
    bounds = boundaries(graph, parts, dag)
    prefix = npu_prefix(graph, device_of, dag)
    prefix_macs = sum(macs.get(n, 0) for n in prefix["nodes"])
    prefix_summary = {
        "node_count": len(prefix["nodes"]),
        "macs_pct": round(100.0 * prefix_macs / total, 2) if total else None,
        "start_nodes": prefix["start_nodes"],
        "end_nodes": prefix["end_nodes"],
        "end_tensors": prefix["end_tensors"],
        "covers_whole_model": len(prefix["nodes"]) == len(device_of),
    }
    return parts, bounds, prefix_summary


def restructure(report: CheckReport, graph: Graph, profile: Profile) -> CheckReport:
    """Recompute what follows from the verdicts (partitions, boundaries, the NPU prefix, the Q/DQ ledger) after
    they were changed, e.g. to a compiler's measured placement (npufit.placement): every count, partition,
    boundary and percentage of the report then reads the same verdicts."""
    listed = report.nodes + report.subgraph_nodes
    results = {n.name: n for n in listed}
    for n in listed:
        n.partition = None
    judged = report.nodes if not report.subgraph_nodes and len(report.nodes) == len(graph.nodes) else None
    report.partitions, report.boundaries, report.prefix = _structure(graph, results, judged)
    for key in ("qdq_ledger", "_terminal_sections", "_markdown_sections"):
        report.extra.pop(key, None)  # the check attached only the ledger's sections: rebuilt below

    with quant.check_scope(graph, report.target.get("judged_as") == "int8"):  # the form the check judged
        attach_ledger(report, graph, profile)
    return report


def _model_info(graph: Graph) -> dict:
    def tinfo(t):
        return {"name": t.name, "shape": None if t.shape is None else list(t.shape), "dtype": t.dtype}

    return {
        "path": str(graph.path),
        "file": Path(graph.path).name,
        "format": graph.format,
        "nodes": len(graph.nodes),
        "opsets": graph.opsets,
        "inputs": [tinfo(t) for t in graph.inputs],
        "outputs": [tinfo(t) for t in graph.outputs],
        # the shape policy (util.shapes): shapes pinned (given or a dynamic batch set to 1), its notes, and the
        # inputs whose unknown dims leave no coverage or MAC figure to report
        "input_shapes": {k: list(v) for k, v in graph.input_shapes.items()},
        "shape_notes": list(graph.shape_notes),
        "shapes_needed": [n.to_dict() for n in graph.shapes_needed],
    }


def _body_macs(results: dict[str, NodeResult]) -> None:
    """A control-flow node (If/Loop/Scan) carries the MACs of its bodies: both branches of an If (an upper bound),
    one iteration of a Loop or Scan (the trip count is a runtime value). Nested bodies roll up innermost first."""
    children: dict[str, list[NodeResult]] = {}
    for r in results.values():
        if r.parent is not None:
            children.setdefault(r.parent, []).append(r)
    if not children:  # no If/Loop/Scan: nothing to roll up
        return
    for r in reversed(list(results.values())):  # bodies follow their parent in graph order: inner ones are done first
        if r.name in children and r.verdict != Verdict.FOLDED:
            r.macs += sum(c.macs for c in children[r.name] if c.verdict != Verdict.FOLDED)


def _match_composites(graph: Graph, profile: Profile) -> dict[str, tuple[Composite, str]]:
    owner: dict[str, tuple[Composite, str]] = {}
    for comp in profile.composites:
        for m in comp.match(graph):
            if any(n.name in owner for n in m.nodes):
                continue  # first composite to claim a node wins
            for n in m.nodes:
                owner[n.name] = (comp, m.detail)
    return owner


# Judging through the local memo costs ~4 us a node (its signature, a lookup, a copy of the result: 100k-node chain,
# 2-core machine); an op table entry with fewer rules than this runs its rules faster (an op_key profile always
# memoizes: its op key is itself a derivation per node)
MEMO_MIN_RULES = 2
# Below this many nodes a check takes milliseconds and few signatures repeat: the memo's signatures cost more than
# they save (measured on the calibration corpus's DETR / UPerNet exports, 250-1,000 nodes: 3-8 ms plain, 5-11 ms memo)
MEMO_MIN_NODES = 5000
_NPU, _FOLDED = Verdict.NPU, Verdict.FOLDED  # enum member lookups cost a descriptor call each, per node


class _Judge:
    """Judges one node at a time for one check. What depends on the op type only (its OpSupport, the rules that
    apply, the op reason's fields) is looked up once per op type. The rules run once per local signature on the
    node's local view (check.local_memo); a node whose rules read beyond it is judged on the graph itself."""

    def __init__(
        self,
        graph: Graph,
        profile: Profile,
        folded: set[str],
        composite_of: dict[str, tuple[Composite, str]],
        memo: bool = True,
    ):
        self.graph, self.profile, self.folded, self.composite_of = graph, profile, folded, composite_of
        self.limits = profile.limits
        self.gates: dict[Callable, bool] = {}  # Rule.gate -> its answer for this graph
        self.graph_rules = self._checks(profile.graph_rules)
        self.by_op: dict = {}  # (domain, op_type) -> (status, op reason fields or None, (check, rule) pairs)
        # for profiles with an op_key mapping: (id(OpSupport), domain, op_type) -> that tuple (the op reason names
        # the op type)
        self.by_support: dict[tuple, tuple] = {}
        self.memo = LocalMemo(graph) if memo else None

    def _checks(self, rules: tuple[Rule, ...]) -> tuple:
        """(check, rule) pairs of the rules that may fail in this graph: a rule whose gate says no is left out."""
        out = []
        for r in rules:
            if r.gate is not None:
                ok = self.gates.get(r.gate)
                if ok is None:
                    ok = self.gates[r.gate] = bool(r.gate(self.graph, self.limits))
                if not ok:
                    continue
            out.append((r.check, r))
        return tuple(out)

    def _entry(self, node: NodeView, support: OpSupport) -> tuple:
        profile = self.profile
        reason = None if support.status is _NPU else _op_reason_fields(node, profile, support)
        return (support.status, reason, self.graph_rules + self._checks(support.rules), support)

    def __call__(self, node: NodeView) -> NodeResult:
        memo = self.memo
        name, op = node.name, node.op_type
        if memo is None or name in self.folded or name in self.composite_of or op in memo.plain_ops:
            return self.judge(node)
        if self.profile.op_key is None:  # an op with under two rules is judged faster as it is (measured: hailo8)
            entry = self.by_op.get((node.domain, op))
            if entry is None:  # the op's first node: its entry tells how many rules it has
                return self.judge(node)
            if len(entry[2]) < MEMO_MIN_RULES:
                memo.plain_ops.add(op)
                return self.judge(node)
        key = memo.signature(node)
        if key is None:
            return self.judge(node)
        entry = memo.kept.get(key)
        if entry is None:  # a signature seen once is judged as it is: a view pays off from the second node on
            memo.kept[key] = ONCE
            return self.judge(node)
        if entry is not ONCE:
            reads, table = entry
            vkey = _value_key(memo, node, reads) if reads else ()
            if vkey is None:
                return self.judge(node)
            kept = table.get(vkey)
            if kept is not None:
                memo.hits += 1
                return _replay(node, kept)
        # the second node of this signature (or the first of these constant values): judge its local view
        memo.misses += 1
        seen: list[int] = []
        try:
            res = self.judge(memo.view(node, seen), VIEW_NAME)
        except NonLocal:
            return self._give_up(node)
        kept = _keepable(res)
        reads = tuple(seen)
        vkey = _value_key(memo, node, reads) if reads else ()
        if kept is None or vkey is None or (entry is not ONCE and entry[0] != reads):
            return self._give_up(node)
        if entry is ONCE:
            entry = memo.kept[key] = (reads, {})
        entry[1][vkey] = kept
        return _replay(node, kept)

    def _give_up(self, node: NodeView) -> NodeResult:
        """The node's rules read beyond it: its op type is judged node by node for the rest of the check (its
        other signatures would most likely read beyond too, and a failed view costs a second judgement)."""
        self.memo.plain_ops.add(node.op_type)
        return self.judge(node)

    def judge(self, node: NodeView, name: str | None = None) -> NodeResult:
        """The node's result from its rules. name: the node's name (a local view's own name is not readable)."""
        op = node.op_type
        if name is None:
            name = node.name
        # positional: keyword parsing for 12 fields is measurable at 100k nodes
        res = NodeResult(
            name,
            op,
            node.domain,
            _NPU,
            [],
            None,
            node_macs(node) if op in MAC_OPS else 0,
            None,
            node.parent,
            node.inputs,
            node.outputs,
            [],
        )
        if name in self.folded:
            res.verdict = _FOLDED
            res.macs = 0
            return res
        profile = self.profile
        if name in self.composite_of:
            comp, detail = self.composite_of[name]
            res.composite = comp.id
            res.verdict = comp.verdict
            if comp.verdict != _NPU:
                res.reasons.append(
                    _reason(node, comp.id, comp.text, comp.verdict, detail, comp.fix, comp.source, comp.fix_rules)
                )
            checks = self.graph_rules  # rules on dtype/batch/rank still apply inside composites
        else:
            if profile.op_key is None:  # the op table is keyed by op type and domain only
                key = (node.domain, op)
                entry = self.by_op.get(key)
                if entry is None:
                    entry = self.by_op[key] = self._entry(node, profile.support_for(node))
            else:
                support = profile.support_for(node)
                support_key = (id(support), node.domain, op)
                entry = self.by_support.get(support_key)
                if entry is None or entry[3] is not support:
                    entry = self.by_support[support_key] = self._entry(node, support)
            status, reason, checks, _ = entry
            res.verdict = status
            if reason is not None:
                res.reasons.append(_reason(node, *reason) if conditional(reason[4]) else Reason(*reason))
        limits = self.limits
        for check, rule in checks:
            try:
                detail = check(node, limits)
            except Exception as e:  # a rule that cannot see what it needs must not abort the check
                res.notes.append(f"rule {rule.id} could not be evaluated ({type(e).__name__})")
                continue
            if detail is not None:
                _fail(res, profile, rule, detail, node)
        return _finish(res, profile) if res.reasons else res  # _finish only edits a node with reasons


def _value_key(memo: LocalMemo, node: NodeView, reads: tuple[int, ...]) -> tuple | None:
    """The values of the node's constants that its rules read (by slot: inputs, then outputs); None when one is
    not a value we can key by."""
    names = node.inputs + node.outputs
    try:
        return tuple(value_key(memo.tensors[names[k]].value) for k in reads)
    except TypeError:
        return None


def _keepable(res: NodeResult) -> tuple | None:
    """What a node of the same signature reuses: verdict, reasons, MACs, notes. None when the result names a
    placeholder (a detail that quotes a tensor name): such a signature is judged node by node."""
    for r in res.reasons:
        if MARK in r.detail or MARK in r.text or any(MARK in f for f in r.fix):
            return None
    if any(MARK in n for n in res.notes):
        return None
    return (res.verdict, tuple(res.reasons), res.macs, tuple(res.notes))


def _replay(node: NodeView, kept: tuple) -> NodeResult:
    verdict, reasons, macs, notes = kept
    return NodeResult(
        node.name,
        node.op_type,
        node.domain,
        verdict,
        list(reasons) if reasons else [],
        None,
        macs,
        None,
        node.parent,
        node.inputs,
        node.outputs,
        list(notes) if notes else [],
    )


def _op_reason_fields(node: NodeView, profile: Profile, support: OpSupport) -> tuple:
    """Reason(...) arguments for an op the target does not run; they depend on the node's op type and domain only."""
    if support is profile.unknown:
        if node.domain not in ("", "ai.onnx"):
            text = f"{node.domain}::{node.op_type} is a custom-domain op: {profile.name} has no kernel for it"
        else:
            text = (
                support.reason.format(op=node.op_type)
                if support.reason
                else f"{node.op_type} is not in the {profile.name} operator table"
            )
        return (f"{profile.name}.op.unknown", text, support.status, "", support.fix, support.source, support.fix_rules)
    text = support.reason or f"{node.op_type} does not run on {profile.name}"
    return (f"{profile.name}.op.{support.op}", text, support.status, "", support.fix, support.source, support.fix_rules)


def _reason(node: NodeView, rid, text, verdict, detail, fix, source, fix_rules) -> Reason:
    """A Reason with the hints that apply to `node` (a conditional hint is read on the node being judged: on a
    local view its reads count like a rule's)."""
    if conditional(fix):
        fix, fix_rules = hints_for(node, fix, fix_rules)
    return Reason(rid, text, verdict, detail, fix, source, fix_rules)


def _fail(res: NodeResult, profile: Profile, rule: Rule, detail, node: NodeView) -> None:
    res.reasons.append(
        _reason(
            node,
            rule.id,
            rule.sentence(profile.limits),
            rule.on_fail,
            str(detail),
            rule.fix,
            rule.source,
            rule.fix_rules,
        )
    )
    res.verdict = worst(res.verdict, rule.on_fail)


def _finish(res: NodeResult, profile: Profile) -> NodeResult:
    if res.verdict == Verdict.UNSUPPORTED and profile.fallback is Fallback.NONE and res.reasons:
        hint = (
            f"{profile.title.split(' (')[0]} has no CPU fallback inside the compiled binary: cut this node "
            f"away (npufit split --target {profile.name}) or rewrite it"
        )
        first = res.reasons[0]
        if hint not in first.fix:
            res.reasons[0] = Reason(
                first.rule, first.text, first.verdict, first.detail, first.fix + (hint,), first.source, first.fix_rules
            )
    return res


def _propagate_control_flow(graph: Graph, results: dict[str, NodeResult]) -> None:
    """A control-flow node is no better than the worst node in its bodies, and one reason names its body nodes off
    the NPU (they are listed apart from the counted nodes, so the node tables show them through this reason)."""
    bad = (Verdict.CPU, Verdict.UNSUPPORTED)
    off: dict[str, list[NodeResult]] = {}
    for node in reversed(graph.nodes):  # innermost first: a nested If has its verdict before its holder reads it
        if node.parent and node.parent in results:
            parent, child = results[node.parent], results[node.name]
            if child.verdict in bad:
                off.setdefault(node.parent, []).append(child)
                if worst(parent.verdict, child.verdict) != parent.verdict:
                    parent.verdict = child.verdict
    for name, kids in off.items():
        kids.reverse()  # graph order
        shown = ", ".join(f"{c.op_type} '{c.name}' ({c.verdict.value})" for c in kids[:3])
        more = f" and {len(kids) - 3} more" if len(kids) > 3 else ""
        verdict = Verdict.UNSUPPORTED if any(c.verdict is Verdict.UNSUPPORTED for c in kids) else Verdict.CPU
        results[name].reasons.append(
            Reason("body", f"its bodies hold {len(kids)} node(s) off the NPU: {shown}{more}", verdict)
        )
