"""The one validation front door for ONNX models (hostile-input issue, part 3).

Every verb reads a model through `onnx_prepare.read_onnx`, which calls `start_validation`: the ONNX checker
(structural check always; the full check with strict shape inference where affordable), a raw-data length check,
the external-data guard, which covers every tensor a model can carry (initializers, sparse initializers,
TENSOR and TENSORS attributes, subgraphs and model-local function bodies), and a text check: ONNX is proto2,
whose parser hands a string field that is not UTF-8 back as bytes, which every later step would trip on.
What the checker cannot judge (a model newer than the installed onnx) proceeds with a warning that says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import onnx

from ..errors import BadModelError
from ..util import forked
from ..util.readers import require_regular_file

FULL_CHECK_MAX_NODES = (
    20_000  # strict inference doubles the loader's inference cost; big graphs get the structural check
)
# From here the checker (100k nodes: 0.45-0.55 s of CPU) may run in a forked child beside the caller's shape inference
# (start_validation; NPUFIT_SERIAL_CHECKER=1 turns that off). Far below it the checker costs what a fork does
# (2,000 nodes: 0.016 s full check; a fork: 0.01-0.04 s)
FORK_CHECKER_MIN_NODES = 20_000
MAX_LOCATION_CHARS = 1024  # an external-data location is a file name beside the model, not an essay
MAX_PATH_COMPONENT = 255  # NAME_MAX on every filesystem npufit runs on

_SIZES: dict[int, int] = {  # ONNX data type -> bytes per element
    onnx.TensorProto.FLOAT: 4,
    onnx.TensorProto.DOUBLE: 8,
    onnx.TensorProto.FLOAT16: 2,
    onnx.TensorProto.BFLOAT16: 2,
    onnx.TensorProto.INT8: 1,
    onnx.TensorProto.UINT8: 1,
    onnx.TensorProto.INT16: 2,
    onnx.TensorProto.UINT16: 2,
    onnx.TensorProto.INT32: 4,
    onnx.TensorProto.UINT32: 4,
    onnx.TensorProto.INT64: 8,
    onnx.TensorProto.UINT64: 8,
    onnx.TensorProto.BOOL: 1,
}


def validate_model(
    model: onnx.ModelProto, path: Path, wire: bytes | None = None, scan: TensorScan | None = None
) -> list[str]:
    """Refuse what the ONNX checker rejects (one line); return warnings for what it could not judge.
    Call after `check_external_data` and `refuse_missing_data` (whose guard comes first: the checker's own file
    probing fails on hostile locations with a C++ filesystem error).
    wire: the protobuf bytes `model` was parsed from, if at hand (the checker then needs no serialized copy).
    scan: `scan_tensors(model)`, if the caller made it already (one walk over the tensors serves every check)."""
    return start_validation(model, path, wire, scan).finish()


def start_validation(
    model: onnx.ModelProto,
    path: Path,
    wire: bytes | None = None,
    scan: TensorScan | None = None,
    defer: bool = False,
) -> Validation:
    """validate_model's work; `finish()` on the result gives its verdict.
    defer: the caller has work to do before it needs the verdict (shape inference). On a big model whose checker
    needs only the file's bytes (FORK_CHECKER_MIN_NODES, no external data, every graph input and output shaped),
    the checker then waits for `begin()`, which runs it in a forked child beside that work; the caller may change
    `model` meanwhile. `begin()` comes after the caller's last writes into the model as read: each page the parent
    writes while a child shares it costs a copy (stripping weights first: 70k page faults, 0.3 s at 100k nodes)."""
    scan = scan_tensors(model) if scan is None else scan
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if model.ir_version > onnx.IR_VERSION or opset > onnx.defs.onnx_opset_version():
        newer = (
            f"not validated by the ONNX checker: the model (IR {model.ir_version}, opset {opset}) is newer than "
            f"onnx {onnx.__version__} (IR {onnx.IR_VERSION}, opset {onnx.defs.onnx_opset_version()})"
        )
        return Validation(path, scan, [newer])
    nodes = sum(len(g.node) for g in scan.graphs)
    full = nodes <= FULL_CHECK_MAX_NODES
    # External data: the checker reads files by path, kept serial. A raw-data length error: a broken model, serial.
    if (
        defer
        and nodes >= _fork_min_nodes()
        and not scan.external
        and scan.bad_length is None
        and _bytes_checkable(wire)
        and os.environ.get("NPUFIT_SERIAL_CHECKER") != "1"
        and forked.can_fork()
        and not _unshaped(scan.graphs)
    ):
        return Validation(path, scan, [], (wire, full))
    warning = _checker_verdict(path, _run_checker, model, path, full, bool(scan.external), wire, scan.graphs)
    return Validation(path, scan, [warning] if warning else [])


def _fork_min_nodes() -> int:
    """FORK_CHECKER_MIN_NODES, or NPUFIT_FORK_MIN_NODES (a number) where tests and benchmarks/check_outputs.py run
    the forked path on small models."""
    try:
        return int(os.environ.get("NPUFIT_FORK_MIN_NODES", FORK_CHECKER_MIN_NODES))
    except ValueError:
        return FORK_CHECKER_MIN_NODES


class Validation:
    """The verdict of `start_validation`: `finish()` -> the warnings, or raise the model's BadModelError.
    The checker's verdict comes before the raw-data length check, whose line says less about a broken model."""

    def __init__(self, path: Path, scan: TensorScan, warnings: list[str], deferred: tuple[bytes, bool] | None = None):
        self._path, self._bad_length, self._warnings = path, scan.bad_length, warnings
        self._deferred = deferred  # (the file's bytes, full check): the checker not run yet
        self._job: forked.Forked | None = None
        self.single_graph = len(scan.graphs) == 1  # no If/Loop/Scan bodies (onnx_prepare.Overlap needs none)

    @property
    def deferred(self) -> bool:
        """Whether the checker waits for `begin()`: a big model, forkable, whose checker needs only its bytes."""
        return self._deferred is not None

    def begin(self) -> None:
        """Start a deferred checker in a forked child (where forking is not safe, `finish` runs it)."""
        if self._deferred is not None and self._job is None:
            self._job = forked.start(_checker_verdict, self._path, _check_bytes, *self._deferred)

    def finish(self) -> list[str]:
        if self._deferred is not None:
            (wire, full), job, self._deferred, self._job = self._deferred, self._job, None, None
            # the child's verdict; when it gave none, or never started, the same check here (raises a rejection)
            warning = job.result() if job is not None else _checker_verdict(self._path, _check_bytes, wire, full)
            if warning:
                self._warnings.append(warning)
        if self._bad_length is not None:
            t, have, need = self._bad_length
            raise BadModelError(
                f"{self._path}: tensor '{t.name}' holds {have} bytes of data but its shape "
                f"{list(t.dims)} and type need {need}"
            )
        return self._warnings

    def cancel(self) -> None:
        """The caller is unwinding (Ctrl-C, SIGTERM): stop a checker running in a child, want no verdict."""
        job, self._deferred, self._job = self._job, None, None
        if job is not None:
            job.cancel()


