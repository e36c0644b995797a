"""Helpers for the rewrite-rule tests: apply one rule, list op types, compare with ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest

from npufit.rewrite import RuleContext, get_rule
from npufit.verify.compare import compare_outputs, make_session, random_inputs, run_onnx


class Kit:
    @staticmethod
    def parse(text: str) -> onnx.ModelProto:
        m = onnx.parser.parse_model(text)
        onnx.checker.check_model(m, full_check=True)
        return m

    @staticmethod
    def torch_model(module, example, opset: int = 11) -> onnx.ModelProto:
        from npufit.zoo.export import export_onnx

        return onnx.load_from_string(export_onnx(module, example, opset=opset))

    @staticmethod
    def _ctx(proto, target="", **options) -> RuleContext:
        opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
        return RuleContext(opset=opset, target=target, options=options)

    def apply(self, name: str, proto: onnx.ModelProto, target: str = "", **options) -> tuple[onnx.ModelProto, int]:
        model = ir.serde.deserialize_model(onnx.shape_inference.infer_shapes(proto))
        model, fired = get_rule(name).apply(model, self._ctx(proto, target, **options))
        out = ir.serde.serialize_model(model)
        onnx.checker.check_model(out, full_check=True)
        return out, fired

    def refusals(self, name: str, proto: onnx.ModelProto, **options) -> list[str]:
        model = ir.serde.deserialize_model(onnx.shape_inference.infer_shapes(proto))
        return get_rule(name).refusals(model, self._ctx(proto, **options))

    @staticmethod
    def ops(proto: onnx.ModelProto) -> list[str]:
        return [n.op_type for n in proto.graph.node if n.op_type != "Constant"]

    @staticmethod
    def compare(before: onnx.ModelProto, after: onnx.ModelProto, samples: int = 4, feeds=None):
        s0, s1 = make_session(before.SerializeToString()), make_session(after.SerializeToString())
        feeds = feeds or random_inputs(s0, seed=1, samples=samples)
        total = None
        for f in feeds:
            c = compare_outputs(run_onnx(s0, f), run_onnx(s1, f))
            total = c if total is None else total.merge(c)
        return total

    def assert_same(self, before, after, rtol: float = 1e-5, atol: float = 1e-6, feeds=None):
        c = self.compare(before, after, feeds=feeds)
        assert not c.missing, c.missing
        for name, d in c.per_output.items():
            assert d["max_abs"] <= atol + rtol * d["ref_max_abs"], (name, d)
        return c

    @staticmethod
    def feeds(**arrays) -> list[dict[str, np.ndarray]]:
        return [arrays]


@pytest.fixture
def kit() -> Kit:
    return Kit()
