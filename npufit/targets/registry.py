"""The target registry: every target name and alias, read from the family modules that build the profiles.

A family is a module (a subpackage of npufit.targets, or a plug-in anywhere on the path) with a function
`profiles() -> dict[str, Profile]`, in the order its targets are listed. The registry asks each family for its
profiles when a name is first looked up there, so `check --target hailo8` builds no other family's profiles; names
and aliases come from the profiles themselves (Profile.name, Profile.aliases), never from a table kept beside them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import NpufitError
from .base import Profile

# the built-in families (subpackages of npufit.targets), in the order `--target all` lists their targets
FAMILIES = ("hailo", "ethos_n", "ethos_u", "rockchip")

_plugins: list[str] = []  # module names given to register_family, after the built-in families
_loaded: dict[str, dict[str, Profile]] = {}  # family module -> its profiles, by name


def _modules() -> list[str]:
    return [f"{__package__}.{f}" for f in FAMILIES] + _plugins


def _profiles_of(module: str) -> dict[str, Profile]:
    got = _loaded.get(module)
    if got is None:
        got = _loaded[module] = dict(importlib.import_module(module).profiles())
    return got


def _all() -> dict[str, Profile]:
    """Every target, in order; a name or alias claimed twice is a bug in a family and stops here."""
    out: dict[str, Profile] = {}
    owner: dict[str, str] = {}
    for module in _modules():
        for name, p in _profiles_of(module).items():
            for key in (name, *p.aliases):
                if key in owner and owner[key] != module:
                    raise ValueError(f"target name '{key}' of {module} is {owner[key]}'s already")
                owner[key] = module
            out[name] = p
    return out


def register_family(module: str | ModuleType) -> None:
    """Add a target family (a plug-in outside npufit): its profiles are listed after the built-in ones. A family that
    brings its own compiler registers its npufit.toolchains record when it is imported."""
    name = module if isinstance(module, str) else module.__name__
    if name in _plugins or name in _modules():
        return
    _plugins.append(name)
    try:
        _all()  # imports it now: a broken family or a name that is taken fails here, not at the first lookup
    except Exception:
        unregister_family(name)
        raise


def unregister_family(module: str | ModuleType) -> None:
    name = module if isinstance(module, str) else module.__name__
    if name in _plugins:
        _plugins.remove(name)
    _loaded.pop(name, None)


def available_targets() -> list[str]:
    return list(_all())


def get_profile(name: str) -> Profile:
    """The profile named `name` or one of its aliases (e.g. an Ethos-N78 configuration, "hailo-8")."""
    key = name.strip().lower()
    for module in _modules():  # a family at a time: the first that has the name
        profile = _profiles_of(module).get(key)
        if profile is not None:
            return profile
    for profile in _all().values():
        if key in profile.aliases:
            return profile
    raise NpufitError(f"unknown target '{name}' (available: {', '.join(available_targets())})")


def resolve_targets(spec: str) -> list[str]:
    """'hailo8' | 'hailo8,rk3588' | 'all' -> list of target names."""
    if spec.strip().lower() == "all":
        return available_targets()
    names = [s.strip() for s in spec.split(",") if s.strip()]
    for n in names:
        get_profile(n)
    return names
