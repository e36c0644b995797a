"""The hailo8 rules rest on public Dataflow Compiler outcomes (npufit/targets/hailo/evidence.json): each outcome is
well formed and names rules that exist, the shuffle/attention/flatten/resize/element-wise rules each rest on public
outcomes, and the profile's verdict on every outcome's op pattern (benchmarks/hailo_evidence.py) agrees with what
the parser did."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from npufit.targets import get_profile
from npufit.targets.hailo.evidence import cited_by, outcomes
from npufit.zoo import hailo_zoo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import hailo_evidence  # noqa: E402

PARSER = {"compiled", "parsed", "failed", "crashed"}


def _ids(profile) -> set[str]:
    """Rule, composite and op ids of a profile, without the profile's name."""
    rules = {r.id for r in profile.rules()} | {c.id for c in profile.composites}
    return {i.split(".", 1)[1] for i in rules} | {f"op.{op}" for op in profile.ops}


def test_every_outcome_is_well_formed_and_names_rules_that_exist():
    ids = _ids(get_profile("hailo8"))
    seen = set()
    for o in outcomes():
        assert o["id"] not in seen, o["id"]
        seen.add(o["id"])
        assert o["outcome"] in PARSER and o["model"] and o["pattern"] and o["detail"], o["id"]
        assert o.get("url") or o["source"], f"{o['id']}: no address and no description of where it was read"
        assert o["rules"] and set(o["rules"]) <= ids, (o["id"], set(o["rules"]) - ids)
        case = o.get("case")
        if case:
            assert case in hailo_evidence.CASES or case.removeprefix("zoo:") in hailo_zoo.BY_NAME, case


@pytest.mark.parametrize(
    "rule",
    ["shuffle.rank3", "shuffle.batch", "attention", "tokens", "resize.mode", "eltwise.const_layout", "rope", "rmsnorm"],
)
def test_the_layout_rules_rest_on_outcomes(rule):
    """Each of these rules has outcomes behind it; all but RMSNorm (judged like LayerNorm: no public Hailo-8 parse of
    RMSNorm was found, and its evidence says so) at least one with a public address."""
    got = cited_by(f"hailo8.{rule}")
    if rule == "rmsnorm":
        assert not got and "No public Hailo-8 parse" in next(
            c.evidence for c in get_profile("hailo8").composites if c.id == "hailo8.rmsnorm"
        )
        return
    assert any(o.get("url") for o in got), rule


def test_rules_that_cite_an_outcome_carry_its_description():
    p = get_profile("hailo8")
    for rid, src in (("hailo8.dtype.index_math", "zoo-bert-base-start"), ("hailo8.rope", "rope-dinov3-dfc333")):
        rule = next(r for r in [*p.rules(), *p.composites] if r.id == rid)
        assert rule.source == src and src in p.sources and "ZeroDivisionError" in p.sources["rope-dinov3-dfc333"]


def test_the_profile_agrees_with_every_judged_outcome():
    pytest.importorskip("torch")  # the sequence-first attention case is a torch export
    rows = hailo_evidence.score("hailo8")
    judged = [r for r in rows if r["agrees"] is not None]
    assert len(judged) >= 25
    assert [(r["id"], r["npufit"]) for r in judged if not r["agrees"]] == []
    assert f"agreement: {len(judged)}/{len(judged)} judged outcomes" in hailo_evidence.render(rows, "table")
