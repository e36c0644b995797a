"""A plain `pip install` of the built wheel in a fresh virtualenv (no torch, no LiteRT, nothing of the dev venv) places
an ONNX model on ethos-u55-256 with Vela: the measured path needs only npufit's declared dependencies.

Slow (a few minutes: the wheel's dependencies are installed from the package index, cached by pip after the first
run); skipped with the reason when the index cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _index_reachable(folder: Path) -> bool:
    r = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), "six==1.17.0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode == 0


def test_wheel_in_a_fresh_venv_measures_with_vela(tmp_path):
    from .test_cross_verb_agreement import _model

    if not _index_reachable(tmp_path / "probe"):
        pytest.skip("the package index cannot be reached: a fresh install needs it")
    wheels = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (whl,) = wheels.glob("npufit-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(whl)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    listed = subprocess.run([str(venv / "bin" / "pip"), "list"], capture_output=True, text=True, env=env).stdout
    assert "torch" not in listed and "ai-edge-litert" not in listed  # nothing optional came along
    m = _model(tmp_path / "model.onnx", "AveragePool")
    r = subprocess.run(
        [str(venv / "bin" / "npufit"), "check", str(m), "--target", "ethos-u55-256"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "placement measured by Vela 5.2.0 (compile" in r.stdout, r.stdout[:2000]
    assert "npu 3  cpu 1" in r.stdout  # the 9x9 SAME average pool runs on the CPU, as Vela says
    doctor = subprocess.run([str(venv / "bin" / "npufit"), "doctor"], capture_output=True, text=True, env=env)
    assert "pip install 'npufit[torch]'" in doctor.stdout  # an install step is printed as written
