"""Shared fixtures and the seeded shuffle of the test order. Test models are built in the tests (no committed
binaries); every test writes only under its own tmp_path (docs/dev/testing.md)."""
from __future__ import annotations

import os

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
