"""docs/rewrite-rules.md is rendered from the registry (a test fails when it is stale)."""

from __future__ import annotations

from ..targets import available_targets, get_profile
from .registry import RULES


def rules_markdown() -> str:
    lines = [
        "# Rewrite rules (`npufit fix`)",
        "",
        "Generated from `npufit.rewrite.registry` by `python -m npufit.rewrite.docs` — do not edit by hand.",
        "",
        "Every rule is checked by `fix` against the original model with ONNX Runtime CPU (seeded inputs, several "
        "samples). Exact rules must match within `1e-6 + 1e-5 * max|ref|` (integer outputs bit-exact); approximate "
        "rules run only with `--allow-approx` and their measured error is reported.",
        "",
        "| rule | kind | rewrites | what it does | refuses / caveats |",
        "|---|---|---|---|---|",
    ]
    for r in RULES.values():
        kind = "exact" if r.exact else "**approximate**"
        lines.append(f"| `{r.name}` | {kind} | {', '.join(r.ops) or '(model)'} | {r.summary} | {r.notes} |")
    lines += [
        "",
        "## Default rule sets per target",
        "",
        "A target's set is the list below plus every rule its profile names in `fix_rules`. Default rules are "
        'kept only when they do not put more nodes off the NPU or add partitions ("it pays"); rules named with '
        "`--rules` are kept whenever they verify.",
        "",
        "| target family | rules | options |",
        "|---|---|---|",
    ]

    profiles = [get_profile(t) for t in available_targets()]
    groups: dict[tuple, list] = {}  # one row per family, split where its members' rule sets differ
    for p in profiles:
        groups.setdefault((p.family, p.rewrite_rules, repr(p.rewrite_options)), []).append(p)
    for (fam, names, _), members in groups.items():
        whole = len(members) == sum(p.family == fam for p in profiles)
        opts = "; ".join(f"{k}: {v}" for k, v in members[0].rewrite_options.items()) or "-"
        label = fam if whole else ", ".join(p.name for p in members)
        lines.append(f"| {label} | {', '.join(f'`{n}`' for n in names)} | {opts} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m npufit.rewrite.docs > docs/rewrite-rules.md
    import sys

    sys.stdout.write(rules_markdown())
