"""The `npufit fix` verb: output, dry run, JSON schema, rule selection, errors, rollback of a broken rule."""
import json

import onnx
import onnx_ir as ir
import pytest

from npufit.cli import main
from npufit.rewrite import RULES, RewriteRule, RuleContext

W = ",".join(str(round(0.1 * (i % 7) - 0.3, 2)) for i in range(24))
TEXT = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[1,8,6,6] x, float[1,5,7] t) => (float[1,3] y, int64[1,5,1] i) {
  m = ReduceMean<axes=[2, 3], keepdims=0>(x)
  s = Constant<value=int64[2] {1,-1}>()
  r = Reshape(m, s)
  w = Constant<value=float[3,8] {W}>()
  g = Gemm<transB=1>(r, w)
  y = Identity(g)
  k = Constant<value=int64[1] {1}>()
  v, i = TopK<axis=-1>(t, k)
}
""".replace("{W}", "{" + W + "}")


@pytest.fixture
def model(tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(onnx.parser.parse_model(TEXT), p)
    return p


def test_fix_writes_verified_model_and_json(model, tmp_path, capsys):
    out = tmp_path / "fixed.onnx"
    assert main(["fix", str(model), "--target", "hailo8", "--output", str(out), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "npufit.fix/1" and d["written"] is True
    fired = {r["rule"]: r["fired"] for r in d["rules"] if r["status"] == "applied"}
    assert fired["mean_to_global_pool"] == 1 and fired["topk1_to_argmax"] == 1 and fired["remove_identity"] == 1
    assert d["after"]["coverage_pct"] > d["before"]["coverage_pct"]
    ops = {n.op_type for n in onnx.load(out).graph.node}
    assert "TopK" not in ops and "ArgMax" in ops and "GlobalAveragePool" in ops


def test_dry_run_writes_nothing(model, tmp_path, capsys):
    out = tmp_path / "fixed.onnx"
    assert main(["fix", str(model), "--target", "hailo8", "--output", str(out), "--dry-run", "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "(dry run)" in text and "| mean_to_global_pool |" in text and not out.exists()


def test_rules_and_skip_rules(model, capsys):
    assert main(["fix", str(model), "-t", "hailo8", "--dry-run", "--rules", "topk1_to_argmax,remove_identity",
                 "--skip-rules", "remove_identity", "-f", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["rule"] for r in d["rules"]] == ["topk1_to_argmax"]


def test_bad_input_is_one_line(model, tmp_path, capsys):
    assert main(["fix", str(model), "-t", "hailo8", "--dry-run", "--rules", "no_such_rule"]) == 2
    assert "unknown rewrite rule 'no_such_rule'" in capsys.readouterr().err
    assert main(["fix", str(model), "-t", "hailo8"]) == 2  # neither --output nor --dry-run
    assert main(["fix", str(model), "-t", "hailo8", "-o", str(model)]) == 2  # never overwrite the input
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    assert main(["fix", str(bad), "-t", "hailo8", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("npufit: error") == 3


def test_rule_that_breaks_equivalence_is_rolled_back(model, tmp_path, monkeypatch):
    """A deliberately wrong rule (ReduceMean turned into ReduceMax) must be reported and not written."""
    import npufit

    def corrupt(m: ir.Model, ctx: RuleContext):
        next(n for n in m.graph if n.op_type == "ReduceMean").op_type = "ReduceMax"
        return m, 1

    monkeypatch.setitem(RULES, "mean_to_global_pool", RewriteRule("mean_to_global_pool", "broken", True, ("ReduceMean",), run=corrupt))
    res = npufit.fix(model, target="hailo8", output=tmp_path / "o.onnx")
    broken = next(r for r in res.rules if r.name == "mean_to_global_pool")
    assert broken.status == "rolled back" and "differs from the original" in broken.reason
    assert "ReduceMax" not in {n.op_type for n in onnx.load(tmp_path / "o.onnx").graph.node}


def test_approximate_rule_needs_flag_and_reports_error(tmp_path):
    import torch

    import npufit
    from npufit.zoo.export import export_onnx

    src = tmp_path / "g.onnx"
    export_onnx(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()), torch.randn(2, 8), src)
    res = npufit.fix(src, target="hailo8", rules=["gelu_tanh"], dry_run=True)
    assert next(r for r in res.rules).status == "skipped"
    res = npufit.fix(src, target="hailo8", rules=["gelu_tanh"], allow_approx=True, dry_run=True)
    g = next(r for r in res.rules)
    assert g.status == "applied" and 0 < g.max_abs < 1e-2
