"""All rules by name, in application order, and the rule set each target gets by default.

A target's set = the rules its profile lists in `rewrite_rules` (why: beside them, in npufit/targets/) + every
rule it names in `fix_rules` or in a conditional hint, so a target engineer who links a failing op to a rule also
gets it applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import NpufitError
from ..targets.base import hint_rules
from .base import RewriteRule
from .rules import (
    conv1d_to_conv2d,
    fold_batchnorm,
    fold_constants,
    gelu_tanh,
    linear_to_conv1x1,
    mean_to_global_pool,
    merge_reshapes,
    mod_decompose,
    opset_convert,
    reduce_keepdims,
    remove_identity,
    topk1_to_argmax,
)

# Order matters only for speed: cleanups first (smaller graphs), opset conversion last (rules are opset-aware).
RULES: dict[str, RewriteRule] = {
    m.RULE.name: m.RULE
    for m in (
        remove_identity,
        fold_constants,
        fold_batchnorm,
        conv1d_to_conv2d,
        merge_reshapes,
        mean_to_global_pool,
        reduce_keepdims,
        topk1_to_argmax,
        linear_to_conv1x1,
        mod_decompose,
        gelu_tanh,
        opset_convert,
    )
}
RULE_NAMES: tuple[str, ...] = tuple(RULES)


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
        for n in (getattr(s, "fix_rules", ()) or ()) + hint_rules(getattr(s, "fix", ()) or ()):
            if n in RULES and n not in names:
                names.append(n)
    return names


def rules_for_target(profile) -> list[str]:
    """The target's default rule set (its profile's `rewrite_rules` + its fix_rules), in application order."""
    unknown = [n for n in profile.rewrite_rules if n not in RULES]
    if unknown:
        raise NpufitError(f"target {profile.name} names unknown rewrite rule(s): {', '.join(unknown)}")
    wanted = set(profile.rewrite_rules) | set(profile_fix_rules(profile))
    return [n for n in RULE_NAMES if n in wanted]


def rule_options(profile, rule: str) -> Mapping[str, Any]:
    """The knobs `profile` passes to `rule` in RuleContext.options (e.g. Hailo's opset 11)."""
    return profile.rewrite_options.get(rule, {})
