import torch

from npufit.rewrite import get_rule


def test_erf_gelu_becomes_tanh_form_within_approx_error(kit):
    before = kit.torch_model(torch.nn.GELU(), torch.randn(4, 32))
    assert "Erf" in kit.ops(before)
    after, fired = kit.apply("gelu_tanh", before)
    assert fired == 1 and "Erf" not in kit.ops(after) and "Tanh" in kit.ops(after)
    c = kit.compare(before, after)
    assert 1e-6 < c.max_abs < 1e-3  # really an approximation, and a close one
    assert not get_rule("gelu_tanh").exact


def test_tanh_gelu_does_not_fire(kit):
    before = kit.torch_model(torch.nn.GELU(approximate="tanh"), torch.randn(4, 32))
    after, fired = kit.apply("gelu_tanh", before)
    assert fired == 0 and kit.ops(after) == kit.ops(before)


def test_not_gelu_constants_refused(kit):
    class NotGelu(torch.nn.Module):
        def forward(self, x):
            return x * 0.5 * (1.0 + torch.erf(x / 2.0))  # divides by 2, not sqrt(2)

    before = kit.torch_model(NotGelu(), torch.randn(4, 8))
    after, fired = kit.apply("gelu_tanh", before)
    assert fired == 0 and "Erf" in kit.ops(after)
