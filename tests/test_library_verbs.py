"""Every CLI verb is a library function of the same name (README: `npufit.check(...)`, `npufit.pipeline(...)`, ...)."""
from __future__ import annotations

import importlib

import pytest

import npufit
from npufit.cli import COMMANDS
from npufit.errors import NpufitError


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_every_cli_verb_is_callable_from_the_library(verb):
    try:  # a verb that is also a subpackage: importing it binds the module to npufit.<verb>, which must stay callable
        importlib.import_module(f"npufit.{verb}")
    except ModuleNotFoundError:
        pass
    assert callable(getattr(npufit, verb)), f"npufit.{verb} is not a library function"


def test_subpackage_verbs_do_what_their_cli_does(tmp_path):
    assert [p.name for p in npufit.targets()][:1] == ["hailo8"] and npufit.targets("rk3588").name == "rk3588"
    assert {c.name for c in npufit.doctor().core}
    assert {e["name"] for e in npufit.env()} >= {"rknn", "hailo"}
    with pytest.raises(NpufitError):
        npufit.pipeline(tmp_path / "missing.yaml")
    with pytest.raises(NpufitError):
        npufit.report(tmp_path / "no-results")
