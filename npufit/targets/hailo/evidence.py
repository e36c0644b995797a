"""Public Dataflow Compiler outcomes the Hailo rules rest on (evidence.json), as profile sources.

Each outcome records where it was read (URL), the model, the op pattern, what the parser did with it, the rules it
bears on and, where a small graph reproduces the pattern, the name of that case: benchmarks/hailo_evidence.py builds
the cases, checks them with the hailo8 profile and prints how often the verdicts agree with the outcomes.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

PATH = Path(__file__).resolve().parent / "evidence.json"


@lru_cache(maxsize=1)
def outcomes() -> tuple[dict, ...]:
    return tuple(json.loads(PATH.read_text(encoding="utf-8"))["outcomes"])


def describe(o: dict) -> str:
    """One line for a user: the model, what the parser did with the pattern, and where it was reported."""
    where = o.get("url") or o["source"]
    compiler = f" ({o['compiler']})" if o.get("compiler") else ""
    return f"{o['model']}{compiler}: {o['pattern']} -- {o['outcome']}: {o['detail']} [{where}]"


def evidence_sources(ids) -> dict[str, str]:
    """Outcome id -> its description, for the outcomes named in `ids` (the sources rules cite); the docs list every
    outcome in their own section."""
    wanted = set(ids)
    return {o["id"]: describe(o) for o in outcomes() if o["id"] in wanted}


def cited_by(rule_id: str) -> list[dict]:
    """The outcomes that bear on a rule or composite id (the profile-independent suffix, e.g. "shuffle.rank3")."""
    suffix = rule_id.split(".", 1)[1] if "." in rule_id else rule_id
    return [o for o in outcomes() if suffix in o.get("rules", ())]
