"""The seeded shuffle of the test order (tests/shuffle.py): reproducible from its seed, files kept together."""

from __future__ import annotations

from pathlib import Path

import pytest

from .shuffle import _parse, shuffled


class _Item:
    def __init__(self, path: str, name: str, cls=None):
        self.path, self.name, self.cls = Path(path), name, cls


class _A:
    pass


class _B:
    pass


def _items():
    out = [_Item("a.py", f"a{i}") for i in range(6)] + [_Item("b.py", f"b{i}", _A if i < 3 else _B) for i in range(6)]
    return out + [_Item("c.py", f"c{i}") for i in range(6)]


def _names(items):
    return [it.name for it in items]


def test_one_seed_one_order_and_other_seeds_others():
    assert _names(shuffled(_items(), 7)) == _names(shuffled(_items(), 7))
    orders = {tuple(_names(shuffled(_items(), seed))) for seed in range(20)}
    assert len(orders) == 20  # over 10^9 possible orders: twenty seeds, twenty orders


def test_a_files_tests_and_a_classs_tests_stay_together():
    for seed in range(20):
        order = shuffled(_items(), seed)
        files = [it.path.name for it in order]
        assert [f for k, f in enumerate(files) if k == 0 or files[k - 1] != f] == sorted(set(files), key=files.index)
        assert len(set(files)) == 3 and sorted(_names(order)) == sorted(_names(_items()))
        in_b = [it.cls for it in order if it.path.name == "b.py"]
        assert in_b in ([_A] * 3 + [_B] * 3, [_B] * 3 + [_A] * 3)


def test_seed_from_the_option_or_the_environment():
    assert _parse("123") == 123 and _parse("off") is None
    assert isinstance(_parse(""), int) and isinstance(_parse(None), int)
    with pytest.raises(pytest.UsageError, match="whole number"):
        _parse("twelve")
