"""The words no user should read (stated once; tests/test_plain_words.py and the output tests scan with it).

npufit's rules were written from evidence with internal names: the user documents that seeded the project ("seed
000"), short codes for sources ("H-I98", "CAL-R", "N-LIB", "R-PDF"), the research notes (targets.md §4a), the
project's work packages and its own source files. A user reads a source by what it is ("the Hailo Model Zoo", "a
measured Vela 5.2.0 compile"), never by such a name.
"""

from __future__ import annotations

import re

from npufit.targets import available_targets, get_profile
from npufit.targets.base import Hint

JARGON = (
    r"(?i:\bseeds?[\s/_-]*0\d\d\b)",  # seed 000, Seed 001, seeds/002 (the user documents; "seed 0": a random seed)
    r"(?i:\bseed-?\d{3}\b)",  # seed000 (a probe case family)
    r"\bthis stop\b",
    r"\b(?:H|H10|N|CAL|PROBE|RKNN)-[A-Z][A-Z0-9]*\b",  # source codes: H-I98, H10-A, N-LIB, CAL-V, PROBE-R, RKNN-C
    r"\bR-(?:OP|PDF)\b",
    r"\bINF\b|\bCONV\b(?!_)",  # source codes that are words
    r"(?<![\w/.-])targets\.md",  # the research notes the rules were first written from (not docs/guide/targets.md)
    r"(?<![\w/.-])[a-z][a-z0-9_]*\.py\b",  # a bare module name: hailo_rules.py, tokens.py
    r"\bnpufit/[\w/]+\.py\b",  # a path into npufit's own source
    r"\bwork[- ]packages?\b",
    r"\bthe (?:report|targets|placement|dynshape|jargon|converter|calibration) work\b",
)
_PATTERN = re.compile("|".join(f"(?:{p})" for p in JARGON))


def source_keys() -> set[str]:
    """Every key of every profile's sources: a key is a name for npufit's own use, never printed."""
    return {k for name in available_targets() for k in get_profile(name).sources}


def jargon(text: str, keys: set[str] | None = None) -> list[str]:
    """The internal words in `text` (empty when it reads in plain words)."""
    hits = [m.group(0) for m in _PATTERN.finditer(text)]
    for k in keys or ():
        if re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", text):
            hits.append(k)
    return hits


def _hint_text(h) -> str:
    return h.text if isinstance(h, Hint) else h


def profile_texts(profile) -> list[tuple[str, str, str]]:
    """(where, kind, text) for every text of a profile a user can read: rule sentences, reasons, hints, notes,
    composite texts, evidence and source descriptions."""
    out: list[tuple[str, str, str]] = []
    lim = profile.limits
    for r in profile.rules():
        out.append((r.id, "sentence", r.sentence(lim)))
        out += [(r.id, "hint", _hint_text(h)) for h in r.fix]
        if r.evidence:
            out.append((r.id, "evidence", r.evidence))
    for op, s in list(profile.ops.items()) + [("*", profile.unknown)]:
        where = f"{profile.name} op {op}"
        if s.reason:
            out.append((where, "sentence", s.reason.format(op=op)))
        if s.note:
            out.append((where, "note", s.note))
        if s.evidence:
            out.append((where, "evidence", s.evidence))
        out += [(where, "hint", _hint_text(h)) for h in s.fix]
    for c in profile.composites:
        out += [(c.id, "sentence", c.text), (c.id, "name", c.name)]
        out += [(c.id, "hint", _hint_text(h)) for h in c.fix]
        if c.evidence:
            out.append((c.id, "evidence", c.evidence))
    out += [(profile.name, "profile note", n) for n in profile.notes]
    out += [(f"{profile.name} source {k}", "source", v) for k, v in profile.sources.items()]
    out += [(profile.name, "summary", profile.summary), (profile.name, "title", profile.title)]
    out += [(f"{profile.name} cost {k}", "source", v) for k, v in profile.split_costs.get("sources", {}).items()]
    return out
