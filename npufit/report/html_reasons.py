"""Why nodes are off the NPU, grouped: nodes that share an op, a verdict, the same reasons and the same fixes are one
problem (20 identical position-embedding Adds read once, not 20 times). The graph's side panel and the problem
table below it render the same groups."""

from __future__ import annotations

from html import escape
from typing import Any

from ..util.commands import fix_command
from .style import clip_words

OFF_NPU = ("cpu", "unsupported")
VERDICT_WORDS = {
    "npu": "runs on the NPU",
    "cpu": "falls back to the host CPU",
    "unsupported": "unsupported: cut away or rewrite",
    "folded": "folded away (constant)",
}
REASON_CHARS = 240  # a reason longer than this shows its first words and opens to the full text


def more(text: str, limit: int = REASON_CHARS) -> str:
    """Escaped text; past `limit` characters, the first words with an ellipsis that opens to the full text
    (a <details>: works without JS, and in print the summary stays readable)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return escape(text)
    return f'<details class="more"><summary>{escape(clip_words(text, limit))}</summary>{escape(text)}</details>'


def problem_groups(d: dict[str, Any]) -> list[dict[str, Any]]:
    """The off-NPU nodes of a check-shaped dict in graph order, grouped by (op, verdict, reasons, fixes)."""
    groups: dict[tuple, dict[str, Any]] = {}
    for n in d["nodes"]:
        if n["verdict"] not in OFF_NPU or n.get("parent"):
            continue
        reasons = tuple((r.get("rule", ""), r.get("text", ""), r.get("detail") or "") for r in n["reasons"])
        fixes = tuple(dict.fromkeys(f for r in n["reasons"] for f in r.get("fix", [])))
        rules = tuple(sorted({f for r in n["reasons"] for f in r.get("fix_rules", [])}))
        key = (n["op_type"], n["verdict"], reasons, fixes, rules)
        g = groups.setdefault(
            key,
            {
                "key": len(groups),
                "op": n["op_type"],
                "verdict": n["verdict"],
                "reasons": reasons,
                "fixes": fixes,
                "rules": rules,
                "nodes": [],
            },
        )
        g["nodes"].append(n["name"])
    return list(groups.values())


def why_html(g: dict[str, Any]) -> str:
    """The reasons of one group as a list: sentence, measured detail, rule id."""
    if not g["reasons"]:
        return '<p class="note">no reason recorded</p>'
    items = []
    for rule, text, detail in g["reasons"]:
        items.append(
            f"<li>{more(text)}"
            + (f' <span class="detail">({escape(detail)})</span>' if detail else "")
            + (f' <code class="rule">{escape(rule)}</code>' if rule else "")
            + "</li>"
        )
    return f'<ul class="why">{"".join(items)}</ul>'


def fix_html(g: dict[str, Any], target: str, model: str = "", shapes=None) -> str:
    """The fixes of one group; where rewrite rules apply, the `npufit fix` command for them, runnable as pasted."""
    fixes = [f"<li>{more(f)}</li>" for f in g["fixes"]]
    if g["rules"]:
        cmd = fix_command(model or "MODEL.onnx", target, g["rules"], shapes)
        fixes.append(f"<li><code>{escape(cmd)}</code></li>")
    return f'<ul class="fix">{"".join(fixes)}</ul>' if fixes else ""
