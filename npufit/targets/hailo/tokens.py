"""Token-sequence layout: matchers for the shuffles transformers are made of, and where a rank-3 tensor keeps its
features (Hailo's composites and shuffle rules).

A transformer carries [N, T, C] token tensors (features last) between Linear layers; a CNN carries [N, C, H, W]
maps (features on axis 1). The same ONNX ops (Reshape, Transpose, Flatten) move data between the two layouts and
split heads for attention. A parser that maps tensors to NHWC can take the shuffles of a recognised attention block
or patch embedding while rejecting the same op elsewhere (a detection head's [N, C, H*W] bins); these matchers find
the recognised forms from graph structure (shapes, perms, what consumes what), never from names.
"""

from __future__ import annotations

from ...graph import Graph, NodeView
from ..base import CompositeMatch
from ..common import const_scalar, noop_cast, transpose_perm
from ..patterns import _anchors, _live, sole_consumer
from .layout import swaps_last_two

SHUFFLES = ("Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze")
MAX_CHAIN = 4  # shuffles between a token tensor and an attention MatMul (reshape, transpose, transpose of K, scale)
# ops that keep the layout of their first activation input
_LAYOUT_KEEPING = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Relu",
    "Gelu",
    "Sigmoid",
    "Tanh",
    "HardSigmoid",
    "HardSwish",
    "Erf",
    "Pow",
    "Sqrt",
    "Softmax",
    "Dropout",
    "Identity",
    "Cast",
    "LayerNormalization",
    "Clip",
    "LeakyRelu",
    "Split",
)


def _static(t) -> bool:
    return t is not None and t.shape is not None and all(isinstance(d, int) for d in t.shape)


def _is_scale(node: NodeView) -> bool:
    """Mul/Div by a constant scalar: attention's 1/sqrt(d)."""
    if node.op_type not in ("Mul", "Div"):
        return False
    return any(const_scalar(node, i) is not None for i in range(2))


def _rank_ok(node: NodeView) -> bool:
    """Head split/merge shuffles stay within rank 3..4 (5-D is another rule; rank 2 is a batch-flattened token
    matrix)."""
    return all(t is not None and t.rank is not None and 3 <= t.rank <= 4 for t in (node.input(0), node.output(0)))


def _walk_back(graph: Graph, tensor: str) -> list[NodeView]:
    """Shuffles (and scalar scales, no-op casts) that produce `tensor` from a non-shuffle op, nearest first."""
    chain: list[NodeView] = []
    while len(chain) < MAX_CHAIN:
        p = graph.producer(tensor)
        if p is None or not _live(graph, p):
            break
        if p.op_type in SHUFFLES and _rank_ok(p) or _is_scale(p) or noop_cast(p):
            if len(graph.consumers(p.outputs[0])) != 1:
                break
            chain.append(p)
            tensor = next((t for t in p.inputs[:2] if not graph.tensor(t).is_const), p.inputs[0])
            continue
        if p.op_type == "Split" and len(chain) < MAX_CHAIN:  # fused qkv projection split into q, k, v
            chain.append(p)
            tensor = p.inputs[0]
            continue
        break
    return [n for n in chain if n.op_type in SHUFFLES or n.op_type == "Split"]


def _walk_forward(graph: Graph, node: NodeView) -> list[NodeView]:
    chain: list[NodeView] = []
    while len(chain) < MAX_CHAIN:
        nxt = sole_consumer(graph, node, SHUFFLES)
        if nxt is None:
            break
        if not _rank_ok(nxt):
            if _merge_into_linear(graph, nxt):
                chain.append(nxt)
            break
        chain.append(nxt)
        node = nxt
    return chain


def _merge_into_linear(graph: Graph, node: NodeView) -> bool:
    """[T, h, d] -> [T, h*d] read by a Linear: the head merge of nn.MultiheadAttention, which runs its output
    projection on the (sequence x batch) rows of a rank-2 matrix."""
    i, o = node.input(0), node.output(0)
    if node.op_type != "Reshape" or not (_static(i) and _static(o)) or i.rank != 3 or o.rank != 2:
        return False
    if list(o.shape) != [i.shape[0], i.shape[1] * i.shape[2]]:  # type: ignore[operator]  # static: int dims
        return False
    lin = sole_consumer(graph, node, ("Gemm", "MatMul"))
    return lin is not None and graph.tensor(lin.inputs[1]).is_const


def _activation_matmul(graph: Graph, node: NodeView) -> bool:
    return node.op_type == "MatMul" and all(not graph.tensor(t).is_const for t in node.inputs[:2])


def _attention_matmul(graph: Graph, node: NodeView) -> bool:
    """Q.K^T or A.V: both operands batched over heads (rank >= 3; a Linear's weight is rank 2) and at least one computed
    at run time (DETR's first decoder queries are constants once folded)."""
    if node.op_type != "MatMul":
        return False
    ts = [graph.tensor(t) for t in node.inputs[:2]]
    return all(t.rank is not None and t.rank >= 3 for t in ts) and any(not t.is_const for t in ts)


