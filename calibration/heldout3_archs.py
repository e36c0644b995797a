"""The third held-out evaluation set: architectures on none of the calibration list (hf_archs.py, torch_archs.py), the
first held-out set (heldout_archs.py) or the second (heldout2_archs.py), recorded once and never read while fitting.

The first two sets have been read while rules were improved, so neither measures npufit on architectures nobody
looked at any more. This one does: no rule may cite it, and its misses are not read to decide what to change.
Built exactly like the second set (hf_archs.py's helpers: small configs, random weights, eager attention, offline;
every module re-initialised as calibration/convert_archs.py does); each builder returns (module, example inputs,
input names, output names)."""

from __future__ import annotations

from .convert_archs import _reinit  # sets HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE before any transformers import
from .hf_archs import BERT, VIT, W2V, _audio, _img, _m, _Out, _t, _text, _vision

# -- cnn ------------------------------------------------------------------------------------------------------


def dinov3_convnext():
    return _vision(
        _m("DINOv3ConvNextModel", "DINOv3ConvNextConfig", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1]),
        ("pooler_output",),
    )


def resnet_d():
    """RT-DETR's ResNet-D on its own (deep stem, average-pool shortcuts): a classifier backbone's feature maps."""
    from transformers import RTDetrResNetBackbone, RTDetrResNetConfig

    cfg = RTDetrResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[2, 2, 2, 2],
        layer_type="bottleneck",
        out_features=["stage2", "stage3", "stage4"],
    )
    return (
        _Out(RTDetrResNetBackbone(cfg).eval(), ("pixel_values",), ("feature_maps",)),
        (_img(),),
        ["images"],
        ["feature_maps"],
    )


def florence2_davit():
    """Florence-2's DaViT vision backbone: convolutional patch embeddings with window and channel attention."""
    m = _m(
        "Florence2VisionBackbone",
        "Florence2VisionConfig",
        depths=[1, 1, 1, 1],
        embed_dim=[16, 32, 64, 128],
        num_heads=[1, 2, 4, 8],
        num_groups=[1, 2, 4, 8],
        window_size=4,
        projection_dim=32,
        drop_path_rate=0.0,
    )
    return _Out(m, ("hidden_states",), ("last_hidden_state",)), (_img(),), ["images"], ["last_hidden_state"]


def dac_encoder():
    m = _m(
        "DacModel",
        "DacConfig",
        encoder_hidden_size=8,
        downsampling_ratios=[2, 4],
        decoder_hidden_size=32,
        hidden_size=32,
        n_codebooks=2,
        codebook_size=64,
        codebook_dim=4,
    )
    torch = _t()

    class Encoder(torch.nn.Module):
        """The convolutional encoder up to the latents (the codebook lookup is a nearest-neighbour search)."""

        def __init__(self):
            super().__init__()
            self.enc = m.encoder

        def forward(self, x):
            return self.enc(x)

    return Encoder().eval(), (torch.randn(1, 1, 2048),), ["audio"], ["latents"]


# -- transformer ----------------------------------------------------------------------------------------------


def owlv2_vision():
    return _vision(_m("Owlv2VisionModel", "Owlv2VisionConfig", image_size=64, patch_size=16, **VIT), ("pooler_output",))


def blip_vision():
    return _vision(_m("BlipVisionModel", "BlipVisionConfig", image_size=64, patch_size=16, **VIT))


def videomae():
    m = _m("VideoMAEModel", "VideoMAEConfig", image_size=32, patch_size=16, num_frames=4, tubelet_size=2, **VIT)
    return (
        _Out(m, ("pixel_values",), ("last_hidden_state",)),
        (_t().randn(1, 4, 3, 32, 32),),
        ["video"],
        ["last_hidden_state"],
    )


def roformer():
    return _text(_m("RoFormerModel", "RoFormerConfig", embedding_size=32, **BERT))


def layoutlm():
    torch = _t()
    m = _m("LayoutLMModel", "LayoutLMConfig", **BERT)
    ids = torch.randint(0, 100, (1, 16))
    bbox = torch.sort(torch.randint(0, 1000, (1, 16, 4)), dim=-1).values  # x0 <= y0 <= x1 <= y1: valid boxes
    return (
        _Out(m, ("input_ids", "bbox"), ("last_hidden_state",)),
        (ids, bbox),
        ["input_ids", "bbox"],
        ["last_hidden_state"],
    )


