"""Targets: WHAT each NPU can take. Pure data + small rule functions; never imports a vendor SDK."""

from __future__ import annotations

from .base import Composite, CompositeMatch, OpSupport, Profile, Rule, Verdict, worst
from .registry import available_targets, get_profile, register_family, resolve_targets, unregister_family

__all__ = [
    "Profile",
    "Rule",
    "OpSupport",
    "Composite",
    "CompositeMatch",
    "Verdict",
    "worst",
    "get_profile",
    "available_targets",
    "resolve_targets",
    "register_family",
    "unregister_family",
]


def targets(name: str | None = None):
    """`npufit targets [show NAME]`: every Profile, or the one named."""
    return get_profile(name) if name else [get_profile(n) for n in available_targets()]
