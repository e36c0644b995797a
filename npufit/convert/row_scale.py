"""Per-row scaling of a transformer's residual stream, so that int8 keeps rows much smaller than the others.

One int8 scale covers a whole [batch, tokens, features] tensor. Under some inits a class token's row is ~50x
smaller than the patch rows (ViT-MAE, AST, PVT: std-0.02 token, zero position row): it keeps a few int8 levels in
every residual Add, and the LayerNorm after it turns them into noise (vit-mae: every other row cosine >= 0.9996,
that row lost). LayerNorm does not see a per-row factor d: LN(d x) = LN(x) once eps becomes eps d^2. So the
converter's copy carries each stream (the LayerNorm inputs joined by Adds) as D x, D one power of two per row from
the stream's calibrated row maxima: branch outputs joining it are multiplied by D (into the input of their last
MatMul where that leaves its range as it was), its sources are scaled where they are built (constants folded,
Concat parts and Add operands followed), each LayerNorm's eps becomes eps D^2, and any other reader gets x back
through D^-1. Exact in float (powers of two); ONNX Runtime then calibrates the rewritten copy. Measured on the
calibration corpus: docs/guide/convert.md."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import NpufitError
from .onnx_prep import prepare

MIN_GAIN = 4.0  # rewrite only where some row is this many times smaller than the largest
MAX_GAIN = 64.0  # cap on a row's factor (a row of zeros would ask for any)


def _consumers(model):
    cons: dict[str, list[onnx.NodeProto]] = {}
    for n in model.graph.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)
    return cons


def _axes(n, val) -> list[int] | None:
    for a in n.attribute:
        if a.name == "axes":
            return list(helper.get_attribute_value(a))
    v = val(n.input[1]) if len(n.input) > 1 and n.input[1] else None
    return None if v is None else [int(x) for x in np.atleast_1d(v)]


def layernorms(model: onnx.ModelProto, val) -> dict[str, list[tuple]]:
    """x -> [(its ReduceMean, Sub(x, mean), the eps Add, index of eps there)] for each LayerNorm over the last axis
    in the prepass's decomposed form: ReduceMean, Sub, Mul|Pow, ReduceMean, Add eps, Sqrt, Div."""
    prod = {o: n for n in model.graph.node for o in n.output}
    cons = _consumers(model)
    found: dict[str, list] = {}
    for div in model.graph.node:
        if div.op_type != "Div":
            continue
        sub, sq = prod.get(div.input[0]), prod.get(div.input[1])
        add = prod.get(sq.input[0]) if sq is not None and sq.op_type == "Sqrt" else None
        if sub is None or sub.op_type != "Sub" or add is None or add.op_type != "Add":
            continue
        k = next((j for j in (0, 1) if val(add.input[j]) is not None and np.asarray(val(add.input[j])).size == 1), None)
        var = prod.get(add.input[1 - k]) if k is not None else None
        p2 = prod.get(var.input[0]) if var is not None and var.op_type == "ReduceMean" else None
        mean = prod.get(sub.input[1])
        if (
            p2 is None
            or p2.op_type not in ("Mul", "Pow")
            or p2.input[0] != div.input[0]
            or mean is None
            or mean.op_type != "ReduceMean"
            or mean.input[0] != sub.input[0]
            or _axes(mean, val) not in ([-1], [2])
        ):
            continue
        if any(c is not sub for c in cons.get(mean.output[0], [])):
            continue
        found.setdefault(sub.input[0], []).append((mean, sub, add, k))
    return found


def rescale_rows(prep, ranges, lns: dict, src, input_shapes):
    """The Prepared model with its residual streams row-scaled (module doc), or None where no row needs it."""
    import tempfile
    from pathlib import Path

    group = streams(prep.model, list(lns))
    factors = plan(ranges.rows, group)
    if not factors:
        return None
    m = onnx.ModelProto()
    m.CopyFrom(prep.model)
    lns = layernorms(m, prep.const)  # the same patterns, on the copy's own nodes

    def shape_of(name):
        s = ranges.shapes.get(name)
        v = prep.const(name) if s is None else None
        return s if s is not None else (None if v is None else np.shape(v))

    try:
        origin, n = rewrite(
            m, prep.const, shape_of, lns, {x: factors[g] for x, g in group.items() if g in factors}, ranges.rows
        )
        if not n:
            return None
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / Path(src).name
            onnx.save(m, str(path))  # > 2 GB: ValueError from protobuf
            new = prepare(path, input_shapes)
    except (ValueError, KeyError, OSError, NpufitError):  # an optimisation: the model converts without it
        return None
    new.origin = {**prep.origin, **{k: prep.source_node(v) for k, v in origin.items()}}
    new.fixed_ranges, new.rewrites = prep.fixed_ranges, prep.rewrites
    gain = max(float(d.max()) for d in factors.values())
    new.notes = list(prep.notes) + [
        f"row-scaled the residual stream before {n} LayerNorm(s): rows up to {gain:.0f}x "
        "smaller than the largest keep their int8 resolution"
    ]
    return new


