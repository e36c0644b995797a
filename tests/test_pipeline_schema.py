"""PIPELINE.yaml validation: every bad file gets one clear error naming the file, line and column."""
from __future__ import annotations

import re

import pytest

from npufit.cli import main
from npufit.errors import NpufitError
from npufit.pipeline import load_config, validate
from npufit.pipeline.matrix import Cell, dependencies, expand, select

GOOD = """version: 1
name: demo
models:
  - name: gru
    arch: gru
    train: {epochs: 5}
  - name: tcn
    arch: tcn
targets: [hailo8, ethos-u55-256]
runtimes: [ort-cpu, openvino]
steps:
  train: {epochs: 2}
  export: {}
  check: {}
  split: {mode: prefix}
  compile: {}
  bench: {iterations: 20}
  report: {}
"""


def _write(tmp_path, text):
    p = tmp_path / "p.yaml"
    p.write_text(text)
    return p


def _error(tmp_path, text) -> str:
    with pytest.raises(NpufitError) as ei:
        load_config(_write(tmp_path, text))
    return ei.value.message


def test_good_file_expands_models_targets_runtimes(tmp_path):
    cfg = validate(_write(tmp_path, GOOD))
    assert cfg.settings("train", cfg.model("gru"))["epochs"] == 5  # per-model override
    assert cfg.settings("train", cfg.model("tcn"))["epochs"] == 2
    assert cfg.settings("train")["batch_size"] == 64  # schema default
    ids = [c.id for c in expand(cfg)]
    assert ids[:2] == ["train/gru", "train/tcn"]
    assert "check/tcn/ethos-u55-256" in ids and "bench/gru/openvino" in ids and ids[-1] == "report"
    assert len(ids) == 2 + 2 + 4 + 4 + 4 + 4 + 1
    deps = [d.id for d in dependencies(Cell("compile", "gru", target="hailo8"), cfg, expand(cfg))]
    assert deps == ["split/gru/hailo8", "train/gru"]  # the chain skips the steps not declared (fix, quantize)
    assert select(expand(cfg), only="check") == {"check/gru/hailo8", "check/gru/ethos-u55-256", "check/tcn/hailo8",
                                                 "check/tcn/ethos-u55-256"}


@pytest.mark.parametrize("alias, name", [("rk3568", "rk3566"), ("rv1103", "rv1106"), ("Hailo-8", "hailo8"),
                                         ("ethos-n78-8tops-2ple", "ethos-n78")])
def test_a_target_alias_is_accepted_as_check_takes_it(tmp_path, alias, name):
    """The pipeline validates targets with the registry `npufit check --target` uses: an alias is a target."""
    from npufit.targets import get_profile

    cfg = validate(_write(tmp_path, GOOD.replace("targets: [hailo8, ethos-u55-256]", f"targets: [{alias}]")))
    assert cfg.targets == [alias] and get_profile(alias).name == name
    assert f"check/gru/{alias}" in {c.id for c in expand(cfg)}


def test_unknown_key_names_line_and_suggests(tmp_path):
    msg = _error(tmp_path, GOOD.replace("train: {epochs: 2}", "train: {epoch: 2}"))
    assert re.search(r"p\.yaml:12:\d+: steps\.train\.epoch: unknown key 'epoch' \(did you mean 'epochs'\?\)", msg), msg


def test_wrong_type_names_line_of_the_value(tmp_path):
    msg = _error(tmp_path, GOOD.replace("bench: {iterations: 20}", "bench: {iterations: many}"))
    assert re.search(r"p\.yaml:17:\d+: steps\.bench\.iterations: expected an integer >= 1, got 'many'", msg), msg


def test_yaml_syntax_error_has_line(tmp_path):
    msg = _error(tmp_path, GOOD.replace("targets: [hailo8, ethos-u55-256]", "targets: [hailo8, ethos-u55-256"))
    assert re.search(r"p\.yaml:\d+:\d+: invalid YAML", msg), msg


@pytest.mark.parametrize("edit, expected", [
    (("  - name: tcn\n    arch: tcn\n", "  - name: gru\n    arch: tcn\n"), r":7:11: models\[1\]\.name: duplicate model name 'gru'"),
    (("    arch: tcn\n", "    arch: tcn\n    onnx: m.onnx\n"), r":7:5: models\[1\]: give exactly one of 'arch'"),
    (("  check: {}\n", "  chek: {}\n"), r":14:3: steps\.chek: unknown step 'chek' \(did you mean 'check'\?\)"),
    (("targets: [hailo8, ethos-u55-256]", "targets: [hailo9]"), r":9:\d+: targets\[0\]: unknown target 'hailo9'"),
    (("runtimes: [ort-cpu, openvino]", "runtimes: [ort-gpu]"), r":10:\d+: runtimes: .*unknown runtime\(s\) ort-gpu"),
    (("version: 1\n", "version: 2\n"), r":1:10: version: expected 1"),
    (("    train: {epochs: 5}\n", "    quantize: {samples: 5}\n"), r":6:5: models\[0\]\.quantize: overrides step 'quantize', which is not in steps"),
    (("  - name: gru\n", "  - name: gru/x\n"), r":4:11: models\[0\]\.name: expected a name"),
])
def test_bad_files(tmp_path, edit, expected):
    msg = _error(tmp_path, GOOD.replace(*edit))
    assert re.search(expected, msg), msg


def test_missing_required_and_duplicate_keys(tmp_path):
    assert "missing required key 'steps'" in _error(tmp_path, "version: 1\nmodels: [{name: a, arch: gru}]\n")
    assert re.search(r":2:1: name: duplicate key", _error(tmp_path, "name: a\nname: b\n"))
    assert "top level: expected a mapping" in _error(tmp_path, "- 1\n- 2\n")


def test_cli_validate_ok_and_bad(tmp_path, capsys):
    p = _write(tmp_path, GOOD)
    assert main(["pipeline", "validate", str(p)]) == 0
    assert "valid" in capsys.readouterr().out
    bad = _write(tmp_path, GOOD.replace("epochs: 2", "epochs: 0"))
    assert main(["pipeline", "validate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(r"p\.yaml:12:\d+: steps\.train\.epochs: expected an integer >= 1, got 0", err[0]), err
