"""A private folder of pinned packages for a builder's child process (`pip install --no-deps --target`).

Model builders need packages the project's environment must not hold: torchvision's PyPI wheel is a CUDA build whose
missing C++ ops break every `transformers` import beside the CPU torch, and Ultralytics would pull it in. The builders
run in a child process with this folder first on PYTHONPATH; the project's own torch is never replaced.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


class Unavailable(RuntimeError):
    """The private packages could not be installed (no registry, a wheel missing for this platform)."""


def private_site(folder: Path, packages: list[str], probe: str, timeout_s: float = 900) -> Path:
    """`folder` holding `packages` (pip specs), installed once; `probe` is a path inside it that proves the install."""
    if (folder / probe).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="site-", dir=folder.parent))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp), *packages]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0 or not (tmp / probe).exists():
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Unavailable(f"could not install {' '.join(packages)}: {tail[0][:200]}")
    if not folder.exists():
        tmp.rename(folder)
    return folder
