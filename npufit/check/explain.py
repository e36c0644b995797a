"""`npufit.explain(rule_id)`: what a rule id in a report means, what it checks, how to fix it and why npufit says
so (the evidence and its sources), in plain words."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ..errors import NpufitError
from ..report.rule_explain import render_explanation_markdown, render_explanation_text
from ..targets import available_targets, get_profile
from ..targets.explain import RuleInfo, rule_index
from ..util.jsonutil import dumps
from ..vocab import FORMAT, FORMATS

SCHEMA = "npufit.explain/1"


@dataclass(frozen=True)
class Explanation:
    """One rule of one target: `info` (sentence, limits, hints, evidence, sources) and the target's title."""

    info: RuleInfo
    target_title: str

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **self.info.to_dict(), "target_title": self.target_title}

    def render(self, fmt: str = FORMAT) -> str:
        if fmt not in FORMATS:
            raise NpufitError(f"unknown format '{fmt}' (one of {', '.join(FORMATS)})")
        if fmt == "json":
            return dumps(self.to_dict(), 2)

        render = render_explanation_markdown if fmt == "markdown" else render_explanation_text
        return render(self.to_dict())

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        s = self.info.sentence
        return f"<Explanation {self.info.id}: {s if len(s) <= 60 else s[:59] + '…'}>"


def explain(rule_id: str) -> Explanation:
    """What the rule `rule_id` means: its sentence, the limits it reads, its fix hints and the evidence behind it.

    Parameters
    ----------
    rule_id : str
        A rule id as a report prints it beside a reason, in brackets: "hailo8.shuffle.rank3",
        "ethos-u55-256.fmap.dtype", "rk3588.op.TopK" (an op the target does not run), "hailo8.attention" (a pattern).

    Returns
    -------
    Explanation
        `.render("table" | "json" | "markdown")`, `.to_dict()`; `.info` holds the fields.

    Raises NpufitError for an id no target has (with the ids that come closest).

    Example
    -------
    >>> import npufit
    >>> e = npufit.explain("hailo8.conv.rank")
    >>> e.info.sentence[:47]
    'Convolutions run as 2-D convolutions on rank-4 '
    >>> print(e.render("markdown"))  # doctest: +SKIP
    """
    rid = str(rule_id).strip()
    target, _, rest = rid.partition(".")
    names = available_targets()
    if target in names and rest:
        profile = get_profile(target)
        index = rule_index(profile)
        info = index.get(rid)
        if info is not None:
            return Explanation(info, profile.title)
        close = difflib.get_close_matches(rid, list(index), n=3, cutoff=0.6)
    else:  # no target prefix (or an unknown one): the ids of every target that end like it
        close = [f"{n}.{rid}" for n in names if f"{n}.{rid}" in rule_index(get_profile(n))][:4]
        close = close or [f"{n}.{rest}" for n in names if rest and f"{n}.{rest}" in rule_index(get_profile(n))][:4]
    hint = f" (did you mean {', '.join(close)}?)" if close else " (rule ids are printed in brackets beside each reason)"
    raise NpufitError(f"no rule '{rid}'{hint}")
