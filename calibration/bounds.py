"""Rule bounds read from the compiler sweeps, never typed in.

    python -m calibration.bounds            # derive every bound from docs/calibration/sweep/*.json and write them
    python -m calibration.bounds --check    # derive them and compare with the package's file (exit 1 on a difference)

Each bound is a function of one sweep record (calibration/sweep.py): it rebuilds the record's case graphs, pairs every
top-level node with the placement the compiler gave it, and reads the bound off the nodes on both sides (the largest
value that ran on the NPU, checked against the smallest that did not), so the record shows where the bound lies. The
result is the value, the cases it was read from and one sentence on how. They are written to
npufit/targets/records/sweep-bounds.json, which the rules read (npufit/targets/sweeps.py): the installed package does
not carry the sweep records. tests/test_calibration_bounds.py derives them again from the records and compares, so a
re-recorded sweep that moves a bound fails there until this is run again."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import form, sweep

OUT = Path(__file__).resolve().parents[1] / "npufit" / "targets" / "records" / "sweep-bounds.json"


@dataclass
class Placed:
    """One top-level node of a sweep case and where the compiler placed it (npu, cpu, folded)."""

    case: str
    node: object  # npufit NodeView
    placed: str


class Derivation(ValueError):
    """The record does not show a bound: both sides overlap, or no case measured it."""


def placed_nodes(rec: dict, folder: Path, names=None) -> tuple[list[Placed], dict[str, object]]:
    """Every top-level node of the record's compiled cases with its placement, and the graphs of the cases the compiler
    did not take (case -> graph). `names`: a predicate on case names."""
    from npufit.graph import load

    out, failed = [], {}
    for name, case in rec["cases"].items():
        if names is not None and not names(name):
            continue
        g = load(sweep.export_case(name, folder))
        if isinstance(case["placement"], str):
            failed[name] = g
            continue
        out += [Placed(name, n, p) for n, p in zip(g.top_nodes, case["placement"])]
    return out, failed


def _prefix(*ps: str) -> Callable[[str], bool]:
    return lambda name: name.startswith(ps)


def _split(nodes: list[Placed], key) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(value, case) of the nodes on the NPU and of those on the CPU, for a key(node) -> value or None."""
    npu, cpu = [], []
    for p in nodes:
        v = key(p.node)
        if v is None:
            continue
        (cpu if p.placed == "cpu" else npu).append((v, p.case))
    return npu, cpu


def _upper(npu, cpu, what: str) -> tuple[int, list[str]]:
    """The largest value measured on the NPU; every value measured on the CPU must exceed it."""
    if not npu:
        raise Derivation(f"{what}: no case ran on the NPU")
    top = max(v for v, _ in npu)
    low = [v for v, _ in cpu if v <= top]
    if low:
        raise Derivation(f"{what}: {low[0]} ran on the CPU, under the largest value on the NPU ({top})")
    return top, sorted({c for _, c in npu + cpu})


def _between(npu, cpu, what: str) -> tuple[int, int, list[str]]:
    """_upper, and the smallest value measured on the CPU: a bound with both sides measured."""
    top, cases = _upper(npu, cpu, what)
    if not cpu:
        raise Derivation(f"{what}: none ran on the CPU")
    return top, min(v for v, _ in cpu), cases


# -- the bounds ------------------------------------------------------------------------------------------------------


def _conv1d(attr: str):
    def key(n):
        if n.op_type != "Conv" or len(n.input_shape(0) or ()) != 3:
            return None
        return max(int(v) for v in n.attr(attr))

    return key


def conv1d_kernel(rec, nodes, failed) -> dict:
    npu, cpu = _split(nodes, _conv1d("kernel_shape"))
    top, cases = _upper(npu, cpu, "1-D kernel")
    return {
        "value": top,
        "cases": cases,
        "how": f"the longest 1-D convolution kernel that ran on the NPU ({len(npu)} of {len(npu) + len(cpu)} 1-D "
        "convolutions did)",
    }


def conv1d_stride(rec, nodes, failed) -> dict:
    npu, cpu = _split(nodes, _conv1d("strides"))
    top, cases = _upper(npu, cpu, "1-D stride")
    return {"value": top, "cases": cases, "how": "the longest 1-D convolution stride that ran on the NPU"}