def streams(model: onnx.ModelProto, xs: list[str]) -> dict[str, str]:
    """LayerNorm input -> its residual stream (the LayerNorm inputs joined by Adds), named by one member."""
    prod = {o: n for n in model.graph.node for o in n.output}
    parent = {x: x for x in xs}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x in xs:
        p = prod.get(x)
        if p is not None and p.op_type == "Add":
            for i in p.input:
                if i in parent:
                    parent[find(i)] = find(x)
    return {x: find(x) for x in xs}


def plan(rows: dict[str, np.ndarray], group: dict[str, str]) -> dict[str, np.ndarray]:
    """Stream -> its row factors D, from the calibrated per-row |max| of its LayerNorm inputs."""
    by_g: dict[str, np.ndarray] = {}
    bad: set[str] = set()  # a stream whose row count changes or was not measured stays as it is
    for x, g in group.items():
        r = rows.get(x)
        if r is None or r.size < 2 or (g in by_g and by_g[g].size != r.size):
            bad.add(g)
        else:
            by_g[g] = np.maximum(by_g.get(g, r), r)
    out = {}
    for g, m in by_g.items():
        if g in bad:
            continue
        # powers of two: D and 1/D are then exact int8 constants (qparams.const_q), so the readers that take x
        # back as (D x) / D get every row's scale exactly
        d = 2.0 ** np.floor(np.log2(np.clip(m.max() / np.maximum(m, 1e-30), 1.0, MAX_GAIN)))
        if d.max() >= MIN_GAIN:
            out[g] = d
    return out


def rewrite(
    model: onnx.ModelProto, val, shape_of, lns: dict, factors: dict[str, np.ndarray], rows: dict[str, np.ndarray]
):
    """Rewrite `model` in place; -> (new node -> the node it scales, number of LayerNorm inputs scaled). `rows`: the
    calibrated per-row |max| of 3-D tensors: D is pushed into a producer's input only where it leaves that input's
    range as it was (a row that is small in the stream may be large before the branch's last MatMul)."""
    g = model.graph
    prod = {o: n for n in g.node for o in n.output}
    cons = _consumers(model)
    shapes = _Shapes(shape_of)
    stream = {x for x in lns if x in factors and len(shapes.get(x, ())) == 3 and shapes[x][1] == factors[x].size}
    if not stream:
        return {}, 0
    new_nodes: list[onnx.NodeProto] = []
    origin: dict[str, str] = {}
    names = {o for n in g.node for o in n.output} | {t.name for t in g.initializer}
    done: dict[tuple[str, int], str] = {}

    def fresh(base):
        n, i = f"{base}/rowscale", 1
        while n in names:
            i += 1
            n = f"{base}/rowscale{i}"
        names.add(n)
        return n

    def const(base, value):
        n = fresh(base)
        g.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), n))
        return n

    def node(op, ins, base, src):
        out = fresh(base)
        nd = helper.make_node(op, ins, [out], name=out)
        new_nodes.append(nd)
        origin[out] = src
        return out

    def col(d):  # [1, T, 1]: broadcasts over batch and features
        return np.asarray(d, np.float32).reshape(1, -1, 1)

    def fits(y, d) -> bool:
        r = rows.get(y)
        return r is not None and r.size == d.size and float((r * d).max()) <= 1.05 * float(r.max())

    def push(y: str, d: np.ndarray, source: bool = False) -> str:
        """A tensor equal to y * D: constants folded, Add operands, row-axis Concat parts and row-wise MatMul / Mul
        inputs followed (where D leaves their range as it was), else a Mul. source: y is a stream tensor built here."""
        key = (y, id(d))
        if key in done:
            return done[key]
        if not source and y in stream and factors[y] is d:
            return scaled(y)
        p = prod.get(y)
        if val(y) is not None:
            v = np.asarray(val(y), np.float32)
            r = const(y, v * col(d)) if v.ndim == 3 else None
        elif (
            p is not None
            and p.op_type == "Add"
            and len(shapes.get(y, ())) == 3
            and all(fits(i, d) or val(i) is not None for i in p.input)
        ):
            r = node("Add", [push(p.input[0], d), push(p.input[1], d)], y, p.name)
        elif (
            p is not None
            and p.op_type == "MatMul"
            and val(p.input[1]) is not None
            and np.ndim(val(p.input[1])) == 2
            and len(shapes.get(p.input[0], ())) == 3
            and fits(p.input[0], d)
        ):  # rows stay rows: (D x) W = D (x W)
            r = node("MatMul", [push(p.input[0], d), p.input[1]], y, p.name)
        elif (
            p is not None
            and p.op_type == "Mul"
            and len(shapes.get(y, ())) == 3
            and any(_row_free(val(i)) for i in p.input)
            and fits(p.input[1 - next(j for j, i in enumerate(p.input) if _row_free(val(i)))], d)
        ):
            k = next(j for j, i in enumerate(p.input) if _row_free(val(i)))  # a per-feature or scalar factor
            ins = list(p.input)
            ins[1 - k] = push(ins[1 - k], d)
            r = node("Mul", ins, y, p.name)
        elif (
            p is not None
            and p.op_type == "Concat"
            and _concat_axis(p, shapes) == 1
            and all(len(shapes.get(i, ())) == 3 for i in p.input)
        ):
            parts, at = [], 0
            for i in p.input:
                t = shapes[i][1]
                parts.append(push(i, d[at : at + t]) if np.any(d[at : at + t] != 1) else i)
                at += t
            r = fresh(y)
            new_nodes.append(helper.make_node("Concat", parts, [r], name=r, axis=1))
            origin[r] = p.name
        else:
            r = None
        if r is None:
            r = _mul(y, d)
        done[key] = r
        return r

    def _mul(y, d):
        p = prod.get(y)
        return node("Mul", [y, const(y, col(d))], y, p.name if p is not None else y)

    def scaled(x: str) -> str:
        d = factors[x]
        if (x, -1) in done:
            return done[(x, -1)]
        p = prod.get(x)
        if p is not None and p.op_type == "Add":
            r = node("Add", [scaled(i) if i in stream else push(i, d) for i in p.input], x, p.name)
        else:
            r = push(x, d, source=True)
        done[(x, -1)] = r
        return r

    for x in sorted(stream):
        xs = scaled(x)
        d = factors[x]
        for mean, sub, add, k in lns[x]:
            mean.input[0] = xs
            sub.input[0] = xs
            eps = float(np.asarray(val(add.input[k])).reshape(-1)[0])
            add.input[k] = const(add.input[k], eps * col(d) ** 2)
    # the Adds rebuilt above are dropped; other readers of their outputs get x back as (D x) / D
    rebuilt = {id(prod[x]): x for x in stream if prod.get(x) is not None and prod[x].op_type == "Add"}
    outs = {o.name for o in g.output}
    for x in rebuilt.values():
        readers = [c for c in cons.get(x, []) if id(c) not in rebuilt and x in c.input]
        if not readers and x not in outs:
            continue
        back = node("Mul", [done[(x, -1)], const(x, 1.0 / col(factors[x]))], x, prod[x].name)
        if x in outs:
            new_nodes[-1].output[0] = back = x
        for c in readers:
            for j, i in enumerate(c.input):
                if i == x:
                    c.input[j] = back
    keep = [n for n in g.node if id(n) not in rebuilt]
    del g.node[:]
    g.node.extend(keep + new_nodes)
    _toposort(model)
    return origin, len(stream)


