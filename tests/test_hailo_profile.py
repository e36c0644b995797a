"""Hailo-8 profile: one tiny torch model per seed-000 / seed-002 op, exported with the
TorchScript exporter at opset 11 (GridSample: 16, the first opset that has it), checked against hailo8.

The models come from the probe catalogue (npufit.probe.catalogue), the single source of the cases.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from npufit import check  # noqa: E402
from npufit.probe.catalogue import BY_ID, SEED_000, SEED_002, CASES  # noqa: E402
from npufit.targets import get_profile  # noqa: E402
from npufit.zoo.export import export_onnx  # noqa: E402

# seed 000 "✅ 완전 지원 연산": every one must be all-`npu` in its exported form
SEED_000_SUPPORTED = [c.id for c in CASES if c.seed == SEED_000 and c.id not in ("conv1d", "mean_dim_linear", "view")]

# case -> (op type of the flagged node, rule id that must be among its reasons)
FLAGGED = {
    "conv1d": ("Conv", "hailo8.conv.rank"),
    "mean_dim_linear": ("ReduceMean", "hailo8.mean_linear"),
    "grid_sample": ("GridSample", "hailo8.op.GridSample"),
    "gather_elements": ("GatherElements", "hailo8.op.GatherElements"),
    "topk": ("TopK", "hailo8.op.TopK"),
    "reduce_max_keepdims0": ("ReduceMax", "hailo8.reducemax.keepdims"),
    "slice_axis4_5d": ("Slice", "hailo8.slice.axis"),
    "tile_batch": ("Tile", "hailo8.tile.batch"),
    "mod": ("Mod", "hailo8.op.Mod"),
    "gru": ("GRU", "hailo8.op.GRU"),
    "lstm": ("LSTM", "hailo8.op.LSTM"),
    "bilstm": ("LSTM", "hailo8.op.LSTM"),
    "erf": ("Erf", "hailo8.op.Erf"),
    "selu": ("Selu", "hailo8.op.Selu"),
    "expand": ("Expand", "hailo8.expand.broadcast"),
    "where": ("Where", "hailo8.op.Where"),
    "transpose_0213": ("Transpose", "hailo8.transpose.perm"),
    "permute_5d": ("Transpose", "hailo8.tensor.max_rank"),
    "flatten_rank3": ("Reshape", "hailo8.shuffle.rank3"),
    "head_split": ("Reshape", "hailo8.shuffle.rank3"),
}

# fix rules (`npufit fix`) the failing node must point to
# the topk case exports k=3, which topk1_to_argmax refuses: it is not suggested there (tests/test_hint_preconditions.py)
FIX_RULES = {"conv1d": "conv1d_to_conv2d", "mean_dim_linear": "mean_to_global_pool", "reduce_max_keepdims0": "reduce_keepdims",
             "erf": "gelu_tanh", "expand": "fold_constants"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Export every case once per module and check it with hailo8 (and hailo8l)."""
    d = tmp_path_factory.mktemp("hailo-cases")
    out = {}
    for cid in [*SEED_000_SUPPORTED, *FLAGGED, "view", "gelu_tanh", "reduce_max_channel", "slice_channel"]:
        case = BY_ID[cid]
        module, inputs = case.build()
        path = d / f"{cid}.onnx"
        try:
            export_onnx(module, inputs, path, max(11, case.min_opset))
        except Exception as e:
            out[cid] = e
            continue
        out[cid] = {"hailo8": check(path, "hailo8"), "hailo8l": check(path, "hailo8l")}
    return out


def _running(report):
    return [n for n in report.nodes if n.verdict.value != "folded"]


@pytest.mark.parametrize("cid", SEED_000_SUPPORTED)
def test_seed000_supported_ops_are_npu(reports, cid):
    rep = reports[cid]["hailo8"]
    bad = [(n.op_type, [r.rule for r in n.reasons]) for n in _running(rep) if n.verdict.value != "npu"]
    assert not bad, f"{cid}: seed 000 compiled it, npufit flags {bad}"
    assert _running(rep), f"{cid}: nothing left to run"


def test_seed000_cases_cover_the_seed_and_002_ops():
    assert len(SEED_000_SUPPORTED) >= 45
    assert {c.id for c in CASES if c.seed == SEED_002} == {"grid_sample", "gather_elements", "topk", "reduce_max_keepdims0",
                                                          "slice_axis4_5d", "tile_batch", "mod"}


@pytest.mark.parametrize("cid,composite", [("layernorm", "hailo8.layernorm"), ("gelu", "hailo8.gelu"),
                                           ("gelu_tanh", "hailo8.gelu_tanh"), ("silu_mul", "hailo8.silu"),
                                           ("hardswish", "hailo8.hardswish")])
