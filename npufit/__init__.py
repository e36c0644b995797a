"""npufit: will this network run on the NPU? check, fix, split, quantize, compile, bench.

The library API mirrors the CLI one-to-one: `npufit.check(model, target)` is `npufit check`. Every verb is a plain
function of `npufit.verbs`, imported on first use so that `import npufit` stays fast and free of numpy, onnx and
vendor SDKs.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (10 ms); type checkers read it alike

__version__ = "0.1.0"

# Recent ONNX Runtime builds write a device id and a usage database under ~/.cache/Microsoft on every import
# unless this is set before it loads: npufit writes nothing outside the output it is asked for. A user's own
# setting wins; vendor tools started from npufit inherit it.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# npufit.verbs.__all__, named here so that looking a verb up imports nothing else (tests/test_library_verbs.py)
__all__ = [
    "__version__",
    "bench",
    "check",
    "compare",
    "compile",
    "doctor",
    "env",
    "explain",
    "fix",
    "get_profile",
    "load",
    "pipeline",
    "probe",
    "quantize",
    "report",
    "run",
    "scan",
    "split",
    "targets",
    "validate_pipeline",
]
VERBS = frozenset(__all__[1:])

if TYPE_CHECKING:
    from .verbs import (
        bench,
        check,
        compare,
        compile,
        doctor,
        env,
        explain,
        fix,
        get_profile,
        load,
        pipeline,
        probe,
        quantize,
        report,
        run,
        scan,
        split,
        targets,
        validate_pipeline,
    )


def __getattr__(name: str):
    if name in VERBS:  # by name, not an import statement: the root sits below every layer (conventions.md)
        value = globals()[name] = getattr(importlib.import_module(f"{__name__}.verbs"), name)
        return value
    raise AttributeError(f"module 'npufit' has no attribute {name!r}")


class _Root(types.ModuleType):
    """Ten verbs share their name with a subpackage (npufit.check, npufit.split, ...). Python binds a subpackage
    on its parent when it is first imported, which would hide the verb; here a verb's name stays the verb's, and
    the subpackage is reached by import (`from npufit.check.engine import predict`). docs/dev/conventions.md."""

    def __setattr__(self, name: str, value) -> None:
        if name in VERBS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Root
