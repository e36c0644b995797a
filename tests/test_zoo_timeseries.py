"""The demo's regressors must learn the task: each beats repeating the last value on the held-back end of the
bundled series, at the demo's settings (examples/timeseries.yaml: 3 epochs, hidden 32, lr 0.003, batch 64)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from npufit.zoo import data, train  # noqa: E402


@pytest.fixture(scope="module")
def dataset():
    values, names = data.synthetic(length=3000, features=4, seed=0)
    return data.make_dataset(values, names, seq_len=32, horizon=1, val_fraction=0.2)


def test_tcn_beats_last_value(dataset):
    # With a global average pool over time the TCN lost the recent steps: val MSE 0.157 against the baseline's 0.065.
    _, res = train.train("tcn", dataset, epochs=3, hidden=32, lr=0.003, batch_size=64)
    assert res.history[-1]["val_loss"] < 0.5 * res.baseline_val_loss


def test_tcn_is_whole_on_every_demo_target(dataset, tmp_path):
    # Its readout is a Linear over all steps: slicing the last step instead is a time-axis Slice Hailo-8 rejects,
    # and a (T, 1) convolution is over RK3588's kernel limit; either would cut the model in two.
    import npufit
    from npufit.zoo import timeseries

    path = tmp_path / "tcn.onnx"
    timeseries.export(train.build_for("tcn", dataset), path, features=4, seq_len=32)
    for target in ("hailo8", "ethos-u55-256", "rk3588"):
        assert npufit.check(path, target).fully_npu, target