def _arity(op: str):
    return lambda n: len([i for i in n.inputs if i]) if n.op_type == op else None


def sum_inputs(rec, nodes, failed) -> dict:
    """The most inputs of a Sum that ran on the NPU; the fewest of a Sum whose build failed."""
    npu, cpu = _split(nodes, _arity("Sum"))
    top, cases = _upper(npu, cpu, "Sum inputs")
    fail = sorted(
        (len([i for i in n.inputs if i]), c) for c, g in failed.items() for n in g.top_nodes if n.op_type == "Sum"
    )
    if fail and fail[0][0] <= top:
        raise Derivation(f"Sum inputs: a build with {fail[0][0]} inputs failed, under {top} on the NPU")
    return {
        "value": top,
        "fails_from": fail[0][0] if fail else None,
        "cases": sorted(set(cases) | {c for _, c in fail}),
        "how": "the most inputs of a Sum that ran on the NPU"
        + (f"; the build of a Sum of {fail[0][0]} failed" if fail else ""),
    }


def _all_cpu(op: str, runtime_inputs: int = 1):
    def derive(rec, nodes, failed) -> dict:
        got = [p for p in nodes if p.node.op_type == op and _runtime_inputs(p.node) >= runtime_inputs]
        if not got:
            raise Derivation(f"{op}: no case measured it")
        on = sorted({p.placed for p in got})
        return {
            "value": on == ["cpu"],
            "cases": sorted({p.case for p in got}),
            "how": f"every {op} of {runtime_inputs} or more run-time tensors measured ({len(got)}) ran on "
            + " / ".join(on),
        }

    return derive


def _runtime_inputs(n) -> int:
    return sum(1 for i, t in enumerate(n.inputs) if t and not n.is_const(i))


def cast_pairs(rec, nodes, failed) -> dict:
    """Per (from, to) dtype pair of a Cast of run-time data: where it ran (npu, cpu, folded: deleted by the build)."""
    seen: dict[tuple[str, str], set] = {}
    cases = set()
    for p in nodes:
        n = p.node
        if n.op_type != "Cast" or n.is_const(0):
            continue
        seen.setdefault((n.input_dtype(0), n.output_dtype(0)), set()).add(p.placed)
        cases.add(p.case)
    mixed = {k: v for k, v in seen.items() if len(v) > 1}
    if mixed:
        raise Derivation(f"Cast: {mixed} placed two ways")
    return {
        "value": sorted([a, b, next(iter(v))] for (a, b), v in seen.items()),
        "cases": sorted(cases),
        "how": "where each Cast of run-time data ran, by its input and output type",
    }


def focus_chain(rec, nodes, failed) -> dict:
    """The space-to-depth reorgs of strided Slices (calibration/sweep.py's focus cases): those written as unshared
    chains (npufit's rockchip.bounded.unshared_chain) against the shared and two-axis forms."""
    from npufit.targets.layout import strided, unshared_chain

    chained = [p for p in nodes if strided(p.node) is not None and unshared_chain(p.node)]
    reorg = {p.case for p in chained} | {p.case for p in nodes if p.node.op_type == "Concat"}
    other = [p for p in nodes if p.case in reorg and strided(p.node) is not None and not unshared_chain(p.node)]
    on = {p.placed for p in chained}
    if not chained or not other or {p.placed for p in other} != {"npu"}:
        raise Derivation("focus chains: the record has no reorg of each form, or a shared one ran on the CPU")
    return {
        "value": on == {"cpu"},
        "cases": sorted({p.case for p in chained + other}),
        "how": f"every Slice of an unshared chain ran on the {'CPU' if on == {'cpu'} else '/'.join(sorted(on))} "
        f"({len(chained)} measured); every Slice of the shared and two-axis forms on the NPU ({len(other)})",
    }