def canine():
    return _text(
        _m(
            "CanineModel",
            "CanineConfig",
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            num_hash_buckets=64,
            downsampling_rate=4,
        ),
        vocab=1000,
    )


# -- detector -------------------------------------------------------------------------------------------------


def _resnet(out):
    from transformers import ResNetConfig

    return ResNetConfig(
        embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], layer_type="basic", out_features=out
    )


def rt_detr_v2():
    from transformers import RTDetrResNetConfig

    bb = RTDetrResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage2", "stage3", "stage4"],
    )
    m = _m(
        "RTDetrV2ForObjectDetection",
        "RTDetrV2Config",
        backbone_config=bb,
        encoder_hidden_dim=32,
        encoder_ffn_dim=64,
        encoder_attention_heads=2,
        d_model=32,
        decoder_in_channels=[32, 32, 32],
        decoder_ffn_dim=64,
        decoder_attention_heads=2,
        num_queries=20,
        num_labels=3,
        decoder_layers=2,
        encoder_in_channels=[32, 64, 128],
    )
    return _vision(m, ("logits", "pred_boxes"))


def deformable_detr():
    m = _m(
        "DeformableDetrForObjectDetection",
        "DeformableDetrConfig",
        backbone_config=_resnet(["stage2", "stage3", "stage4"]),
        use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone=None,
        d_model=32,
        encoder_layers=1,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_queries=20,
        num_labels=3,
        num_feature_levels=3,
    )
    return _vision(m, ("logits", "pred_boxes"))


# -- audio-rnn ------------------------------------------------------------------------------------------------


def wav2vec2_bert():
    m = _m(
        "Wav2Vec2BertModel",
        "Wav2Vec2BertConfig",
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        feature_projection_input_dim=80,
        conv_depthwise_kernel_size=7,
        output_hidden_size=32,
    )
    return (
        _Out(m, ("input_features",), ("last_hidden_state",)),
        (_t().randn(1, 50, 80),),
        ["features"],
        ["last_hidden_state"],
    )


def clap_audio():
    m = _m(
        "ClapAudioModel",
        "ClapAudioConfig",
        spec_size=64,
        num_mel_bins=64,
        patch_size=4,
        hidden_size=32,
        patch_embeds_hidden_size=16,
        depths=[1, 1],
        num_attention_heads=[2, 2],
        window_size=4,
        enable_fusion=False,
        num_hidden_layers=2,
    )
    return (
        _Out(m, ("input_features",), ("pooler_output",)),
        (_t().randn(1, 1, 64, 64),),
        ["features"],
        ["pooler_output"],
    )


# name -> family (corpus.FAMILIES, so scores compare family by family with the corpus and the other sets)
FAMILY = {
    "dinov3_convnext": "cnn",
    "resnet_d": "cnn",
    "florence2_davit": "cnn",
    "owlv2_vision": "transformer",
    "blip_vision": "transformer",
    "videomae": "transformer",
    "roformer": "transformer",
    "layoutlm": "transformer",
    "canine": "transformer",
    "rt_detr_v2": "detector",
    "deformable_detr": "detector",
    "wav2vec2_bert": "audio-rnn",
    "clap_audio": "audio-rnn",
    "dac_encoder": "audio-rnn",
}


def shared_source() -> str:
    """What decides the exports besides this module: hf_archs.py's helpers and shared configs (not its corpus builders,
    so a change to the corpus does not re-key this set)."""
    import inspect

    return "\n".join(
        [*(inspect.getsource(f) for f in (_t, _img, _Out, _vision, _text, _audio, _m, _reinit)), repr((VIT, BERT, W2V))]
    )


def _arch(name: str):
    from .corpus import Arch

    def build():
        module, *rest = globals()[name]()
        return (_reinit(module), *rest)

    build.__name__ = name
    return Arch(name, FAMILY[name], build, "transformers")


ARCHS = {n: _arch(n) for n in FAMILY}
