"""The Rockchip NPUs besides RK3588: RK3576, RK3566 (alias RK3568), RV1106 (alias RV1103).

All four run RKNN-Toolkit2's converter, so each SoC's profile is RK3588's (rockchip.py) with the differences its
own probe record measured (docs/probe/<soc>-measured.json, rknn-toolkit2 2.5.0, `target_platform` = the SoC):
a SoC below is a few lines of data, and a rule or op it does not override is RK3588's, re-labelled.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from . import common
from .base import Composite, Executes, OpSupport, Profile, Rule

# the label RK3588's rule sentences and reasons are written with (swapped for the SoC's own)
BASE_LABEL = "RK3588"


@dataclass(frozen=True)
class Soc:
    name: str  # RKNN-Toolkit2's target_platform
    label: str  # as printed in sentences
    title: str
    summary: str
    probe: str  # the probe run that measured it (its source tag's text)
    aliases: tuple[str, ...] = ()
    executes: Executes = Executes.FP16_INT8
    limits: Mapping[str, Any] = field(default_factory=dict)
    ops: Mapping[str, OpSupport] = field(default_factory=dict)  # measured differences from RK3588
    notes: tuple[str, ...] = ()


def _probe_src(soc: str, build: str) -> str:
    return (f"measured: npufit probe --target {soc} --compiler rknn --sweep (rknn-toolkit2 2.5.0, target_platform {soc}, {build} "
            f"builds); record docs/probe/{soc}-measured.json, matrix docs/probe/{soc}-matrix.md")


SOCS: tuple[Soc, ...] = (
    Soc("rk3576", "RK3576", "Rockchip RK3576 (RKNPU2; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted by RKNN-Toolkit2 for RK3576; float16 and int8 builds; ops outside its NPU list or limits run as "
        "CPU kernels in the RKNN runtime.", _probe_src("rk3576", "float16")),
    Soc("rk3566", "RK3566", "Rockchip RK3566 / RK3568 (RKNPU2; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted by RKNN-Toolkit2 for RK3566/RK3568 (one NPU, one target_platform); float16 and int8 builds; ops "
        "outside its NPU list or limits run as CPU kernels in the RKNN runtime.", _probe_src("rk3566", "float16"),
        aliases=("rk3568",)),
    Soc("rv1106", "RV1106", "Rockchip RV1106 / RV1103 (RKNPU2, int8 only; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted and quantized by RKNN-Toolkit2 for RV1106/RV1103; the NPU runs int8 only, and the runtime has CPU "
        "kernels for a short list of ops only (targets.md §4a).", _probe_src("rv1106", "int8"),
        aliases=("rv1103",), executes=Executes.INT8,
        # R-PDF §3 (per SoC) and the 2.5.0 toolkit: RV1103/RV1106 build int8 models only
        limits={"dtypes": common.Choices(("int8", "uint8"))},
        notes=("RV1106/RV1103 have no CPU mean/scale/quantize on the inputs (R-PDF §5.1): give the model int8 inputs or "
               "keep the preprocessing in the model",)),
)


def _relabel(text: str, soc: Soc) -> str:
    return text.replace(BASE_LABEL, soc.label)


def _rule(r: Rule, base: str, soc: Soc) -> Rule:
    rid = soc.name + r.id[len(base):] if r.id.startswith(base + ".") else r.id
    return replace(r, id=rid, text=_relabel(r.text, soc))


def _op(s: OpSupport, base: str, soc: Soc) -> OpSupport:
    return replace(s, rules=tuple(_rule(r, base, soc) for r in s.rules), reason=_relabel(s.reason, soc))


def _composite(c: Composite, base: str, soc: Soc) -> Composite:
    return replace(c, id=soc.name + c.id[len(base):] if c.id.startswith(base + ".") else c.id)


def derive(base: Profile, soc: Soc, probe_tag: str) -> Profile:
    """`soc`'s profile: `base`'s rules under the SoC's name, its measured op differences, limits and execution."""
    ops = {k: _op(s, base.name, soc) for k, s in base.ops.items()}
    ops.update(soc.ops)
    return replace(
        base, name=soc.name, title=soc.title, summary=soc.summary, aliases=soc.aliases, executes=soc.executes,
        limits={**base.limits, **soc.limits}, ops=ops, unknown=_op(base.unknown, base.name, soc),
        graph_rules=tuple(_rule(r, base.name, soc) for r in base.graph_rules),
        composites=tuple(_composite(c, base.name, soc) for c in base.composites),
        sources={**base.sources, probe_tag: soc.probe}, notes=tuple(_relabel(n, soc) for n in base.notes) + soc.notes)


def profiles(base: Profile, probe_tag: str = "PROBE-SOC") -> dict[str, Profile]:
    return {s.name: derive(base, s, probe_tag) for s in SOCS}
