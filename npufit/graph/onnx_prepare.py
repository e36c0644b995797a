"""How every verb reads an ONNX model: small loaders that compose, each doing one thing.

    read_onnx(path, *loaders, external_data=...)   read and validate a file (external weights stay on disk unless
                                                   "loaded"; a model whose data is missing is refused either way)
    from_proto(model, *loaders, name=...)          a ModelProto the caller holds (copied before any change)
    loaders, in this order:
      pin_inputs(shapes, only_dynamic=False)       pin dynamic input dims (only dynamic ones: split's stages)
      strip_weights                                drop weight bytes before inference (check needs dims only)
      infer | infer_beside                         shape inference, last (infer_beside: in a forked child while
                                                   the check loader builds what needs no shapes)

e.g. `read_onnx(path, pin_inputs(shapes), strip_weights, infer_beside)` is what check reads. What a file needs
(its external data) is an option of `read_onnx` alone, so an in-memory model cannot be asked to load weights; an
inference loader anywhere but last is refused before anything is read. Every ONNX file a verb reads for a user goes
through `read_onnx`, and every shape inference through `infer_shapes` (a test scans npufit/ for direct calls).

Why plain onnx protobuf rather than onnx-ir here: parsing without external data and the C++ shape inference keep
a 100k-node check within seconds, and external weights are never touched unless a verb asks for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from ..errors import BadModelError, NpufitError
from ..util import forked
from ..util.io import note_input
from ..util.readers import require_regular_file
from ..util.shapes import ShapeNeeded, ShapePolicy, fitting, imgsz_hint, parse_input_shapes, resolve
from .validate import (
    Validation,
    check_external_data,
    check_text,
    external_data_files,
    refuse_missing_data,
    scan_tensors,
    start_validation,
)

SMALL_VALUE_ELEMS = 4096  # constant values kept for rules (shape vectors, axes, scales, small tables)
SHAPE_DATA_ELEMS = 64  # float initializers up to this size keep their data for inference (Resize scales, Range bounds)
# read_onnx(external_data=...): the weights stay on disk (checking needs shapes only; a runtime reads the files
# itself), or are read into memory (the verb rewrites the model). Missing data is refused either way: a model read
# without its weights would be judged, compared or run as another model.
EXTERNAL_DATA = ("on_disk", "loaded")
_INTEGER_TYPES = frozenset(
    {
        onnx.TensorProto.INT64,
        onnx.TensorProto.INT32,
        onnx.TensorProto.INT16,
        onnx.TensorProto.INT8,
        onnx.TensorProto.UINT64,
        onnx.TensorProto.UINT32,
        onnx.TensorProto.UINT16,
        onnx.TensorProto.UINT8,
        onnx.TensorProto.BOOL,
    }
)


class PreparedOnnx:
    """A model as the loaders leave it. `model` is our own copy once a loader changed it (input shapes pinned,
    weights stripped, shapes inferred); the caller's ModelProto is never changed."""

    def __init__(self, model: onnx.ModelProto, path: str, checking: Validation | None, own: bool):
        self.model = model
        self.path = path  # the file, or the name given for an in-memory model
        self.opsets = opset_map(model)  # domain ("ai.onnx" for the default one) -> version
        self.file_warnings: list[str] = []  # what reading found: checker limits, opset
        self.shape_warnings: list[str] = []  # shape inference that failed
        self.kept: dict[str, tuple[bytes, onnx.TensorProto]] = {}  # small weights' bytes (strip_weights)
        self.shapes = ShapePolicy()  # pin_inputs: what the shape policy pinned, noted and asks for
        # infer_beside on a big model: inference and the checker still running; `model` is not inferred yet, and the
        # checker's and inference's warnings come from overlap.finish()
        self.overlap: Overlap | None = None
        self._checking = checking  # the checker's verdict, finished when the loaders are done (or by the Overlap)
        self._own = own  # False: the caller's ModelProto, copied before the first change
        self._stripped = self._inferred = False

    @property
    def warnings(self) -> list[str]:
        return self.file_warnings + self.shape_warnings

    def writable(self) -> onnx.ModelProto:
        """The model for a loader to change: ours (copied from the caller's first), not inferred yet."""
        if self._inferred:
            raise ValueError("loaders that change the model come before shape inference")
        if not self._own:
            copy = onnx.ModelProto()
            copy.CopyFrom(self.model)
            self.model, self._own = copy, True
        return self.model


Loader = Callable[[PreparedOnnx], None]


