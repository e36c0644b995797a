"""Hailo-8 / Hailo-8L (Hailo Dataflow Compiler 3.x). PLACEHOLDER: being completed (seed 000/002 rules)."""
from __future__ import annotations

from .base import OpSupport, Profile, Verdict

NPU, UNSUP = Verdict.NPU, Verdict.UNSUPPORTED
_NPU_OPS = ["Conv", "ConvTranspose", "Relu", "LeakyRelu", "Sigmoid", "Add", "Sub", "Mul", "Div", "Concat", "MaxPool",
            "AveragePool", "GlobalAveragePool", "BatchNormalization", "Gemm", "MatMul", "Reshape", "Flatten", "Resize", "Clip"]


def _build(name: str, title: str) -> Profile:
    ops = {op: OpSupport(op, NPU) for op in _NPU_OPS}
    for op in ["TopK", "GridSample", "GatherElements", "Mod"]:
        ops[op] = OpSupport(op, UNSUP, reason=f"{op} operation is unsupported")
    return Profile(name=name, title=title, vendor="Hailo", summary="", fallback="none", limits={}, ops=ops,
                   unknown=OpSupport("*", UNSUP, reason="{op} is not in the Hailo operator table"))


def profiles() -> dict[str, Profile]:
    return {"hailo8": _build("hailo8", "Hailo-8 (Hailo Dataflow Compiler 3.x)"),
            "hailo8l": _build("hailo8l", "Hailo-8L (Hailo Dataflow Compiler 3.x)")}
