"""docs/rewrite-rules.md is rendered from the registry (a test fails when it is stale)."""
from __future__ import annotations

from .registry import RULE_OPTIONS, RULE_SETS, RULES


def rules_markdown() -> str:
    lines = ["# Rewrite rules (`npufit fix`)", "",
             "Generated from `npufit.rewrite.registry` by `python -m npufit.rewrite.docs` — do not edit by hand.", "",
             "Every rule is checked by `fix` against the original model with ONNX Runtime CPU (seeded inputs, several "
             "samples). Exact rules must match within `1e-6 + 1e-5 * max|ref|` (integer outputs bit-exact); approximate "
             "rules run only with `--allow-approx` and their measured error is reported.", "",
             "| rule | kind | rewrites | what it does | refuses / caveats |", "|---|---|---|---|---|"]
    for r in RULES.values():
        kind = "exact" if r.exact else "**approximate**"
        lines.append(f"| `{r.name}` | {kind} | {', '.join(r.ops) or '(model)'} | {r.summary} | {r.notes} |")
    lines += ["", "## Default rule sets per target", "",
              "A target's set is the list below plus every rule its profile names in `fix_rules`. Default rules are "
              "kept only when they do not put more nodes off the NPU or add partitions (\"it pays\"); rules named with "
              "`--rules` are kept whenever they verify.", "", "| target family | rules | options |", "|---|---|---|"]
    for fam, names in RULE_SETS.items():
        opts = "; ".join(f"{k}: {v}" for k, v in RULE_OPTIONS.get(fam, {}).items()) or "-"
        lines.append(f"| {fam} | {', '.join(f'`{n}`' for n in names)} | {opts} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m npufit.rewrite.docs > docs/rewrite-rules.md
    import sys

    sys.stdout.write(rules_markdown())
