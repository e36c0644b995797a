"""rewrite: HOW to make a graph NPU-friendly. One rule per file (npufit/rewrite/rules/), each exact or
approximate, applied per target by `fix` and kept only when ONNX Runtime confirms the outputs."""

from .base import RewriteRule, RuleContext, RuleNotApplicable
from .engine import fix
from .registry import RULE_NAMES, RULES, get_rule, rules_for_target
from .result import SCHEMA, FixResult, RuleOutcome, TargetState

__all__ = [
    "fix",
    "FixResult",
    "RuleOutcome",
    "TargetState",
    "RewriteRule",
    "RuleContext",
    "RuleNotApplicable",
    "RULES",
    "RULE_NAMES",
    "get_rule",
    "rules_for_target",
    "SCHEMA",
]
