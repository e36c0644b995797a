"""npufit: will this network run on the NPU? check, fix, split, quantize, compile, bench.

The library API mirrors the CLI one-to-one: `npufit.check(model, target)` is `npufit check`.
Heavy modules are imported lazily so `import npufit` stays fast and SDK-free.
"""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"

# Recent ONNX Runtime builds write a device id and a usage database under ~/.cache/Microsoft on every import
# unless this is set before it loads: npufit writes nothing outside the output it is asked for. A user's own
# setting wins; vendor tools started from npufit inherit it.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

_API = {
    "check": ("npufit.compilers.measure", "check"),  # the prediction (npufit.check.check) + --measure
    "scan": ("npufit.scan", "scan"),
    "load": ("npufit.graph", "load"),
    "get_profile": ("npufit.targets", "get_profile"),
    "split": ("npufit.split", "split"),
    "run": ("npufit.split", "run"),
    "fix": ("npufit.rewrite", "fix"),
    "quantize": ("npufit.quantize", "quantize"),
    "compile": ("npufit.compilers", "compile_model"),
    "bench": ("npufit.bench", "bench"),
    "probe": ("npufit.probe", "probe"),
    "compare": ("npufit.check.compare", "compare"),
    "env": ("npufit.envs", "env"),
    # verbs whose name is also a subpackage: the module itself is callable (npufit/util/callable_module.py)
    "pipeline": ("npufit.pipeline", None),
    "targets": ("npufit.targets", None),
    "report": ("npufit.report", None),
    "doctor": ("npufit.doctor", None),
}


def __getattr__(name: str):
    if name in _API:
        import importlib

        mod, attr = _API[name]
        module = importlib.import_module(mod)
        return module if attr is None else getattr(module, attr)
    raise AttributeError(f"module 'npufit' has no attribute {name!r}")


__all__ = ["__version__", *_API]