def read_onnx(path: str | os.PathLike, *loaders: Loader, external_data: str = "on_disk") -> PreparedOnnx:
    """The file read and validated (a model the ONNX checker rejects: one line, exit 2), then `loaders` in order."""
    if external_data not in EXTERNAL_DATA:
        raise ValueError(f"external_data must be one of {EXTERNAL_DATA}, not {external_data!r}")
    inferring = _inference_last(loaders)
    # a big model's checker may run in a child beside shape inference (the only step long enough to pay)
    model, checking = _read(Path(path), defer=inferring)
    prep = PreparedOnnx(model, str(path), checking, own=True)
    return _apply(prep, loaders, external_data)


def from_proto(model: onnx.ModelProto, *loaders: Loader, name: str = "<memory>") -> PreparedOnnx:
    """A ModelProto the caller holds (copied before any change), then `loaders` in order."""
    _inference_last(loaders)
    return _apply(PreparedOnnx(model, name, None, own=False), loaders, None)


def pin_inputs(shapes=None, only_dynamic: bool = False, strict: bool = True) -> Loader:
    """Pin input dims by the shape policy (util.shapes.resolve): the shapes given (`--input-shape`) and a dynamic
    batch set to 1; what else is unknown is recorded in `prep.shapes` for the verb to ask for. only_dynamic: a
    fixed dim may not change (split: its stages must match the original model). strict=False: a shape applies only
    where it fits (scan: one option for many models): an input of that name and rank whose fixed dims it keeps."""

    shapes = parse_input_shapes(shapes)  # any form the library takes: a mapping, "NAME=D0,D1,...", a list of those

    def pin(prep: PreparedOnnx) -> None:
        declared = declared_inputs(prep.model)
        given = shapes if strict or not shapes else fitting(declared, shapes)
        prep.shapes = resolve(declared, given, imgsz_hint(metadata(prep.model)))
        if prep.shapes.pinned:
            apply_input_shapes(prep.writable(), prep.shapes.pinned, only_dynamic)

    return pin


def declared_inputs(model: onnx.ModelProto) -> dict[str, tuple | None]:
    """The model's inputs (initializers excluded) and their declared dims (names/None for dynamic ones)."""
    inits = {t.name for t in model.graph.initializer}
    return {i.name: shape_of(i.type) for i in model.graph.input if i.name not in inits}


