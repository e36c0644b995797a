"""The converter's integer / bool path (text encoders): token-id inputs, embedding lookups, attention masks and the
position arithmetic computed from them, each held against ONNX Runtime by the LiteRT interpreter (cosine >= 0.999
on the calibration samples, tests/test_convert_lowerings.py's harness; the calibration ids are valid: [0, 10))."""
import pytest

pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install 'ai-edge-litert>=2.3')")
torch = pytest.importorskip("torch", reason="test models are exported from torch")

from tests.test_convert_lowerings import Seq, _convert, lin  # noqa: E402

F = torch.nn.functional
VOCAB, D, T = 40, 16, 12
NEG = torch.finfo(torch.float32).min  # what transformers fills masked scores with


def emb(n=VOCAB, d=D):
    torch.manual_seed(5)
    return torch.nn.Embedding(n, d)


def ids():
    return torch.randint(0, 10, (1, T))


def test_embedding_lookup_of_token_ids(tmp_path):
    """int64 token ids -> an int32 TFLite input -> GATHER from the int8 table (quantized over all its rows)."""
    m = Seq(lambda s, i: s.mods[1](s.mods[0](i)), emb(), lin(D, 8))
    res = _convert(tmp_path, m, ids(), 17, ops=("GATHER",))
    assert res.io["inputs"][0]["dtype"] == "int32" and res.io["inputs"][0]["scale"] is None, res.io


@pytest.mark.parametrize("causal", [False, True])
def test_attention_mask_select(tmp_path, causal):
    """mask (int) -> bool -> (& causal) -> Where(m, 0, finfo.min) added to the scores -> Softmax: SELECT_V2 of the
    scores and the int8 end, folded into the Add. The causal form masks most of each row: its cosine fails unless
    the masked end sits far enough below the scores (ops_int._fill_room)."""
    tri = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def f(s, i, mask):
        h = s.mods[0](i)
        q, k = s.mods[1](h), s.mods[2](h)
        scores = q @ k.transpose(1, 2) / 4.0
        m = mask.bool()[:, None, :]
        if causal:
            m = m & tri[None]
        scores = scores + torch.where(m, 0.0, NEG)
        return F.softmax(scores, -1) @ h

    m = Seq(f, emb(), lin(D, D), lin(D, D))
    res = _convert(tmp_path, m, (ids(), torch.ones(1, T, dtype=torch.int64)), 17, ops=("SELECT_V2", "SOFTMAX"))
    assert ("LOGICAL_AND" in res.op_counts) == causal, res.op_counts


@pytest.mark.parametrize("runtime", [False, True])
def test_masked_fill_select(tmp_path, runtime):
    """scores.masked_fill(~causal, finfo.min) -> Softmax (the other form transformers uses), with a constant
    condition (ops_shape.where's MUL/ADD form) or a run-time one (SELECT_V2): the output range is the scores' plus room below for the Softmax, the
    fill saturating (a scale over 1e38 made LiteRT abort on this graph)."""
    tri = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def f(s, i, mask):
        h = s.mods[0](i)
        keep = tri[None] & mask.bool()[:, None, :] if runtime else tri[None]
        scores = (s.mods[1](h) @ h.transpose(1, 2) / 4.0).masked_fill(~keep, NEG)
        return F.softmax(scores, -1) @ h

    x = (ids(), torch.ones(1, T, dtype=torch.int64))
    _convert(tmp_path, Seq(f, emb(), lin(D, D)), x, 17, ops=("SELECT_V2",) if runtime else ("MUL", "SOFTMAX"))


def test_position_ids_from_padding(tmp_path):
    """RoBERTa's position ids: (ids != pad) -> int -> CumSum * mask + pad: NOT_EQUAL/CAST/CUMSUM/MUL/ADD in int32,
    then a second lookup by those run-time positions."""
    pad = 1

    def f(s, i):
        keep = i.ne(pad).int()
        pos = torch.cumsum(keep, dim=1).type_as(keep) * keep + pad
        return s.mods[0](i) + s.mods[1](pos.long())

    m = Seq(f, emb(), emb(T + 2, D))
    _convert(tmp_path, m, ids(), 17, ops=("CUMSUM", "GATHER"))


def test_buffered_token_types_gather_elements(tmp_path):
    """RoBERTa's buffered token-type ids: torch.gather(buffer.expand(1, -1), 1, positions) -> GatherElements whose
    non-axis dims are 1 -> GATHER."""
    import onnx

    buf = torch.zeros(1, T + 2, dtype=torch.long)
    buf[0, 5:] = 1

    def f(s, i):
        pos = torch.cumsum(i.ne(1).int(), dim=1).long()
        tt = torch.gather(buf.expand(1, -1), 1, pos)
        return s.mods[0](i) + s.mods[1](tt)

    _convert(tmp_path, Seq(f, emb(), emb(2, D)), ids(), 17, ops=("GATHER",))
    assert "GatherElements" in {n.op_type for n in onnx.load(tmp_path / "m.onnx").graph.node}


def test_pool_at_first_end_token(tmp_path):
    """CLIP text pooling: h[0, (ids == eos).int().argmax(-1)]: EQUAL -> bool cast to an exact int8 twin -> ARG_MAX
    (Vela takes only 8-bit ARG_MAX) -> GATHER of the activation by that run-time index."""
    eos = 3

    def f(s, i):
        h = s.mods[1](s.mods[0](i))
        at = (i == eos).int().argmax(dim=-1)
        return h[torch.arange(1), at]

    _convert(tmp_path, Seq(f, emb(), lin(D, D)), ids(), 17, ops=("ARG_MAX", "EQUAL", "GATHER"))


def test_masked_mean_pooling_int_to_float(tmp_path):
    """Sentence-embedding pooling: h * mask.unsqueeze(-1).float(): an int -> float Cast is CAST + QUANTIZE."""

    def f(s, i, mask):
        h = s.mods[1](s.mods[0](i))
        return (h * mask.unsqueeze(-1).float()).sum(1) / 6.0

    _convert(tmp_path, Seq(f, emb(), lin(D, D)), (ids(), torch.ones(1, T, dtype=torch.int64)), 17, ops=("CAST", "QUANTIZE"))


def test_cli_compile_token_id_model(tmp_path, capsys):
    """`npufit compile` of a token-id model in one command: the QDQ twin skips the integer inputs, Vela compiles, the
    embedding lookup lands on the CPU (Vela has no GATHER) and the attention on the NPU."""
    import json

    from npufit.cli import main
    from npufit.compilers.vela import vela_version
    from npufit.zoo.export import export_onnx

    if vela_version() is None:
        pytest.skip("Vela is not installed (pip install 'ethos-u-vela==5.2.0')")

    def f(s, i, mask):
        h = s.mods[0](i)
        scores = s.mods[1](h) @ h.transpose(1, 2) + torch.where(mask.bool()[:, None, :], 0.0, NEG)
        return F.softmax(scores, -1) @ h

    src = tmp_path / "m.onnx"
    export_onnx(Seq(f, emb(), lin(D, D)).eval(), (ids(), torch.ones(1, T, dtype=torch.int64)), src, 17, ["ids", "mask"])
    rc = main(["compile", str(src), "--target", "ethos-u55-256", "--compare-prediction", "--format", "json",
               "--out-dir", str(tmp_path / "out")])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["ok"], d.get("error")
    by = {p["node"]: p["device"] for p in d["placement"]}
    gathers = [n for n in by if n.endswith("/Gather")]
    assert gathers and all(by[n] == "cpu" for n in gathers), by
    assert "npu" in {by[n] for n in by if n.endswith("/MatMul")}, by
