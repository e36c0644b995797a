"""Hailo-8 / Hailo-8L (Hailo Dataflow Compiler 3.x): the op table, composites and sources.

Built from a user's Hailo-8 op test (op-by-op PyTorch -> ONNX opset 11 -> DFC 3.32), a user's DEIMv2 port
(DFC 3.33 parser), the Hailo Model Zoo and public parser logs (SOURCES). Hailo has no CPU fallback inside a HEF:
whatever is not `npu` must be cut away (start/end nodes) and run on the host, so every failing op is
`unsupported`. Checks are in checks.py, the rule tables in rules.py; composite matchers in patterns.py and tokens.py.
"""

from __future__ import annotations

from ...toolchains import HAILO
from .. import common, patterns, tflite_map
from ..base import Composite, Executes, Fallback, Hint, OpSupport, Profile, Verdict
from . import forms, tokens
from .costs import split_costs
from .evidence import evidence_sources
from .rules import graph_rules, op_rules

NPU, UNSUP = Verdict.NPU, Verdict.UNSUPPORTED

LIMITS = {
    "max_rank": 4,
    "conv_rank": 4,
    "conv_dims": 2,  # spatial axes of the convolutions it runs (Conv1d/Conv3d are rank 3/5)
    "eltwise_const_rank": 3,  # element-wise constants of this rank with two non-unit axes must broadcast in NHWC
    "feature_axes": [1],  # ONNX channel axis; Hailo's "features" axis
    "shuffle_bad_ranks": [3],
    "transpose_rejected_perms": [[0, 2, 1, 3]],
    "reduce_keepdims": 1,  # ReduceMax keeps the reduced axis
    "resize_modes": ["nearest", "linear", "bilinear"],
    "layernorm_min_rank": 3,
    "gather_max_indices": 1,
    "opsets": [8, 11],
}

SOURCES = {
    "seed 000": "the Hailo-8 op test of a user's project: PyTorch ops one by one through ONNX opset 11 and the Hailo "
    "Dataflow Compiler 3.32.0 (HailoRT 4.22)",
    "seed 002": "a user's port of DEIMv2 through the Hailo SDK 3.33 parser: the ops it rejected and the workarounds",
    "H-MZ": "the Hailo Model Zoo (2.12 to 2.18): the networks it compiles, their model scripts and parser end nodes",
    "H-I27": "a Hailo Model Zoo issue thread: ONNX opsets 8 and 11 are the officially supported ones",
    "H-I98": "a Hailo Model Zoo issue thread: ops the chip does not support run off the chip",
    "H-COM": "the Hailo community forum on unsupported operations: cut the graph at end nodes, run the rest in ONNX "
    "Runtime",
    "H-T332": "a user's table of the ops Hailo-8 supports and rejects (Dataflow Compiler 3.32.0)",
    "H-Y26": "a public port of YOLO26n to Hailo-8L with the parser's error messages",
    "H-YOLO": "a public HAR-generation log for YOLO models on Hailo-8 (Dataflow Compiler 3.33.1 messages)",
    "H-LSTM": "a public Dataflow Compiler log for a Bi-LSTM model on Hailo-8L",
    "H-VIT": "a public Hailo-8 parse log of a classifier (Selu and ViT Gather errors)",
    "H-QDQ": "public Dataflow Compiler logs on ONNX models quantized by ONNX Runtime",
    "H-BERT": "a public Dataflow Compiler log of a 6-layer BERT on Hailo-8",
    "H-OCR": "the fast-plate-ocr issue tracker: Dataflow Compiler 3.31.0 errors on a Keras OCR model",
    "H-ERF": "a public Dataflow Compiler log with the Erf and TopK error messages",
    "H-MISC": "public Dataflow Compiler logs: a TFLite custom op, a palm-detection Reshape, a Flatten head, an unfold "
    "and grouped-query attention",
    "H10-A": "a public Hailo operator compatibility table (Hailo-10H, Dataflow Compiler 5.4.0)",
    "H10-B": "public usage notes for the Hailo Dataflow Compiler (Hailo-10H)",
    "H10-C": "public RF-DETR and DINOv2 porting notes (Dataflow Compiler 5.3.0)",
    "H10-D": "a public port of the Qwen3-VL vision tower to the Dataflow Compiler 5.3.0 (Hailo-10H)",
}