def test_decomposed_layers_are_recognised_as_composites(reports, cid, composite):
    rep = reports[cid]["hailo8"]
    claimed = [n for n in _running(rep) if n.composite == composite]
    assert claimed and all(n.verdict.value == "npu" for n in claimed)
    if cid == "layernorm":  # ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add
        assert {n.op_type for n in claimed} >= {"ReduceMean", "Sub", "Pow", "Sqrt", "Div"} and len(claimed) == 9
    if cid == "gelu":
        assert [n.op_type for n in claimed] == ["Div", "Erf", "Add", "Mul", "Mul"]


@pytest.mark.parametrize("cid", ["zeropad2d", "flatten_rank3"])
def test_exporter_shape_subgraphs_are_folded(reports, cid):
    rep = reports[cid]["hailo8"]
    folded = {n.op_type for n in rep.nodes if n.verdict.value == "folded"}
    assert {"Constant", "Concat"} <= folded or {"Shape", "Concat"} <= folded, folded
    running = {n.op_type for n in _running(rep)}
    assert running == ({"Pad"} if cid == "zeropad2d" else {"Reshape"})


@pytest.mark.parametrize("cid", sorted(FLAGGED))
def test_flagged_ops_are_unsupported_with_reason(reports, cid):
    op, rule = FLAGGED[cid]
    rep = reports[cid]["hailo8"]
    nodes = [n for n in _running(rep) if n.op_type == op]
    assert nodes, f"{cid}: no {op} node in the export"
    node = nodes[0]
    assert node.verdict.value == "unsupported"
    rules = [r.rule for r in node.reasons]
    assert rule in rules, rules
    reason = next(r for r in node.reasons if r.rule == rule)
    assert reason.text and reason.source, "every rule has a sentence and a source"
    assert reason.source in get_profile("hailo8").sources, f"source tag {reason.source!r} has no citation"
    # Hailo has no CPU fallback inside a HEF: the verdict says to cut it away
    assert any("no CPU fallback" in f and "npufit split" in f for r in node.reasons for f in r.fix)
    if cid in FIX_RULES:
        assert FIX_RULES[cid] in [f for r in node.reasons for f in r.fix_rules]
    if cid == "topk":
        assert "topk1_to_argmax" not in [f for r in node.reasons for f in r.fix_rules]
    # the same case on hailo8l: same verdict, ids carry the profile name
    node8l = next(n for n in _running(reports[cid]["hailo8l"]) if n.name == node.name)
    assert node8l.verdict.value == "unsupported" and rule.replace("hailo8.", "hailo8l.") in [r.rule for r in node8l.reasons]


def test_reducemax_reason_is_formatted_from_limits_and_detail(reports):
    node = next(n for n in _running(reports["reduce_max_keepdims0"]["hailo8"]) if n.op_type == "ReduceMax")
    r = next(r for r in node.reasons if r.rule == "hailo8.reducemax.keepdims")
    assert r.detail == "keepdims=0" and "keepdim" in r.text and r.source == "seed 002"
    # positive control: channel axis with keepdims=1 passes
    assert all(n.verdict.value == "npu" for n in _running(reports["reduce_max_channel"]["hailo8"]))


def test_slice_rule_reads_axes_and_limits(reports):
    node = next(n for n in _running(reports["slice_axis4_5d"]["hailo8"]) if n.op_type == "Slice")
    r = next(r for r in node.reasons if r.rule == "hailo8.slice.axis")
    assert "[4]" in r.detail and "[1]" in r.text  # the sentence shows the limit it checks
    assert all(n.verdict.value == "npu" for n in _running(reports["slice_channel"]["hailo8"]))


def test_view_fails_in_pytorch_itself(reports):
    err = reports["view"]
    assert isinstance(err, RuntimeError) and "view size is not compatible" in str(err)


def test_rules_have_ids_sentences_and_sources():
    prof = get_profile("hailo8")
    text_of: dict[str, str] = {}
    for rule in prof.rules():  # one id, one sentence (a rule object may serve several ops)
        assert text_of.setdefault(rule.id, rule.text) == rule.text
    assert len({c.id for c in prof.composites}) == len(prof.composites)
    for rule in prof.rules():
        assert rule.id.startswith("hailo8.") and rule.sentence(prof.limits) and rule.source in prof.sources
        assert "{" not in rule.sentence(prof.limits), f"{rule.id}: unformatted limit"
    for s in prof.ops.values():
        if s.status.value == "unsupported":
            assert s.reason and s.source in prof.sources
    assert prof.fallback == "none" and get_profile("hailo8l").title.startswith("Hailo-8L")
