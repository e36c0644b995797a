"""What a rule id stands for: its sentence, the limits it reads, its fix hints and the evidence behind it.

A report row shows one sentence and the rule id; everything behind the sentence (vendor messages, measurements,
evidence that disagrees) is here, read by `npufit explain RULE_ID`, the generated docs pages and the JSON report's
"evidence" key. Sources are named by their description (Profile.sources), never by their key.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .base import Composite, OpSupport, Profile, Rule, Verdict


@dataclass(frozen=True)
class RuleInfo:
    """One rule of one target, in the words a user reads."""

    id: str
    target: str  # profile name
    kind: str  # "rule" (a limit an op must meet), "op" (the op itself is off the NPU), "composite" (a node pattern)
    sentence: str
    verdict: str  # what a node that breaks it (or matches it, for an op or a pattern) gets
    ops: tuple[str, ...] = ()  # the op types it applies to ("*": every op)
    limits: dict[str, Any] = field(default_factory=dict)  # the profile limits its sentence states
    fix: tuple[str, ...] = ()  # every hint (a conditional one says its condition in its text)
    fix_rules: tuple[str, ...] = ()  # `npufit fix` rules that address it wherever it fails
    evidence: str = ""
    sources: tuple[str, ...] = ()  # descriptions

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "target": self.target,
            "kind": self.kind,
            "sentence": self.sentence,
            "verdict": self.verdict,
            "ops": list(self.ops),
            "limits": {k: _plain(v) for k, v in self.limits.items()},
            "fix": list(self.fix),
            "fix_rules": list(self.fix_rules),
            "evidence": self.evidence,
            "sources": list(self.sources),
        }


def _plain(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [_plain(x) for x in v]
        return sorted(items, key=str) if isinstance(v, (set, frozenset)) else items
    return str(v)


def _limit_names(template: str) -> list[str]:
    out: list[str] = []
    try:
        for _, name, _, _ in string.Formatter().parse(template):
            if name:
                key = name.split("[")[0].split(".")[0]
                if key not in out:
                    out.append(key)
    except ValueError:
        pass
    return out


def _texts(fix, target: str) -> tuple[str, ...]:
    """Every hint; a conditional one that names `npufit fix` rules carries their command (its text says when)."""
    out = []
    for h in fix:
        if isinstance(h, str):
            out.append(h)
        elif h.rules:
            out.append(f"{h.text} (npufit fix MODEL --target {target} --rules {','.join(h.rules)})")
        else:
            out.append(h.text)
    return tuple(out)


def _sources(profile: Profile, *keys: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(profile.source_text(k) for k in keys if k))


def _from_rule(profile: Profile, rule: Rule, ops: tuple[str, ...]) -> RuleInfo:
    lim = profile.limits
    return RuleInfo(
        rule.id,
        profile.name,
        "rule",
        rule.sentence(lim),
        rule.on_fail.value,
        ops,
        {k: lim[k] for k in _limit_names(rule.text) if k in lim},
        _texts(rule.fix, profile.name),
        rule.fix_rules,
        rule.evidence,
        _sources(profile, rule.source),
    )


def _from_op(profile: Profile, rid: str, s: OpSupport, ops: tuple[str, ...]) -> RuleInfo:
    reason = s.reason.format(op=ops[0] if ops != ("*",) else "the op") if s.reason else ""
    return RuleInfo(
        rid,
        profile.name,
        "op",
        reason or f"{', '.join(ops)} does not run on {profile.name}",
        s.status.value,
        ops,
        {},
        _texts(s.fix, profile.name),
        s.fix_rules,
        s.evidence,
        _sources(profile, s.source),
    )


def _from_composite(profile: Profile, c: Composite) -> RuleInfo:
    return RuleInfo(
        c.id,
        profile.name,
        "composite",
        c.text,
        c.verdict.value,
        (c.name,),
        {},
        _texts(c.fix, profile.name),
        c.fix_rules,
        c.evidence,
        _sources(profile, c.source),
    )


_INDEX: dict[str, tuple[Profile, dict[str, RuleInfo]]] = {}


def rule_index(profile: Profile) -> dict[str, RuleInfo]:
    """Every rule id the profile can put in a report (its rules, its off-NPU ops as `<target>.op.<OP>` and
    `<target>.op.unknown`, its composites), built once per profile."""
    kept = _INDEX.get(profile.name)
    if kept is not None and kept[0] is profile:
        return kept[1]
    out: dict[str, RuleInfo] = {}
    for r in profile.graph_rules:
        out.setdefault(r.id, _from_rule(profile, r, ("*",)))
    by_rule: dict[str, list[str]] = {}
    for op, s in profile.ops.items():
        for r in s.rules:
            by_rule.setdefault(r.id, []).append(op)
    for op, s in profile.ops.items():
        for r in s.rules:
            out.setdefault(r.id, _from_rule(profile, r, tuple(by_rule[r.id])))
        if s.status is not Verdict.NPU:
            out[f"{profile.name}.op.{s.op}"] = _from_op(profile, f"{profile.name}.op.{s.op}", s, (op,))
    out[f"{profile.name}.op.unknown"] = _from_op(profile, f"{profile.name}.op.unknown", profile.unknown, ("*",))
    for c in profile.composites:
        out[c.id] = _from_composite(profile, c)
    _INDEX[profile.name] = (profile, out)
    return out


def evidence_for(profile: Profile, rule_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The "evidence" section of a JSON report: for each rule id a report names, its sentence, evidence and sources."""
    index = rule_index(profile)
    out: dict[str, dict[str, Any]] = {}
    for rid in sorted(set(rule_ids)):
        info = index.get(rid)
        if info is not None:
            out[rid] = {"sentence": info.sentence, "evidence": info.evidence, "sources": list(info.sources)}
    return out
