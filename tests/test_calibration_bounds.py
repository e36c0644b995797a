"""The rule bounds read from the compiler sweeps (calibration/bounds.py -> npufit/targets/records/sweep-bounds.json,
read by npufit/targets/sweeps.py): the package's file is what the sweep records give, every bound names cases its
record holds, and the profiles' limits are those values."""

from __future__ import annotations

import json

import pytest

from calibration import bounds, form, sweep
from npufit.targets import get_profile, sweeps


@pytest.mark.slow
def test_the_bounds_file_is_what_the_sweep_records_give():
    """A re-recorded sweep that moves a bound fails here until `python -m calibration.bounds` writes it again."""
    have = json.loads(bounds.OUT.read_text())["bounds"]
    assert json.loads(json.dumps(bounds.derive())) == have


def test_every_bound_names_cases_of_its_record_and_how_it_was_read():
    data = json.loads(sweeps.FILE.read_text())["bounds"]
    assert set(data) == set(bounds.BOUNDS)
    for target, bs in data.items():
        rec = form.load_cases(sweep.record_file(target))
        assert set(bs) == set(bounds.BOUNDS[target]), target
        for name, b in bs.items():
            assert b["cases"] and set(b["cases"]) <= set(rec["cases"]), (target, name)
            assert b["record"] == f"docs/calibration/sweep/{target}.json" and b["how"], (target, name)
            assert sweeps.evidence(target, name).cases == tuple(b["cases"])


def test_the_profiles_read_their_limits_from_the_sweep():
    rk = get_profile("rk3588").limits
    assert (rk["conv1d_kernel"], rk["conv1d_stride"]) == (
        sweeps.value("rk3588", "conv1d_kernel"),
        sweeps.value("rk3588", "conv1d_stride"),
    )
    assert rk["sum_inputs"] == sweeps.value("rk3588", "sum_inputs")
    assert get_profile("ethos-u55-256").limits["transpose_pair_product"] == sweeps.value(
        "ethos-u55-256", "transpose_product"
    )
    assert sweeps.value("ethos-u85-256", "transpose_product") is None  # the U85 ran every one on the NPU
    assert "transpose_pair_product" not in get_profile("ethos-u85-256").limits
    assert (
        "SWEEP" in get_profile("rk3588").sources
        and "docs/calibration/sweep/rk3588.json" in get_profile("rk3588").sources["SWEEP"]
    )


def test_the_ethos_n_sram_lies_where_the_sweep_puts_the_transpose_bound():
    b = sweeps.bound("ethos-n78", "transpose_bricks")
    assert b["value"] < get_profile("ethos-n78").limits["transpose_sram_bytes"] < b["cpu_from"]


def test_a_record_that_contradicts_a_bound_is_refused():
    npu, cpu = [(512, "a"), (64, "b")], [(256, "c")]
    with pytest.raises(bounds.Derivation):
        bounds._upper(npu, cpu, "kernel")
    assert bounds._upper(npu, [(600, "c")], "kernel") == (512, ["a", "b", "c"])
