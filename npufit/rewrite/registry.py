"""All rules by name, in application order, and the rule set each target gets by default.

A target's set = the rules chosen here for what it needs (below) + every rule its profile names
in `fix_rules`, so a target engineer who links a failing op to a rule also gets it applied.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import NpufitError
from .base import RewriteRule
from .rules import (conv1d_to_conv2d, fold_batchnorm, fold_constants, gelu_tanh, linear_to_conv1x1, mean_to_global_pool,
                    merge_reshapes, mod_decompose, opset_convert, reduce_keepdims, remove_identity, topk1_to_argmax)

# Order matters only for speed: cleanups first (smaller graphs), opset conversion last (rules are opset-aware).
RULES: dict[str, RewriteRule] = {m.RULE.name: m.RULE for m in (
    remove_identity, fold_constants, fold_batchnorm, conv1d_to_conv2d, merge_reshapes, mean_to_global_pool, reduce_keepdims,
    topk1_to_argmax, linear_to_conv1x1, mod_decompose, gelu_tanh, opset_convert)}
RULE_NAMES: tuple[str, ...] = tuple(RULES)

_COMMON = ("remove_identity", "fold_constants", "fold_batchnorm", "conv1d_to_conv2d", "merge_reshapes", "mean_to_global_pool")

# Why each set (sources: /work/shared/reference/targets.md, seeds 000 and 002):
RULE_SETS: dict[str, tuple[str, ...]] = {
    # Hailo: no CPU fallback inside a HEF. Conv1d times out, mean->reshape->Linear fails to parse, TopK/Mod are
    # unsupported, ReduceMax needs keepdims=1 on the features axis, Expand/ConstantOfShape/Where nodes are refused,
    # standalone Erf is refused, opset 11 is the officially supported one.
    "hailo": _COMMON + ("reduce_keepdims", "topk1_to_argmax", "mod_decompose", "gelu_tanh", "opset_convert"),
    # Ethos-N78 (TVM BYOC): only Conv/pool/FC patterns offload; reductions, TopK and ArgMax all stay on the CPU.
    "ethos-n": _COMMON,
    # Ethos-U (Vela): ARG_MAX runs on the NPU along depth, TopK does not; MEAN/REDUCE_MAX map; GELU via TFLite GELU.
    "ethos-u": _COMMON + ("reduce_keepdims", "topk1_to_argmax", "gelu_tanh"),
    # RK3588: Reduce*/ArgMax/Erf fall back to the CPU; MatMul only via exMatMul limits while 1x1 Conv is plain NPU;
    # GlobalAveragePool maps to the NPU (H,W <= 7) where ReduceMean does not.
    "rk3588": _COMMON + ("topk1_to_argmax", "linear_to_conv1x1", "gelu_tanh"),
}

# Per-target knobs passed to rules in RuleContext.options.
RULE_OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "hailo": {"reduce_keepdims": {"channel_axis": True}, "topk1_to_argmax": {"channel_axis": True}, "opset_convert": {"opset": 11, "accepted": (8, 11)}},
}


def family(target: str) -> str:
    t = target.lower()
    if t.startswith("hailo"):
        return "hailo"
    if t.startswith("ethos-u"):
        return "ethos-u"
    if t.startswith("ethos-n"):
        return "ethos-n"
    return t


def get_rule(name: str) -> RewriteRule:
    try:
        return RULES[name]
    except KeyError:
        raise NpufitError(f"unknown rewrite rule '{name}' (known: {', '.join(RULE_NAMES)})") from None


def profile_fix_rules(profile) -> list[str]:
    """Rule names a target profile links to its failures (ops, rules, composites)."""
    names: list[str] = []
    sources = list(profile.ops.values()) + [profile.unknown] + list(profile.rules()) + list(profile.composites)
    for s in sources:
        for n in getattr(s, "fix_rules", ()) or ():
            if n in RULES and n not in names:
                names.append(n)
    return names


def rules_for_target(profile) -> list[str]:
    """The target's default rule set, in application order."""
    wanted = set(RULE_SETS.get(family(profile.name), _COMMON)) | set(profile_fix_rules(profile))
    return [n for n in RULE_NAMES if n in wanted]


def rule_options(target: str, rule: str) -> Mapping[str, Any]:
    return RULE_OPTIONS.get(family(target), {}).get(rule, {})
