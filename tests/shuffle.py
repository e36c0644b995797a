"""Seeded shuffle of the test order (hooks registered by tests/conftest.py).

Every run shuffles test files, then the classes of a file, then the tests of each (a file's tests stay together,
so a module-scoped fixture is built once); the seed is printed in the header, and a failure that only a certain
order shows is repeated with `--shuffle-seed N` or `NPUFIT_TEST_SEED=N`. `--shuffle-seed off` keeps file order.
"""

from __future__ import annotations

import os
import random

import pytest

ENV = "NPUFIT_TEST_SEED"
_seed: int | None = None  # chosen once per session, in pytest_configure


def _parse(text: str | None) -> int | None:
    """None: no shuffle; a number: that seed; empty: a fresh one."""
    text = (text or "").strip().lower()
    if text in ("off", "no", "none"):
        return None
    if not text:
        return random.SystemRandom().randrange(10**6)
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(f"--shuffle-seed / {ENV}: expected a whole number or 'off', got {text!r}") from None


def pytest_addoption(parser):
    parser.addoption(
        "--shuffle-seed",
        default=None,
        help=f"seed of the shuffled test order (default: ${ENV}, else a fresh one); 'off' keeps file order",
    )


def pytest_configure(config):
    global _seed
    opt = config.getoption("--shuffle-seed")
    _seed = _parse(opt if opt is not None else os.environ.get(ENV))


def _order() -> str:
    if _seed is None:
        return "test order: file order (--shuffle-seed off)"
    return f"test order: shuffled with seed {_seed} (repeat it with --shuffle-seed {_seed} or {ENV}={_seed})"


def pytest_report_header(config):
    return _order()


def _say(config) -> None:
    """The order once more where -q hides the header: after collection (a run killed midway still shows it) and
    beside the results."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and config.get_verbosity() < 0:
        reporter.write_line(_order())


def pytest_collection_finish(session):
    _say(session.config)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if exitstatus != 0:
        terminalreporter.write_line(_order())


def _grouped(items, key):
    """Consecutive runs of items with one key, in first-seen order."""
    groups: dict = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    return list(groups.values())


def shuffled(items, seed: int) -> list:
    """Files, then classes within a file, then tests within a class, each level in a seeded random order."""
    rng = random.Random(seed)
    out = []
    files = _grouped(items, lambda it: str(it.path))
    rng.shuffle(files)
    for f in files:
        classes = _grouped(f, lambda it: getattr(it, "cls", None) and it.cls.__qualname__)
        rng.shuffle(classes)
        for c in classes:
            rng.shuffle(c)
            out += c
    return out


def pytest_collection_modifyitems(session, config, items):
    if _seed is not None:
        items[:] = shuffled(items, _seed)
