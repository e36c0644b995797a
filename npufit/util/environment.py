"""What a result depends on besides the model: machine, OS, Python and the versions of the tools involved."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from importlib import metadata

PACKAGES = (
    "npufit",
    "numpy",
    "onnx",
    "onnxruntime",
    "onnxruntime-gpu",
    "onnx-ir",
    "onnxscript",
    "torch",
    "openvino",
    "ethos-u-vela",
    "rknn-toolkit2",
    "hailo-dataflow-compiler",
    "tensorrt",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus() -> list[str]:
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []


def environment() -> dict:
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    mem = None
    try:
        import psutil

        mem = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:
        pass
    return {
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "gpus": _gpus(),
        "python": platform.python_version(),
        "packages": versions,
    }
