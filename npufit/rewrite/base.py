"""What a rewrite rule is: a name, exact or approximate, and either onnxscript patterns or a whole-model pass.

Why onnxscript's rewriter on onnx-ir: a pattern is ordinary Python (`op.Conv(x, w)`), the matcher
checks the wiring (single consumers, no dangling outputs), and the replacement is built with the
same `op` builder, so a rule file stays a pattern + a check + a replacement. Passes (opset
conversion, constant folding) are whole-model transforms that have no pattern to match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import onnx_ir as ir

MAX_ROUNDS = (
    32  # a pattern rule is re-applied until it stops matching; this bounds a rule that keeps matching its own output
)


class RuleNotApplicable(Exception):
    """A whole-model pass cannot run on this model; the message says why (shown in the fix report)."""


@dataclass(frozen=True)
class RuleContext:
    """What a rule may know about the model and the target while it builds its patterns."""

    opset: int  # default-domain opset of the model being rewritten
    target: str = ""  # target name, e.g. "hailo8" ("" = target-agnostic)
    options: Mapping[str, Any] = field(default_factory=dict)  # per-target knobs, e.g. {"opset": 11}


PatternBuilder = Callable[[RuleContext], list]  # -> list[onnxscript.rewriter.pattern.RewriteRule]
ModelPass = Callable[[ir.Model, RuleContext], "tuple[ir.Model, int]"]  # -> (new model, times fired)


@dataclass(frozen=True)
class RewriteRule:
    name: str  # fixed public name (target profiles reference it in fix_rules)
    summary: str  # one sentence: what it replaces with what
    exact: bool  # True: same math (rounding may differ); False: an approximation, needs --allow-approx
    ops: tuple[str, ...]  # op types it rewrites (docs; `check` suggestions are matched on these)
    patterns: PatternBuilder | None = None  # main patterns: each application counts as one firing
    cleanup: PatternBuilder | None = None  # tidy-ups after the main patterns (not counted as firings)
    prepare_cleanup: Callable[[ir.Model], None] | None = None  # before each tidy-up round (split a Squeeze's fan-out)
    run: ModelPass | None = None  # whole-model transform (used instead of patterns)
    notes: str = ""  # conditions under which the rule refuses to fire, semantics caveats
    keep_when_neutral: bool = False  # kept by default even when verdicts and node count do not improve (opset_convert)

    def apply(self, model: ir.Model, ctx: RuleContext) -> tuple[ir.Model, int]:
        """Apply to a fixed point; returns the (possibly new) model and how many times the rule fired."""
        if self.run is not None:
            return self.run(model, ctx)
        names = [(v, v.name) for v in model.graph.inputs]
        fired = _to_fixed_point(model, self.patterns(ctx)) if self.patterns else 0
        if fired and self.cleanup is not None:
            _to_fixed_point(model, self.cleanup(ctx), self.prepare_cleanup)
            _merge_duplicates(model)
        if fired:
            remove_unused(model)
            for v, name in names:  # replacing a value by a graph input renames the input: keep the model's interface
                v.name = name
        return model, fired

    def refusals(self, model: ir.Model, ctx: RuleContext) -> list[str]:
        """Why the main patterns matched a node's wiring but refused it (the checks' reasons), deduplicated."""
        if self.patterns is None:
            return []
        from onnxscript.rewriter.pattern import MatchingTracer, MatchStatus, RewriteRuleSet

        tracer = MatchingTracer()
        RewriteRuleSet(self.patterns(ctx)).apply_to_model(model, tracer=tracer)
        out: list[str] = []
        for infos in tracer.best_matches_map.values():
            for info in infos:
                if info.status == MatchStatus.CONDITION_FAILED and info.match_result.reason:
                    text = f"{info.root_node.op_type} '{info.root_node.name}': {info.match_result.reason}"
                    if text not in out:
                        out.append(text)
        return out


def _to_fixed_point(model: ir.Model, rules: list, before_round: Callable[[ir.Model], None] | None = None) -> int:
    from onnxscript.rewriter.pattern import RewriteRuleSet

    if not rules:
        return 0
    rset, total = RewriteRuleSet(rules), 0
    for _ in range(MAX_ROUNDS):
        if before_round is not None:
            before_round(model)
        infer_ir_shapes(model)  # checks read ranks/dims of values that earlier rewrites created
        n = rset.apply_to_model(model)
        total += n
        if not n:
            break
    return total


def infer_ir_shapes(model: ir.Model) -> None:
    """Shape inference of the onnx-ir model a rewrite holds, in place, on graph.onnx_prepare.infer_shapes' terms
    (never raises: a model it cannot handle keeps the shapes it has). Strict, as onnx-ir's pass runs it by default:
    one node it cannot type leaves every shape as it was, which the rules' checks were written against."""
    from onnx_ir.passes.common import ShapeInferencePass

    try:
        ShapeInferencePass()(model)
    except Exception:  # shape inference is a convenience for the checks, never a reason to fail
        pass


def _merge_duplicates(model: ir.Model) -> None:
    from onnx_ir.passes.common import CommonSubexpressionEliminationPass

    try:
        CommonSubexpressionEliminationPass()(model)
    except Exception:  # CSE is cosmetic here
        pass


def remove_unused(model: ir.Model) -> None:
    """Drop nodes and initializers that no longer feed an output."""
    from onnx_ir.passes.common import RemoveUnusedNodesPass

    RemoveUnusedNodesPass()(model)
    used = {v.name for n in model.graph.all_nodes() for v in n.inputs if v is not None}
    used |= {v.name for v in model.graph.outputs} | {v.name for v in model.graph.inputs}
    for name in [k for k in model.graph.initializers if k not in used]:
        del model.graph.initializers[name]
