"""verify: run models on the same data with ONNX Runtime CPU and compare under a stated policy."""

from .compare import Comparison, compare_outputs, random_inputs, run_onnx

__all__ = ["Comparison", "compare_outputs", "random_inputs", "run_onnx"]
