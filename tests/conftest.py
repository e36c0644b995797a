"""Shared fixtures. Test models are built in the tests (no committed binaries)."""
from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")


@pytest.fixture(scope="session")
def session_tmp(tmp_path_factory):
    """A folder shared by all tests of the session (for models that are slow to export)."""
    return tmp_path_factory.mktemp("npufit-session")


@pytest.fixture(autouse=True)
def _fresh_placements():
    """npufit.placement remembers one placement per model and target for the whole process (a run's verbs share
    it): each test starts without the placements an earlier test made, so no test depends on another's order."""
    yield
    if "npufit.placement" in sys.modules:
        sys.modules["npufit.placement"].clear_memo()
