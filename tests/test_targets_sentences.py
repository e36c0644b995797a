"""Every number a target states in a rule sentence or a reason is one of its limits, formatted into the sentence.

A rule's sentence is the constraint the user reads when the rule fails; its numbers must be the ones the check reads
(Profile.limits), so a corrected limit corrects the sentence. What may stay literal in a template: digits inside a
name (int8, Conv1d, NC1HWC2, Hailo-8, H10-A), a version or section number (2.3.2, §4.1), a seed cited by number (seed 000), a quoted vendor message,
a parenthesised citation of evidence ("(seed 001: 402 × 3 extra ops)"), and tensor/index notation in brackets.
"""
from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from npufit.targets import available_targets, get_profile
from npufit.targets.base import Rule, Verdict
from npufit.targets.common import Choices

_FIELD = re.compile(r"\{[^{}]*\}")
_VERSION = re.compile(r"\d+(?:\.\d+)+|§\s*\d+(?:\.\d+)*|\bseeds? \d+")
_QUOTE = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<![A-Za-z])'[^']*'")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
# numbers as a sentence states a limit: 3, 3x3, 2x, 8-bit, 4-D, rank-3
_WORD_FORMS = re.compile(r"\brank-(\d+)|\b(\d+)-(?:D|bit)\b")
_NUMBER = re.compile(r"(?<![\w\-−])[-−]?\d+(?:x\d+)*x?(?![\w\-−])")


def _outside_parentheses(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def literal_numbers(template: str) -> list[str]:
    """Numbers written into a sentence template itself rather than formatted from a limit."""
    text = _FIELD.sub(" ", template)
    text = _BRACKETS.sub(" ", _QUOTE.sub(" ", _VERSION.sub(" ", text)))
    text = _outside_parentheses(text)
    text = _WORD_FORMS.sub(lambda m: f" {m.group(1) or m.group(2)} ", text)
    return _NUMBER.findall(text)


def _templates():
    seen = {}
    for name in available_targets():
        p = get_profile(name)
        for r in p.rules():
            seen.setdefault((name, r.id, r.text), None)
        for op, s in list(p.ops.items()) + [("*", p.unknown)]:
            if s.reason:
                seen.setdefault((name, f"{op} reason", s.reason), None)
    return list(seen)


def test_the_scan_finds_a_literal_limit_and_passes_names_citations_and_fields():
    assert literal_numbers("kernel stride must be 1..3") == ["1", "3"]
    assert literal_numbers("resize scale must be 2x, 4x or 8x; 1x1/2x2 kernels") == ["2x", "4x", "8x", "1x1", "2x2"]
    assert literal_numbers("tensors above rank-5 or 6-D, weights 8-bit") == ["5", "6", "8"]
    assert literal_numbers("zero point -128 (int8) / 0 (uint8)") == ["-128", "0"]
    assert literal_numbers("int8 Conv1d NC1HWC2 on Hailo-8 (H10-A), rknn-toolkit2 2.3.2 §4.1, 2n−1") == []
    assert literal_numbers("kernel ≤ {pool_kernel} ({pool_kernel}x{pool_kernel} measured, PROBE-R: 9 cases); "
                           "'The tensors are too large' [0, 2, 1, 3] \"constant shape (1,2,8400)\"") == []


@pytest.mark.parametrize("target,where,template", _templates(), ids=lambda v: v if len(str(v)) < 40 else str(v)[:40])
def test_no_literal_number_in_a_rule_sentence_or_reason(target, where, template):
    assert not literal_numbers(template), f"{target} {where}: numbers {literal_numbers(template)} are not limits: {template!r}"


def _fields(template: str) -> set[str]:
    out = set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field:
            out.add(re.split(r"[.\[]", field, maxsplit=1)[0])
    return out


def _changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 7 + 1
    if isinstance(value, Choices):  # an empty one (read as "none") gains a value
        return Choices(tuple(_changed(v) for v in value) or (1,))
    if isinstance(value, str):
        return value + "9"
    if isinstance(value, dict):
        return {k: _changed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_changed(v) for v in value)
    return value


@pytest.mark.parametrize("target", available_targets())
def test_a_changed_limit_changes_every_sentence_that_quotes_it(target):
    """The sentences are formatted from the profile's limits: a copied profile with one limit changed reads differently
    in every rule that names it, and the rule still formats (no field left unfilled)."""
    p = get_profile(target)
    for r in p.rules():
        fields = _fields(r.text)
        assert fields <= set(p.limits), f"{r.id} names {fields - set(p.limits)}, not limits of {target}"
        base = r.sentence(p.limits)
        assert "{" not in base, f"{r.id}: unformatted sentence {base!r}"
        for f in fields:
            lim = {**p.limits, f: _changed(p.limits[f])}
            assert r.sentence(lim) != base, f"{r.id}: changing limit {f} leaves the sentence as it was"


def test_choices_read_in_the_sentences_own_words():
    scales, kernels = Choices((2, 4, 8)), Choices((1, 2, 3))
    assert f"{scales}" == "2, 4, 8"
    assert "{s:#x|or}".format(s=scales) == "2x, 4x or 8x"
    assert "{k:#x#|/}".format(k=kernels) == "1x1/2x2/3x3"
    assert "{s:#|or}".format(s=Choices((1, 3))) == "1 or 3"
    assert "{s:..}".format(s=Choices((2, 3, 8))) == "2..8"
    assert f"{Choices(())}" == "none"  # an empty limit reads as a word in a sentence and a docs table


def test_a_literal_in_a_rule_would_fail_the_scan():
    r = Rule("toy.stride", "stride must be at most 3", lambda node, lim: None, Verdict.CPU)
    assert literal_numbers(r.text) == ["3"]
    assert not literal_numbers(Rule("toy.stride", "stride must be at most {stride_max}", r.check).text)


def test_target_modules_stay_under_500_lines():
    root = Path(__file__).resolve().parents[1] / "npufit" / "targets"
    long = {str(p.relative_to(root)): n for p in root.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert not long, f"target modules over 500 lines: {long}"
