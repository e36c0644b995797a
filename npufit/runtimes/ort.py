"""ONNX Runtime runners: CPU, CUDA execution provider, TensorRT execution provider.

ORT silently falls back to the CPU provider when a GPU provider cannot start; that would make a "GPU" number
a CPU number, so after building the session we check the provider that actually took the graph.
"""

from __future__ import annotations

import functools
import tempfile
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import NpufitError
from ..verify.compare import ort_quiet, within_memory_budget
from ..verify.loops import refuse_endless_loops
from .base import BOUNDARY_DEVICE, Runner, RuntimeUnavailable, first_line, onnx_input_specs


def ort_version() -> str | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    return ort.__version__


class OrtRunner(Runner):
    name = "ort-cpu"
    title = "ONNX Runtime (CPU execution provider)"
    provider = "CPUExecutionProvider"
    device_kind = "cpu"

    def _set_boundary(self, boundary: str) -> None:
        if boundary == BOUNDARY_DEVICE and self.device_kind == "gpu":
            self.boundary = boundary
            return
        super()._set_boundary(boundary)

    def version(self) -> str | None:
        return ort_version()

    def input_specs(self):
        return onnx_input_specs(self.model)

    def _providers(self) -> list:
        return [self.provider]

    def _activate(self) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise RuntimeUnavailable("onnxruntime is not installed (pip install onnxruntime)") from None
        if self.provider not in ort.get_available_providers():
            raise RuntimeUnavailable(
                f"this onnxruntime build has no {self.provider} "
                f"(has: {', '.join(ort.get_available_providers())}; install onnxruntime-gpu)"
            )

        refuse_endless_loops(self.model)
        so = ort.SessionOptions()
        so.log_severity_level = ort_quiet()
        if self.device_kind == "cpu":
            within_memory_budget(so)
        # The deployment setting: full graph optimisation, one request at a time, sequential node execution.
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if self.threads:
            so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(self.model), so, providers=self._providers())
        except Exception as e:
            if self.device_kind == "gpu":
                raise RuntimeUnavailable(f"{self.provider} failed to start: {first_line(e)}") from None

            raise NpufitError(f"ONNX Runtime cannot load {self.model.name}: {first_line(e)}") from None
        used = self.session.get_providers()
        if used[0] != self.provider:
            raise RuntimeUnavailable(
                f"{self.provider} did not take the model; ORT fell back to {used[0]} "
                f"(check the CUDA/cuDNN/TensorRT libraries)"
            )
        self.details.update(
            {
                "providers": used,
                "intra_op_threads": self.threads or "ort-default",
                "graph_optimization": "ORT_ENABLE_ALL",
            }
        )
        self._out_names = [o.name for o in self.session.get_outputs()]
        self._ro = ort.RunOptions()  # lets bench stop a first call that never ends (interrupt)
        self._ro.log_severity_level = ort_quiet()

    def _deactivate(self) -> None:
        self.session = None

    def prepare(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        if self.boundary == BOUNDARY_DEVICE:
            return self._prepare_device(feeds)
        # sess.run on host arrays: for GPU providers ORT copies inputs in, runs, copies outputs out (synchronous).
        return functools.partial(self.session.run, self._out_names, dict(feeds), self._ro)

    def interrupt(self) -> None:
        """Stop the run in progress (ORT checks the flag between kernels and on every Loop iteration)."""
        self._ro.terminate = True

    def _prepare_device(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        import onnxruntime as ort

        io = self.session.io_binding()
        for name, arr in feeds.items():  # uploaded once, here, outside the clock
            io.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(arr), "cuda", 0))
        for name in self._out_names:
            io.bind_output(name, "cuda", 0)
        run, sync = self.session.run_with_iobinding, io.synchronize_outputs

        def call():
            run(io)
            sync()  # the GPU work is finished before the clock stops

        return call

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self._out_names, self.session.run(self._out_names, dict(feeds))))


class OrtCudaRunner(OrtRunner):
    name = "ort-cuda"
    title = "ONNX Runtime (CUDA execution provider)"
    provider = "CUDAExecutionProvider"
    device_kind = "gpu"

    def _providers(self) -> list:
        return [(self.provider, {"device_id": int(self.options.get("device_id", 0))}), "CPUExecutionProvider"]


class OrtTensorrtRunner(OrtRunner):
    name = "ort-trt"
    title = "ONNX Runtime (TensorRT execution provider)"
    provider = "TensorrtExecutionProvider"
    device_kind = "gpu"

    def _providers(self) -> list:
        dev = int(self.options.get("device_id", 0))
        # A fresh engine cache per run: a cache left by an earlier run would hide the build cost.
        self._cache = tempfile.TemporaryDirectory(prefix="npufit-ort-trt-")
        trt = {
            "device_id": dev,
            "trt_fp16_enable": bool(self.options.get("fp16")),
            "trt_engine_cache_enable": True,
            "trt_engine_cache_path": self._cache.name,
        }
        return [(self.provider, trt), ("CUDAExecutionProvider", {"device_id": dev}), "CPUExecutionProvider"]

    def _activate(self) -> None:
        super()._activate()
        self.details["precision"] = "fp16" if self.options.get("fp16") else "fp32"
        self.details["note"] = "the TensorRT EP builds its engine on the first run: cold time includes the build"

    def _deactivate(self) -> None:
        super()._deactivate()
        cache = getattr(self, "_cache", None)
        if cache is not None:
            cache.cleanup()
