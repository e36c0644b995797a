"""Every verb of npufit as a plain function: `npufit.check(model, target)` is `npufit check MODEL --target T`.

Each verb is defined once, in the package of its concept, and named here; `npufit/__init__.py` hands these
functions out as `npufit.<verb>` (on first use, so `import npufit` stays free of numpy, onnx and vendor SDKs).
Where a verb shares its name with a subpackage (check, split, quantize, bench, probe, scan, pipeline, report,
targets, doctor), `npufit.<verb>` is the function; the subpackage is imported by its full name
(`from npufit.check.engine import predict`). docs/dev/conventions.md says why.

    pipeline(path, ...)           npufit pipeline run PIPELINE.yaml
    validate_pipeline(path)       npufit pipeline validate PIPELINE.yaml
    targets(name=None)            npufit targets [show NAME]
    doctor()                      npufit doctor
    env(action, name)             npufit env list|install|remove [NAME]
    load(path)                    the Graph every verb reads (no CLI verb of its own)
    get_profile(name)             a target's Profile (npufit targets show NAME)
"""

from __future__ import annotations

from .bench import bench
from .check.compare import compare as _compare
from .check.explain import explain
from .compilers import compile_model as compile
from .doctor import diagnose as doctor
from .envs import env
from .graph import load
from .pipeline import run_pipeline as pipeline
from .pipeline import validate as validate_pipeline
from .placement import check, reads_placement, with_placer
from .probe import probe
from .quantize import quantize as _quantize
from .report import report
from .rewrite import fix as _fix
from .scan import scan
from .split import run
from .split import split as _split
from .targets import get_profile, targets

# the verbs whose work lives below the placement take it as a parameter; here they are handed the run's placement
split = reads_placement(_split)
fix = reads_placement(_fix)
compare = with_placer(_compare, takes_shapes=True)
quantize = with_placer(_quantize, takes_shapes=False)

__all__ = [
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
