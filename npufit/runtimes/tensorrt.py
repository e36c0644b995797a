"""Native TensorRT runner: build an engine from ONNX (or load a serialized .engine/.plan) and run it.

One execution context, one CUDA stream, enqueue one inference and synchronise the stream before the clock
stops (trtexec, by default, enqueues ahead and reports GPU compute time: a different boundary).
NOT exercised here (no GPU in this environment); written against the TensorRT 8.6/10 Python API reference.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Mapping

import numpy as np

from ..util.readers import require_regular_file
from .base import BOUNDARY_DEVICE, InputSpec, Runner, RuntimeUnavailable, concrete_shape, onnx_input_specs
from .cuda import Cuda


def tensorrt_version() -> str | None:
    try:
        import tensorrt as trt
    except ImportError:
        return None
    return trt.__version__


class TensorrtRunner(Runner):
    name = "tensorrt"
    title = "TensorRT (native engine)"
    device_kind = "gpu"
    formats = (".onnx", ".engine", ".plan", ".trt")

    def _set_boundary(self, boundary: str) -> None:
        if boundary == BOUNDARY_DEVICE:
            self.boundary = boundary
            return
        super()._set_boundary(boundary)

    def version(self) -> str | None:
        return tensorrt_version()

    def input_specs(self) -> list[InputSpec]:
        if self.model.suffix.lower() == ".onnx":
            return onnx_input_specs(self.model)
        if not getattr(self, "engine", None):
            raise RuntimeUnavailable("input shapes of a serialized engine are known only after it is loaded")
        return [
            InputSpec(
                n,
                tuple(d if d >= 0 else None for d in self.engine.get_tensor_shape(n)),
                "tensor("
                + np.dtype(self._trt.nptype(self.engine.get_tensor_dtype(n))).name.replace("float32", "float")
                + ")",
            )
            for n in self._io_names
            if self.engine.get_tensor_mode(n) == self._trt.TensorIOMode.INPUT
        ]

    def _activate(self) -> None:
        try:
            import tensorrt as trt
        except ImportError:
            raise RuntimeUnavailable("tensorrt is not installed (pip install tensorrt, needs an NVIDIA GPU)") from None

        self._trt, self.cuda = trt, Cuda()
        logger = trt.Logger(trt.Logger.ERROR)
        if self.model.suffix.lower() == ".onnx":
            plan = self._build(trt, logger)
        else:
            require_regular_file(self.model, "TensorRT engine")  # a pipe or device would block or never end
            plan = self.model.read_bytes()
        self.runtime = trt.Runtime(logger)
        self.engine = self.runtime.deserialize_cuda_engine(plan)
        if self.engine is None:
            raise RuntimeUnavailable(
                f"TensorRT could not deserialize {self.model.name} (built by another TensorRT "
                f"version or for another GPU?)"
            )
        self.context = self.engine.create_execution_context()
        self._io_names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.stream = self.cuda.stream()
        self._buffers: list[int] = []
        self._bound = None
        mem = getattr(self.engine, "device_memory_size_v2", None) or getattr(self.engine, "device_memory_size", 0)
        self.details.update(
            {
                "precision": "fp16" if self.options.get("fp16") else "fp32",
                "engine_device_memory_bytes": int(mem),
                "host_memory": "pageable numpy arrays (trtexec uses pinned memory)",
            }
        )

    def _build(self, trt, logger) -> bytes:
        builder = trt.Builder(logger)
        flags = (
            0
            if int(trt.__version__.split(".")[0]) >= 10
            else 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
        )
        network = builder.create_network(flags)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse_from_file(str(self.model)):
            errs = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))[:300]
            raise RuntimeUnavailable(f"the TensorRT ONNX parser rejected the model: {errs}")
        config = builder.create_builder_config()
        if self.options.get("fp16"):
            config.set_flag(trt.BuilderFlag.FP16)
        specs = {s.name: s for s in onnx_input_specs(self.model)}
        profile, dynamic = builder.create_optimization_profile(), False
        for i in range(network.num_inputs):
            t = network.get_input(i)
            if any(d < 0 for d in t.shape):  # one static-shape profile: the shape we benchmark
                shape = concrete_shape(specs[t.name], self.batch, self.options.get("input_shapes"))
                profile.set_shape(t.name, shape, shape, shape)
                dynamic = True
        if dynamic:
            config.add_optimization_profile(profile)
        plan = builder.build_serialized_network(network, config)
        if plan is None:
            raise RuntimeUnavailable("TensorRT failed to build an engine for this model (see the TensorRT log)")
        return bytes(plan)

    def _deactivate(self) -> None:
        for p in getattr(self, "_buffers", []):
            self.cuda.free(p)
        self._buffers = []
        if getattr(self, "stream", None):
            self.cuda.destroy_stream(self.stream)
        self.context = self.engine = self.runtime = None

    def prepare(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        trt, ctx, cuda = self._trt, self.context, self.cuda
        ins, outs = [], []
        for name in self._io_names:
            if self.engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT:
                arr = np.ascontiguousarray(feeds[name], dtype=trt.nptype(self.engine.get_tensor_dtype(name)))
                ctx.set_input_shape(name, arr.shape)
                ins.append((name, arr))
        in_ptrs = []
        for name, arr in ins:
            ptr = cuda.malloc(arr.nbytes)
            self._buffers.append(ptr)
            in_ptrs.append(ptr)
            ctx.set_tensor_address(name, ptr)
            cuda.h2d(ptr, arr, self.stream)
        for name in self._io_names:
            if self.engine.get_tensor_mode(name) != trt.TensorIOMode.INPUT:
                host = np.empty(tuple(ctx.get_tensor_shape(name)), dtype=trt.nptype(self.engine.get_tensor_dtype(name)))
                ptr = cuda.malloc(host.nbytes)
                self._buffers.append(ptr)
                ctx.set_tensor_address(name, ptr)
                outs.append((name, host, ptr))
        cuda.sync(self.stream)
        lib, stream, execute = cuda.lib, ctypes.c_void_p(self.stream), ctx.execute_async_v3
        # raw ctypes argument tuples, built once: the timed call does no Python-side bookkeeping
        h2d = [(ptr, a.ctypes.data, a.nbytes, 1, stream) for (_, a), ptr in zip(ins, in_ptrs)]
        d2h = [(h.ctypes.data, p, h.nbytes, 2, stream) for _, h, p in outs]
        self._last_outputs = {n: h for n, h, _ in outs}
        copy, sync, handle = lib.cudaMemcpyAsync, lib.cudaStreamSynchronize, self.stream
        addrs = [(n, p) for (n, _), p in zip(ins, in_ptrs)] + [(n, p) for n, _, p in outs]
        set_addr, key, runner = ctx.set_tensor_address, object(), self

        def bind():  # a pool of fresh inputs = one buffer set per sample; rebind only when the sample changes
            if runner._bound is not key:
                for n, p in addrs:
                    set_addr(n, p)
                runner._bound = key

        if self.boundary == BOUNDARY_DEVICE:

            def call():
                bind()
                execute(handle)
                sync(stream)
        else:

            def call():
                bind()
                for args in h2d:
                    copy(*args)
                execute(handle)
                for args in d2h:
                    copy(*args)
                sync(stream)  # outputs are in host memory and the GPU is idle before the clock stops

        return call

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        saved, self.boundary = self.boundary, "host-to-host"
        try:
            self.prepare(feeds)()
        finally:
            self.boundary = saved
        return {k: v.copy() for k, v in self._last_outputs.items()}
