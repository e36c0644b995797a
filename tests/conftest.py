"""Shared fixtures and the seeded shuffle of the test order. Test models are built in the tests (no committed
binaries); every test writes only under its own tmp_path (docs/dev/testing.md)."""

from __future__ import annotations

import os
import sys

import pytest

# the seeded shuffle (tests/shuffle.py): hooks found here by name, as if written in this file
from .shuffle import (  # noqa: F401
    pytest_addoption,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_header,
    pytest_terminal_summary,
)

os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")


@pytest.fixture(autouse=True)
def _fresh_placements():
    """npufit.placement remembers one placement per model and target for the whole process (a run's verbs share
    it): each test starts without the placements an earlier test made, so no test depends on another's order."""
    yield
    if "npufit.placement" in sys.modules:
        sys.modules["npufit.placement"].clear_memo()
