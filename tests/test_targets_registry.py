"""The target registry: names and aliases come from the family modules' profiles; a broken family is an error, not a
missing target; a lookup builds only the families it needs."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from npufit import toolchains
from npufit.errors import NpufitError

targets = importlib.import_module("npufit.targets")  # the package (the attribute npufit.targets is the verb)

TOY = '''
from npufit.targets import get_profile
from dataclasses import replace


def profiles():
    return {{"{name}": replace(get_profile("hailo8"), name="{name}", aliases=({aliases}))}}
'''


def _family(monkeypatch, tmp_path, modname: str, source: str) -> str:
    (tmp_path / f"{modname}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, modname, raising=False)
    return modname


def test_a_missing_import_inside_a_family_propagates(monkeypatch, tmp_path):
    mod = _family(monkeypatch, tmp_path, "npufit_toy_broken", "import npufit_no_such_dependency\n\n"
                                                              "def profiles():\n    return {}\n")
    before = targets.available_targets()
    with pytest.raises(ModuleNotFoundError, match="npufit_no_such_dependency"):
        targets.register_family(mod)
    assert targets.available_targets() == before  # a family that failed to load is not left registered


def test_a_family_module_that_does_not_exist_is_refused(monkeypatch):
    with pytest.raises(ModuleNotFoundError):
        targets.register_family("npufit_toy_no_such_family")
    with pytest.raises(NpufitError, match=r"unknown target 'toy-npu' \(available: hailo8, hailo8l, ethos-n78"):
        targets.get_profile("toy-npu")


def test_a_registered_family_lists_after_the_built_in_ones_and_a_taken_name_is_refused(monkeypatch, tmp_path):
    mod = _family(monkeypatch, tmp_path, "npufit_toy_family", TOY.format(name="toy-npu", aliases='"toy",'))
    targets.register_family(mod)
    try:
        assert targets.available_targets()[-1] == "toy-npu"
        assert targets.get_profile("TOY").name == "toy-npu" and targets.resolve_targets("toy-npu,hailo8")
    finally:
        targets.unregister_family(mod)
    assert "toy-npu" not in targets.available_targets()
    taken = _family(monkeypatch, tmp_path, "npufit_toy_taken", TOY.format(name="toy-npu", aliases='"rk3568",'))
    with pytest.raises(ValueError, match="'rk3568'"):
        targets.register_family(taken)
    assert "toy-npu" not in targets.available_targets()


def test_aliases_resolve_to_their_profile():
    assert targets.get_profile("ethos-n78-8tops-2ple").name == "ethos-n78"
    assert targets.get_profile("Hailo-8").name == "hailo8"
    with pytest.raises(NpufitError, match="unknown target"):
        targets.get_profile("ethos-n78-9tops")


def test_a_lookup_builds_only_the_families_up_to_the_target():
    code = ("import sys; from npufit.targets import get_profile; get_profile('hailo8'); "
            "print(sorted(m for m in sys.modules if m.startswith('npufit.targets.') and m.count('.') == 2))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'npufit.targets.hailo'" in out and "rockchip" not in out and "ethos_u" not in out, out


def test_every_profile_states_the_facts_consumers_read():
    for name in targets.available_targets():
        p = targets.get_profile(name)
        tc = toolchains.get(p.compiler)
        assert p.family and name in tc.platforms, name  # its compiler takes it under its own name
        assert set(p.measure_judges) <= {"vela-checks", "compile"}, name
        assert bool(p.runtime) == bool(p.runtime_module), name
        assert set(p.rewrite_options) <= set(p.rewrite_rules), name
