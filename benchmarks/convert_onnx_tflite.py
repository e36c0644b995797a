"""ONNX -> int8 TFLite (npufit.convert) on the test material: conversion time, LiteRT-vs-ONNX Runtime cosine,
and Vela's placement on ethos-u55-256. Prints one row per model. Run: python benchmarks/convert_onnx_tflite.py"""

from __future__ import annotations

import tempfile
from pathlib import Path


def _mobilenet_v2_rescaled(path: Path) -> None:
    """The zoo's MobileNetV2 with He-initialised weights: HF's std=0.02 init makes its logits ~1e-25."""
    import torch
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    from npufit.zoo.export import export_onnx

    torch.manual_seed(0)
    m = MobileNetV2ForImageClassification(MobileNetV2Config(image_size=96, depth_multiplier=0.35, num_labels=10)).eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
                torch.nn.init.kaiming_normal_(mod.weight)
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_var.uniform_(0.5, 1.5)

    from npufit.zoo.hf import wrap

    export_onnx(wrap(m, ("pixel_values",), ("logits",)), torch.randn(1, 3, 96, 96), path, 13, ["images"], ["logits"])


def main() -> None:
    from npufit.compilers import compile_model
    from npufit.zoo import detector, hf

    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        models = {
            "detector relu": lambda p: detector.export("relu", p, opset=13),
            "detector leakyrelu": lambda p: detector.export("leakyrelu", p, opset=13),
            "MobileNetV2 (zoo, HF init)": lambda p: hf.mobilenet_v2(p),
            "MobileNetV2 (He init)": _mobilenet_v2_rescaled,
        }
        print("| model | convert s | TFLite ops | min cosine | max abs err | Vela npu/cpu ops | Vela est. inference |")
        print("|---|---|---|---|---|---|---|")
        for i, (name, build) in enumerate(models.items()):
            src = d / f"m{i}.onnx"
            build(src)
            r = compile_model(src, "ethos-u55-256", out_dir=d / f"o{i}")
            c = r.metrics["conversion"]
            print(
                f"| {name} | {c['wall_s']:.2f} | {c['tflite_ops']} | {c['min_cosine_vs_onnx']:.5f} | "
                f"{c['max_abs_vs_onnx']:.3g} "
                f"| {r.metrics.get('npu_operators')}/{r.metrics.get('cpu_operators')} | "
                f"{r.metrics.get('inference_time_ms')} ms |"
            )


if __name__ == "__main__":
    main()
