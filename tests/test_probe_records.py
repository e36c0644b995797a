"""Today's profiles against the recorded real-compiler probe runs in docs/probe (the sources PROBE-R / PROBE-V / N-LIB cite).

Runs the prediction for every recorded case and sweep variant and replays the recorded measurement: a profile
edit that contradicts RKNN-Toolkit2, Vela or the Ethos-N support library fails here, on any machine, without the vendor toolkit.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from npufit.probe import probe  # noqa: E402

RECORDS = Path(__file__).resolve().parent.parent / "docs" / "probe"

# Disagreements still open, with why (each also listed in docs/probe/README.md / the matrix's drift table).
KNOWN_OPEN: dict[str, dict[str, str]] = {
    "rk3588": {},
    "rk3576": {},
    # int8 builds calibrate on the probe's random normal inputs: sqrt and log of negative samples are NaN, and the
    # toolkit's quantizer fails ("cannot convert float NaN to integer"); not a limit of either op
    # RK3566 ran every probe transpose that moves data (8x16x16 permutes) on the CPU, and the ReLU after one and
    # pixel_unshuffle's 6-D reshapes with it; its corpus builds ran 470 such transposes on the NPU and about 60 on the
    # CPU, so the profile keeps RK3588's Transpose until a condition separating them is measured
    "rk3566": {**{c: "data-moving transpose: CPU in the probe, mostly NPU in the corpus" for c in (
        "permute", "permute_5d", "transpose_0213", "transpose_0132_size", "transpose_0231_size", "transpose_0312_size",
        "head_split", "softmax", "softmax_axis", "pixel_unshuffle")},
               # [1, 12, 1, 1] -> [1, 12] output ran on the NPU (RK3588: CPU unless C % 8 == 0); one channel count measured
               "flatten_output_1x1": "one channel count measured: alignment not fitted"},
    "rv1106": {"sqrt": "quantizer: NaN calibration range", "log": "quantizer: NaN calibration range"},
    "ethos-u55-256": {},
    # npufit.convert writes torch's AvgPool2d(3, 1, 1) (count_include_pad=True) as PAD + a VALID 3x3 pool, which the
    # library refuses ('Unsupported configuration in AVG pooling'); it takes only the padded 3x3/1/1 form
    "ethos-n78": {"avgpool2d_k3s1p1": "converter: PAD + VALID average pool"},
}


@pytest.mark.parametrize("target", sorted(KNOWN_OPEN))
def test_profile_agrees_with_the_recorded_compiler_run(target):
    path = RECORDS / f"{target}-measured.json"
    record = json.loads(path.read_text())
    assert record["compiler_versions"], "a record names the compiler version it measured"
    rep = probe(replay=path, target=None, jobs=2, timeout=300)
    assert rep.record == str(path) and len(rep.cases) == len(record["cases"])
    drift = {row["case"]: row for row in rep.drift()}
    assert set(drift) == set(KNOWN_OPEN[target]), {k: (v["predicted"], v["measured"], v["nodes"]) for k, v in drift.items()
                                                   if k not in KNOWN_OPEN[target]}