def _checker_verdict(path: Path, check, *args) -> str | None:
    """check(*args) runs the ONNX checker: raise BadModelError if it rejects the model; -> a warning when it
    could not judge the model, else None."""
    try:
        check(*args)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise BadModelError(f"{path}: the ONNX checker rejects this model: {_first_line(e)}") from None
    except ValueError as e:  # over 2 GB of embedded weights: the protobuf cannot be handed to the checker
        return f"not validated by the ONNX checker ({_first_line(e)})"
    except _Unshaped:
        return "validated by the ONNX checker only in part: some graph inputs or outputs have no shape"
    return None


class _Unshaped(Exception):
    pass


def _run_checker(
    model: onnx.ModelProto, path: Path, full: bool, external: bool, wire: bytes | None, graphs: list[onnx.GraphProto]
) -> None:
    """The checker demands a shape on every graph input/output type, which ONNX Runtime and exporters do not:
    a rank-unknown tensor gets an empty shape for the structural check only (restored after; full check
    skipped, its inference would read the stand-in as a scalar)."""
    unshaped = _unshaped(graphs)
    if not unshaped:
        # with external data the checker must know the model's folder, which only the path form gives it
        if external:
            onnx.checker.check_model(str(path), full_check=full)
        elif _bytes_checkable(wire):
            _check_bytes(wire, full, model)
        else:
            onnx.checker.check_model(model, full_check=full)
        return
    if external:
        raise _Unshaped
    for tt in unshaped:
        tt.shape.SetInParent()
    try:
        onnx.checker.check_model(model, full_check=False)
    finally:
        for tt in unshaped:
            tt.ClearField("shape")


