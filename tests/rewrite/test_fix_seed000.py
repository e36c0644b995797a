"""Acceptance: seed 000's failing cases, exported from torch at opset 11, become 100 % npu on hailo8 via fix."""
import hashlib

import onnx
import pytest
import torch

import npufit
from npufit import check


class Conv1dNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(4, 16, 3, padding=1)
        self.c2 = torch.nn.Conv1d(16, 16, 5, padding=2)
        self.fc = torch.nn.Linear(16, 3)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y)) + y
        return self.fc(torch.nn.functional.adaptive_avg_pool1d(y, 1).squeeze(-1))


class MeanReshapeLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return self.fc(y.reshape(y.shape[0], -1))


@pytest.mark.parametrize("module,shape", [(Conv1dNet, (1, 4, 64)), (MeanReshapeLinear, (1, 3, 32, 32))])
def test_seed000_case_becomes_fully_npu(tmp_path, module, shape):
    from npufit.zoo.export import export_onnx

    src, out = tmp_path / "model.onnx", tmp_path / "fixed.onnx"
    export_onnx(module(), torch.randn(*shape), src, opset=11)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    assert not check(src, "hailo8").fully_npu  # the failure seed 000 reports
    res = npufit.fix(src, target="hailo8", output=out)
    assert res.written and res.after.coverage_pct == 100.0 and res.after.partitions == 1
    assert check(out, "hailo8").fully_npu
    assert res.verification["max_abs"] <= 1e-6
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest  # input untouched
    fixed_ops = {n.op_type for n in onnx.load(out).graph.node}
    assert "ReduceMean" not in fixed_ops
    # independent numerical check of the written file
    from npufit.verify.compare import compare_outputs, make_session, random_inputs, run_onnx

    s0, s1 = make_session(src), make_session(out)
    for f in random_inputs(s0, seed=7, samples=3):
        c = compare_outputs(run_onnx(s0, f), run_onnx(s1, f))
        assert c.ok(atol=1e-6, rtol=1e-5), c.to_dict()
