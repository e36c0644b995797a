"""A throw-away vendor family with a compiler of its own, in three files, registered through the public seam
(`npufit.targets.register_family`): the target registry and every toolchain consumer take it, with no edit to npufit.

The three files are the code blocks of docs/dev/adding-a-target.md, so the guide shows exactly what this runs."""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from npufit import check, compilers, toolchains
from npufit.cli import build_parser, main
from npufit.executors import resources_for_compiler
from npufit.probe.measure import validate_compiler

targets = importlib.import_module("npufit.targets")  # the package (the attribute npufit.targets is the verb)

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "dev" / "adding-a-target.md"
BLOCK = re.compile(r"```python\n# file: (\S+)\n(.*?)```", re.S)


@pytest.fixture
def toy_family(tmp_path, monkeypatch):
    files = BLOCK.findall(GUIDE.read_text(encoding="utf-8"))
    assert [f for f, _ in files] == ["toyvendor/__init__.py", "toyvendor/checks.py", "toyvendor/compiler.py"]
    for name, code in files:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in [m for m in sys.modules if m.split(".")[0] == "toyvendor"]:
        monkeypatch.delitem(sys.modules, m)
    targets.register_family("toyvendor")
    yield tmp_path
    targets.unregister_family("toyvendor")
    toolchains.unregister("toyc")


def _model(path: Path) -> Path:
    """x [1, 3, 4, 4] -> Relu (rank 4: over the toy limit) -> Add -> Sigmoid (not in the toy table)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Add", ["r", "r"], ["a"], name="add"),
             helper.make_node("Sigmoid", ["a"], ["y"], name="sigmoid")]
    g = helper.make_graph(nodes, "toy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_a_family_in_three_files_reaches_the_registry_check_and_the_cli(toy_family, capsys):
    assert targets.available_targets()[-1] == "toy1" and targets.get_profile("TOY-1").name == "toy1"
    assert targets.resolve_targets("toy1,hailo8") == ["toy1", "hailo8"]
    report = check(_model(toy_family / "m.onnx"), "toy1")
    verdicts = {n.name: (n.verdict.value, [r.rule for r in n.reasons]) for n in report.nodes}
    assert verdicts == {"relu": ("cpu", ["toy1.relu.rank"]), "add": ("npu", []), "sigmoid": ("cpu", ["toy1.op.unknown"])}
    assert "Relu runs on the NPU up to rank 3" in {r.text for n in report.nodes for r in n.reasons}

    assert main(["check", str(toy_family / "m.onnx"), "--target", "toy-1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"]["name"] == "toy1"
    assert main(["targets"]) == 0
    assert "Toy NPU 1" in capsys.readouterr().out


def test_its_toolchain_reaches_every_consumer(toy_family):
    assert [s for s in compilers.status() if s["name"] == "toy-compiler"][0]["available"] is True  # npufit doctor
    assert compilers.compiler_for("toy1").name == "toyc" and "toyc" in compilers.compiler_names()
    assert resources_for_compiler("toyc") == {"toy_env": 1}  # a Ray task that drives it
    validate_compiler("toyc", targets.get_profile("toy1"))  # probe --compiler: known, the target's, installed
    args = build_parser().parse_args(["probe", "--target", "toy1", "--compiler", "toyc"])
    assert args.compiler == "toyc"
    with pytest.raises(ValueError, match="platform toy1 belongs to 'toyc'"):
        toolchains.register(toolchains.Toolchain("other", "Other", "x:Y", "other", ("toy1",)))


def test_without_registration_nothing_knows_it():
    assert "toy1" not in targets.available_targets() and toolchains.find("toyc") is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["probe", "--target", "toy1", "--compiler", "toyc"])