def metadata(model: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def require_shapes(prep: PreparedOnnx, why: str) -> None:
    """Refuse (one line naming the input and the shape to give) a model whose unknown dims the verb needs."""
    if prep.shapes.needed:
        raise ShapeNeeded(prep.shapes.needed, why)


def strip_weights(prep: PreparedOnnx) -> None:
    """Weight bytes dropped before inference, which needs dims and dtypes only (check); the bytes of small ones are
    kept for rules (`prep.kept`)."""
    prep.kept = _strip_weights(prep.writable())
    prep._stripped = True


def infer(prep: PreparedOnnx) -> None:
    """Shape inference (lenient: see `infer_shapes`); a failure is a shape warning, not an error."""
    if prep._checking is not None:
        prep._checking.begin()  # after the loaders' writes (input shapes, stripped weights): they would copy pages
    prep._inferred = True
    prep.model, error = infer_shapes(prep.model)
    if error:
        prep.shape_warnings.append(f"shape inference failed ({error}); shapes may be incomplete")


def infer_beside(prep: PreparedOnnx) -> None:
    """`infer`, or on a big stripped model without subgraphs whose checker runs in a child, inference in another
    child while the caller (the check loader) builds what needs no shapes: `prep.overlap` to finish."""
    checking = prep._checking
    if checking is None or not (prep._stripped and checking.deferred and checking.single_graph):
        infer(prep)
        return
    checking.begin()
    prep._inferred = True
    prep.overlap = Overlap(prep.model, checking)
    prep._checking = None  # the Overlap finishes the verdict


_INFERENCE = (infer, infer_beside)


def _inference_last(loaders: tuple[Loader, ...]) -> bool:
    """Whether the loaders end with shape inference; refuse (a programming error) one anywhere else."""
    if any(load in _INFERENCE for load in loaders[:-1]):
        raise ValueError("shape inference is the last loader: what changes the model comes before it")
    return bool(loaders) and loaders[-1] in _INFERENCE


def _apply(prep: PreparedOnnx, loaders: tuple[Loader, ...], external_data: str | None) -> PreparedOnnx:
    """What reading found, then the loaders; the checker's verdict last (its rejection wins over any later error)."""
    checking = prep._checking
    try:
        if external_data == "loaded":
            _load_weights(prep.model, Path(prep.path))
        if prep.opsets.get("ai.onnx", 0) > onnx.defs.onnx_opset_version():
            prep.file_warnings.append(
                f"model opset {prep.opsets['ai.onnx']} is newer than this onnx ({onnx.defs.onnx_opset_version()}); "
                "shapes may be incomplete"
            )
        for load in loaders:
            load(prep)
    except Exception:
        if checking is not None:
            checking.finish()  # a model the checker rejects may break a step above first: the checker's line wins
        raise
    except BaseException:  # Ctrl-C, SIGTERM: no verdict wanted
        if checking is not None:
            checking.cancel()
        raise
    if prep._checking is not None:
        prep.file_warnings[:0] = prep._checking.finish()  # the checker's warnings first, as when it ran first
        prep._checking = None
    return prep


def infer_shapes(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    """The one shape inference of a ModelProto: ONNX's with data propagation, lenient (unknown ops and type clashes
    leave shapes unknown) -> (the inferred model, None), or (the model as given, why inference failed). Never
    raises; the input is not modified. (A rewrite's onnx-ir model: rewrite.base.infer_ir_shapes, on these terms.)"""
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True), None
    except Exception as e:
        return model, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


@lru_cache(maxsize=None)
def np_dtype_name(elem_type: int) -> str | None:
    if not elem_type:
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:  # bfloat16/float8 have no numpy dtype
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def shape_of(type_proto) -> tuple | None:
    if not type_proto.HasField("tensor_type"):
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        kind = d.WhichOneof("value")  # one call instead of two HasField: this runs once per tensor
        if kind == "dim_value":
            dims.append(int(d.dim_value))
        elif kind == "dim_param" and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return tuple(dims)


def elem_type(type_proto) -> int:
    return type_proto.tensor_type.elem_type if type_proto.HasField("tensor_type") else 0


def value_types(g: onnx.GraphProto, types: dict | None = None) -> Iterator[tuple[str, tuple | None, str | None]]:
    """(name, shape, dtype) of the graph's inputs, outputs and value_info, in that order (not its subgraphs').
    Field reads on protobuf messages dominate a 100k-node load: equal types (most activations share a handful of
    shapes) are parsed once, keyed by their serialized bytes in `types`."""
    types = {} if types is None else types
    for group in (g.input, g.output, g.value_info):
        for vi in group:
            tp = vi.type
            key = tp.SerializeToString()
            known = types.get(key)
            if known is None:
                known = types[key] = (shape_of(tp), np_dtype_name(elem_type(tp)))
            yield vi.name, known[0], known[1]


def _inferred_types(model: onnx.ModelProto) -> tuple[list[tuple], str | None]:
    """Shape inference of `model` as the loader reads it: -> (value_types of the inferred graph, or of the model as
    given when inference failed, why it failed or None). Runs in a forked child beside the loader (Overlap)."""
    inferred, error = infer_shapes(model)
    return list(value_types(inferred.graph)), error


class Overlap:
    """Shape inference of a big model running in a forked child (and its ONNX checker in another), while the loader
    builds what needs no shapes: nodes, initializers, producer and consumer maps (the `infer_beside` loader).
    `finish()` joins both; an error while the loader builds must go through `abort()`: a model the checker
    rejects may break the loader first, and the checker's line wins, as when it ran first."""

    def __init__(self, model: onnx.ModelProto, checking: Validation):
        self._model, self._checking = model, checking
        self._job = forked.start(_inferred_types, model)  # None where forking is not safe: finish infers here

    def finish(self) -> tuple[list[tuple], list[str], list[str]]:
        """-> (value types of the inferred graph, the checker's warnings, shape warnings); raise the checker's
        BadModelError."""
        try:
            checker_warnings = self._checking.finish()
        except BaseException:
            self._cancel_inference()
            raise
        types, error = self._job.result() if self._job is not None else _inferred_types(self._model)
        self._job = None
        return (
            types,
            checker_warnings,
            ([f"shape inference failed ({error}); shapes may be incomplete"] if error else []),
        )

    def abort(self, ordinary: bool) -> None:
        """The loader is unwinding. ordinary (an Exception, not Ctrl-C / SIGTERM): the checker's rejection, if any,
        is raised instead."""
        self._cancel_inference()
        if ordinary:
            self._checking.finish()
        else:
            self._checking.cancel()

    def _cancel_inference(self) -> None:
        job, self._job = self._job, None
        if job is not None:
            job.cancel()


def opset_map(model: onnx.ModelProto) -> dict[str, int]:
    return {(o.domain or "ai.onnx"): o.version for o in model.opset_import}


def _read(p: Path, defer: bool = False) -> tuple[onnx.ModelProto, Validation]:
    """Parse the file (weights stay on disk when external) and refuse unsafe or broken input;
    -> (model, the checker's verdict to finish: see start_validation). External data that is missing or too short
    is refused here, for every verb: a model read without its weights would be judged as another model.
    defer: the caller runs shape inference before it needs the verdict (see start_validation)."""
    if require_regular_file(p, "ONNX model", BadModelError).st_size == 0:
        raise BadModelError(f"{p}: empty file, not an ONNX model")
    try:
        # onnx.load(p, load_external_data=False), keeping the file's bytes: the ONNX checker reads them as they
        # are instead of a re-serialized copy of the model (0.2 s and the model's size again in memory, 100k nodes)
        fmt = onnx.serialization.registry.get_format_from_file_extension(p.suffix) or "protobuf"
        with open(p, "rb") as f:
            data = f.read()
        model = onnx.serialization.registry.get(fmt).deserialize_proto(data, onnx.ModelProto())
    except Exception as e:  # DecodeError, RuntimeError from C++ parser
        raise BadModelError(f"{p}: not a valid ONNX model (protobuf parse failed: {type(e).__name__})") from None
    if not model.HasField("graph") or (model.ir_version == 0 and not model.opset_import):
        raise BadModelError(f"{p}: not an ONNX model (no graph / ir_version in the protobuf)")
    if len(model.graph.node) == 0 and len(model.graph.output) == 0:
        raise BadModelError(f"{p}: ONNX model has an empty graph")
    wire = data if fmt == "protobuf" else None  # the bytes `model` was parsed from, as they are
    check_text(model, p, wire)  # before anything reads a name
    scan = scan_tensors(model)  # one walk over the tensors for every check below
    refuse_missing_data(check_external_data(model, p.parent, scan.external))
    checking = start_validation(model, p, wire=wire, scan=scan, defer=defer)
    del data, wire
    for read in [p, *external_data_files(model, p.parent, scan.external)]:
        note_input(read)  # no output of this run may land on a file it reads
    return model, checking


def _load_weights(model: onnx.ModelProto, p: Path) -> None:
    """External weights into memory (their locations were checked by the read: inside the model's folder)."""
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(p.parent))
    except Exception as e:
        raise NpufitError(f"{p}: cannot read the model's weights ({type(e).__name__}: {str(e)[:160]})") from None


