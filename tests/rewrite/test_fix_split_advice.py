"""fix does not pretend: TopK(k=5), GridSample and GatherElements stay flagged, and fix points to split."""
import onnx

import npufit

TEXT = """
<ir_version: 8, opset_import: ["" : 16]>
g (float[1,8,16,16] x, float[1,16,16,2] grid, float[1,1,80] logits, int64[1,1,80] gidx) => (float[1,8,16,16] s, float[1,1,5] tv, float[1,1,80] ge) {
  s = GridSample(x, grid)
  k5 = Constant<value=int64[1] {5}>()
  tv, ti = TopK<axis=-1>(logits, k5)
  ge = GatherElements<axis=2>(logits, gidx)
}
"""


def test_unfixable_ops_remain_and_split_is_advised(tmp_path):
    src = tmp_path / "tail.onnx"
    onnx.save(onnx.parser.parse_model(TEXT), src)
    res = npufit.fix(src, target="hailo8", output=tmp_path / "out.onnx")
    left = {r["op_type"] for r in res.remaining}
    assert {"GridSample", "TopK", "GatherElements"} <= left
    assert res.after.not_npu == res.before.not_npu
    topk = next(r for r in res.rules if r.name == "topk1_to_argmax")
    assert topk.status == "not fired" and "k=5" in topk.reason  # says why it did not apply
    text = res.render("table")
    # runnable as pasted: the written model (it carries the shapes), the target and an output folder
    assert f"npufit split {tmp_path / 'out.onnx'} --target hailo8 --output-dir {tmp_path / 'out_split'}" in text
    assert any("npufit split" in a for a in res.to_dict()["advice"])