def _score_bias(graph: Graph, mm: NodeView) -> list[NodeView]:
    """Q.K^T [-> scale] -> Add(constant bias) -> Softmax: the learned attention bias of LeViT-style blocks."""
    node = mm
    scale = sole_consumer(graph, node, ("Mul", "Div"))
    if scale is not None and _is_scale(scale):
        node = scale
    add = sole_consumer(graph, node, ("Add",))
    if add is None or not any(graph.tensor(t).is_const for t in add.inputs[:2]):
        return []
    return [add] if sole_consumer(graph, add, ("Softmax",)) is not None else []


def match_attention(graph: Graph) -> list[CompositeMatch]:
    """Multi-head attention: the head-split shuffles feeding a head-batched MatMul (Q.K^T, A.V), the
    head-merge shuffles after it, and a constant bias added to the scores."""
    out: list[CompositeMatch] = []
    claimed: set[str] = set()
    for mm in _anchors(graph, "MatMul"):
        if not _attention_matmul(graph, mm):
            continue
        nodes = (
            [n for t in mm.inputs[:2] for n in _walk_back(graph, t)] + _walk_forward(graph, mm) + _score_bias(graph, mm)
        )
        nodes = [n for n in nodes if n.name not in claimed]
        if not nodes:
            continue
        claimed.update(n.name for n in nodes)
        out.append(
            CompositeMatch(tuple(nodes), f"attention MatMul {mm.input(0).shape_str()} x {mm.input(1).shape_str()}")
        )
    return out


def _flatten_hw(node: NodeView) -> bool:
    """[N, C, H, W] -> [N, C, H*W] (flatten(2))."""
    i, o = node.input(0), node.output(0)
    return (
        node.op_type in ("Reshape", "Flatten")
        and _static(i)
        and _static(o)
        and i.rank == 4
        and o.rank == 3
        and list(o.shape[:2]) == list(i.shape[:2])
        and o.shape[2] == i.shape[2] * i.shape[3]  # type: ignore[operator]  # static: int dims
    )


def _unflatten_hw(node: NodeView) -> bool:
    """[N, C, H*W] -> [N, C, H, W]."""
    i, o = node.input(0), node.output(0)
    return (
        node.op_type == "Reshape"
        and _static(i)
        and _static(o)
        and i.rank == 3
        and o.rank == 4
        and list(o.shape[:2]) == list(i.shape[:2])
        and i.shape[2] == o.shape[2] * o.shape[3]  # type: ignore[operator]  # static: int dims
    )


def _swap_last(node: NodeView) -> bool:
    return swaps_last_two(node)


def _token_grid(node: NodeView) -> bool:
    """[N, T, C] <-> [N, H, W, C] with the features kept last (a token grid, e.g. LeViT's subsample)."""
    i, o = node.input(0), node.output(0)
    if node.op_type != "Reshape" or not (_static(i) and _static(o)) or {i.rank, o.rank} != {3, 4}:
        return False  # ranks first: a scalar reshape (a sample rate, a length) has no dims to compare
    return i.shape[0] == o.shape[0] and i.shape[-1] == o.shape[-1]


def _token_mixing(graph: Graph, node: NodeView) -> list[NodeView] | None:
    """transpose(1, 2) -> Linear over the token axis [-> + bias] -> transpose(1, 2): MLP-Mixer / ResMLP token
    mixing (the Zoo's resmlp12)."""
    lin = sole_consumer(graph, node, ("MatMul", "Gemm"))
    if lin is None or lin.inputs[0] != node.outputs[0] or not graph.tensor(lin.inputs[1]).is_const:
        return None
    chain, cur = [node, lin], lin
    bias = sole_consumer(graph, lin, ("Add",))
    if bias is not None and any(graph.tensor(t).is_const for t in bias.inputs[:2]):
        chain.append(bias)
        cur = bias
    back = sole_consumer(graph, cur, ("Transpose",))
    return chain + [back] if back is not None and _swap_last(back) else None


def _token_batchnorm(graph: Graph, node: NodeView) -> list[NodeView] | None:
    """[1, T, C] -> [T, C] -> BatchNormalization -> [1, T, C]: BatchNorm1d over tokens (LeViT's Linear+BN)."""
    i, o = node.input(0), node.output(0)
    if node.op_type not in ("Flatten", "Reshape") or not (_static(i) and _static(o)) or i.rank != 3 or o.rank != 2:
        return None
    if i.shape[0] != 1 or list(o.shape) != [i.shape[1], i.shape[2]]:
        return None
    bn = sole_consumer(graph, node, ("BatchNormalization",))
    back = sole_consumer(graph, bn, ("Reshape",)) if bn is not None else None
    if back is None or not _static(back.output(0)) or list(back.output(0).shape) != list(i.shape):
        return None
    return [node, bn, back]