def _tfl_transpose_else(n) -> int | None:
    """For a TFLite TRANSPOSE outside Vela's plain cases (an identity, or a permutation that keeps the leading axis of a
    3-D tensor or of a 4-D one whose leading axis is 1): the largest product of all axes but two, else None (the same
    reading of the shape as the rule's, npufit/targets/ethos_u/checks.py)."""
    from npufit.targets.layout import max_product, plain_transpose
    from npufit.targets.tflite_map import tfl_transpose

    got = tfl_transpose(n) if n.op_type == "TRANSPOSE" else None
    if got is None or plain_transpose(*got) is not False:
        return None
    return max_product(got[0])


def transpose_product(rec, nodes, failed) -> dict:
    npu, cpu = _split(nodes, _tfl_transpose_else)
    if not cpu:  # every one ran on the NPU: no bound on this target up to the largest measured
        return {
            "value": None,
            "largest_on_npu": max(v for v, _ in npu),
            "cases": sorted({c for _, c in npu}),
            "how": "every TFLite TRANSPOSE that moves a non-unit leading axis ran on the NPU",
        }
    top, cases = _upper(npu, cpu, "transpose product")
    return {
        "value": top,
        "cases": cases,
        "how": f"the largest product of all axes but two of a TFLite TRANSPOSE that moves a non-unit leading axis and "
        f"ran on the NPU; the {len(cpu)} above it ran on the CPU",
    }


def _moving_transpose(n) -> int | None:
    """A 4-D Transpose that moves data in the converter's NHWC layout: its input's size in bricks."""
    from npufit.targets.layout import bricks
    from npufit.targets.tflite_map import tfl_transpose

    got = tfl_transpose(n) if n.op_type in ("Transpose", "TRANSPOSE") else None
    if got is None or len(got[0]) != 4 or got[1] == list(range(4)):
        return None
    return bricks(got[0])


def transpose_bricks(rec, nodes, failed) -> dict:
    """The Ethos-N transposes: the largest input (in bricks) that ran on the NPU and the smallest that did not (the
    support library's SRAM size, the profile's transpose_sram_bytes, must lie between: test_calibration_bounds.py)."""
    npu, cpu = _split(nodes, _moving_transpose)
    top, low, cases = _between(npu, cpu, "transpose bricks")
    return {
        "value": top,
        "cpu_from": low,
        "cases": cases,
        "how": f"4-D transposes that move data ran on the NPU up to {top} bytes in 8x8x16 bricks and on the CPU from "
        f"{low}",
    }


def _depthwise_nonsquare(n) -> int | None:
    """1 for a depthwise Conv with a non-square kernel, 0 for a square one, None for any other node."""
    x, w = n.input_shape(0), n.input_shape(1)
    if n.op_type != "Conv" or not x or not w or int(n.attr("group", 1)) != x[1] or x[1] == 1:
        return None
    k = [int(v) for v in n.attr("kernel_shape")]
    return int(len(k) == 1 or k[0] != k[-1])


def depthwise_square(rec, nodes, failed) -> dict:
    npu, cpu = _split(nodes, _depthwise_nonsquare)
    bad = [c for v, c in npu if v]
    if bad or not any(v for v, _ in cpu):
        raise Derivation(f"depthwise kernels: non-square ones ran on the NPU ({bad}) or none ran on the CPU")
    return {
        "value": True,
        "cases": sorted({c for _, c in npu + cpu}),
        "how": f"every non-square depthwise kernel (1-D ones included) ran on the CPU "
        f"({sum(1 for v, _ in cpu if v)} measured); square ones from 3x3 to 9x9 on the NPU",
    }


def split_rows(rec, nodes, failed) -> dict:
    """Channel rows split into a [1, C, H, W] map for a convolution (calibration/sweep.py's split_rows): the largest
    H x W that ran on the NPU; every larger one measured ran on the CPU."""
    from npufit.targets.layout import split_rows as hw

    npu, cpu = _split(nodes, hw)
    top, low, cases = _between(npu, cpu, "split rows")
    return {
        "value": top,
        "cpu_from": low,
        "cases": cases,
        "how": f"Reshapes splitting channel rows into a map for a convolution ran on the NPU up to an H x W of {top} "
        f"and on the CPU from {low}",
    }


