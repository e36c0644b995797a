"""The target registry: names and aliases resolve to profiles; a broken profile module is an error, not a missing target."""
from __future__ import annotations

import importlib
import sys

import pytest

from npufit.errors import NpufitError

targets = importlib.import_module("npufit.targets")  # the package (the attribute npufit.targets is the verb)


def _register(monkeypatch, tmp_path, name: str, modname: str, source: str | None) -> None:
    if source is not None:
        (tmp_path / f"{modname}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(targets._MODULES, name, modname)
    monkeypatch.delitem(sys.modules, modname, raising=False)


@pytest.fixture(autouse=True)
def _fresh_cache():
    targets._load_module.cache_clear()
    yield
    targets._load_module.cache_clear()


def test_a_missing_import_inside_a_profile_propagates(monkeypatch, tmp_path):
    _register(monkeypatch, tmp_path, "toy-npu", "npufit_toy_profile",
              "import npufit_no_such_dependency\n\ndef profiles():\n    return {}\n")
    with pytest.raises(ModuleNotFoundError, match="npufit_no_such_dependency"):
        targets.get_profile("toy-npu")
    with pytest.raises(ModuleNotFoundError):
        targets.available_targets()


def test_a_profile_module_absent_from_the_build_is_an_unknown_target(monkeypatch, tmp_path):
    _register(monkeypatch, tmp_path, "toy-npu", "npufit_toy_profile_absent", None)
    assert "toy-npu" not in targets.available_targets()
    with pytest.raises(NpufitError, match="unknown target 'toy-npu'"):
        targets.get_profile("toy-npu")


def test_aliases_resolve_to_their_profile():
    assert targets.get_profile("ethos-n78-8tops-2ple").name == "ethos-n78"
    assert targets.get_profile("Hailo-8").name == "hailo8"
    with pytest.raises(NpufitError, match="unknown target"):
        targets.get_profile("ethos-n78-9tops")


def test_every_profile_states_the_facts_consumers_read():
    from npufit.compilers import _compilers

    adapters = {c.name for c in _compilers()}
    for name in targets.available_targets():
        p = targets.get_profile(name)
        assert p.family and p.compiler in adapters, name
        assert set(p.measure_judges) <= {"vela-checks", "compile"}, name
        assert bool(p.runtime) == bool(p.runtime_module), name
        assert set(p.rewrite_options) <= set(p.rewrite_rules), name
