"""int8 accuracy of the demo models (`make demo` = examples/timeseries.yaml): float vs int8 on held-back windows.

Runs the demo pipeline (or reads a results folder it wrote) and prints, per model and target, the worst output's
SQNR and cosine against float, the calibration and held-back sample counts, the largest clipped share and the
quantize / evaluation times, as a Markdown table (the README's). With --before it also quantizes each exported
model the way the demo did before its calibration was fixed (the first 64 consecutive training windows,
per-tensor weights) and measures it on the same held-back windows.
Run: .venv/bin/python benchmarks/quantize_demo.py [--results out/demo] [--before]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "timeseries.yaml"


def _row(label: str, target: str, d: dict) -> str:
    sm, cal, t = d["summary"], d["calibration"], d["timing"]
    sq = sm["min_output_sqnr_db"]
    sq = "exact" if sq is None else (f"{sq:.1f}" if isinstance(sq, (int, float)) else sq)
    how = f"{d['settings']['method']}, {'per-channel' if d['settings']['per_channel'] else 'per-tensor'}"
    return (
        f"| {label} | {target} | {sq} | {sm['min_output_cosine']:.5f} | {cal['used']} | {cal['holdout']} | "
        f"{sm['max_clipped_fraction']:.2%} | {how} | {t['quantize_s']:.2f} | {t['evaluate_s']:.2f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--results", type=Path, help="a results folder of examples/timeseries.yaml (default: run it into a temp folder)"
    )
    ap.add_argument(
        "--before", action="store_true", help="also measure the old calibration (first 64 windows, per-tensor)"
    )
    args = ap.parse_args()
    from npufit.pipeline import load_config, run_pipeline
    from npufit.quantize import quantize
    from npufit.zoo.data import load_dataset

    with tempfile.TemporaryDirectory() as tmp:
        root = args.results or Path(tmp) / "demo"
        if args.results is None:
            run = run_pipeline(EXAMPLE, output_dir=root, quiet=True)
            print(f"pipeline: {len(run.results)} steps in {run.seconds:.1f} s")
        cfg = load_config(EXAMPLE, root)
        print(
            "| model | target | int8 vs float SQNR dB (worst output) | cosine | calibration samples | held-back "
            "samples | "
            "max clipped | method | quantize s | evaluate s |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
        seen = set()
        for mo in cfg.models:
            for t in cfg.targets:
                q = root / mo.name / t / "quantize" / "quantize.json"
                if not q.is_file():
                    continue
                d = json.loads(q.read_text())
                print(_row(mo.name, t, d))
                if args.before and mo.name not in seen:  # the same float model on every target: once per model
                    seen.add(mo.name)
                    ds = load_dataset(cfg.data, cfg.path.parent)
                    old = Path(tmp) / f"{mo.name}_first64.npz"
                    np.savez(old, series=ds.x_train[:64][:, None])
                    held = root / mo.name / "train" / "holdout.npz"
                    r = quantize(d["model"], Path(tmp) / f"{mo.name}_old.onnx", old, samples=64, evaluation=held)
                    print(_row(f"{mo.name} (before: first 64 windows)", "-", r.to_dict()))


if __name__ == "__main__":
    main()
