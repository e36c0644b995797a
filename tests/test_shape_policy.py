"""One dynamic-shape policy for every verb: a dynamic-batch model and a dynamic height/width model through check,
fix, split, run, bench, scan, quantize, compile, compare and a pipeline model entry.

A dynamic batch alone is pinned to 1 (with a one-line note) and every model a verb writes carries the pinned shape;
an unknown height/width is asked for in one line that names the input and gives the user's own command with the
flag added, and no percentage or MAC figure is printed for it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.cli import main
from npufit.errors import NpufitError
from npufit.graph import load, parse_input_shapes
from npufit.util.shapes import ShapeNeeded


def _model(path: Path, shape) -> Path:
    """Conv -> Sigmoid -> Mul (a SiLU block) on an input of `shape`."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.1).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["images", "w"], ["c"], name="conv", pads=[1] * 4),
        helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
        helper.make_node("Mul", ["c", "s"], ["y"], name="silu"),
    ]
    out = [shape[0], 8, *shape[2:]]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
        [w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.fixture
def models(tmp_path):
    return _model(tmp_path / "batch.onnx", ["N", 3, 32, 32]), _model(tmp_path / "hw.onnx", [1, 3, "H", "W"])


def _dims(path: Path) -> list[int]:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in _input(path).type.tensor_type.shape.dim]


def _input(path: Path):
    return onnx.load(str(path), load_external_data=False).graph.input[0]


