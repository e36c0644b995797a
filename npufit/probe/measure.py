"""The measured side of a probe case: what a real vendor compiler did with it.

Talks to npufit.compilers through its public protocol: `compile_model(path, target, **options)`
returning a CompileResult (ok, error, placement: [Placement(node, op, device, reason)]) and
`status()` saying which compilers are installed. Nothing here imports a vendor SDK.
"""

from __future__ import annotations

import os
from typing import Any

from .. import compilers, toolchains
from ..compilers import compile_model
from ..errors import NpufitError
from ..util.io import private_tempdir

# a case's status -> its mark in the support matrix (predicted and measured alike)
SYMBOL = {
    "npu": "✅",
    "cpu": "⚠️",
    "unsupported": "❌",
    "export_failed": "❌",
    "timeout": "⏱",
    "error": "❌",
    "failed": "❌",
    "unmeasured": "–",
}


def compiler_state(name: str) -> tuple[bool, str]:
    """(installed, why not) for one compiler, from npufit.compilers.status()."""
    try:
        states = compilers.status()
    except Exception as e:  # a broken vendor environment must not crash the probe
        return False, f"compiler status failed ({type(e).__name__}: {e})"
    tc = toolchains.find(name)  # --compiler NAME (a Profile.compiler) is listed by its status name
    key = tc.status_name if tc is not None else name
    if isinstance(states, dict):
        entry = states.get(key)
    else:  # a list of {"name": ..., "available": ...}
        entry = next((s for s in states if isinstance(s, dict) and s.get("name") == key), None)
    if entry is None:
        return False, f"npufit.compilers knows no compiler '{name}'"
    if isinstance(entry, dict):
        ok = bool(entry.get("available", entry.get("installed", entry.get("ok", False))))
        why = "; ".join(str(entry[k]) for k in ("detail", "install") if entry.get(k)) or "not installed"
        return ok, "" if ok else str(why)
    return bool(entry), "" if entry else "not installed"


def validate_compiler(name: str, profile) -> None:
    """Refuse, with one sentence, a compiler that cannot compile the profile's target or is not installed."""
    if toolchains.find(name) is None:
        raise NpufitError(f"--compiler '{name}': choose one of {', '.join(toolchains.names())}")
    if name != profile.compiler:
        raise NpufitError(
            f"--compiler {name} does not compile target '{profile.name}' (its compiler is {profile.compiler})"
        )
    ok, why = compiler_state(name)
    if not ok:
        raise NpufitError(f"--compiler {name} is not usable here: {why} (see 'npufit doctor')")


def measure(path: os.PathLike, target: str, compiler: str, options: dict[str, Any]) -> dict[str, Any]:
    """Compile one case; return its measured status and per-node placement (a plain dict)."""
    with private_tempdir("probe-compile") as tmp:
        try:
            result = compile_model(
                str(path),
                target,
                out_dir=options.get("out_dir") or tmp,
                **{k: v for k, v in options.items() if k != "out_dir"},
            )
        except NpufitError as e:  # set-up problem (converter, environment): nothing was measured
            return {"compiler": compiler, "status": "unmeasured", "symbol": "–", "error": e.message[:400]}
        except Exception as e:  # a bug on our side of the compiler protocol: not a measurement either
            return {
                "compiler": compiler,
                "status": "unmeasured",
                "symbol": "–",
                "error": f"{type(e).__name__}: {e}"[:400],
            }
    return summarise(result, compiler)


def summarise(result: Any, compiler: str) -> dict[str, Any]:
    placement = {p.node: p.device for p in getattr(result, "placement", [])}
    reasons = {p.node: p.reason for p in getattr(result, "placement", []) if getattr(p, "reason", "")}
    if not getattr(result, "ok", False):
        status = "failed"
    elif any(d == "cpu" for d in placement.values()):
        status = "cpu"
    else:
        status = "npu"
    return {
        "compiler": getattr(result, "compiler", compiler),
        "version": getattr(result, "compiler_version", None),
        "status": status,
        "symbol": SYMBOL[status],
        "error": (getattr(result, "error", None) or "")[:400],
        "placement": placement,
        "reasons": reasons,
        "wall_s": getattr(result, "wall_s", None),
    }
