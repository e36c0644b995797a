"""Call a worker script inside an isolated env: request.json in, response.json out, log captured.

Workers (npufit/envs/workers/*.py) import only the standard library and the vendor SDK: the env has
its own numpy/onnx and must not import npufit."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import NpufitError
from ..util.readers import read_json
from . import env_python, env_status, spec
from .process import ToolRun, run_tool

WORKERS = Path(__file__).parent / "workers"


def call(
    env: str, worker: str, request: dict, workdir: Path, log_path: Path, timeout_s: float | None = None
) -> tuple[dict, ToolRun]:
    if not env_status(env)["installed"]:
        raise NpufitError(f"the {spec(env).title} environment is not installed: run 'npufit env install {env}'")
    workdir.mkdir(parents=True, exist_ok=True)
    req, resp = workdir / f"{worker}.request.json", workdir / f"{worker}.response.json"
    req.write_text(json.dumps(request, indent=2))
    if resp.exists():
        resp.unlink()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    clean["PYTHONUNBUFFERED"] = "1"  # keep the log in order when the toolkit's C++ and Python both print
    run = run_tool(
        [str(env_python(env)), str(WORKERS / f"{worker}.py"), str(req), str(resp)],
        log_path,
        cwd=workdir,
        env=clean,
        timeout_s=timeout_s,
        title=f"{spec(env).title}: {worker.replace('_', ' ')}",
    )

    try:
        response = read_json(resp, "worker response")
        if not isinstance(response, dict):
            raise NpufitError(f"{resp}: not an object")
    except NpufitError:
        response = {
            "ok": False,
            "error": run.killed or f"worker exited with code {run.returncode} without an answer",
            "crashed": True,
        }
    return response, run