def _unshaped(graphs: list[onnx.GraphProto]) -> list[onnx.TypeProto.Tensor]:
    return [
        vi.type.tensor_type
        for g in graphs
        for vi in (*g.input, *g.output, *g.value_info)
        if vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape")
    ]


def _bytes_checkable(wire: bytes | None) -> bool:
    return wire is not None and len(wire) <= onnx.checker.MAXIMUM_PROTOBUF


def _check_bytes(wire: bytes, full: bool, model: onnx.ModelProto | None = None) -> None:
    """The checker on the file's bytes as they are (no serialized copy of the model).
    model: the model parsed from them, if at hand (else parsed here, should the C++ parser refuse them)."""
    try:
        onnx.checker.check_model(wire, full_check=full)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        raise
    except Exception:  # bytes the C++ parser refuses where Python's accepted: judge the parsed model
        onnx.checker.check_model(model if model is not None else onnx.ModelProto.FromString(wire), full_check=full)


def _first_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not ln.startswith("==>")]
    return (lines[0] if lines else type(e).__name__)[:300]


# -- text fields ---------------------------------------------------------------------------------------------
_FD = onnx.NodeProto.DESCRIPTOR.fields[0].__class__
_TENSOR = onnx.TensorProto.DESCRIPTOR


@lru_cache(maxsize=None)
def _layout(desc) -> tuple[tuple[str, bool, bool], ...]:
    """The string and message fields of one message type: (name, is_message, is_repeated)."""
    return tuple(
        (f.name, f.type == _FD.TYPE_MESSAGE, f.is_repeated)
        for f in desc.fields
        if f.type in (_FD.TYPE_STRING, _FD.TYPE_MESSAGE)
    )


# The C check costs ~7.5 ns per byte (serialize + parse, two transient copies), the Python walk ~9 us per node:
# the C check for any model up to 64 MiB, and up to 512 MiB when it has a node per KiB or more
TWIN_MAX_BYTES, TWIN_CAP_BYTES, TWIN_BYTES_PER_NODE = 64 << 20, 512 << 20, 1024


def check_text(model: onnx.ModelProto, path: Path, wire: bytes | None = None) -> None:
    """Every string field of the model (names, op types, domains, dims, metadata, in subgraphs and functions too)
    must be UTF-8 text. A fast pass answers yes for real models; only a bad one is walked again to name the field.
    wire: the protobuf bytes `model` was parsed from, if at hand (the fast pass then re-serializes nothing).
    Python's protobuf (upb) cannot give this proof for free: it parses a proto2 string field that is not UTF-8
    without complaint and hands it back as bytes on access."""
    if _all_text(model, wire):
        return
    found = _first_non_text(model)
    if found is not None:
        where, value = found
        raise BadModelError(
            f"{path}: {where} is not UTF-8 text ({bytes(value)[:40]!r}); the file is corrupt or "
            "not made by an ONNX exporter"
        )