def head_rows(rec, nodes, failed) -> dict:
    """A multi-scale head's Reshapes between maps and rows (calibration/sweep.py's head_parts): the row alignment in
    bytes, the smallest power of two such that every such Reshape whose rows (H*W of a flatten, A of a split) are a
    multiple of it ran on the NPU, as did every flatten and Transpose-read split whose channels are."""
    from npufit.targets.layout import head_rows as key

    items = []
    for p in nodes:
        got = key(p.node)
        if got is not None:
            e = 1 if p.case.startswith("int8-") else 2
            items.append((got[0], got[1] * e, got[2] * e, p.placed, p.case))
    cpu = [i for i in items if i[3] == "cpu"]
    if not cpu:
        raise Derivation("head rows: none ran on the CPU")
    for b in (2, 4, 8, 16, 32, 64):
        on = [i for i in items if i[2] % b == 0 or (i[0] != "split" and i[1] % b == 0)]
        if all(i[3] != "cpu" for i in on):
            break
    else:
        raise Derivation("head rows: aligned rows ran on the CPU at every alignment tried")
    odd = [i for i in items if i not in on]
    heads = {i[4] for i in odd}
    missed = sorted(h for h in heads if not any(i[4] == h for i in cpu))
    if missed:
        raise Derivation(f"head rows: heads with unaligned rows ran wholly on the NPU: {missed}")
    return {
        "value": b,
        "cases": sorted({i[4] for i in items}),
        "how": f"every head Reshape whose rows (or, for a flatten or a Transpose-read split, channels) are a multiple "
        f"of {b} bytes ran on the NPU ({len(on)} measured); of the {len(odd)} others, "
        f"{sum(1 for i in odd if i[3] == 'cpu')} ran on the CPU, at least one in each of the {len(heads)} heads "
        "with such rows",
    }


def head_joined_residues(rec, nodes, failed) -> dict:
    """The residues of H*W modulo layout.JOIN_MODULUS for which most of a head's maps flattened into rows that only a
    Concat reads ran on the NPU, among those whose rows and channels are unaligned by head_rows' bound (a flatten a
    split reads is not one: at 5x5 alone it ran on the CPU). Maps of a residue not measured stay with the alignment
    rule."""
    from npufit.targets.layout import JOIN_MODULUS, joined_flatten
    from npufit.targets.layout import head_rows as key

    b = head_rows(rec, nodes, failed)["value"]
    by: dict[int, list[tuple[int, str]]] = {}
    cases = set()
    for p in nodes:
        cells, got = joined_flatten(p.node), key(p.node)
        if cells is None or got is None:
            continue
        e = 1 if p.case.startswith("int8-") else 2
        if (got[2] * e) % b and (got[1] * e) % b:
            by.setdefault(cells % JOIN_MODULUS, []).append((cells, p.placed))
            cases.add(p.case)
    if not any(w == "cpu" for v in by.values() for _, w in v):
        raise Derivation("joined flattens: none with unaligned rows ran on the CPU")
    npu = sorted(r for r, v in by.items() if 2 * sum(w == "npu" for _, w in v) > len(v))
    if not npu:
        raise Derivation("joined flattens: most ran on the CPU at every residue measured")

    def count(r):
        v = by[r]
        n = sum(w == "npu" for _, w in v)
        return f"{r}: {n} of {len(v)} on the NPU ({', '.join(str(c) for c in sorted({c for c, _ in v}))} cells)"

    return {
        "value": npu,
        "cases": sorted(cases),
        "how": f"flattened maps with unaligned rows joined by a Concat, by H*W modulo {JOIN_MODULUS}: "
        + "; ".join(count(r) for r in sorted(by)),
    }


def head_output_transpose(rec, nodes, failed) -> dict:
    """The most anchors A for which the Transpose of a head's joined rows [1, C, A] into the model output [1, A, C] ran
    on the NPU (calibration/sweep.py's yolox cases); every larger A measured ran on the CPU. The same Transpose read
    by a linear layer, and one of rows a single flatten made, ran on the NPU at every A measured (not this pattern)."""
    from npufit.targets.layout import head_output_transpose as key

    npu, cpu = _split(nodes, key)
    top, low, cases = _between(npu, cpu, "head output transpose")
    return {
        "value": top,
        "cpu_from": low,
        "cases": cases,
        "how": f"the Transpose of a head's joined rows into the model output ran on the NPU up to {top} anchors "
        f"({len(npu)} measured) and on the CPU from {low} ({len(cpu)} measured)",
    }


