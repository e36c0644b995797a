"""Hailo's rule tables: graph_rules(p) and op_rules(p) (op -> its rules), ids under the profile name (hailo8, hailo8l).

Every number in a sentence is a {limit} of Profile.limits (tests/test_targets_sentences.py); the checks are in
checks.py. Hailo has no CPU fallback inside a HEF: a broken rule makes the op `unsupported`.
"""

from __future__ import annotations

from .. import common
from ..base import Rule, RuleMaker, Verdict
from .checks import (
    argmax_axis,
    cast_noop,
    concat_batch,
    conv_rank,
    eltwise_const_layout,
    expand_noop,
    gather_position,
    index_math,
    index_math_gate,
    layernorm_rank,
    max_rank,
    reduce_features,
    reduce_keepdims,
    resize_mode,
    shuffle_batch,
    shuffle_rank3,
    slice_axis,
    split_output,
    static_inputs,
    tile_batch,
    topk_k1,
    transpose_perm_rule,
)

UNSUP = Verdict.UNSUPPORTED


SHUFFLE_FIX = (
    "keep tensors 4-D [N,C,H,W] around reshapes (express heads/bins through channels, use SpaceToDepth)",
    "or end the Hailo graph before this node (the parser's recommended end node) and run the rest on the host",
)


def graph_rules(p: str) -> tuple[Rule, ...]:
    r = RuleMaker(p, UNSUP)
    return (
        r(
            "input.static_shape",
            "All model inputs must have a static shape: the Hailo parser tolerates no dynamic axis",
            static_inputs,
            (
                "give the shape it runs at with --input-shape NAME=D0,D1,...: fix, split, quantize and compile "
                "write it into the models they output",
            ),
            "H-MISC",
            gate=common.dynamic_inputs_gate,
        ),
        r(
            "tensor.max_rank",
            "Hailo lays tensors out as NHWC: tensors above rank {max_rank} fail in the parser",
            max_rank,
            SHUFFLE_FIX,
            "H-Y26",
            gate=common.max_rank_gate,
            evidence="The parser rejects 5-D reshapes and transposes and Tensor.unfold with "
            "UnsupportedShuffleLayerError (a public YOLO26n port to Hailo-8L).",
        ),
        r(
            "dtype.index_math",
            "Integer and boolean tensors computed at run time (sizes, indices, masks) do not go into a HEF, except "
            "the indices an ArgMax writes, transposed or squeezed after it",
            index_math,
            (
                "compute it on the host: end the Hailo graph before it, or start it after (the Model Zoo starts its "
                "text encoders after the token lookup and the mask arithmetic)",
            ),
            "zoo-bert-base-start",
            gate=index_math_gate,
            evidence="The Dataflow Compiler builds a float graph and quantizes it itself, and the Hailo Model Zoo "
            "starts its networks after such arithmetic (token lookups, attention masks) and leaves it to the host "
            "(BERT-base, the CLIP text encoder).",
        ),
    )


