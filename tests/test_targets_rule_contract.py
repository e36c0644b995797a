"""Every family writes its rules to one typed contract (npufit/targets/base.py): a check is a module-level function
`(node: NodeView, lim: Limits) -> str | None`, anything else it needs bound as a keyword-only argument; a gate is
`(graph: Graph, lim: Limits) -> bool`; a composite's matcher `(graph: Graph) -> list[CompositeMatch]`; an op key
`(node: NodeView) -> str`. Read from the functions themselves, on every target."""
from __future__ import annotations

import functools
import inspect

import pytest

from npufit.targets import available_targets, get_profile
from npufit.targets.base import Rule, Verdict


def _unwrap(fn):
    """The function under a partial, and the names the partial binds."""
    bound: set[str] = set()
    while isinstance(fn, functools.partial):
        assert not fn.args, f"{fn}: bind by keyword"
        bound |= set(fn.keywords)
        fn = fn.func
    return fn, bound


def contract_breaks(fn, params: tuple[str, ...], returns: str, module_level: bool = True) -> list[str]:
    """What is wrong with `fn` against the contract `params` -> `returns` (annotations as written in the source)."""
    fn, bound = _unwrap(fn)
    out = []
    if module_level and (fn.__qualname__ != fn.__name__ or not fn.__module__.startswith("npufit.targets")):
        out.append(f"{fn.__qualname__} is not a module-level function of npufit.targets")
    sig = inspect.signature(fn)
    ps = list(sig.parameters.values())
    got = tuple(f"{p.name}: {p.annotation}" for p in ps[: len(params)])
    if got != params:
        out.append(f"{fn.__name__} takes {got}, not {params}")
    extra = [p for p in ps[len(params):] if p.kind is not p.KEYWORD_ONLY or p.name not in bound]
    if extra:
        out.append(f"{fn.__name__}: {[p.name for p in extra]} are not keyword-only arguments bound by a partial")
    if sig.return_annotation != returns:
        out.append(f"{fn.__name__} returns {sig.return_annotation!r}, not {returns!r}")
    return out


CHECK = ("node: NodeView", "lim: Limits")
GATE = ("graph: Graph", "lim: Limits")


@pytest.mark.parametrize("target", available_targets())
def test_every_rule_gate_matcher_and_op_key_keeps_the_contract(target):
    p = get_profile(target)
    bad = set()
    for r in p.rules():
        bad |= {f"{r.id}: {b}" for b in contract_breaks(r.check, CHECK, "str | None")}
        if r.gate is not None:  # a gate may be made by a helper (common.ops_gate)
            bad |= {f"{r.id} gate: {b}" for b in contract_breaks(r.gate, GATE, "bool", module_level=False)}
    for c in p.composites:
        bad |= {f"{c.id}: {b}" for b in contract_breaks(c.match, ("graph: Graph",), "list[CompositeMatch]")}
    if p.op_key is not None:
        bad |= set(contract_breaks(p.op_key, ("node: NodeView",), "str"))
    assert not bad, "\n".join(sorted(bad))


def test_the_contract_check_catches_each_break():
    def lam_rule(node, lim):  # untyped, and not at module level
        return None

    assert len(contract_breaks(lam_rule, CHECK, "str | None")) == 3
    assert contract_breaks(functools.partial(Rule, id="x"), CHECK, "str | None")  # a class is no check
    assert contract_breaks(lambda node, lim, extra: None, CHECK, "str | None", module_level=False)
    assert Verdict.CPU  # the module under test is importable without a target loaded
