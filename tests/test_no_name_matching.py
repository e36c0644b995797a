"""No module outside npufit/targets/ decides anything from a target's name or a rule id's spelling.

Every fact a verb needs (family, what it executes, compiler, runtime, CPU fallback, rewrite rules, labels) is a
Profile field; a new NPU is then its profile and nothing else. The scan reads the source with `ast` and flags
string comparisons, `startswith`/`endswith` calls and membership tests whose literal is a target name (or alias,
family, vendor platform name), a prefix of one, or a piece of a rule id.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from npufit import toolchains
from npufit.targets import available_targets, get_profile

PKG = Path(__file__).resolve().parents[1] / "npufit"


def _vocabulary() -> tuple[set[str], set[str]]:
    # the vendor compilers' own target names are target names too
    names: set[str] = {p for t in toolchains.registered() for p in t.platforms}
    rule_ids: set[str] = set()
    for t in available_targets():
        p = get_profile(t)
        names |= {p.name, p.family, *p.aliases}
        rule_ids |= {r.id for r in p.rules()} | {c.id for c in p.composites}
    return {n.lower() for n in names}, rule_ids


NAMES, RULE_IDS = _vocabulary()
RULE_TAILS = {"." + rid.split(".", 1)[1] for rid in RULE_IDS}  # ".dtype", ".conv.kernel", ...


def _is_name(s: str) -> bool:
    return s.lower() in NAMES


def _is_name_prefix(s: str) -> bool:
    s = s.lower()
    return len(s) >= 2 and any(n.startswith(s) for n in NAMES)


def _is_rule_piece(s: str) -> bool:
    if s in RULE_IDS or any(s.startswith(n + ".") for n in NAMES):
        return True  # a whole rule id, or one spelled from a target name
    return len(s) >= 3 and s.startswith(".") and any(t == s or t.endswith(s) or (s + ".") in t for t in RULE_TAILS)


def _strings(node: ast.AST) -> list[str]:
    """The string literals of a constant, a tuple/list/set of constants, or an f-string's literal parts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return []


def _mentions_target(node: ast.AST) -> bool:
    """`target.startswith(...)`, `cell.target.lower().startswith(...)`: the receiver is a target name."""
    while isinstance(node, (ast.Call, ast.Attribute)):
        if isinstance(node, ast.Attribute) and "target" in node.attr.lower():
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and "target" in node.id.lower()


def findings(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith"):
            if node.args and not _strings(node.args[0]) and _mentions_target(node.func.value):
                out.append((node.lineno, f"{node.func.attr} on a target name with prefixes from a table"))
            for arg in node.args[:1]:
                for s in _strings(arg):
                    if (node.func.attr == "startswith" and _is_name_prefix(s)) or _is_rule_piece(s):
                        out.append((node.lineno, f"{node.func.attr}({s!r})"))
        elif isinstance(node, ast.Compare):
            for s in (s for operand in [node.left, *node.comparators] for s in _strings(operand)):
                substring = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and isinstance(node.left, ast.Constant)
                if _is_name(s) or _is_rule_piece(s) or (substring and _is_name_prefix(s)):
                    out.append((node.lineno, f"comparison with {s!r}"))
    return out


def _sources():
    for path in sorted(PKG.rglob("*.py")):
        if "targets" not in path.relative_to(PKG).parts[:1]:
            yield path


def test_no_module_outside_targets_matches_target_names_or_rule_ids():
    found = [f"{path.relative_to(PKG.parent)}:{line}: {what}" for path in _sources()
             for line, what in findings(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "target facts decided by name outside npufit/targets/ (read a Profile field instead):\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    'if target.startswith("hailo"): pass',
    'x = t.startswith(("rk", "rv"))',
    'ok = target in ("hailo8", "hailo8l")',
    'ok = name == "ethos-n78"',
    'dtype_rule = rid.endswith(".dtype")',
    'ok = r.rule == f"{t}.dtype"',
    'ok = "ethos" in target',
    'ok = any(target.startswith(p) for p in PREFIXES[name])',
    'ok = ctx.cell.target.lower().startswith(prefix)',
])
def test_the_scan_catches_each_form(code):
    assert findings(ast.parse(code)), code


@pytest.mark.parametrize("code", [
    'ok = profile.compiler == wanted',
    'ok = name.endswith(".npy")',
    'ok = op.startswith("Global")',
    'ok = key in profile.aliases',
    'ok = layer.name.startswith(node_name)',
])
def test_the_scan_leaves_other_strings_alone(code):
    assert not findings(ast.parse(code)), code
