"""Pipeline steps pass options to library functions by name: an option nobody takes is an error naming the step
and the option (a misspelt `skip_rule` once ran as `skip_rules=None`)."""
from __future__ import annotations

import pytest

from npufit.errors import NpufitError
from npufit.pipeline.steps import call

from .pipeline_helpers import conv_relu_onnx


def test_an_option_the_function_does_not_take_names_the_step_and_the_option():
    from npufit.rewrite import fix

    with pytest.raises(NpufitError, match=r"step 'fix': npufit\.rewrite\.engine\.fix has no option 'skip_rule'"):
        call("fix", fix, "m.onnx", target="hailo8", skip_rule=["gelu_tanh"])
    with pytest.raises(NpufitError, match="step 'fix'.*'skip_rule'"):
        call("fix", fix, "m.onnx", skip_rule=None)  # None ("the verb's default") is no excuse for a wrong name


def test_options_of_a_function_that_takes_options_are_checked_against_what_it_accepts():
    from npufit.compilers import OPTION_NAMES as names
    from npufit.compilers import compile_model

    with pytest.raises(NpufitError, match="step 'compile'.*'quantise'"):
        call("compile", compile_model, "m.onnx", "ethos-u55-256", accepts=names, quantise=True)


def test_unknown_compiler_option_in_yaml_fails_the_compile_step_with_its_name(tmp_path):
    from npufit.pipeline import run_pipeline

    conv_relu_onnx(tmp_path / "convnet.onnx")
    (tmp_path / "p.yaml").write_text(
        "version: 1\nname: opts\nmodels:\n  - {name: convnet, onnx: convnet.onnx}\ntargets: [ethos-u55-256]\n"
        "steps:\n  export: {}\n  compile: {options: {vela_arg: ['--verbose-cycle-estimate']}}\n")
    run = run_pipeline(tmp_path / "p.yaml", output_dir=tmp_path / "out", quiet=True)
    rec = run.result("compile/convnet/ethos-u55-256").record
    assert rec.status == "failed", rec.message
    assert "step 'compile'" in rec.message and "'vela_arg'" in rec.message and "vela_args" in rec.message, rec.message


def test_unknown_compiler_option_is_refused_by_compile_model(tmp_path):
    from npufit.compilers import compile_model

    with pytest.raises(NpufitError, match="unknown vela option.*vela_arg"):
        compile_model(conv_relu_onnx(tmp_path / "convnet.onnx"), "ethos-u55-256", out_dir=tmp_path / "o", extra={"vela_arg": []})