def qkv_view_align(rec, nodes, failed) -> dict:
    """The alignment of the head width d that the Transpose of a q/k/v projection's 5-D view [1, N, 3, heads, d] needs
    to run on the NPU (calibration/sweep.py's qkv5d cases): the greatest common divisor of the widths that ran there,
    provided no width that ran on the CPU is a multiple of it."""
    from math import gcd

    from npufit.targets.layout import qkv_view_transpose as key

    npu, cpu = _split(nodes, key)
    if not npu or not cpu:
        raise Derivation(f"q/k/v view: {'no' if not npu else 'every'} width measured ran on the NPU")
    a = 0
    for v, _ in npu:
        a = gcd(a, v)
    if a == 1 or any(v % a == 0 for v, _ in cpu):
        raise Derivation(f"q/k/v view: widths on the CPU ({sorted({v for v, _ in cpu})}) are multiples of {a}")
    return {
        "value": a,
        "cases": sorted({c for _, c in npu + cpu}),
        "how": f"head widths {', '.join(map(str, sorted({v for v, _ in npu})))} ran on the NPU, "
        f"{', '.join(map(str, sorted({v for v, _ in cpu})))} on the CPU: the NPU's are multiples of {a}",
    }


def int8_cpu_functions(rec, nodes, failed) -> dict:
    """The element-wise functions of one tensor (calibration/sweep.py's unary cases) that every int8 build ran on the
    CPU while every float16 build of the same graph kept them on the NPU, outside a normalization's denominator (a
    Sqrt there ran on the NPU in both builds: the converter fuses the normalization; checked here). An op placed both
    ways within one build is left out (no condition of its own was swept), and so is one the float16 build also ran
    on the CPU (the op's own rule covers it)."""
    from npufit.targets.patterns import norm_denominator

    by_op: dict[str, dict[str, set]] = {}
    norms: set[str] = set()
    cases: set[str] = set()
    for p in nodes:
        op = p.node.op_type
        if norm_denominator(p.node):  # measured apart: the normalization cases
            norms.add(p.placed)
        elif op in sweep.UNARY_OPS:
            build = "int8" if p.case.startswith("int8-") else "fp16"
            by_op.setdefault(op, {"int8": set(), "fp16": set()})[build].add(p.placed)
        else:
            continue
        cases.add(p.case)
    if not by_op:
        raise Derivation("no unary case measured")
    if norms != {"npu"}:
        raise Derivation(f"a normalization's Sqrt ran on {sorted(norms) or 'nothing measured'}, not on the NPU")
    cpu = sorted(op for op, b in by_op.items() if b["int8"] == {"cpu"} and b["fp16"] == {"npu"})
    mixed = sorted(op for op, b in by_op.items() if len(b["int8"]) > 1)
    return {
        "value": cpu,
        "cases": sorted(cases),
        "how": f"of {len(by_op)} functions measured in both builds, these ran on the CPU in every int8 build and on "
        "the NPU in every float16 build" + (f"; placed both ways in int8: {', '.join(mixed)}" if mixed else ""),
    }


def softmax_npu_axes(rec, nodes, failed) -> dict:
    """The Softmax axes (as numbered in the tensor's own rank) that ran on the NPU in every case measured
    (calibration/sweep.py's softmax cases); an axis placed both ways is not a bound."""
    from npufit.targets import common

    by_axis: dict[int, set] = {}
    cases: set[str] = set()
    for p in nodes:
        n = p.node
        if n.op_type != "Softmax":
            continue
        r = common.rank(n)
        a = common.norm_axis(int(n.attr("axis", -1)), r)
        by_axis.setdefault(a, set()).add(p.placed)
        cases.add(p.case)
    if not by_axis:
        raise Derivation("Softmax: no case measured it")
    mixed = {a: sorted(v) for a, v in by_axis.items() if len(v) > 1}
    if mixed:
        raise Derivation(f"Softmax: axes placed two ways: {mixed}")
    npu = sorted(a for a, v in by_axis.items() if v == {"npu"})
    return {
        "value": npu,
        "cases": sorted(cases),
        "how": "the Softmax axes that ran on the NPU in every case measured (axes "
        + ", ".join(f"{a}: {next(iter(v))}" for a, v in sorted(by_axis.items()))
        + ")",
    }


