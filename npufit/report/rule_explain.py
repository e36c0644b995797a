"""`npufit explain RULE_ID`: one rule in plain words, as text a terminal shows and as Markdown."""

from __future__ import annotations

import textwrap
from typing import Any

WIDTH = 100


def _limit(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(_limit(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_limit(x)}" for k, x in v.items())
    return str(v)


_KIND = {
    "rule": "a limit the op must meet",
    "op": "the op itself",
    "composite": "a pattern of nodes judged as one",
}


def _sections(d: dict[str, Any]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    ops = [o for o in d["ops"] if o != "*"]
    applies = ", ".join(ops) if ops else "every node"
    out.append(("applies to", [f"{applies} ({_KIND.get(d['kind'], d['kind'])})"]))
    out.append(("verdict", [f"{d['verdict']} when " + ("broken" if d["kind"] == "rule" else "matched")]))
    if d["limits"]:
        out.append(("limits", [f"{k} = {_limit(v)}" for k, v in d["limits"].items()]))
    fixes = list(d["fix"]) + [f"npufit fix MODEL --target {d['target']} --rules {r}" for r in d["fix_rules"]]
    if fixes:
        out.append(("how to fix", fixes))
    if d["evidence"]:
        out.append(("evidence", [d["evidence"]]))
    if d["sources"]:
        out.append(("sources", list(d["sources"])))
    return out


def render_explanation_text(d: dict[str, Any]) -> str:
    lines = [f"{d['id']}  ({d['target_title']})", ""]
    lines += textwrap.wrap(d["sentence"], WIDTH)
    for title, items in _sections(d):
        lines += ["", f"{title}:"]
        for item in items:
            lines += textwrap.wrap(item, WIDTH, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(lines) + "\n"


def render_explanation_markdown(d: dict[str, Any]) -> str:
    lines = [f"# `{d['id']}` ({d['target_title']})", "", d["sentence"]]
    for title, items in _sections(d):
        lines += ["", f"**{title[0].upper() + title[1:]}**", ""] + [f"- {i}" for i in items]
    return "\n".join(lines) + "\n"
