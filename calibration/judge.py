"""The two sides of a record: npufit's verdicts on a model (today's profile, or one fitted without a held-out family)
and the real compile the record is made from (RKNN-Toolkit2 for a Rockchip SoC, Vela through npufit's converter for
Ethos-U, the Ethos-N support library)."""

from __future__ import annotations

from pathlib import Path

from npufit.targets.calibration import FAMILIES


def profile_for(target: str, held_out: str | None = None, cases: bool = True, families=FAMILIES):
    """Today's profile; with `held_out`, the profile fitted without that family's records: calibrated conditions
    name the families whose records show them (limits['fit_families'] says which may be used) and the synthetic
    cases that show them outside every family (kept unless `cases` is False: see targets/calibration.py)."""
    import copy

    from npufit.targets import get_profile

    prof = get_profile(target)
    if held_out is None:
        return prof
    prof = copy.copy(prof)
    prof.limits = {**prof.limits, "fit_families": tuple(f for f in families if f != held_out), "fit_cases": cases}
    return prof


def judge_of(build: str, fmt: str = "onnx") -> str:
    """How npufit judges a record's build: an int8 build as its int8 conversion, anything else as the target would. A
    TFLite file is judged as it is: the compile takes it as it is (npufit's converter turns only ONNX into int8), so a
    float TFLite compiled for an int8 target stays float."""
    if fmt == "tflite":
        return "float"
    return "int8" if build == "int8" else "auto"


def top_verdicts(graph, profile, build: str) -> dict:
    """npufit's verdict node (check's report) per top-level node name of `graph`."""
    from npufit import check

    # the prediction is what calibration scores: never the installed compiler (that would score it against itself)
    rep = check(graph, profile, judge=judge_of(build, graph.format), measure="never")
    return {n.name: n for n in rep.nodes if n.parent is None}


def case_verdicts(onnx: Path, op: str, profile, build: str) -> list[str]:
    """npufit's verdict for every top-level node of `op` ("*": of every op) in a case graph, in graph order, judged as
    `build`."""
    from npufit.graph import load

    graph = load(onnx)
    by = {k: v.verdict.value for k, v in top_verdicts(graph, profile, build).items()}
    return [by.get(n.name, "folded") for n in graph.top_nodes if op in ("*", n.op_type)]


def compiler_of(target: str) -> str:
    """The profile names its compiler: rknn for every Rockchip SoC, vela for Ethos-U, ethos-n for Ethos-N."""
    from npufit.targets import get_profile

    return get_profile(target).compiler


def is_rknn(target: str) -> bool:
    return compiler_of(target) == "rknn"


def compile_onnx(onnx: Path, target: str, build: str, out: Path, timeout_s: float = 900, input_shapes=None):
    """The real compile a record is made from: an RKNN build (float16, or int8 on the model's own random sample),
    else the target's compiler as npufit's compile drives it (Vela through npufit's ONNX -> int8 TFLite converter).
    `input_shapes` pins dynamic inputs, as a user does for a compile."""
    from npufit.compilers import compile_model

    opts = {"out_dir": out, "timeout_s": timeout_s, **({"input_shapes": input_shapes} if input_shapes else {})}
    if is_rknn(target):
        return compile_model(onnx, target, quantize=build == "int8", simulate=False, **opts)
    return compile_model(onnx, target, **opts)
