"""Stage extraction: a set of nodes -> a valid standalone ONNX model.

Each stage carries only the initializers it reads; folded helpers (shape arithmetic) are copied
into every stage that reads them, and a Shape/Size of a runtime tensor becomes a Constant of its
static value (integers: bit-exact), so no shape tensor ever crosses a boundary. Weights stored as
external data are streamed into the stage's own .data file one chunk at a time, never all loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import NpufitError
from ..graph import Graph, model_format
from ..graph.onnx_loader import graph_from
from ..graph.onnx_prepare import from_proto, infer, infer_shapes, pin_inputs, read_onnx, strip_weights
from ..graph.validate import all_tensors, external_location, external_span
from ..util.io import atomic_save_onnx
from ..util.limits import graph_within_budget
from ..verify.compare import make_session, random_inputs, timed_run
from .planner import GraphIndex, Stage
from .subgraphs import outer_reads

PROTO_LIMIT = 1_800_000_000  # protobuf's 2 GiB ceiling, with margin
CHUNK = 64 << 20  # bytes copied per read when streaming external weights
ALIGN = 64
INLINE_MAX = 1024  # external tensors up to this size are stored inline (onnx's own size_threshold)


def load_source(path: str | os.PathLike, input_shapes=None) -> tuple[onnx.ModelProto, Graph]:
    """The inferred ModelProto (weights left on disk) and the Graph built from that same proto."""
    if model_format(path) != "onnx":
        raise NpufitError(f"{path}: split works on ONNX models; convert the TFLite model to ONNX first")
    # split runs the model (its data must be there) and pins only dynamic dims: a changed fixed dim would make
    # stages the original cannot match
    full = read_onnx(path, pin_inputs(input_shapes, only_dynamic=True))
    graph_within_budget("split", len(full.model.graph.node))
    # The graph is built as `check` builds it, from a copy without weight bytes: shape inference and its refining
    # rounds serialize the model each time, which with the weights in was most of a big model's split time.
    prep = from_proto(full.model, strip_weights, infer, name=str(path))
    graph = graph_from(prep, prep.shape_warnings)
    graph.input_shapes, graph.shape_notes = dict(full.shapes.pinned), list(full.shapes.notes)  # the policy's answer
    _restore_weights(prep.model, full.model)
    return prep.model, graph


def _restore_weights(model: onnx.ModelProto, source: onnx.ModelProto) -> None:
    """Put back the weight bytes stripping dropped (external with no location) from the same model's full copy:
    the stage files need them."""
    stripped = {
        t.name: t
        for t in model.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL and not t.external_data
    }
    for t in source.graph.initializer:
        if t.name in stripped:
            stripped[t.name].CopyFrom(t)


class Extractor:
    def __init__(self, model: onnx.ModelProto, ix: GraphIndex, src_dir: Path, boundary: Iterable[str] = ()):
        """boundary: the tensors any stage reads or writes (the only ones whose rank a stage file must state)."""
        self.model = model
        self.boundary = list(dict.fromkeys(boundary))
        self.ix = ix
        self.graph = ix.graph
        self.src_dir = src_dir
        g = model.graph
        self.inits = {t.name: t for t in g.initializer}
        self.vi = {v.name: v for v in list(g.input) + list(g.output) + list(g.value_info)}
        self.functions = {(f.domain, f.name): f for f in model.functions}

    def extract(self, st: Stage, dst: Path) -> dict:
        """Write stage `st` to `dst` (inside the temp plan folder) and return facts for plan.json."""
        nodes = self._closure(st)
        protos, init_names = [], []
        for name, how in nodes:
            view = self.graph.node(name)
            if how == "const":
                protos.append(self._shape_constant(view))
                continue
            p = onnx.NodeProto()
            p.CopyFrom(view.raw)
            p.name = name  # unnamed exporter nodes get the names npufit reports (and plan.json lists)
            protos.append(p)
            init_names.extend(t for t in outer_reads(view) if t in self.inits)
        inits = [self.inits[n] for n in dict.fromkeys(init_names)]
        graph = helper.make_graph(
            protos,
            st.name,
            [self._value_info(t) for t in st.inputs],
            [self._value_info(t) for t in st.outputs],
            initializer=[_copy(t) for t in inits],
        )
        model = helper.make_model(graph, opset_imports=list(self.model.opset_import), producer_name="npufit split")
        model.ir_version = self.model.ir_version
        model.functions.extend(self._functions(protos))
        for prop in self.model.metadata_props:
            model.metadata_props.add().CopyFrom(prop)
        helper.set_model_props(model, {**{p.key: p.value for p in self.model.metadata_props}, "npufit.stage": st.name})
        data_file, data_bytes = self._externalize(model, dst)
        model, _ = infer_shapes(model)  # inference gaps are reported by the checker/verification, not fatal here
        if data_file is None and model.ByteSize() > PROTO_LIMIT:
            atomic_save_onnx(model, dst, external_data=True)
            data_file = dst.name + ".data"
        else:
            dst.write_bytes(model.SerializeToString())
        self._check(dst, st.name)
        return {
            "initializers": len(inits),
            "external_data": data_file,
            "external_bytes": data_bytes,
            "node_count": len(st.nodes),
            "helper_nodes": len(nodes) - len(st.nodes),
        }

    # -- pieces --------------------------------------------------------------------------------
    def _closure(self, st: Stage) -> list[tuple[str, str]]:
        """Stage nodes plus the folded nodes they (transitively) read, in original order."""
        chosen = {n: "copy" for n in st.nodes}
        stack = [t for n in st.nodes for t in outer_reads(self.graph.node(n))]
        stack += [o for o in st.outputs if o not in self.ix.producer]  # a folded model output
        seen: set[str] = set()
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            p = self.graph.producer(t)
            if p is None or p.parent is not None or p.name in chosen or p.name in self.ix.device_of:
                continue
            src = p.input(0)
            if p.op_type in ("Shape", "Size") and not (src is not None and src.is_const):
                chosen[p.name] = "const"
            else:
                chosen[p.name] = "copy"
                stack.extend(outer_reads(p))
        return sorted(chosen.items(), key=lambda kv: self.ix.index[kv[0]])

    def _shape_constant(self, view) -> onnx.NodeProto:
        out = view.output(0)
        if out is None or out.value is None:
            raise NpufitError(
                f"cannot freeze {view.op_type} '{view.name}': its input shape is not static (pass --input-shape)"
            )
        value = numpy_helper.from_array(np.asarray(out.value, dtype=np.int64), view.outputs[0])
        return helper.make_node("Constant", [], [view.outputs[0]], name=view.name, value=value)

    def _value_info(self, name: str) -> onnx.ValueInfoProto:
        vi = self.vi.get(name)
        if vi is not None and vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out = onnx.ValueInfoProto()
            out.CopyFrom(vi)
        else:
            info = self.graph.tensor(name)
            if info.dtype is None:
                raise NpufitError(
                    f"tensor '{name}' crosses a stage boundary but its type is unknown (shape inference failed; try "
                    "--input-shape)"
                )
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(info.dtype))
            shape = None if info.shape is None else [d if d is not None else None for d in info.shape]
            out = helper.make_tensor_value_info(name, elem, shape)
        if not out.type.tensor_type.HasField("shape"):
            # A stage's inputs and outputs need a rank (the ONNX checker requires it), but shape inference can lose
            # it (e.g. Squeeze without axes on a dynamic dim): the original model, run once, tells the rank.
            rank = self._measured_ranks().get(name)
            if rank is None:
                why = f" ({self._rank_error})" if self._rank_error else ""
                raise NpufitError(
                    f"tensor '{name}' crosses a stage boundary and its rank is unknown even after running "
                    f"the model{why}; pin dynamic inputs with --input-shape"
                )
            shape = out.type.tensor_type.shape
            shape.SetInParent()  # a scalar's shape is present and empty: the checker requires the field on every rank
            for k in range(rank):
                shape.dim.add().dim_param = f"{name}_dim{k}"
        return out

    _ranks: dict[str, int] | None = None
    _rank_error = ""

    def _measured_ranks(self) -> dict[str, int]:
        """Ranks of the boundary tensors whose rank inference left unknown, from one seeded ONNX Runtime run of the
        original (weights read where they lie); computed once per split. Only those tensors are fetched: every
        intermediate of a large model kept alive at once outgrew the memory budget."""
        if self._ranks is not None:
            return self._ranks

        g = self.model.graph
        known = {
            v.name for v in list(g.input) + list(g.output) + list(g.value_info) if v.type.tensor_type.HasField("shape")
        }
        produced = {o for n in g.node for o in n.output if o}
        wanted = [t for t in self.boundary if t in produced and t not in known]
        # the model itself, its outputs swapped for the wanted tensors while it is serialized: a copy of a big
        # model's proto, and its bytes kept beside the session, were the split's memory peak
        outputs = list(g.output)
        del g.output[:]
        g.output.extend(onnx.ValueInfoProto(name=t) for t in wanted)
        try:
            data = self.model.SerializeToString()
        finally:
            del g.output[:]
            g.output.extend(outputs)
        self._ranks = {}
        try:
            sess = make_session(data, external_dir=str(self.src_dir))
            del data
            feeds = random_inputs(sess, seed=0)[0]
            vals = timed_run(sess, wanted, feeds)
            self._ranks = {t: np.asarray(v).ndim for t, v in zip(wanted, vals)}
        except NpufitError as e:  # the caller reports the unknown rank as one line, with this reason
            self._rank_error = str(e)
        except Exception as e:
            self._rank_error = f"ONNX Runtime could not run it: {str(e).splitlines()[0][:200]}"
        return self._ranks

    def _functions(self, protos) -> list[onnx.FunctionProto]:
        used, stack = {}, [(p.domain, p.op_type) for p in protos]
        while stack:
            key = stack.pop()
            f = self.functions.get(key)
            if f is None or key in used:
                continue
            used[key] = f
            stack.extend((n.domain, n.op_type) for n in f.node)
        return list(used.values())

    def _externalize(self, model: onnx.ModelProto, dst: Path) -> tuple[str | None, int]:
        """Stream every external tensor this stage uses into `<stage>.onnx.data` next to it."""
        ext = [t for t in all_tensors(model) if external_location(t) is not None]
        for t in [t for t in ext if self._ext_length(t) <= INLINE_MAX]:
            # small tensors (axes, shapes, scales) go inline: ORT's shape inference cannot read them externally
            t.raw_data = self._read_ext(t)
            t.data_location = onnx.TensorProto.DEFAULT
            del t.external_data[:]
        ext = [t for t in ext if t.data_location == onnx.TensorProto.EXTERNAL]
        if not ext:
            return None, 0
        data_name = dst.name + ".data"
        pos = 0
        with open(dst.parent / data_name, "wb") as out:
            for t in ext:
                src, offset, length = self._ext_span(t)
                pad = (-pos) % ALIGN
                out.write(b"\0" * pad)
                pos += pad
                with open(src, "rb") as f:
                    f.seek(offset)
                    left = length
                    while left:
                        chunk = f.read(min(CHUNK, left))
                        if not chunk:
                            raise NpufitError(f"external data for '{t.name}' is truncated in {src.name}")
                        out.write(chunk)
                        left -= len(chunk)
                del t.external_data[:]
                for k, v in (("location", data_name), ("offset", str(pos)), ("length", str(length))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
                pos += length
        return data_name, pos

    def _ext_span(self, t: onnx.TensorProto) -> tuple[Path, int, int]:
        """The tensor's file and byte span (checked when the model was read: inside its folder, integers)."""
        src = self.src_dir / (external_location(t) or "")
        offset, length = external_span(t)
        return src, offset, src.stat().st_size - offset if length is None else length

    def _ext_length(self, t: onnx.TensorProto) -> int:
        return self._ext_span(t)[2]

    def _read_ext(self, t: onnx.TensorProto) -> bytes:
        src, offset, length = self._ext_span(t)
        with open(src, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def _check(self, path: Path, stage: str) -> None:
        try:
            onnx.checker.check_model(str(path))
        except Exception as e:
            try:  # a source model that already fails the checker cannot give stages that pass it
                onnx.checker.check_model(self.model)
            except Exception:
                return
            raise NpufitError(f"stage {stage} fails the ONNX checker: {str(e).splitlines()[0][:200]}") from None


def _copy(t: onnx.TensorProto) -> onnx.TensorProto:
    c = onnx.TensorProto()
    c.CopyFrom(t)
    return c
