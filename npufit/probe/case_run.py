"""One probe case, start to finish: build the torch module, export it, check it, optionally compile it.

Runs inside a worker process (see runner.py); returns a plain dict so it crosses the process
boundary. An export failure is a result, not an exception: PyTorch refusing the model is exactly
what seed 000 recorded for `view`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..check import predict
from ..util.io import private_tempdir
from ..zoo.export import export_onnx
from .catalogue import BY_ID
from .measure import SYMBOL, measure


def warm_up() -> None:
    """Import the heavy parts once per worker, so the first case's timeout does not pay for them."""
    import torch

    torch.set_num_threads(1)  # one core per worker: `--jobs` is the parallelism
    import onnx  # noqa: F401


def case_of(task: dict[str, Any]):
    """The catalogue case, or a user's own Case object carried in the task."""
    return task.get("case_obj") or BY_ID[task["case"]]


def base_result(task: dict[str, Any]) -> dict[str, Any]:
    case = case_of(task)
    return {
        "id": case.variant_id(**task.get("params", {})),
        "case": case.id,
        "params": task.get("params", {}),
        "family": case.family,
        "label": case.label,
        "seed": case.seed,
        "ops": list(case.ops),
        "opset": max(task["opset"], case.min_opset),
        "onnx_ops": [],
        "predicted": {},
        "measured": None,
        "notes": [],
        "seconds": 0.0,
    }


def run_case(task: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = base_result(task)
    case = case_of(task)
    if case.min_opset > task["opset"]:
        res["notes"].append(f"exported at opset {case.min_opset}: the exporter has no {', '.join(case.ops)} below it")
    out_dir = task.get("out_dir")
    with private_tempdir("probe") as tmp:
        path = Path(out_dir) / "cases" / f"{_safe(res['id'])}.onnx" if out_dir else Path(tmp) / "case.onnx"
        err = _export(case, task.get("params", {}), res["opset"], path)
        if err is not None:
            res["predicted"] = {
                "status": "export_failed",
                "symbol": SYMBOL["export_failed"],
                "error": err,
                "fix": [case.workaround] if case.workaround else [],
            }
        else:
            res["model"] = str(path) if out_dir else None
            _predict(res, path, task["target"])
            if task.get("compiler"):
                res["measured"] = measure(path, task["target"], task["compiler"], task.get("compile_options") or {})
    res["seconds"] = round(time.perf_counter() - t0, 3)
    return res


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in name)


def _export(case, params: dict, opset: int, path: Path) -> str | None:

    try:
        module, inputs = case.build(**params)
        export_onnx(module, inputs, path, opset)
    except Exception as e:  # the exporter (or PyTorch itself) refused the model: that is the verdict
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"{type(e).__name__}: {first[:300]}"
    return None


def _predict(res: dict, path: os.PathLike, target: str) -> None:

    # Probe cases are float torch modules; on an int8-only target (Ethos-N/U) check's default judges their int8
    # conversion, which is what its compiler receives (npufit compile converts first).
    report = predict(path, target)
    running = [n for n in report.nodes if n.verdict.value != "folded"]
    res["onnx_ops"] = sorted({n.op_type for n in running})
    failing = []
    for n in report.failing:
        failing.append(
            {
                "node": n.name,
                "op_type": n.op_type,
                "verdict": n.verdict.value,
                "rules": [r.rule for r in n.reasons],
                "reasons": [r.sentence() for r in n.reasons],
                "fix": [f for r in n.reasons for f in r.fix],
                "fix_rules": [f for r in n.reasons for f in r.fix_rules],
                # what each rule rests on, by description (the report's evidence section)
                "sources": ["; ".join(report.evidence.get(r.rule, {}).get("sources", ())) for r in n.reasons],
            }
        )
    verdicts = {n.verdict.value for n in running}
    status = "unsupported" if "unsupported" in verdicts else "cpu" if "cpu" in verdicts else "npu"
    res["predicted"] = {
        "status": status,
        "symbol": SYMBOL[status],
        "failing": failing,
        "composites": sorted({n.composite for n in report.nodes if n.composite}),
        "counts": report.counts,
        "nodes": {n.name: n.verdict.value for n in running},
    }