def _head_cut(nodes: list[Placed]) -> set[str]:
    """The cases whose head the converter cut at a flatten (a map flattened into rows ran on the CPU): the split or
    merge after it does not decide where that head crosses to the CPU, so the head bounds leave those cases out."""
    from npufit.targets.layout import head_rows

    return {p.case for p in nodes if p.placed == "cpu" and (h := head_rows(p.node)) is not None and h[0] == "flatten"}


def _head_kind(kind: str):
    def key(n) -> int | None:
        from npufit.targets.layout import head_map

        got = head_map(n)
        return got[1] if got is not None and got[0] == kind else None

    return key


def _dfl_split(n) -> int | None:
    from npufit.targets.layout import dfl_split

    return dfl_split(n)


def map_hw(key, what: str):
    """Reshapes between rows and a map that key(node) -> H x W picks (npufit's layout.head_map by kind: "split",
    "split_t" read by Transposes only, "merge"; layout.dfl_split): the largest map H x W that ran on the NPU (0 when
    none did); every larger one measured ran on the CPU. Heads the converter cut at a flatten are left out
    (_head_cut)."""

    def derive(rec, nodes, failed) -> dict:
        cut = _head_cut(nodes)
        items = [(v, p) for p in nodes if (v := key(p.node)) is not None]
        kept = [(v, p.case, p.placed) for v, p in items if p.case not in cut]
        npu = [(v, c) for v, c, w in kept if w != "cpu"]
        cpu = [(v, c) for v, c, w in kept if w == "cpu"]
        if not cpu:
            raise Derivation(f"{what}: none ran on the CPU")
        top = max((v for v, _ in npu), default=0)
        low = sorted(v for v, _ in cpu if v <= top)
        if low:
            raise Derivation(f"{what}: a {low[0]}-cell map ran on the CPU, under {top} on the NPU")
        bottom = min(v for v, _ in cpu)
        return {
            "value": top,
            "cpu_from": bottom,
            "cases": sorted({p.case for _, p in items}),
            "how": (f"maps of up to {top} cells ran on the NPU ({len(npu)} measured); " if npu else "none ran on the "
                    "NPU; ") + f"the {len(cpu)} from {bottom} cells ran on the CPU"
            + (f"; {len(items) - len(kept)} in heads the converter cut at a flatten left out" if len(kept) < len(items)
               else ""),
        }  # fmt: skip

    return derive


def head_split_transpose(rec, nodes, failed) -> dict:
    """Transposes of the map a detection head's rows were split into (npufit's layout.reads_head_split): whether every
    one measured ran on the CPU."""
    from npufit.targets.layout import reads_head_split

    got = [p for p in nodes if reads_head_split(p.node)]
    if not got:
        raise Derivation("head split Transposes: no case measured one")
    on = sorted({p.placed for p in got})
    return {
        "value": on == ["cpu"],
        "cases": sorted({p.case for p in got}),
        "how": f"the Transposes reading a head's split rows ({len(got)} measured) ran on " + " / ".join(on),
    }


