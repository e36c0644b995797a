"""OpenVINO CPU runner (read_model -> static reshape -> compile_model -> one synchronous infer request)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import NpufitError
from .base import InputSpec, Runner, RuntimeUnavailable, concrete_shape, first_line, onnx_input_specs


def openvino_version() -> str | None:
    try:
        import openvino as ov
    except ImportError:
        return None
    return ov.get_version().split("-")[0]


class OpenVinoRunner(Runner):
    name = "openvino"
    title = "OpenVINO (CPU plugin)"
    device_kind = "cpu"
    formats = (".onnx", ".xml")

    def version(self) -> str | None:
        return openvino_version()

    def input_specs(self):
        if self.model.suffix.lower() == ".onnx":
            return onnx_input_specs(self.model)
        return self._ir_specs()

    def _ir_specs(self):
        import openvino as ov

        m = ov.Core().read_model(str(self.model))
        return [
            InputSpec(
                p.get_any_name(),
                tuple(d.get_length() if d.is_static else None for d in p.get_partial_shape()),
                f"tensor({np.dtype(p.get_element_type().to_dtype()).name.replace('float32', 'float')})",
            )
            for p in m.inputs
        ]

    def _activate(self) -> None:
        try:
            import openvino as ov
        except ImportError:
            raise RuntimeUnavailable("openvino is not installed (pip install openvino)") from None
        core = ov.Core()
        try:
            model = core.read_model(str(self.model))
            dynamic = {p.get_any_name(): p for p in model.inputs if p.get_partial_shape().is_dynamic}
            if dynamic or self.batch or self.options.get("input_shapes"):
                # Compile for the shapes we will feed: a dynamic-shape CPU graph is slower and not what ships.
                specs = {s.name: s for s in self.input_specs()}
                model.reshape(
                    {
                        p: list(concrete_shape(specs[n], self.batch, self.options.get("input_shapes")))
                        for n, p in ((p.get_any_name(), p) for p in model.inputs)
                        if n in specs
                    }
                )
            # f32 so the number compares with ORT CPU; the CPU plugin would pick bf16 on AVX512-BF16/AMX CPUs.
            config: dict[str, Any] = {
                "PERFORMANCE_HINT": "LATENCY",
                "INFERENCE_PRECISION_HINT": "f32",
                "NUM_STREAMS": 1,
            }
            if self.threads:
                config["INFERENCE_NUM_THREADS"] = int(self.threads)
            self.compiled = core.compile_model(model, "CPU", config)
        except Exception as e:
            raise NpufitError(f"OpenVINO cannot compile {self.model.name}: {first_line(e)}") from None
        self.request = self.compiled.create_infer_request()
        self._out_names = [o.get_any_name() for o in self.compiled.outputs]
        self.details.update(
            {
                "device": core.get_property("CPU", "FULL_DEVICE_NAME"),
                "precision": _type_name(self.compiled.get_property("INFERENCE_PRECISION_HINT")),
                "threads": int(self.compiled.get_property("INFERENCE_NUM_THREADS")),
                "performance_hint": "LATENCY",
                "streams": 1,
            }
        )

    def _deactivate(self) -> None:
        self.request = None
        self.compiled = None

    def prepare(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        data = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
        # share_inputs: read the host arrays in place (ORT does the same); outputs are copied into host-owned
        # arrays, as ORT's run returns them.
        return functools.partial(self.request.infer, data, share_inputs=True, share_outputs=False)

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        res = self.request.infer({k: np.ascontiguousarray(v) for k, v in feeds.items()})
        return {name: np.asarray(res[i]) for i, name in enumerate(self._out_names)}


def _type_name(t) -> str:
    """ov.Type -> 'f32' (str() of it is "<Type: 'float32'>")."""
    name = getattr(t, "get_type_name", None)
    return name() if callable(name) else str(t)
