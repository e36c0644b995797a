"""Shared fixtures. Test models are built in the tests (no committed binaries)."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")


@pytest.fixture(scope="session")
def session_tmp(tmp_path_factory):
    """A folder shared by all tests of the session (for models that are slow to export)."""
    return tmp_path_factory.mktemp("npufit-session")