def match_token_layout(graph: Graph) -> list[CompositeMatch]:
    """Feature map <-> token sequence: flatten(2) + transpose(1, 2) (patch embedding, DETR's encoder input; also
    read by several such transposes), the reverse, a Linear over the token axis between two such transposes (token
    mixing), token-grid reshapes with the features last (to or from NCHW through a 4-D transpose, or around the
    strided Slice of a subsampling block), BatchNorm1d on tokens."""
    out, seen = [], set()

    def add(nodes, detail):
        if not any(n.name in seen for n in nodes):
            seen.update(n.name for n in nodes)
            out.append(CompositeMatch(tuple(nodes), detail))

    shuffles = [n for n in graph.nodes if n.op_type in ("Reshape", "Flatten", "Transpose")]  # cheap filter first
    for node in shuffles:
        if node.name in seen or not _live(graph, node):
            continue
        if _flatten_hw(node):
            # flatten(2) read by transpose(1, 2) -- or by several such transposes: nn.MultiheadAttention's callers
            # permute the same flattened map once for the queries/keys and once for the values
            ts = [c for c in graph.consumers(node.outputs[0]) if _live(graph, c)]
            if ts and all(_swap_last(t) for t in ts):
                add([node, *ts], f"feature map {node.input(0).shape_str()} -> tokens {ts[0].output(0).shape_str()}")
        elif _swap_last(node):
            r = sole_consumer(graph, node, ("Reshape",))
            if r is not None and _unflatten_hw(r):
                add([node, r], f"tokens {node.input(0).shape_str()} -> feature map {r.output(0).shape_str()}")
            elif (mix := _token_mixing(graph, node)) is not None:
                add(mix, f"Linear over the tokens of {node.input(0).shape_str()}")
        elif (
            _token_grid(node)
            and node.input(0).rank == 3
            and (t := sole_consumer(graph, node, ("Transpose",))) is not None
            and transpose_perm(t) == [0, 3, 1, 2]
        ):
            add([node, t], f"tokens {node.input(0).shape_str()} -> grid -> feature map {t.output(0).shape_str()}")
        elif (
            node.op_type == "Transpose"
            and transpose_perm(node) == [0, 2, 3, 1]
            and (r := sole_consumer(graph, node, ("Reshape",))) is not None
            and _token_grid(r)
            and r.output(0).rank == 3
        ):
            add([node, r], f"feature map {node.input(0).shape_str()} -> grid -> tokens {r.output(0).shape_str()}")
        elif _token_grid(node) and node.input(0).rank == 3:
            chain, cur = [node], node
            while (nxt := sole_consumer(graph, cur, ("Slice",))) is not None:
                chain.append(nxt)
                cur = nxt
            back = sole_consumer(graph, cur, ("Reshape",))
            if back is not None and _token_grid(back) and back.output(0).rank == 3:
                add(chain + [back], f"token grid {node.output(0).shape_str()} -> {back.output(0).shape_str()}")
        elif (bn := _token_batchnorm(graph, node)) is not None:
            add(bn, f"BatchNorm over {node.input(0).shape_str()} tokens")
    return out


def features_last(graph: Graph, tensor: str, depth: int = 16) -> bool:
    """Whether a rank-3 tensor is a token sequence [N, T, C] (features last): it comes, through layout-keeping ops,
    from a Linear (MatMul/Gemm with constant weights), a transpose of a flattened map, a head merge or an embedding
    lookup."""
    for _ in range(depth):
        p = graph.producer(tensor)
        if p is None:
            return False
        if p.op_type in ("MatMul", "Gemm"):
            return graph.tensor(p.inputs[1]).is_const or _activation_matmul(graph, p)
        if _swap_last(p):
            return True
        if p.op_type == "Gather" and graph.tensor(p.inputs[0]).is_const and graph.tensor(p.inputs[0]).rank == 2:
            return True  # an embedding lookup: one row of C features per token
        if (
            p.op_type == "Reshape"
            and _static(p.input(0))
            and _static(p.output(0))
            and p.input(0).rank == 4
            and p.output(0).rank == 3
            and p.input(0).shape[1] == p.output(0).shape[1]
            and not _flatten_hw(p)
        ):
            return True  # [N, T, h, d] -> [N, T, h*d]: attention's head merge
        if p.op_type == "Concat" and p.attr("axis") in (1, -2):
            ins = [t for t in p.inputs if not graph.tensor(t).is_const]
            return any(features_last(graph, t, depth // 2) for t in ins)
        if p.op_type not in _LAYOUT_KEEPING:
            return False
        ins = [t for t in p.inputs[:2] if t and not graph.tensor(t).is_const]
        if not ins:
            return False
        tensor = ins[0]
    return False
