"""What is installed, and what each optional piece enables in npufit."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata

from . import __version__
from .compilers import status as compiler_status
from .runtimes import status as runtime_status


@dataclass
class Component:
    name: str
    available: bool
    version: str = ""
    enables: str = ""
    install: str = ""
    detail: str = ""

    def to_dict(self) -> dict:
        return self.__dict__.copy()


@dataclass
class DoctorReport:
    core: list[Component] = field(default_factory=list)
    compilers: list[Component] = field(default_factory=list)
    runtimes: list[Component] = field(default_factory=list)

    def __repr__(self) -> str:
        def n(parts) -> str:
            return f"{sum(c.available for c in parts)}/{len(parts)}"

        return (
            f"<DoctorReport core {n(self.core)}, compilers {n(self.compilers)}, runtimes {n(self.runtimes)} available>"
        )

    def to_dict(self) -> dict:

        return {
            "schema": "npufit.doctor/1",
            "npufit_version": __version__,
            "core": [c.to_dict() for c in self.core],
            "compilers": [c.to_dict() for c in self.compilers],
            "runtimes": [c.to_dict() for c in self.runtimes],
        }


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _pkg(name: str, dist: str, enables: str, install: str) -> Component:
    v = _dist_version(dist)
    return Component(name, v is not None, v or "", enables, "" if v else install)


def _from_status(items) -> list[Component]:
    out = []
    for d in items:
        out.append(
            Component(
                d.get("name", "?"),
                bool(d.get("available")),
                str(d.get("version") or ""),
                d.get("enables", ""),
                d.get("install", ""),
                d.get("detail", d.get("reason", "")),
            )
        )
    return out


def _nvidia() -> Component:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return Component(
            "CUDA GPU",
            False,
            "",
            "ort-cuda / ort-trt / tensorrt benchmarks",
            "an NVIDIA GPU with its driver (nvidia-smi)",
        )
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return Component(
        "CUDA GPU", bool(out), out.splitlines()[0] if out else "", "ort-cuda / ort-trt / tensorrt benchmarks", ""
    )


def diagnose() -> DoctorReport:
    rep = DoctorReport()
    rep.core.append(Component("python", True, platform.python_version(), "everything", "", sys.executable))
    rep.core.append(_pkg("onnx", "onnx", "loading, checking, splitting ONNX models", "pip install onnx"))
    ort = _pkg(
        "onnxruntime", "onnxruntime", "verification (fix/split), quantize, bench ort-cpu", "pip install onnxruntime"
    )
    if ort.available:
        try:
            import onnxruntime

            ort.detail = "providers: " + ", ".join(onnxruntime.get_available_providers())
        except Exception as e:  # a broken install is worth reporting, not crashing on
            ort.available, ort.detail = False, f"import failed: {e}"
    rep.core.append(ort)
    rep.core.append(_pkg("onnx-ir", "onnx-ir", "npufit fix (rewrites)", "pip install onnx-ir"))
    rep.core.append(_pkg("onnxscript", "onnxscript", "npufit fix (pattern rewriter)", "pip install onnxscript"))
    rep.core.append(_pkg("tflite", "tflite", "reading .tflite models", "pip install tflite"))
    rep.core.append(
        _pkg(
            "torch", "torch", "probe, pipeline train/export, zoo models", "pip install 'npufit[torch]'  (torch==2.13.0)"
        )
    )
    rep.core.append(
        _pkg(
            "transformers",
            "transformers",
            "zoo: RT-DETR / MobileNetV2 / ViT / BERT test models",
            "pip install transformers",
        )
    )
    rep.core.append(_pkg("matplotlib", "matplotlib", "bench plots, HTML report charts", "pip install matplotlib"))

    rep.compilers = _from_status(compiler_status())
    rep.runtimes = _from_status(runtime_status())
    rep.runtimes.append(_nvidia())
    return rep
