"""Where Vela places int8 resizes that keep the size (a PSP / FPN branch resized to its own size), measured one by one:
the calibration corpus has them in one model only (upernet), so the condition is checked beyond it here.

    python -m calibration.vela_resize [--target ethos-u55-256] [--record]

Each case is conv 1x1 -> F.interpolate(size = input size) -> relu, exported at opset 17, converted by npufit's
ONNX -> int8 TFLite converter and compiled by Vela; --record writes docs/calibration/<target>-resize.json (replayed by
tests/test_calibration_records.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .vela_transpose import measure

# (height = width, mode, align_corners): half-pixel bilinear at three sizes, align_corners bilinear, nearest
CASES = (
    (2, "bilinear", False),
    (4, "bilinear", False),
    (8, "bilinear", False),
    (4, "bilinear", True),
    (4, "nearest", None),
)


def build(hw, mode, align):
    import torch

    torch.manual_seed(0)

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 8, 1)

        def forward(self, x):
            kw = {} if align is None else {"align_corners": align}
            return torch.relu(torch.nn.functional.interpolate(self.conv(x), size=(hw, hw), mode=mode, **kw))

    return Case().eval(), torch.randn(1, 8, hw, hw)


def case_name(hw, mode, align) -> str:
    return f"{hw}x{hw}-{mode}" + ("" if align is None else f"-align{int(align)}")


def predict(onnx: Path, target: str) -> str:
    from npufit import check

    return next(n.verdict.value for n in check(str(onnx), target, measure="never").nodes if n.op_type == "Resize")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="ethos-u55-256")
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args(argv)
    print("| size | mode | align_corners | Vela | npufit |\n|---|---|---|---|---|")
    measure(
        CASES,
        "Resize",
        a.target,
        17,
        build,
        case_name,
        lambda hw, m, al: {"size": hw, "mode": m, "align_corners": al},
        predict,
        "resize" if a.record else None,
    )


if __name__ == "__main__":
    main()
