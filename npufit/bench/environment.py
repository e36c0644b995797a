"""What a benchmark ran on, recorded so two result files can be judged comparable."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import __version__
from ..runtimes.chain import is_plan_dir, plan_files
from ..util.readers import sha256_file

# keys of the environment that must match for two results to be compared without a caveat
COMPARABLE_KEYS = ("cpu_model", "cpu_logical_cores", "gpu", "os")


def model_identity(path: str | os.PathLike) -> dict[str, Any]:
    """sha256 of a model file (plus its external-data file), or of a split plan (plan.json + stage files)."""
    p = Path(path)
    if is_plan_dir(p):
        files = {f.relative_to(p).as_posix(): sha256_file(f) for f in plan_files(p) if f.is_file()}
        combined = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in files.items()).encode()).hexdigest()
        return {"path": str(p), "kind": "plan", "sha256": combined, "files": files}
    d: dict[str, Any] = {
        "path": str(p),
        "kind": p.suffix.lower().lstrip(".") or "file",
        "sha256": sha256_file(p),
        "bytes": p.stat().st_size,
    }
    data = p.with_name(p.name + ".data")
    # weights saved as external data change the model as much as the graph does; os.path.isfile, not Path.is_file:
    # a 255-byte model name has no '.data' sibling (ENAMETOOLONG), which is not an error
    if os.path.isfile(data):
        d["external_data_sha256"] = sha256_file(data)
    return d


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            return subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def gpus() -> list[dict[str, str]]:
    """NVIDIA GPUs as nvidia-smi reports them (name, driver, memory); [] when there is no nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name,driver_version,memory.total,pci.bus_id", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out.strip().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) >= 3:
            rows.append(
                {"name": parts[0], "driver": parts[1], "memory": parts[2], "bus_id": parts[3] if len(parts) > 3 else ""}
            )
    return rows


def capture(runtime_versions: dict[str, str | None] | None = None) -> dict[str, Any]:
    import numpy as np
    import psutil

    g = gpus()
    env: dict[str, Any] = {
        "npufit_version": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_physical_cores": psutil.cpu_count(logical=False),
        "cpu_logical_cores": psutil.cpu_count(logical=True),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_total_bytes": psutil.virtual_memory().total,
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "gpu": ", ".join(x["name"] for x in g) or None,
        "gpus": g,
        "runtime_versions": {k: v for k, v in (runtime_versions or {}).items()},
    }
    return env
