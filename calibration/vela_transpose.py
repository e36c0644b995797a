"""Where Vela really places int8 TRANSPOSEs on Ethos-U, measured one by one: the corpus's shapes and shapes beyond
the supported-ops report's limit, which the corpus records alone do not reach.

    python -m calibration.vela_transpose [--target ethos-u55-256] [--record]

Each case is conv 1x1 -> permute -> relu, exported at opset 13, converted by npufit's ONNX -> int8 TFLite converter
and compiled by Vela; --record writes docs/calibration/<target>-transpose.json (replayed by
tests/test_calibration_records.py)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .form import CASES_SCHEMA, RECORDS

# (input shape, permutation): NCHW 4-D over and under the report's 2^16 product limit, and 5-D/6-D window partitions
CASES = (
    ((1, 8, 300, 300), (0, 1, 3, 2)),
    ((1, 8, 300, 300), (0, 2, 3, 1)),
    ((1, 8, 300, 300), (0, 3, 1, 2)),
    ((1, 300, 8, 300), (0, 2, 1, 3)),
    ((1, 260, 260, 4), (0, 1, 3, 2)),
    ((1, 4, 260, 260), (0, 2, 1, 3)),
    ((1, 16, 32, 300), (0, 3, 2, 1)),
    ((1, 8, 16, 16), (0, 2, 3, 1)),
    ((1, 2, 16, 32), (0, 2, 1, 3)),
    ((1, 4, 4, 4, 16), (0, 1, 3, 2, 4)),
    ((1, 8, 4, 8, 4), (0, 1, 3, 2, 4)),
)


def build(shape, perm):
    import torch

    torch.manual_seed(0)

    class Case(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(shape[1], shape[1], 1)

        def forward(self, x):
            y = self.conv(x)
            if len(shape) > 4:
                y = y.reshape(*shape)
            return torch.relu(y.permute(*perm))

    x4 = shape if len(shape) == 4 else (1, shape[1], shape[2], int(__import__("math").prod(shape[3:])))
    return Case().eval(), torch.randn(*x4)


def case_name(shape, perm) -> str:
    return f"{'x'.join(map(str, shape))}-perm{''.join(map(str, perm))}"


def predict(onnx: Path, target: str) -> str:
    from npufit import check

    rep = check(str(onnx), target, measure="never")  # the prediction, held against the compile
    return next(n.verdict.value for n in rep.nodes if n.op_type == "Transpose")


def measure(cases, op_type: str, target: str, opset: int, build, name, row, predict_fn, record: str | None) -> dict:
    """Export, convert and compile each case; Vela's placement of its `op_type` node per case (shared with
    vela_resize.py). cases: arguments for build(*case) / name(*case) / row(*case) (the table's leading cells)."""
    from npufit.compilers import compile_model
    from npufit.util.io import atomic_write_json
    from npufit.zoo.export import export_onnx

    rec = {
        "schema": CASES_SCHEMA,
        "target": target,
        "build": "int8",
        "opset": opset,
        "compiler": "vela",
        "compiler_versions": [],
        "cases": {},
    }
    with tempfile.TemporaryDirectory(prefix="npufit-cases-") as d:
        for case in cases:
            p = Path(d) / f"{name(*case)}.onnx"
            m, x = build(*case)
            export_onnx(m, x, p, opset, ["x"], ["y"])
            r = compile_model(p, target, out_dir=Path(d) / p.stem)
            got = [pl.device for pl in r.placement if pl.op == op_type] if r.ok else []
            if r.compiler_version and r.compiler_version not in rec["compiler_versions"]:
                rec["compiler_versions"].append(r.compiler_version)
            dev = got[0] if got else f"failed: {r.error}"
            rec["cases"][name(*case)] = {**row(*case), "placement": dev}
            print(
                f"| {' | '.join(str(v) for v in row(*case).values())} | {dev} | {predict_fn(p, target)} |", flush=True
            )
    if record:
        atomic_write_json(RECORDS / f"{target}-{record}.json", rec)
    return rec


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="ethos-u55-256")
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args(argv)
    print("| input | perm | Vela | npufit |\n|---|---|---|---|")
    measure(
        CASES,
        "Transpose",
        a.target,
        13,
        build,
        case_name,
        lambda s, p: {"shape": list(s), "perm": list(p)},
        predict,
        "transpose" if a.record else None,
    )


if __name__ == "__main__":
    main()