# (ops, note shown in the support matrix, source)
_NPU_OPS = (
    (("Conv",), "2-D: 1x1/3x3/5x5, stride, padding, depthwise, grouped, dilated compiled", "seed 000"),
    (("ConvTranspose",), "nn.ConvTranspose2d compiled", "seed 000"),
    (
        ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"),
        "various kernel/stride/padding compiled",
        "seed 000",
    ),
    (("BatchNormalization",), "fused into the conv", "seed 000"),
    (("InstanceNormalization",), "nn.InstanceNorm2d compiled", "seed 000"),
    (("LayerNormalization",), "fused form (opset 17) needs rank >= 3", "H10-D"),
    (
        ("Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Clip"),
        "compiled",
        "seed 000",
    ),
    (("Softmax",), "zoo classifiers end at Softmax", "H-MZ"),
    (("Add", "Sub", "Mul", "Div"), "same shape or broadcast over channels/spatial axes", "seed 000"),
    (("Concat",), "not over the batch axis", "seed 000"),
    (("Resize", "Upsample"), "nearest and bilinear", "seed 000"),
    (("Pad",), "nn.ZeroPad2d compiled (external_pad)", "seed 000"),
    (("DepthToSpace", "SpaceToDepth"), "pixel (un)shuffle", "H-MISC"),
    (("Gemm", "MatMul"), "nn.Linear compiled; activation x activation MatMul as in zoo attention blocks", "seed 000"),
    (
        ("Reshape", "Flatten", "Transpose"),
        "4-D <-> 4-D/2-D reshuffles; no rank-3, no 5-D, no perm [0,2,1,3]",
        "seed 000",
    ),
    (("Squeeze", "Unsqueeze"), "size-1 axes only (layout no-op)", "seed 000"),
    (("Identity", "Dropout"), "no-op at inference", "seed 000"),
    (("Slice",), "feature axis only", "seed 002"),
    (("Split",), "becomes feature_splitter; not as a model output", "H10-A"),
    (("Tile",), "not over the batch axis", "seed 002"),
    (("Expand",), "no-op only (removed by the parser's onnx-simplifier retry); a real broadcast fails", "H-BERT"),
    (("ReduceMax",), "feature axis, keepdims=1", "seed 002"),
    (("ReduceMean",), "alone or inside LayerNorm; not mean(dim) -> reshape -> Linear", "seed 000"),
    (("ReduceSum",), "feature axis only", "H10-A"),
    (("ArgMax",), "over channels, at the end of the graph", "H-MZ"),
    (("Constant",), "folded", "seed 000"),
    (("Gather",), "one constant position on a non-batch axis (the class token x[:, 0]); no lookups", "H-MZ"),
    (("Cast",), "no-op casts only (removed by the parser's onnx-simplifier retry)", "H-I98"),
)