@lru_cache(maxsize=None)
def _utf8_twin():
    """ModelProto of a proto3 copy of onnx's schema: proto3's C parser refuses a string field that is not UTF-8,
    up to 8x faster than the Python walk (100k nodes, no weights: 0.11 s against 0.93 s, 2-core machine at load 4).
    None when the copy cannot be built."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    try:
        fd = descriptor_pb2.FileDescriptorProto()
        onnx.ModelProto.DESCRIPTOR.file.CopyToProto(fd)
        fd.name, fd.syntax = "npufit_utf8_twin/" + fd.name, "proto3"
        todo = list(fd.message_type)
        while todo:
            m = todo.pop()
            for f in m.field:
                f.ClearField("default_value")  # proto3 has no explicit defaults
            todo.extend(m.nested_type)
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fd)
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{fd.package}.ModelProto"))
    except Exception:  # a future onnx schema with proto2-only features: the Python walk does the job
        return None


def _all_text(model: onnx.ModelProto, wire: bytes | None = None) -> bool:
    """True when every string field is text (False may also mean: look closer). The proto3 twin re-parses the
    model's bytes in C when the copies stay small (the file's bytes when at hand: 100k nodes, 82 MB, 0.04 s
    against 0.3 s for ByteSize + serialize first); otherwise a Python walk: ListFields visits only the fields
    set, except on tensors, whose raw_data it would copy, so tensors are read field by field."""
    twin = _utf8_twin()
    limit = max(TWIN_MAX_BYTES, min(TWIN_CAP_BYTES, TWIN_BYTES_PER_NODE * len(model.graph.node)))
    if twin is not None and (len(wire) if wire is not None else model.ByteSize()) <= limit:
        try:
            twin.FromString(wire if wire is not None else model.SerializeToString())
            return True
        except Exception:
            return False
    STRING, MESSAGE = _FD.TYPE_STRING, _FD.TYPE_MESSAGE
    stack: list = [model]
    while stack:
        msg = stack.pop()
        if msg.DESCRIPTOR is _TENSOR:
            if _first_non_text(msg) is not None:
                return False
            continue
        for fd, v in msg.ListFields():
            kind = fd.type
            if kind == STRING:
                if fd.is_repeated:
                    if any(x.__class__ is not str for x in v):
                        return False
                elif v.__class__ is not str:
                    return False
            elif kind == MESSAGE:
                if fd.is_repeated:
                    stack.extend(v)
                else:
                    stack.append(v)
    return True


def _first_non_text(root) -> tuple[str, bytes] | None:
    """(field path, value) of the first string field under `root` that is not text, or None."""
    stack: list[tuple[Any, tuple]] = [(root, ())]
    while stack:
        msg, where = stack.pop()
        for name, is_message, repeated in _layout(msg.DESCRIPTOR):
            value = getattr(msg, name)
            if is_message:
                if repeated:
                    stack.extend((v, (where, name, i)) for i, v in enumerate(value))
                elif msg.HasField(name):
                    stack.append((value, (where, name, None)))
                continue
            for i, v in enumerate(value if repeated else (value,)):
                if not isinstance(v, str):
                    return _where((where, name, i if repeated else None)), v
    return None


def _where(w: tuple) -> str:
    parts = []
    while w:
        w, name, i = w
        parts.append(name if i is None else f"{name}[{i}]")
    return ".".join(reversed(parts))


# -- every tensor a model can carry --------------------------------------------------------------------------
def all_tensors(model: onnx.ModelProto, graphs: list | None = None) -> Iterator[onnx.TensorProto]:
    """graphs: a list that collects the main graph and its subgraphs on the way (function bodies excluded)."""
    yield from graph_tensors(model.graph, graphs)
    for f in model.functions:
        yield from _node_tensors(f.node)


def graph_tensors(graph: onnx.GraphProto, graphs: list | None = None) -> Iterator[onnx.TensorProto]:
    if graphs is not None:
        graphs.append(graph)
    yield from graph.initializer
    for s in graph.sparse_initializer:
        yield s.values
        yield s.indices
    yield from _node_tensors(graph.node, graphs)


_A = onnx.AttributeProto
_HOLDS_TENSORS = frozenset({_A.TENSOR, _A.TENSORS, _A.SPARSE_TENSOR, _A.SPARSE_TENSORS, _A.GRAPH, _A.GRAPHS})


def _node_tensors(nodes, graphs: list | None = None) -> Iterator[onnx.TensorProto]:
    A = _A
    for n in nodes:
        attrs = n.attribute
        if not attrs:  # most nodes of a big graph: no attribute to read; each type is read once
            continue
        for a in attrs:
            kind = a.type
            if kind not in _HOLDS_TENSORS:
                continue
            if kind == A.TENSOR:
                yield a.t
            elif kind == A.TENSORS:
                yield from a.tensors
            elif kind == A.SPARSE_TENSOR:
                yield a.sparse_tensor.values
                yield a.sparse_tensor.indices
            elif kind == A.SPARSE_TENSORS:
                for s in a.sparse_tensors:
                    yield s.values
                    yield s.indices
            elif kind == A.GRAPH:
                yield from graph_tensors(a.g, graphs)
            else:
                for g in a.graphs:
                    yield from graph_tensors(g, graphs)


@dataclass
class TensorScan:
    """What the validation front door needs from the model's tensors and graphs, read in one walk (a 100k-node
    graph costs ~0.07 s per walk over its nodes' attributes; four walks became this one)."""

    external: list[onnx.TensorProto] = field(default_factory=list)  # data in external files, in all_tensors order
    graphs: list[onnx.GraphProto] = field(default_factory=list)  # the main graph and its subgraphs (not functions)
    bad_length: tuple[onnx.TensorProto, int, int] | None = None  # first embedded raw_data of the wrong length