def op_rules(p: str) -> dict[str, tuple[Rule, ...]]:
    r = RuleMaker(p, UNSUP)
    conv = r(
        "conv.rank",
        "Convolutions run as {conv_dims}-D convolutions on rank-{conv_rank} NCHW tensors; nn.Conv1d (rank-3 input) "
        "timed out in the Dataflow Compiler",
        conv_rank,
        ("rewrite nn.Conv1d as nn.Conv2d with kernel (1, k) on an [N, C, 1, L] tensor",),
        "seed 000",
        ("conv1d_to_conv2d",),
        evidence="In the Hailo-8 op test of a user's project, an nn.Conv1d model never finished compiling; the same "
        "layer written as a Conv2d with a (1, k) kernel compiled.",
    )
    shuffle = (
        r(
            "shuffle.rank3",
            "Reshape/Flatten/Transpose reading or writing a rank-{shuffle_bad_ranks[0]} tensor has no NHWC mapping in "
            "the Hailo parser outside attention blocks and patch embeddings",
            shuffle_rank3,
            SHUFFLE_FIX,
            "H-YOLO",
            evidence="The parser fails with UnsupportedShuffleLayerError on the [N, C, H*W] bins and the DFL reshape "
            "of YOLO detection heads (a public YOLO HAR-generation log, Dataflow Compiler 3.33.1) and on a Keras "
            "multi-head-attention head reshape (a Keras OCR model, Dataflow Compiler 3.31.0). The evidence "
            "conflicts: the Hailo Model Zoo compiles vit, deit, levit and detr with the same ops inside attention "
            f"and patch embedding, so those forms are judged by the patterns {p}.attention and {p}.tokens instead. "
            "Adding or dropping size-1 axes is fine (the Hailo-8 op test of a user's project compiled squeeze), and "
            "4-D to 4-D or 2-D shuffles pass.",
        ),
        r(
            "shuffle.batch",
            "Ops that move or resize the batch axis are rejected by the Hailo parser",
            shuffle_batch,
            ("keep batch as axis 0 with size 1; do batch rearrangements on the host",),
            "H-VIT",
        ),
    )
    transpose = shuffle + (
        r(
            "transpose.perm",
            "Transpose perms {transpose_rejected_perms} fail in the Hailo parser outside attention blocks",
            transpose_perm_rule,
            SHUFFLE_FIX,
            "H-Y26",
            evidence="The YOLO DFL transpose fails with UnsupportedShuffleLayerError (a public YOLO HAR-generation "
            "log; a public YOLO26n port to Hailo-8L). The evidence conflicts: the same perm splits and merges heads "
            "inside the attention blocks the Hailo Model Zoo compiles (vit, deit, levit, detr), judged by the "
            f"patterns {p}.attention and {p}.tokens; the 4-D permute (0, 2, 3, 1) compiled in the Hailo-8 op test "
            "of a user's project.",
        ),
    )
    feature_fix = ("move the reduced/sliced axis to the channel axis (Transpose before it) or do it on the host",)
    return {
        "Conv": (conv,),
        "ConvTranspose": (conv,),
        "Reshape": shuffle,
        "Flatten": shuffle,
        "Transpose": transpose,
        "Concat": (
            r(
                "concat.batch",
                "Concat over the batch axis is rejected (UnsupportedConcatLayerError: concat over axis batch)",
                concat_batch,
                ("concatenate over channels, or on the host",),
                "H10-C",
            ),
        ),
        "Slice": (
            r(
                "slice.axis",
                "Slice is supported on the feature (channel) axis {feature_axes} only",
                slice_axis,
                ("swap axes so the slice is on the channel axis, or do it on the host",),
                "seed 002",
            ),
        ),
        "Expand": (
            r(
                "expand.broadcast",
                "Expand is rejected (UnexpectedNodeError: Expand) unless it is a no-op that the "
                "parser's onnx-simplifier retry removes",
                expand_noop,
                (
                    "materialise the broadcast as a constant at a fixed shape (npufit fix fold_constants), or "
                    "broadcast "
                    "implicitly in the element-wise op that consumes it",
                ),
                "H-BERT",
                ("fold_constants", "remove_identity"),
            ),
        ),
        "Tile": (
            r(
                "tile.batch",
                "Tile over the batch axis is rejected (becomes a concat over axis batch)",
                tile_batch,
                (
                    "move the batch replication to host post-processing or change the model",
                    "when the input is constant, fold it at a fixed shape",
                ),
                "seed 002",
                ("fold_constants",),
            ),
        ),
        "ReduceMax": (
            r(
                "reducemax.keepdims",
                "ReduceMax is supported only with keepdims={reduce_keepdims}",
                reduce_keepdims,
                ("export with keepdim=True and Squeeze afterwards",),
                "seed 002",
                ("reduce_keepdims",),
                evidence="The parser's message: \"Reduce max is only supported on the features axis, and with "
                "keepdim=True\" (a user's DEIMv2 port, Hailo SDK 3.33).",
            ),
            r(
                "reducemax.axis",
                "ReduceMax is supported only over the feature (channel) axis {feature_axes}",
                reduce_features,
                feature_fix + ("or use MaxPool over the spatial axes",),
                "H-Y26",
            ),
        ),
        "ReduceSum": (
            r(
                "reducesum.axis",
                "ReduceSum is supported over the feature (channel) axis {feature_axes} only",
                reduce_features,
                feature_fix,
                "H10-A",
            ),
        ),
        "ArgMax": (
            r(
                "argmax.axis",
                "ArgMax is supported over the feature (channel) axis {feature_axes} (segmentation heads)",
                argmax_axis,
                feature_fix,
                "H-MZ",
            ),
        ),
        "Resize": (
            r(
                "resize.mode",
                "Resize is supported in modes {resize_modes}",
                resize_mode,
                ("use nearest or bilinear interpolation",),
                "H-T332",
            ),
        ),
        "Split": (
            r(
                "split.output",
                'A Split output cannot be a model output ("output shape is ambiguous")',
                split_output,
                ("use separate Slice nodes, or add a layer after the split",),
                "H10-A",
            ),
        ),
        "LayerNormalization": (
            r(
                "layernorm.rank",
                "LayerNormalization needs a rank >= {layernorm_min_rank} input (rank-2 "
                "inputs crash the parser's NHWC conversion)",
                layernorm_rank,
                ("keep the batch axis (rank >= 3) or export at opset < 17 to get the decomposed form",),
                "H10-D",
                ("opset_convert",),
            ),
        ),
        "TopK": (
            r(
                "topk.k1",
                "A TopK that keeps one element is an ArgMax, which the parser takes over the feature axis",
                topk_k1,
                ("k = 1 gives the same result as ArgMax + ReduceMax, which run on the chip",),
                "seed 002",
                ("topk1_to_argmax",),
            ),
        ),
        "Gather": (
            r(
                "gather.position",
                "Gather runs only as a one-position slice: at most {gather_max_indices} constant index on a non-batch "
                "axis of an activation, e.g. the class token x[:, 0]",
                gather_position,
                (
                    "do the lookup on the host (the Hailo Model Zoo's text encoders start after the embeddings)",
                    "or use a Slice on the channel axis",
                ),
                "H-MZ",
                evidence="The Hailo Model Zoo's vit/deit classifiers end right after the class-token Gather (inferred "
                "from the node numbering of their end nodes). Embedding lookups fail with UnsupportedGatherLayerError "
                "(a public 6-layer BERT log), so do gathers over the batch axis (a public Hailo-8 classifier log) and "
                'run-time indices ("Can\'t find index", a public YOLO26n port).',
            ),
        ),
        "Cast": (
            r(
                "cast.noop",
                "Only a Cast to the dtype the tensor already has is accepted (the parser removes it)",
                cast_noop,
                ("remove the conversion from the model, or do it on the host",),
                "H-I98",
                evidence="The parser's onnx-simplifier retry removes a Cast to the same dtype (Hugging Face eager "
                "attention exports two around Softmax); there is no public evidence of a real dtype conversion inside "
                "a HEF, and the Dataflow Compiler quantizes the float graph itself.",
            ),
        ),
        **{
            op: (
                r(
                    "eltwise.const_layout",
                    "An element-wise constant operand must broadcast in NHWC layout: rank-{eltwise_const_rank} "
                    "constants with two non-unit axes fail on channel-first [N, C, L] tensors",
                    eltwise_const_layout,
                    ("make the constant 4-D [1,C,1,1]/[1,C,H,W] or apply it on the host",),
                    "H-YOLO",
                    evidence='YOLO\'s anchor constants fail ("constant shape (1,2,8400) not broadcastable", a public '
                    "YOLO HAR-generation log); the same constants on token sequences [N, T, C] are accepted (the "
                    "position embeddings of the Hailo Model Zoo's vit, deit and detr).",
                ),
            )
            for op in ("Add", "Sub", "Mul", "Div")
        },
    }