def apply_input_shapes(
    model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]], only_dynamic: bool = False
) -> None:
    """Pin dynamic input dims (in our in-memory copy only; the file is never modified)."""
    by_name = {i.name: i for i in model.graph.input}
    for name, dims in shapes.items():
        if name not in by_name:
            known = ", ".join(i.name for i in model.graph.input) or "none"
            raise BadModelError(f"--input-shape: model has no input '{name}' (inputs: {known})")
        tt = by_name[name].type.tensor_type
        if only_dynamic:
            _refuse_fixed_change(name, tt.shape.dim, dims)
        tt.shape.ClearField("dim")
        for d in dims:
            tt.shape.dim.add().dim_value = int(d)
    # Stale value_info can contradict the new shapes; inference recomputes them.
    if shapes:
        del model.graph.value_info[:]


def _refuse_fixed_change(name: str, dims, want) -> None:
    if dims and len(dims) != len(want):
        raise NpufitError(f"--input-shape {name}: the model input has rank {len(dims)}, got {len(want)} dims")
    for k, (d, w) in enumerate(zip(dims, want)):
        if d.HasField("dim_value") and d.dim_value != w:
            raise NpufitError(
                f"--input-shape {name}: dim {k} is fixed to {d.dim_value} in the model; only dynamic dims can be pinned"
            )


def _strip_weights(model: onnx.ModelProto) -> dict[str, tuple[bytes, onnx.TensorProto]]:
    """Drop weight bytes from our in-memory copy before shape inference, which needs dims and dtype only.

    Inference serializes the model, parses it in C++ and back: with the weights that is most of a big
    model's load time, and a copy of every weight in memory. Integer tensors (shape vectors, axes) and
    tiny float ones keep their data for data propagation. Returns the raw bytes of the stripped tensors
    small enough for rules to read their values (SMALL_VALUE_ELEMS), decoded only if a rule asks.
    """
    kept: dict[str, tuple[bytes, onnx.TensorProto]] = {}
    EXTERNAL = onnx.TensorProto.EXTERNAL
    INTEGER = _INTEGER_TYPES
    for init in model.graph.initializer:
        if init.data_location == EXTERNAL:
            continue
        raw = init.raw_data  # a copy, but one field read: cheaper than dims and HasField for 30k weights
        size = len(raw)
        if size <= SHAPE_DATA_ELEMS * 4 or (size <= SMALL_VALUE_ELEMS * 8 and init.data_type in INTEGER):
            continue  # empty (data in typed fields), tiny, or an integer table inference may propagate
        if size <= SMALL_VALUE_ELEMS * 8:  # may be small enough for rules: its dims are read if a rule asks
            kept[init.name] = (raw, init)
        init.ClearField("raw_data")
        init.data_location = EXTERNAL  # no location: inference never opens it
    return kept