# target -> bound name -> (case filter, derivation)
BOUNDS: dict[str, dict[str, tuple[Callable[[str], bool], Callable]]] = {
    "rk3588": {
        "conv1d_kernel": (_prefix("conv1d-"), conv1d_kernel),
        "conv1d_stride": (_prefix("conv1d-"), conv1d_stride),
        "sum_inputs": (_prefix("arity-sum-"), sum_inputs),
        "mean_cpu": (_prefix("arity-mean-"), _all_cpu("Mean")),
        "min_cpu": (_prefix("arity-min-"), _all_cpu("Min", 2)),
        "max_cpu": (_prefix("arity-max-"), _all_cpu("Max", 2)),
        "cast_pairs": (_prefix("cast-"), cast_pairs),
        "focus_chain": (_prefix("focus-"), focus_chain),
        "split_rows": (_prefix("split-rows-", "rows-", "head-dfl-"), split_rows),
        "head_rows": (_prefix("parts-", "int8-parts-", "yolox-", "int8-yolox-"), head_rows),
        "head_joined_residues": (_prefix("parts-", "int8-parts-", "yolox-", "int8-yolox-"), head_joined_residues),
        "head_output_transpose": (_prefix("yolox-", "int8-yolox-"), head_output_transpose),
        "int8_cpu_functions": (_prefix("unary-", "int8-unary-"), int8_cpu_functions),
    },
    "rk3566": {
        "softmax_npu_axes": (_prefix("softmax-"), softmax_npu_axes),
        "head_split": (_prefix("parts-"), map_hw(_head_kind("split"), "head split")),
        "head_split_t": (_prefix("parts-"), map_hw(_head_kind("split_t"), "head split read by Transposes")),
        "head_merge": (_prefix("merge-parts-"), map_hw(_head_kind("merge"), "head merge")),
        "dfl_split": (_prefix("head-dfl-"), map_hw(_dfl_split, "DFL split")),
        "head_split_transpose": (_prefix("parts-"), head_split_transpose),
        # rk3588 and rv1106 ran every q/k/v view transpose measured on the NPU: no bound there
        "qkv_view_align": (_prefix("qkv5d-"), qkv_view_align),
    },
    # rv1106's splits read by Transposes alone ran on the NPU at every size measured (no head_split_t bound)
    "rv1106": {
        "head_split": (_prefix("parts-"), map_hw(_head_kind("split"), "head split")),
        "head_merge": (_prefix("merge-parts-"), map_hw(_head_kind("merge"), "head merge")),
        "dfl_split": (_prefix("head-dfl-"), map_hw(_dfl_split, "DFL split")),
        "head_split_transpose": (_prefix("parts-"), head_split_transpose),
    },
    "ethos-n78": {
        "transpose_bricks": (_prefix("transpose-", "head-dfl-"), transpose_bricks),
        "depthwise_square": (_prefix("conv2d-", "conv1d-"), depthwise_square),
        "min_cpu": (_prefix("arity-min-"), _all_cpu("Min", 2)),
    },
    "ethos-u55-256": {"transpose_product": (_prefix("tfl-transpose-"), transpose_product)},
    "ethos-u85-256": {"transpose_product": (_prefix("tfl-transpose-"), transpose_product)},
}


def derive(targets=None) -> dict:
    """Every bound of BOUNDS from today's sweep records: target -> name -> {value, cases, how, record}."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="npufit-bounds-") as d:
        for target, bounds in BOUNDS.items():
            if targets and target not in targets:
                continue
            path = sweep.record_file(target)
            rec = form.load_cases(path)
            out[target] = {}
            for name, (pick, fn) in bounds.items():
                folder = Path(tempfile.mkdtemp(dir=d))
                nodes, failed = placed_nodes(rec, folder, pick)
                got = fn(rec, nodes, failed)
                got["record"] = f"docs/calibration/sweep/{path.name}"
                got["compiler"] = f"{rec['compiler']} {', '.join(rec['compiler_versions'])}"
                out[target][name] = got
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the package's file instead of writing it")
    a = ap.parse_args(argv)
    import json

    from npufit.util.io import atomic_write_json

    got = derive()
    doc = {"schema": "npufit.sweep-bounds/1", "written_by": "python -m calibration.bounds", "bounds": got}
    if a.check:
        have = json.loads(OUT.read_text()) if OUT.is_file() else {}
        if have != json.loads(json.dumps(doc)):
            print(f"{OUT} differs from the bounds the sweep records give: run `python -m calibration.bounds`")
            sys.exit(1)
        print("the bounds file matches the sweep records")
        return
    atomic_write_json(OUT, doc)
    for t, bs in got.items():
        for n, b in bs.items():
            print(f"{t:<16} {n:<20} {b['value']!s:<40} ({len(b['cases'])} cases)")


if __name__ == "__main__":
    main()
