"""`npufit quantize` end to end: outputs, report formats, one-line errors, the CI gate."""
from __future__ import annotations

import json

import numpy as np
import onnx

from npufit.cli import main

from .quantize_models import save, small_cnn


def test_cli_writes_model_and_json_report(tmp_path, capsys):
    src = save(small_cnn(), tmp_path / "cnn.onnx")
    np.savez(tmp_path / "cal.npz", x=np.random.default_rng(0).standard_normal((30, 3, 32, 32)).astype(np.float32))
    rc = main(["quantize", src, "--output", str(tmp_path / "out" / "q.onnx"), "--calibration", str(tmp_path / "cal.npz"),
               "--samples", "20", "--holdout", "5", "--per-channel", "--format", "json", "--report", str(tmp_path / "r.json")])
    assert rc == 0
    onnx.checker.check_model(str(tmp_path / "out" / "q.onnx"))
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["schema"] == "npufit.quantize/1"
    assert d["calibration"] == {**d["calibration"], "kind": "npz", "used": 20, "holdout": 5}
    assert d["settings"]["per_channel"] is True
    assert len(d["accuracy"]["layers"]) == d["qdq"]["activations"] > 0
    assert all(o["cosine"] >= 0.98 for o in d["accuracy"]["outputs"])
    layer = d["accuracy"]["layers"][0]
    assert {"entire", "single", "rank", "diagnosis", "scale", "zero_point"} <= set(layer)
    assert "wrote" in capsys.readouterr().err


def test_cli_markdown_and_table(tmp_path, capsys):
    src = save(small_cnn(), tmp_path / "cnn.onnx")
    assert main(["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", "random", "--samples", "8", "--holdout", "3",
                 "-f", "markdown"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("# npufit quantize") and "## Per layer" in cap.out and "| `r3` |" in cap.out
    assert "warning" in cap.err and "random" in cap.err  # the loud note about random calibration
    assert main(["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", "random", "--samples", "8", "--holdout", "3"]) == 0
    out = capsys.readouterr().out
    assert "per layer" in out and "worst layers" in out and "cosine" in out


def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys):
    src = save(small_cnn(), tmp_path / "cnn.onnx")
    for argv, msg in (
        (["quantize", str(tmp_path / "none.onnx"), "-o", str(tmp_path / "q.onnx"), "-c", "random"], "no such file"),
        (["quantize", src, "-o", src, "-c", "random"], "never overwritten"),
        (["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", str(tmp_path)], "no image files"),
        (["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", "random", "--exclude", "conv1,ghost"], "ghost"),
        (["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", "random", "--image-size", "a,b"], "--image-size"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("npufit: error:") and msg in err[-1] and "Traceback" not in "\n".join(err)
    assert not (tmp_path / "q.onnx").exists()


def test_cli_min_cosine_gate_fails_the_broken_model(tmp_path, capsys):
    src = save(small_cnn(broken=True), tmp_path / "broken.onnx")
    rc = main(["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", "random", "--samples", "16", "--holdout", "4",
               "--min-cosine", "0.98", "-f", "json"])
    assert rc == 1
    d = json.loads(capsys.readouterr().out)
    assert d["accuracy"]["worst"][0] == "outlier"