def _asks(capsys, argv: list[str]) -> str:
    """The verb refuses the H/W model in one line: the input, and the user's command with the flag added."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert not re.search(r"\d%|\d MACs|MACs \(", out + err)  # no figure rests on a guessed size
    assert err.count("\n") == 1 and "input 'images' has unknown dims [1,3,H,W]" in err, err
    cmd = shlex.join(["npufit", *argv, "--input-shape", "images=1,3,640,640"])
    assert err.rstrip().endswith(cmd), err
    return err


def test_every_verb_on_a_dynamic_batch_and_a_dynamic_size(models, tmp_path, capsys):
    batch, hw = models
    b0, h0 = batch.read_bytes(), hw.read_bytes()
    pin = ["--input-shape", "images=1,3,32,32"]

    # check: the batch is pinned with a note; the size is asked for
    assert main(["check", str(batch), "-t", "hailo8"]) == 0
    out = capsys.readouterr().out
    assert "dynamic batch 'N' pinned to 1" in out and "coverage 100.0% of nodes" in out
    _asks(capsys, ["check", str(hw), "-t", "hailo8"])
    assert main(["check", str(hw), "-t", "hailo8", *pin]) == 0
    capsys.readouterr()

    # compare: one --input-shape pins every variant it fits
    _asks(capsys, ["compare", str(batch), str(hw), "-t", "ethos-n78"])
    assert main(["compare", str(batch), str(hw), "-t", "ethos-n78", *pin]) == 0
    capsys.readouterr()

    # scan: a row that says which shape to give, no coverage figure
    rep = npufit.scan([str(batch), str(hw)], "hailo8", executor="inprocess")
    rows = {Path(r["model"]).name: r for r in rep.rows}
    assert rows["batch.onnx"]["status"] == "ok" and rows["batch.onnx"]["coverage_nodes_pct"] == 100.0
    assert rows["hw.onnx"]["status"] == "needs-shape" and rows["hw.onnx"]["coverage_nodes_pct"] is None
    assert "--input-shape images=1,3,640,640" in rows["hw.onnx"]["error"]
    assert main(["scan", str(batch), str(hw), "-t", "hailo8", "--executor", "inprocess", *pin, "-f", "json"]) == 0
    assert '"needs-shape"' not in capsys.readouterr().out

    # fix: the written model carries the pinned shape
    assert main(["fix", str(batch), "-t", "hailo8", "-o", str(tmp_path / "b_fixed.onnx")]) == 0
    assert "dynamic batch 'N' pinned to 1" in capsys.readouterr().out
    assert _dims(tmp_path / "b_fixed.onnx") == [1, 3, 32, 32]
    _asks(capsys, ["fix", str(hw), "-t", "hailo8", "-o", str(tmp_path / "h_fixed.onnx")])
    assert main(["fix", str(hw), "-t", "hailo8", "-o", str(tmp_path / "h_fixed.onnx"), *pin]) == 0
    capsys.readouterr()
    assert _dims(tmp_path / "h_fixed.onnx") == [1, 3, 32, 32]

    # split: stages written at the pinned shape, verified; no cut-off ONNX Runtime error on the H/W model
    assert main(["split", str(batch), "-t", "ethos-n78", "-d", str(tmp_path / "b_plan")]) == 0
    assert "dynamic batch 'N' pinned to 1" in capsys.readouterr().out
    assert _dims(tmp_path / "b_plan" / "stage0_npu.onnx") == [1, 3, 32, 32]
    _asks(capsys, ["split", str(hw), "-t", "ethos-n78", "-d", str(tmp_path / "h_plan")])
    assert not (tmp_path / "h_plan").exists()
    assert main(["split", str(hw), "-t", "ethos-n78", "-d", str(tmp_path / "h_plan"), *pin]) == 0
    capsys.readouterr()
    assert _dims(tmp_path / "h_plan" / "stage0_npu.onnx") == [1, 3, 32, 32]

    # run: seeded inputs at the plan's shapes; another shape is refused in one line with the split that makes it
    assert main(["run", str(tmp_path / "b_plan"), "--compare-original", str(batch)]) == 0
    assert "[1, 8, 32, 32]" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "h_plan"), *pin]) == 0
    capsys.readouterr()
    assert main(["run", str(tmp_path / "b_plan"), "--input-shape", "images=2,3,32,32"]) == 2
    err = capsys.readouterr().err
    assert "written for [1, 3, 32, 32]" in err and "--input-shape images=2,3,32,32" in err

    # bench: the batch pinned (or chosen with --batch), the size asked for
    assert main(["bench", str(batch), "-n", "3", "--warmup", "0", "-f", "json"]) == 0
    assert '"images": [\n        1,' in capsys.readouterr().out.replace("\r", "")
    _asks(capsys, ["bench", str(hw), "-n", "3", "--warmup", "0"])
    assert main(["bench", str(hw), "-n", "3", "--warmup", "0", *pin]) == 0
    capsys.readouterr()

    # quantize: the written QDQ model is static (the next compile takes it as it is)
    q = ["-c", "random", "--samples", "4", "--holdout", "0"]
    assert main(["quantize", str(batch), "-o", str(tmp_path / "bq.onnx"), *q]) == 0
    assert "dynamic batch 'N' pinned to 1" in capsys.readouterr().out
    assert _dims(tmp_path / "bq.onnx") == [1, 3, 32, 32]
    _asks(capsys, ["quantize", str(hw), "-o", str(tmp_path / "hq.onnx"), *q])
    assert main(["quantize", str(hw), "-o", str(tmp_path / "hq.onnx"), *q, *pin]) == 0
    capsys.readouterr()
    assert _dims(tmp_path / "hq.onnx") == [1, 3, 32, 32]

    # compile (Vela through npufit's converter): the written model quantize made compiles without any flag
    assert main(["compile", str(tmp_path / "hq.onnx"), "-t", "ethos-u55-256", "--out-dir", str(tmp_path / "c1")]) == 0
    capsys.readouterr()
    _asks(capsys, ["compile", str(hw), "-t", "ethos-u55-256", "--out-dir", str(tmp_path / "c2")])
    assert main(["compile", str(batch), "-t", "ethos-u55-256", "--out-dir", str(tmp_path / "c3")]) == 0
    assert "dynamic batch 'N' pinned to 1" in capsys.readouterr().out

    # a pipeline model entry: the exported model carries the entry's shapes
    yaml = tmp_path / "p.yaml"
    yaml.write_text(
        "version: 1\nmodels:\n"
        f"  - {{name: b, onnx: {batch.name}}}\n"
        f"  - {{name: h, onnx: {hw.name}, input_shapes: {{images: [1, 3, 32, 32]}}}}\n"
        f"  - {{name: bare, onnx: {hw.name}}}\n"
        "targets: [hailo8]\nsteps:\n  export: {}\n  check: {}\n"
    )
    run = npufit.pipeline(yaml, output_dir=tmp_path / "out", quiet=True)
    assert run.result("check/b/hailo8").record.status == "ok"
    assert run.result("check/h/hailo8").record.status == "ok"
    assert _dims(tmp_path / "out" / "h" / "export" / "model.onnx") == [1, 3, 32, 32]
    assert _dims(tmp_path / "out" / "b" / "export" / "model.onnx") == [1, 3, 32, 32]
    bare = run.result("export/bare").record
    assert bare.status == "failed" and "input_shapes: {images: [1, 3, 640, 640]}" in bare.message, bare.message

    assert batch.read_bytes() == b0 and hw.read_bytes() == h0  # inputs only read


def test_library_takes_every_form_of_input_shapes(models):
    _, hw = models
    forms = ({"images": (1, 3, 32, 32)}, {"images": "1,3,32,32"}, "images=1,3,32,32", ["images=1,3,32,32"])
    figures = {npufit.check(hw, "hailo8", input_shapes=f).summary()["coverage_macs_pct"] for f in forms}
    assert figures == {100.0}
    assert parse_input_shapes("a=1,2; b=3x4") == {"a": (1, 2), "b": (3, 4)}
    for bad in ("images=1,0,3", "images", {"images": (1, -3)}, {"images": "1,a"}, 42):
        with pytest.raises(NpufitError):
            parse_input_shapes(bad)


def test_summary_has_no_mac_figure_while_a_size_is_unknown(models):
    _, hw = models
    report = npufit.check(hw, "ethos-n78")
    s = report.summary()
    assert s["coverage_macs_pct"] is None and s["coverage_nodes_pct"] is None and s["macs_total"] is None
    assert s["shapes_needed"] == [{"input": "images", "shape": [1, 3, "H", "W"], "example": [1, 3, 640, 640]}]
    text = report.render("table") + report.render("markdown")
    assert "%" not in text and "--input-shape images=1,3,640,640" in text


def test_verbs_that_run_the_model_raise_shape_needed(models, tmp_path):
    _, hw = models
    with pytest.raises(ShapeNeeded, match=r"input_shapes=\{'images': \(1, 3, 640, 640\)\}"):
        npufit.split(hw, "ethos-n78", tmp_path / "plan")
    with pytest.raises(ShapeNeeded):
        npufit.quantize(hw, tmp_path / "q.onnx", "random", samples=2, holdout=0)
    with pytest.raises(ShapeNeeded):
        npufit.bench(hw, "ort-cpu", iterations=2, warmup=0)
    assert not (tmp_path / "plan").exists() and not (tmp_path / "q.onnx").exists()


def test_an_exported_image_size_is_the_example(tmp_path):
    m = onnx.load(str(_model(tmp_path / "u.onnx", [1, 3, "H", "W"])))
    onnx.helper.set_model_props(m, {"imgsz": "[320, 416]"})  # what an Ultralytics export stores
    onnx.save(m, str(tmp_path / "u.onnx"))
    assert load(tmp_path / "u.onnx").shapes_needed[0].example == (1, 3, 320, 416)
