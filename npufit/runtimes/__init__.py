"""Runtimes behind one runner protocol (activate / prepare+call / infer / deactivate), imported lazily.

Names used by `npufit bench --runtime`: ort-cpu, ort-cuda, ort-trt, tensorrt, openvino, hailort, chain.
The RKNN simulator (rknn-toolkit2 on a PC) is deliberately NOT a runtime here: it executes on the host CPU
and its timings say nothing about the RK3588 NPU; it is for accuracy checks only.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from importlib import metadata
from typing import Any

from ..errors import NpufitError
from .base import BOUNDARY_CHAIN, BOUNDARY_DEVICE, BOUNDARY_HOST, BOUNDARY_TEXT, InputSpec, Runner, RuntimeUnavailable

# name -> (module, class). Modules import their SDK only in activate(), so listing them costs nothing.
RUNTIMES: dict[str, tuple[str, str]] = {
    "ort-cpu": ("npufit.runtimes.ort", "OrtRunner"),
    "ort-cuda": ("npufit.runtimes.ort", "OrtCudaRunner"),
    "ort-trt": ("npufit.runtimes.ort", "OrtTensorrtRunner"),
    "tensorrt": ("npufit.runtimes.tensorrt", "TensorrtRunner"),
    "openvino": ("npufit.runtimes.openvino", "OpenVinoRunner"),
    "hailort": ("npufit.runtimes.hailort", "HailoRunner"),
    "chain": ("npufit.runtimes.chain", "ChainBenchRunner"),
}

RKNN_NOTE = (
    "the RKNN simulator (rknn-toolkit2 on a PC) runs on the host CPU: use it for accuracy, never as a "
    "benchmark of the RK3588 NPU"
)

__all__ = [
    "RUNTIMES",
    "get_runner",
    "parse_runtimes",
    "status",
    "Runner",
    "RuntimeUnavailable",
    "InputSpec",
    "BOUNDARY_HOST",
    "BOUNDARY_DEVICE",
    "BOUNDARY_CHAIN",
    "BOUNDARY_TEXT",
    "RKNN_NOTE",
]


def runner_class(name: str) -> type[Runner]:
    if name not in RUNTIMES:
        if name in ("rknn", "rknn-sim", "rknn-simulator"):
            raise NpufitError(f"'{name}' is not a benchmark runtime: {RKNN_NOTE}")
        raise NpufitError(f"unknown runtime '{name}' (choose from {', '.join(RUNTIMES)})")
    mod, cls = RUNTIMES[name]
    return getattr(importlib.import_module(mod), cls)


def get_runner(name: str, model, **kwargs: Any) -> Runner:
    return runner_class(name)(model, **kwargs)


def parse_runtimes(spec: str | list[str] | tuple[str, ...] | None) -> list[str]:
    names = spec.split(",") if isinstance(spec, str) else list(spec or [])
    names = [n.strip().lower() for n in names if n and n.strip()]
    for n in names:
        runner_class(n)  # raises one clear sentence for an unknown name
    return list(dict.fromkeys(names))


def _dist(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _ort_providers() -> list[str]:
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())


def status() -> list[dict[str, Any]]:
    """One dict per runtime for `npufit doctor`: name, available, version, enables, install, detail.

    Cheap: no session is built and no device is opened; `available` means "installed", a missing GPU or NPU
    still shows up at bench time as a skip with its reason."""
    provs = _ort_providers()
    ort_v = _dist("onnxruntime") or _dist("onnxruntime-gpu") or ""
    trt_v = _dist("tensorrt") or _dist("tensorrt-cu12") or _dist("tensorrt-cu13") or ""
    hailo_py = importlib.util.find_spec("hailo_platform") is not None
    hailo_cli = shutil.which("hailortcli")
    return [
        {
            "name": "ort-cpu",
            "available": "CPUExecutionProvider" in provs,
            "version": ort_v,
            "enables": "bench --runtime ort-cpu",
            "install": "pip install onnxruntime",
            "detail": "",
        },
        {
            "name": "ort-cuda",
            "available": "CUDAExecutionProvider" in provs,
            "version": ort_v,
            "enables": "bench --runtime ort-cuda (NVIDIA GPU)",
            "install": "pip install onnxruntime-gpu (+ CUDA, cuDNN)",
            "detail": "" if "CUDAExecutionProvider" in provs else "this onnxruntime build has no CUDA provider",
        },
        {
            "name": "ort-trt",
            "available": "TensorrtExecutionProvider" in provs,
            "version": ort_v,
            "enables": "bench --runtime ort-trt (NVIDIA GPU)",
            "install": "pip install onnxruntime-gpu tensorrt",
            "detail": "" if "TensorrtExecutionProvider" in provs else "this onnxruntime build has no TensorRT provider",
        },
        {
            "name": "tensorrt",
            "available": bool(trt_v),
            "version": trt_v,
            "enables": "bench --runtime tensorrt (engine build + run, NVIDIA GPU)",
            "install": "pip install tensorrt",
            "detail": "",
        },
        {
            "name": "openvino",
            "available": bool(_dist("openvino")),
            "version": _dist("openvino") or "",
            "enables": "bench --runtime openvino (CPU)",
            "install": "pip install openvino",
            "detail": "",
        },
        {
            "name": "hailort",
            "available": hailo_py,
            "version": _dist("hailort") or "",
            "enables": "bench --runtime hailort (.hef on a Hailo-8/8L)",
            "install": "HailoRT driver + Python wheel from the Hailo Developer Zone (not on PyPI)",
            "detail": f"hailortcli: {hailo_cli}" if hailo_cli else "hailortcli not on PATH",
        },
        {
            "name": "chain",
            "available": True,  # part of npufit
            "version": "",
            "enables": "bench PLAN_DIR (a split plan end to end)",
            "install": "part of npufit (npufit split)",
            "detail": "",
        },
        {
            "name": "rknn-simulator",
            "available": False,
            "version": _dist("rknn-toolkit2") or "",
            "enables": "NOT a benchmark",
            "install": "",
            "detail": RKNN_NOTE,
        },
    ]
