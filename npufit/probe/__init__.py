"""`npufit probe`: one tiny model per op -> the target profile (predicted) and real compilers (measured).

probe(target, ...) exports every catalogue case with PyTorch's TorchScript exporter, checks it
against the profile, optionally compiles it with an installed vendor compiler, and returns a
ProbeReport (support matrix in seed 000's ✅/❌ layout, JSON, sweep boundaries, drift table).
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import NpufitError
from ..targets import get_profile
from ..util.io import atomic_write_json, atomic_write_text
from ..util.readers import read_json
from ..vocab import EXECUTOR
from .catalogue import BY_ID, CASES, Case, select, sweep_variants
from .measure import validate_compiler
from .report import RECORD_SCHEMA, ProbeReport
from .runner import run_tasks

DEFAULT_TIMEOUT_S = 120.0


def probe(
    target: str | None,
    opset: int = 11,
    cases: str | Sequence[Case] | None = None,
    compiler: str | None = None,
    output: str | os.PathLike | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    sweep: bool = False,
    compile_options: dict[str, Any] | None = None,
    replay: str | os.PathLike | None = None,
    executor: str = EXECUTOR,
    address: str | None = None,
) -> ProbeReport:
    """Export one tiny PyTorch model per op, judge each with `target`'s profile and, with `compiler`, compile it with
    the real vendor compiler: a support matrix, predicted and measured.

    The library side of `npufit probe --target T`. Needs torch.

    Parameters
    ----------
    target : str or None
        The target profile; None only with `replay` (the recorded run's target).
    opset : int
        ONNX opset of the exports.
    cases : str or sequence of Case, optional
        Glob patterns over the catalogue (ids, families, groups such as "hailo-8-op-test"), or your own Case objects
        (their builders must be importable module-level functions: cases run in worker processes).
    compiler : str, optional
        Also compile every case with this installed compiler ("vela", "rknn", "ethos-n").
    output : str or os.PathLike, optional
        A folder for the matrix (Markdown), the JSON and the drift table.
    jobs : int, optional
        Worker processes.
    timeout : float
        Seconds per case; a case that overruns gets the "timeout" verdict.
    sweep : bool
        Walk each case's parameter grid and report where the verdict changes.
    compile_options : dict, optional
        Options passed to the compiler (as `npufit.compile`'s).
    replay : str or os.PathLike, optional
        A <target>-measured.json of an earlier compiler run: compare the prediction with it without the compiler.
        Target, cases and sweep default to the recorded run's.
    executor : str
        "pool" (default, local processes), "inprocess" or "ray".
    address : str, optional
        A Ray cluster (executor="ray"); cases that need a vendor compiler's environment run only on nodes tagged
        with it.

    Returns
    -------
    ProbeReport
        Per-case verdicts (predicted, measured), sweeps and drift; `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> p = npufit.probe("hailo8", cases="conv*,pooling")
    >>> p  # doctest: +SKIP
    <ProbeReport hailo8: 14 cases (npu 13, unsupported 1)>
    """

    record = None
    if replay is not None:
        if compiler:
            raise NpufitError("--replay compares with a recorded compiler run: leave out --compiler")
        record = load_record(replay)
        target = target or record["target"]
        if target != record["target"]:
            raise NpufitError(f"--replay {replay}: recorded for target {record['target']}, not {target}")
        base = sorted({cid.split("[")[0] for cid in record["cases"]} & set(BY_ID))
        if cases is None:
            if not base:
                raise NpufitError(f"--replay {replay}: no recorded case is in this catalogue")
            cases = ",".join(base)
        sweep = sweep or any("[" in cid for cid in record["cases"])
        opset = record.get("opset", opset)
    profile = get_profile(target or "hailo8")
    if record is not None and record["target"] != profile.name:
        raise NpufitError(f"--replay {replay}: recorded for target {record['target'][:80]!r}, not {profile.name}")
    if importlib.util.find_spec("torch") is None:
        raise NpufitError("npufit probe builds its cases with PyTorch: pip install 'npufit[torch]' (torch==2.13.0)")
    if not 7 <= int(opset) <= 20:
        raise NpufitError(f"--opset {opset}: the TorchScript exporter supports opsets 7 to 20")
    if timeout <= 0:
        raise NpufitError(f"--timeout {timeout:g}: must be a positive number of seconds")
    if compiler:
        validate_compiler(compiler, profile)
    chosen = list(cases) if cases is not None and not isinstance(cases, str) else select(cases)
    if not chosen:
        raise NpufitError("no probe cases to run")
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    out_dir = Path(output) if output else None
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise NpufitError(f"--output {out_dir}: exists and is not a directory")
    tasks = []
    for case in chosen:
        variants = [{}] + (sweep_variants(case) if sweep else [])
        for params in variants:
            tasks.append(
                {
                    "case": case.id,
                    "case_obj": None if BY_ID.get(case.id) is case else case,
                    "params": params,
                    "opset": int(opset),
                    "target": profile.name,
                    "compiler": compiler,
                    "compile_options": compile_options or {},
                    "out_dir": str(out_dir) if out_dir else None,
                }
            )

    t0 = time.perf_counter()
    results = run_tasks(tasks, min(jobs, len(tasks)), float(timeout), f"probe {profile.name}", executor, address)
    report = ProbeReport(
        profile.name,
        profile.title,
        int(opset),
        results,
        compiler,
        min(jobs, len(tasks)),
        float(timeout),
        time.perf_counter() - t0,
        sweep,
    )
    if record is not None:
        report = report.replay(record)
    if out_dir is not None:
        write_outputs(report, out_dir)
    return report


def write_outputs(report: ProbeReport, out_dir: Path) -> dict[str, str]:
    """matrix.md, probe.json and drift.json under out_dir (atomically), and with a compiler the compact
    measured.json (see ProbeReport.measured_record); the case models are in out_dir/cases."""

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "matrix": out_dir / f"{report.target}-matrix.md",
        "json": out_dir / f"{report.target}-probe.json",
        "drift": out_dir / f"{report.target}-drift.json",
    }
    if report.compiler and not report.record:  # a replay's measured side is the record it read
        files["measured"] = out_dir / f"{report.target}-measured.json"
    report.files = {k: str(v) for k, v in files.items()}
    if "measured" in files:
        atomic_write_json(files["measured"], report.measured_record())
    atomic_write_text(files["matrix"], report.to_markdown())
    atomic_write_json(
        files["drift"],
        {
            "schema": "npufit.probe.drift/1",
            "target": report.target,
            "compiler": report.compiler,
            "drift": report.drift(),
        },
    )
    atomic_write_text(files["json"], report.to_json() + "\n")
    return report.files


def load_record(path: str | os.PathLike) -> dict[str, Any]:
    """A measured record (ProbeReport.measured_record) from disk, or one clear error."""

    data = read_json(path, "--replay record")  # regular file, size and depth budget
    if (
        not isinstance(data, dict)
        or data.get("schema") != RECORD_SCHEMA
        or not isinstance(data.get("cases"), dict)
        or not isinstance(data.get("target"), str)
        or not data["target"]
        or not isinstance(data.get("compiler"), str)
        or not isinstance(data.get("opset", 11), int)
        or isinstance(data.get("opset"), bool)
        or not all(
            isinstance(v, dict) and isinstance(v.get("status"), str) and isinstance(v.get("symbol"), str)
            for v in data["cases"].values()
        )
    ):
        raise NpufitError(
            f"--replay {path}: not a {RECORD_SCHEMA} file (write one with 'npufit probe --compiler ... --output DIR')"
        )
    data["path"] = str(path)
    return data


__all__ = ["probe", "ProbeReport", "Case", "CASES", "BY_ID", "select", "write_outputs"]