# (ops, reason, fix hints, source, fix_rules[, evidence])
_UNSUPPORTED = (
    (
        ("GridSample",),
        "GridSample is not supported by the Hailo Dataflow Compiler (SDK 3.33; no support planned)",
        ("do the dynamic warp on the host (cut the graph before it); a fixed warp can become Resize/Pad",),
        "seed 002",
        (),
    ),
    (
        ("GatherElements",),
        'GatherElements is not supported on the device ("GatherElements operation is unsupported")',
        ("rewrite torch.gather as index_select / a one-hot multiply, or move it to the host",),
        "seed 002",
        (),
    ),
    (
        ("TopK",),
        'TopK is not supported ("TopK operation is unsupported")',
        # k = 1 has a rewrite: the rule topk.k1 names it on those nodes only
        (Hint("select the top k on the host in post-processing", common.topk_k_above_one),),
        "seed 002",
        (),
    ),
    (
        ("Mod",),
        'Mod is not supported ("Mod operation is unsupported")',
        ("move the modulo to host post-processing or change the model",),
        "seed 002",
        (),
    ),
    (
        ("LSTM", "GRU", "RNN"),
        "Recurrent layers are not supported by the Hailo parser (UnsupportedLSTMLayerError)",
        ("replace the RNN with a TCN (a stack of Conv2d (1, k) over [N, C, 1, T]), or run it on the host",),
        "H-LSTM",
        (),
        "The parser stops at the LSTM with UnsupportedLSTMLayerError ('activation types ... are not supported'); the "
        "Hailo-8 op test of a user's project recommends a temporal convolution network in its place.",
    ),
    (
        ("Where",),
        "Where is not supported (UnexpectedNodeError on attention-mask Where)",
        ("precompute the mask as a constant (npufit fix fold_constants) or apply it on the host",),
        "H-BERT",
        ("fold_constants",),
    ),
    (
        ("Erf",),
        "A lone Erf is not supported; only PyTorch's F.gelu pattern Div/Erf/Add/Mul/Mul is recognised",
        ("use the tanh approximation of GELU (npufit fix gelu_tanh)",),
        "H-OCR",
        ("gelu_tanh",),
        "Dataflow Compiler 3.31.0 stops at a lone Erf with UnsupportedActivationLayerError ('Unexpected activation "
        "... op=Erf'); the Div/Erf/Add/Mul/Mul chain PyTorch's F.gelu exports is parsed as one GELU layer.",
    ),
    (
        ("Selu",),
        'Selu is not supported ("Selu operation is unsupported")',
        ("replace it with Elu or LeakyRelu",),
        "H-VIT",
        (),
    ),
    (
        ("GatherND", "ScatterND", "ScatterElements"),
        "Gather/Scatter by index tensors are not supported",
        ("rewrite, or do it on the host",),
        "H10-B",
        (),
    ),
    (
        ("NonMaxSuppression",),
        "NonMaxSuppression is not an ONNX op the parser takes; Hailo adds NMS as host post-processing",
        ("cut before NMS and use the model script's nms_postprocess(..., engine=cpu)",),
        "H-MZ",
        (),
    ),
    (
        ("Cos", "Sin"),
        "Cos/Sin are unsupported on Hailo-8 (YOLO OBB angle decode)",
        ("decode angles on the host",),
        "H-YOLO",
        (),
    ),
    (("Abs",), "Abs is not in the Hailo operator set", ("rewrite as sqrt(x*x)",), "H10-B", ()),
    (
        ("ConstantOfShape",),
        "ConstantOfShape that does not fold crashes the parser",
        ("replace it with an initializer (fold_constants)",),
        "H10-A",
        ("fold_constants",),
    ),
    (
        ("DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "QuantizeLinear", "DequantizeLinear"),
        "Pre-quantized ONNX ops are rejected: the Dataflow Compiler quantizes a float model itself",
        ("feed the float ONNX model and let the Dataflow Compiler quantize it",),
        "H-QDQ",
        (),
    ),
    (
        ("If", "Loop", "Scan"),
        "Control flow cannot be mapped to the Hailo dataflow graph",
        ("unroll or move it to the host",),
        "seed 000",
        (),
    ),
)


def _composites(p: str) -> tuple[Composite, ...]:
    ok = "{} is recognised as one layer by the Hailo parser"
    return (
        Composite(
            f"{p}.layernorm",
            "LayerNorm (decomposed)",
            ok.format("LayerNorm decomposed into ReduceMean/Sub/Pow/Sqrt/Div"),
            patterns.match_layernorm,
            NPU,
            source="seed 000",
        ),
        Composite(
            f"{p}.rmsnorm",
            "RMSNorm (decomposed)",
            "RMSNorm decomposed into Pow/ReduceMean/Add/Sqrt with a division or a reciprocal is judged like the "
            "decomposed LayerNorm, which runs on the chip",
            forms.match_rmsnorm,
            NPU,
            source="seed 000",
            evidence="The Hailo parser recognises the decomposed LayerNorm as one layer; RMSNorm is the same "
            "reductions without the mean subtraction. No public Hailo-8 parse of RMSNorm itself was found.",
        ),
        Composite(
            f"{p}.gelu",
            "GELU (erf form)",
            ok.format("PyTorch's F.gelu export Div/Erf/Add/Mul/Mul"),
            patterns.match_gelu_erf,
            NPU,
            source="seed 000",
        ),
        Composite(
            f"{p}.gelu_tanh",
            "GELU (tanh approximation)",
            ok.format("tanh-approximated GELU"),
            patterns.match_gelu_tanh,
            NPU,
            source="seed 000",
        ),
        Composite(f"{p}.silu", "SiLU", ok.format("x * sigmoid(x)"), patterns.match_silu, NPU, source="seed 000"),
        Composite(
            f"{p}.hardswish",
            "HardSwish",
            ok.format("x * hardsigmoid(x)"),
            patterns.match_hardswish,
            NPU,
            source="seed 000",
        ),
        Composite(
            f"{p}.attention",
            "multi-head attention (head split/merge shuffles)",
            ok.format("Multi-head attention (head split and merge, Q.K^T and A.V MatMuls, a constant score bias)"),
            tokens.match_attention,
            NPU,
            source="H-MZ",
            evidence="The block is reshape [N,T,C] -> [N,T,h,d], Transpose [0,2,1,3], the Q.K^T and A.V MatMuls, "
            "the head merge and a constant score bias. The Hailo Model Zoo compiles vit, deit, levit, detr and clip "
            "with no cut inside these blocks. Evidence conflicts: a Keras OCR model and a YOLO26n port failed on a "
            "head reshape and on Transpose [0,2,1,3], but there these shuffles did not feed attention MatMuls. A head "
            "merge into the rank-2 matrix nn.MultiheadAttention feeds its output projection belongs to the block as "
            "well.",
        ),
        Composite(
            f"{p}.tokens",
            "feature map <-> token sequence",
            ok.format("A feature map flattened into a token sequence (patch embedding) or a token grid back to a map"),
            tokens.match_token_layout,
            NPU,
            source="H-MZ",
            evidence="Recognised forms: flatten(2) + transpose(1, 2) of a feature map (patch embedding, DETR's "
            "encoder input), its reverse, a token grid reshape with features last (to or from NCHW through a 4-D "
            "transpose, around a strided subsampling Slice) and BatchNorm1d over tokens. The Hailo Model Zoo runs "
            "them on the chip in vit (its start node is the image input), detr, levit256 and vit_pose_small (tokens "
            "back to a map for the heatmap head). Also recognised: the same flatten read by several permutes, with "
            "batch 1 moved among size-1 axes (nn.MultiheadAttention run sequence-first, as in the Zoo's yolov5s_c3tr "
            "and a DEIMv2-N encoder the parser took), and a Linear over the token axis between two such transposes "
            "(the Zoo's resmlp12).",
        ),
        Composite(
            f"{p}.rope",
            "rotary position embedding (rotate-half)",
            "Rotary position embedding (rotate-half, then cos/sin tables) crashed the Hailo-8 parser in public "
            "reports, and no Model Zoo network for Hailo-8 contains it",
            forms.match_rope,
            UNSUP,
            (
                "run the attention blocks that use it on the host (end the Hailo graph before the first one)",
                "or replace the rotary embedding with a learned or fixed absolute position embedding added once to "
                "the tokens, and fine-tune",
                "or try the parser on this model and keep the cut only if it parses: the failures are crashes, "
                "not a rule npufit can check",
            ),
            "rope-dinov3-dfc333",
            evidence="The form: the halves of the last axis swapped with a sign flip, then multiplied by cos/sin "
            "tables. A DINOv3 detector backbone crashed the parser with a ZeroDivisionError in an element-wise "
            "multiply layer (Dataflow Compiler 3.33), and a Llama-style decomposition crashed it with an IndexError "
            "(3.28); a whole Qwen2 block with rotary embeddings compiled only on the Hailo-10H compiler (5.3).",
        ),
        Composite(
            f"{p}.mean_linear",
            "mean(dim) -> reshape -> Linear",
            'torch.mean(dim=...) followed by reshape and Linear fails in the Hailo parser ("Invalid kernel shape")',
            patterns.match_mean_linear,
            UNSUP,
            ("use nn.AdaptiveAvgPool2d((1, 1)) + torch.squeeze before nn.Linear",),
            "seed 000",
            ("mean_to_global_pool",),
            evidence="The parser turns a Linear into a convolution and cannot take the tensor a mean over some axes "
            "leaves; a global average pool keeps the 4-D map it expects (the Hailo-8 op test of a user's project).",
        ),
    )


def _build(name: str, title: str, summary: str) -> Profile:
    rules = op_rules(name)
    ops: dict[str, OpSupport] = {}
    for names, note, source in _NPU_OPS:
        for op in names:
            ops[op] = OpSupport(op, NPU, rules.get(op, ()), source=source, note=note)
    for unsupported, reason, fix, source, fix_rules, *evidence in _UNSUPPORTED:
        for op in unsupported:
            ops[op] = OpSupport(
                op,
                UNSUP,
                rules.get(op, ()),
                reason=reason,
                fix=fix,
                source=source,
                fix_rules=fix_rules,
                evidence="".join(evidence),
            )
    unknown = OpSupport(
        "*",
        UNSUP,
        reason="{op} is not in the Hailo operator table: no public evidence that the Dataflow Compiler parses it",
        fix=("replace it with a supported op, or cut it away and run it on the host",),
        source="H-I98",
    )
    composites = _composites(name)
    g_rules = graph_rules(name)
    cited = {s.source for s in ops.values()} | {r.source for s in ops.values() for r in s.rules}
    cited |= {c.source for c in composites} | {r.source for r in g_rules}
    return Profile(
        name=name,
        title=title,
        vendor="Hailo",
        summary=summary,
        fallback=Fallback.NONE,
        limits=dict(LIMITS),
        ops=ops,
        executes=Executes.QUANTIZES_ITSELF,
        unknown=unknown,
        family="hailo",
        compiler=HAILO.name,
        measure_judges=(),  # the DFC reports no per-node placement
        runtime="hailort",
        runtime_module="hailo_platform",
        # Conv1d times out, mean->reshape->Linear fails to parse, TopK/Mod are unsupported, ReduceMax needs keepdims=1
        # on the features axis, standalone Erf is refused, opset 11 is the officially supported one
        rewrite_rules=common.REWRITE_COMMON
        + ("reduce_keepdims", "topk1_to_argmax", "mod_decompose", "gelu_tanh", "opset_convert"),
        rewrite_options={
            "reduce_keepdims": {"channel_axis": True},
            "topk1_to_argmax": {"channel_axis": True},
            "opset_convert": {"opset": 11, "accepted": (8, 11)},
        },
        graph_rules=g_rules,
        composites=composites,
        sources={**SOURCES, **evidence_sources(cited)},
        input_formats=("onnx", "tflite"),
        # the Dataflow Compiler parses TFLite itself (its TF parser): TFLite builtins are judged as the ONNX ops
        # they are, with NHWC axes (layout.py)
        judged_formats=("onnx", "tflite"),
        op_key=tflite_map.onnx_op,
        notes=(
            "No CPU fallback inside a HEF: every unsupported node must be cut away and run on the host.",
        ),
        format_notes={
            "onnx": ("ONNX opsets 8 and 11 are the ones Hailo supports officially.",),
            "tflite": (
                "TFLite models are judged as the Dataflow Compiler's TFLite parser reads them: each builtin as the "
                "ONNX op it is, with the features on the last axis.",
                "Multi-node forms (attention, LayerNorm, GELU) are recognised in ONNX graphs only, so a transformer "
                "in TFLite is judged op by op.",
            ),
        },
        aliases=("hailo-8",) if name == "hailo8" else ("hailo-8l",),
        split_costs=split_costs(name),
    )


def profiles() -> dict[str, Profile]:
    return {
        "hailo8": _build(
            "hailo8",
            "Hailo-8 (Hailo Dataflow Compiler 3.x)",
            "Hailo-8 dataflow NPU (26 TOPS). ONNX/TFLite in, HEF out; no CPU fallback inside the HEF.",
        ),
        "hailo8l": _build(
            "hailo8l",
            "Hailo-8L (Hailo Dataflow Compiler 3.x)",
            "Hailo-8L, the entry variant of Hailo-8 (13 TOPS): the same Dataflow Compiler and operator set, fewer "
            "resources, so models split into more contexts (a YOLO26n backbone took 5).",
        ),
    }