def _row_free(v) -> bool:
    """A constant that is the same for every row (scalar, per-feature vector, or size 1 on the row axis)."""
    return v is not None and (np.ndim(v) < 2 or np.shape(v)[-2] == 1)


class _Shapes(dict):
    def __init__(self, shape_of):
        super().__init__()
        self.shape_of = shape_of

    def __missing__(self, k):
        s = self.shape_of(k)
        if s is None:
            raise KeyError(k)
        self[k] = tuple(s)
        return self[k]

    def get(self, k, default=None):
        try:
            return self[k]
        except KeyError:
            return default


def _concat_axis(n, shapes) -> int:
    a = next((helper.get_attribute_value(x) for x in n.attribute if x.name == "axis"), 0)
    r = len(shapes.get(n.output[0], ())) or 3
    return a % r


def _toposort(model: onnx.ModelProto) -> None:
    """Order the nodes, then drop those nothing reads any more (the scaled copies replaced them)."""
    g = model.graph
    ready = {t.name for t in g.initializer} | {i.name for i in g.input} | {""}
    pending, order = list(g.node), []
    while pending:
        rest = []
        for n in pending:
            outer = [i for a in n.attribute if a.type == onnx.AttributeProto.GRAPH for b in a.g.node for i in b.input]
            if all(i in ready for i in n.input) and all(i in ready or not _outer(i, n) for i in outer):
                order.append(n)
                ready.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise ValueError("row scaling left a cycle")
        pending = rest
    live, keep = {o.name for o in g.output}, []
    for n in reversed(order):
        if any(o in live for o in n.output):
            keep.append(n)
            live.update(i for i in n.input if i)
            live.update(
                i for a in n.attribute if a.type == onnx.AttributeProto.GRAPH for b in a.g.node for i in b.input
            )
    del g.node[:]
    g.node.extend(reversed(keep))


def _outer(name: str, n: onnx.NodeProto) -> bool:
    """True when a name read inside n's subgraphs is not produced there (an outer-scope read)."""
    inner = {o for a in n.attribute if a.type == onnx.AttributeProto.GRAPH for b in a.g.node for o in b.output}
    inner |= {t.name for a in n.attribute if a.type == onnx.AttributeProto.GRAPH for t in a.g.initializer}
    return name not in inner
