"""The held-out evaluation set: real architectures that are NOT on issue 14's calibration list (hf_archs.py,
torch_archs.py), so no rule of npufit's profiles was fitted to them.

Fifteen come from convert_archs.py as they are (its configs, its LeCun re-init, its default attention
implementation: what a user's export looks like); the five below are new, written in the same style (small config,
random weights, offline). Each builder here returns (module, example inputs, input names, output names), like the
calibration builders: the module a convert_archs builder would export is captured at its export call, so the
export itself (opset, cache, atomic write) is corpus.export's, at the calibration's opset."""

from __future__ import annotations

import os

from . import convert_archs as C

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def regnet(p):
    from transformers import RegNetConfig, RegNetForImageClassification

    cfg = RegNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1], groups_width=8, num_labels=10)
    C._hf(RegNetForImageClassification(cfg), C._img(s=64), ("pixel_values",), ("logits",), p)


def mobilevit(p):
    from transformers import MobileViTConfig, MobileViTForImageClassification

    cfg = MobileViTConfig(
        image_size=64,
        hidden_sizes=[16, 24, 32],
        neck_hidden_sizes=[8, 16, 24, 32, 40, 48, 96],
        num_attention_heads=2,
        num_labels=10,
    )
    C._hf(MobileViTForImageClassification(cfg), C._img(s=64), ("pixel_values",), ("logits",), p)


def levit(p):
    from transformers import LevitConfig, LevitForImageClassification

    cfg = LevitConfig(
        image_size=64,
        hidden_sizes=[32, 48, 64],
        num_attention_heads=[2, 3, 4],
        depths=[1, 1, 1],
        key_dim=[8, 8, 8],
        num_labels=10,
    )
    C._hf(LevitForImageClassification(cfg), C._img(s=64), ("pixel_values",), ("logits",), p)


def poolformer(p):
    from transformers import PoolFormerConfig, PoolFormerForImageClassification

    cfg = PoolFormerConfig(depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 48, 64], num_labels=10)
    C._hf(PoolFormerForImageClassification(cfg), C._img(s=64), ("pixel_values",), ("logits",), p)


def dpt(p):
    from transformers import DPTConfig, DPTForDepthEstimation

    cfg = DPTConfig(
        image_size=64,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        backbone_out_indices=[0, 1, 2, 3],
        neck_hidden_sizes=[16, 32, 48, 64],
        fusion_hidden_size=32,
    )
    C._hf(DPTForDepthEstimation(cfg), C._img(s=64), ("pixel_values",), ("predicted_depth",), p)


def captured(builder):
    """(module, inputs, input names, output names) of a convert_archs-style builder, taken at its export call: the
    builder writes nothing, and corpus.export exports the same module at the opset asked for."""
    import npufit.zoo.export as E

    got = []
    real = E.export_onnx
    E.export_onnx = lambda module, inputs, path=None, opset=11, in_names=None, out_names=None: got.append(
        (module, inputs if isinstance(inputs, tuple) else (inputs,), list(in_names), list(out_names))
    )
    try:
        builder(None)
    finally:
        E.export_onnx = real
    if len(got) != 1:
        raise RuntimeError(f"{builder.__name__}: {len(got)} export calls, expected one")
    return got[0]


# name -> (family, builder): the families are the calibration's (corpus.FAMILIES), so scores compare family by family
HELDOUT = {
    # cnn: convolutional backbones, incl. conv/attention hybrids and pooling mixers
    "resnet": ("cnn", C.resnet),
    "regnet": ("cnn", regnet),
    "mobilenet_v2": ("cnn", C.mobilenet_v2),
    "efficientnet": ("cnn", C.efficientnet),
    "convnext": ("cnn", C.convnext),
    "poolformer": ("cnn", poolformer),
    "mobilevit": ("cnn", mobilevit),
    # transformer: ViT-style and hierarchical vision encoders, dense-prediction transformers, a text encoder
    "vit": ("transformer", C.vit),
    "deit": ("transformer", C.deit),
    "swin": ("transformer", C.swin),
    "levit": ("transformer", levit),
    "segformer": ("transformer", C.segformer),
    "dpt": ("transformer", dpt),
    "bert": ("transformer", C.bert),
    # detector
    "detr": ("detector", C.detr),
    "yolos": ("detector", C.yolos),
    # audio-rnn: speech encoders and recurrent nets
    "wav2vec2": ("audio-rnn", C.wav2vec2),
    "whisper_encoder": ("audio-rnn", C.whisper_encoder),
    "lstm": ("audio-rnn", C.lstm),
    "gru": ("audio-rnn", C.gru),
}


def _arch(name, family, builder):
    from .corpus import Arch

    def build():
        return captured(builder)

    build.__name__ = name  # the module hashed into the export's cache key is this one (corpus.config_hash)
    return Arch(name, family, build, "torch" if builder in (C.lstm, C.gru) else "transformers")


ARCHS = {name: _arch(name, fam, b) for name, (fam, b) in HELDOUT.items()}
