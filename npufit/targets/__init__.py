"""Targets: WHAT each NPU can take. Pure data + small rule functions; never imports a vendor SDK."""
from __future__ import annotations

import importlib
from functools import lru_cache

from ..errors import NpufitError
from .base import Composite, CompositeMatch, OpSupport, Profile, Rule, Verdict, worst

# target name -> module that defines it (each module has `profiles() -> dict[str, Profile]`)
_MODULES = {
    "hailo8": "npufit.targets.hailo",
    "hailo8l": "npufit.targets.hailo",
    "ethos-n78": "npufit.targets.ethos_n",
    "ethos-u55-128": "npufit.targets.ethos_u",
    "ethos-u55-256": "npufit.targets.ethos_u",
    "ethos-u65-256": "npufit.targets.ethos_u",
    "ethos-u65-512": "npufit.targets.ethos_u",
    "ethos-u85-256": "npufit.targets.ethos_u",
    "ethos-u85-512": "npufit.targets.ethos_u",
    "ethos-u85-1024": "npufit.targets.ethos_u",
    "ethos-u85-2048": "npufit.targets.ethos_u",
    "rk3588": "npufit.targets.rockchip",
    "rk3576": "npufit.targets.rockchip",
    "rk3566": "npufit.targets.rockchip",
    "rv1106": "npufit.targets.rockchip",
}


@lru_cache(maxsize=None)
def _load_module(modname: str) -> dict[str, Profile]:
    return importlib.import_module(modname).profiles()


def _profiles_of(modname: str) -> dict[str, Profile]:
    """The module's profiles; {} only when the profile module itself is absent from this build. A missing import
    *inside* it is a bug in that profile and propagates, so it never reads as "unknown target"."""
    try:
        return _load_module(modname)
    except ModuleNotFoundError as e:
        if e.name and (modname == e.name or modname.startswith(e.name + ".")):
            return {}
        raise


def available_targets() -> list[str]:
    return [name for name, mod in _MODULES.items() if name in _profiles_of(mod)]


def _by_alias(key: str) -> Profile | None:
    for mod in dict.fromkeys(_MODULES.values()):
        for p in _profiles_of(mod).values():
            if key in p.aliases:
                return p
    return None


def get_profile(name: str) -> Profile:
    """The profile named `name` or one of its aliases (e.g. an Ethos-N78 configuration, "hailo-8")."""
    key = name.strip().lower()
    mod = _MODULES.get(key)
    profile = _profiles_of(mod).get(key) if mod else _by_alias(key)
    if profile is None:
        raise NpufitError(f"unknown target '{name}' (available: {', '.join(available_targets())})")
    return profile


def resolve_targets(spec: str) -> list[str]:
    """'hailo8' | 'hailo8,rk3588' | 'all' -> list of target names."""
    if spec.strip().lower() == "all":
        return available_targets()
    names = [s.strip() for s in spec.split(",") if s.strip()]
    for n in names:
        get_profile(n)
    return names


__all__ = ["Profile", "Rule", "OpSupport", "Composite", "CompositeMatch", "Verdict", "worst",
           "get_profile", "available_targets", "resolve_targets"]


def targets(name: str | None = None):
    """`npufit targets [show NAME]`: every Profile, or the one named."""
    return get_profile(name) if name else [get_profile(n) for n in available_targets()]