def scan_tensors(model: onnx.ModelProto) -> TensorScan:
    """Reads no string field: safe before `check_text`. Also checks that embedded raw_data holds exactly the
    bytes its dims and type say (the checker does not look); the first mismatch is kept for validate_model."""
    scan = TensorScan()
    EXTERNAL, sizes, external = onnx.TensorProto.EXTERNAL, _SIZES, scan.external
    for t in all_tensors(model, scan.graphs):  # runs per tensor (100k on a big graph): each field read once
        if t.data_location == EXTERNAL:
            external.append(t)
            continue
        if scan.bad_length is not None:
            continue
        size = sizes.get(t.data_type)
        if size is None:
            continue
        have = len(t.raw_data)
        if not have and not t.HasField("raw_data"):  # data in the typed fields (or none): nothing to measure
            continue
        n = 1
        for d in t.dims:
            n *= d
        if have != n * size:
            scan.bad_length = (t, have, n * size)
    return scan


# -- external data ---------------------------------------------------------------------------------------------
def external_location(t: onnx.TensorProto) -> str | None:
    if t.data_location != onnx.TensorProto.EXTERNAL:
        return None
    for kv in t.external_data:
        if kv.key == "location":
            return kv.value
    return ""


def external_span(t: onnx.TensorProto) -> tuple[int, int | None]:
    """(offset, length) of a tensor's bytes in its external data file; length None: to the end of the file."""
    meta = {kv.key: kv.value for kv in t.external_data}
    try:
        offset = int(meta.get("offset", 0))
        length = int(meta["length"]) if "length" in meta else None
    except ValueError:
        raise BadModelError(f"tensor '{t.name}': external data offset/length are not integers") from None
    if offset < 0 or (length is not None and length < 0):
        raise BadModelError(f"tensor '{t.name}': external data offset {offset} / length {length} must not be negative")
    return offset, length


def check_external_data(model: onnx.ModelProto, base_dir: Path, external: list[onnx.TensorProto]) -> list[str]:
    """Every external-data location must be a plain relative name inside the model's folder (no URL, no
    backslash), naming a regular file when it exists. Returns what is lacking: locations that do not exist or end
    before a tensor's span (every verb refuses them: `refuse_missing_data`).
    external: `scan_tensors(model).external` (the tensors with external data, found in the scan's one walk)."""
    base = base_dir.resolve()
    missing = []
    for t in external:
        loc = external_location(t)
        if loc is None:
            continue
        what = f"tensor '{t.name}': external data location"
        if not loc or os.path.isabs(loc):
            raise BadModelError(f"{what} '{loc}' must be a relative path inside the model folder")
        if "\x00" in loc:
            raise BadModelError(f"{what} contains a NUL byte")
        if "://" in loc:
            raise BadModelError(f"{what} '{loc[:200]}' is a URL; npufit reads weights only from files beside the model")
        if "\\" in loc:  # a Windows path: there '..\\' leaves the model folder, here it names no file
            raise BadModelError(f"{what} '{loc[:200]}' holds a backslash (a Windows path); write it with '/'")
        if len(loc) > MAX_LOCATION_CHARS or any(len(part.encode()) > MAX_PATH_COMPONENT for part in loc.split("/")):
            raise BadModelError(f"{what} is {len(loc)} characters long, not a file name")
        target = (base / loc).resolve()
        if base != target and base not in target.parents:
            raise BadModelError(
                f"tensor '{t.name}': external data '{loc}' points outside the model folder (refused: path traversal)"
            )
        offset, length = external_span(t)
        if not os.path.lexists(target):
            missing.append(loc)
            continue
        size = require_regular_file(target, "external data file", BadModelError).st_size
        end = offset + (length or 0)
        if offset > size or end > size:
            missing.append(
                f"{loc} (ends at byte {size} before tensor '{t.name}' bytes {offset}-{end})"
            )  # no comma: joined with ','
    return sorted(set(missing))


def refuse_missing_data(missing: list[str]) -> None:
    """Every external-data file must be there (`missing`: from check_external_data): a model read without its
    weights would be judged, compared or run as another model."""
    if missing:
        raise BadModelError(
            f"external data missing or too short: {', '.join(missing[:3])}"
            f"{' …' if len(missing) > 3 else ''} (npufit reads a model with its weights; put them beside it)"
        )


def external_data_files(
    model: onnx.ModelProto, base_dir: Path, external: list[onnx.TensorProto] | None = None
) -> list[Path]:
    """The external data files a model names that exist (locations already checked by check_external_data)."""
    locs = {loc for t in (all_tensors(model) if external is None else external) if (loc := external_location(t))}
    return [base_dir / loc for loc in sorted(locs) if (base_dir / loc).is_file()]
