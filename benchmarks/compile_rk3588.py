"""RKNN-Toolkit2 vs npufit's rk3588 profile on real architectures (random weights, offline).

    python benchmarks/compile_rk3588.py [OUT_DIR]

Builds RT-DETR (opset 17), MobileNetV2, ViT, BERT (transformers configs) and an LSTM regressor, compiles each
for rk3588 (float16, simulator on) and prints per-model and pooled CPU-fallback recall / precision, the
disagreements, compile wall time and peak memory. Needs 'npufit env install rknn'."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from npufit.compilers import compile_model
from npufit.compilers.compare import scores_over
from npufit.zoo import hf, timeseries

MODELS = {
    "rtdetr": lambda p: hf.rtdetr(p, opset=17),
    "mobilenet_v2": hf.mobilenet_v2,
    "vit": hf.vit,
    "bert": hf.bert,
    "lstm": lambda p: timeseries.export("lstm", p),
}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    comps, rows = [], {}
    for name, build in MODELS.items():
        onnx = out / f"{name}.onnx"
        if not onnx.exists():
            build(onnx)
        r = compile_model(onnx, "rk3588", compare_prediction=True, out_dir=out / f"{name}-rk3588")
        c = r.comparison
        row = {
            "ok": r.ok,
            "wall_s": r.wall_s,
            "peak_rss_mb": r.peak_rss_mb,
            "error": r.error,
            "sim_min_cosine": r.metrics.get("simulator_min_cosine"),
            "retries": r.retries,
        }
        if c is not None:
            comps.append(c)
            row.update(c.scores())
            row["disagreements"] = [
                f"{d.node} ({d.op}): npufit {d.predicted} [{', '.join(x['rule'] for x in d.rules) or '-'}], "
                f"rknn {d.actual} {d.compiler_reason}"
                for d in c.disagreements
            ]
        rows[name] = row
        print(
            f"{name:<13} ok={r.ok} wall={r.wall_s}s peak={r.peak_rss_mb}MB cos={row['sim_min_cosine']} "
            f"recall={row.get('cpu_fallback_recall')} precision={row.get('cpu_fallback_precision')} "
            f"(tp {row.get('tp')}, fp {row.get('fp')}, fn {row.get('fn')}, tn {row.get('tn')})",
            flush=True,
        )
        for d in row.get("disagreements", []):
            print("    -", d)
    pooled = scores_over(comps)
    print("pooled:", json.dumps(pooled))
    (out / "results.json").write_text(json.dumps({"models": rows, "pooled": pooled}, indent=2, default=str))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="npufit-rk3588-")))
