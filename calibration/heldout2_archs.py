"""The second held-out evaluation set: 16 architectures on neither the calibration list (hf_archs.py, torch_archs.py)
nor the first held-out set (heldout_archs.py), recorded once and never fitted to.

The first set's misses have been seen, and rules are being changed after them, so it no longer measures npufit on
architectures nobody looked at. This set does: no rule may cite it, and it is not read to decide what to change.
Built like the calibration corpus (hf_archs.py's helpers: small configs, random weights, eager attention, offline),
each builder returns (module, example inputs, input names, output names). Every module is then re-initialised as
calibration/convert_archs.py does (LeCun-normal weights, O(1) tokens and position tables): with the HF init alone
MobileNetV1's and SAM's outputs are ~1e-30, which RKNN-Toolkit2 folds away as a constant model."""

from __future__ import annotations

from .convert_archs import _reinit  # sets HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE before any transformers import
from .hf_archs import BERT, VIT, W2V, _audio, _img, _m, _Out, _t, _text, _vision

# -- cnn ------------------------------------------------------------------------------------------------------


def mobilenet_v1():
    return _vision(
        _m("MobileNetV1Model", "MobileNetV1Config", image_size=64, depth_multiplier=0.25), ("pooler_output",)
    )


def _hgnet(**over):
    from transformers import HGNetV2Config

    cfg = dict(
        embedding_size=16,
        stem_channels=[3, 16, 16],
        hidden_sizes=[32, 64, 96, 128],
        depths=[1, 1, 1, 1],
        stage_in_channels=[16, 32, 64, 96],
        stage_mid_channels=[16, 16, 32, 32],
        stage_out_channels=[32, 64, 96, 128],
        stage_num_blocks=[1, 1, 1, 1],
        stage_numb_of_layers=[2, 2, 2, 2],
    )
    return HGNetV2Config(**{**cfg, **over})


def hgnet_v2():
    import transformers

    m = transformers.HGNetV2ForImageClassification(_hgnet(num_labels=10)).eval()
    return _Out(m, ("pixel_values",), ("logits",)), (_img(),), ["images"], ["logits"]


def swiftformer():
    return _vision(
        _m("SwiftFormerModel", "SwiftFormerConfig", image_size=64, depths=[1, 1, 1, 1], embed_dims=[16, 24, 32, 48])
    )


# -- transformer ----------------------------------------------------------------------------------------------


def sam_vision():
    return _vision(
        _m(
            "SamVisionModel",
            "SamVisionConfig",
            hidden_size=32,
            output_channels=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=64,
            patch_size=8,
            window_size=4,
            global_attn_indexes=[1],
            mlp_dim=64,
        ),
        ("last_hidden_state",),
    )


def depth_anything():
    from transformers import Dinov2Config

    bb = Dinov2Config(
        image_size=56,
        patch_size=14,
        out_indices=[1, 2, 3, 4],
        reshape_hidden_states=False,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
    )
    m = _m(
        "DepthAnythingForDepthEstimation",
        "DepthAnythingConfig",
        backbone_config=bb,
        patch_size=14,
        reassemble_hidden_size=32,
        neck_hidden_sizes=[8, 16, 32, 64],
        fusion_hidden_size=16,
        head_hidden_size=8,
    )
    return _vision(m, ("predicted_depth",), size=56)


def deberta_v2():
    return _text(
        _m(
            "DebertaV2Model",
            "DebertaV2Config",
            **BERT,
            relative_attention=True,
            position_buckets=16,
            pos_att_type=["p2c", "c2p"],
        )
    )


def mpnet():
    return _text(_m("MPNetModel", "MPNetConfig", **BERT))


def convbert():
    return _text(_m("ConvBertModel", "ConvBertConfig", **BERT, embedding_size=32, head_ratio=2, conv_kernel_size=5))


def funnel():
    return _text(
        _m(
            "FunnelBaseModel",
            "FunnelConfig",
            vocab_size=100,
            block_sizes=[1, 1, 1],
            d_model=32,
            n_head=2,
            d_head=16,
            d_inner=64,
        )
    )


# -- detector -------------------------------------------------------------------------------------------------


def _rtdetr_like(cls, cfg, backbone, **extra):
    m = _m(
        cls,
        cfg,
        backbone_config=backbone,
        encoder_hidden_dim=32,
        encoder_ffn_dim=64,
        encoder_attention_heads=2,
        d_model=32,
        decoder_in_channels=[32, 32, 32],
        decoder_ffn_dim=64,
        decoder_attention_heads=2,
        num_queries=20,
        num_labels=3,
        **{"decoder_layers": 1, **extra},
    )
    return _vision(m, ("logits", "pred_boxes"))


def rt_detr():
    from transformers import RTDetrResNetConfig

    bb = RTDetrResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage2", "stage3", "stage4"],
    )
    return _rtdetr_like("RTDetrForObjectDetection", "RTDetrConfig", bb, encoder_in_channels=[32, 64, 128])


def d_fine():
    bb = _hgnet(out_features=["stage2", "stage3", "stage4"])
    return _rtdetr_like(
        "DFineForObjectDetection",
        "DFineConfig",
        bb,
        encoder_in_channels=[64, 96, 128],
        lqe_hidden_dim=16,
        decoder_layers=2,
    )


# -- audio-rnn ------------------------------------------------------------------------------------------------


def wav2vec2_conformer():
    return _audio(_m("Wav2Vec2ConformerModel", "Wav2Vec2ConformerConfig", conv_depthwise_kernel_size=7, **W2V))


def unispeech_sat():
    return _audio(_m("UniSpeechSatModel", "UniSpeechSatConfig", **W2V))


def speech2text_encoder():
    m = _m(
        "Speech2TextModel",
        "Speech2TextConfig",
        vocab_size=100,
        d_model=32,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        conv_channels=32,
        input_feat_per_channel=40,
        max_source_positions=64,
    )
    enc = m.get_encoder()
    return (
        _Out(enc, ("input_features",), ("last_hidden_state",)),
        (_t().randn(1, 64, 40),),
        ["features"],
        ["last_hidden_state"],
    )


def encodec_encoder():
    m = _m(
        "EncodecModel", "EncodecConfig", hidden_size=32, num_filters=8, upsampling_ratios=[4, 4, 2], num_lstm_layers=2
    )
    torch = _t()

    class Encoder(torch.nn.Module):
        """The convolutional + LSTM encoder up to the embeddings (the codebook lookup is a nearest-neighbour search)."""

        def __init__(self):
            super().__init__()
            self.enc = m.encoder

        def forward(self, x):
            return self.enc(x)

    return Encoder().eval(), (torch.randn(1, 1, 3200),), ["audio"], ["embeddings"]


def sew_d():
    return _audio(
        _m(
            "SEWDModel",
            "SEWDConfig",
            squeeze_factor=2,
            position_buckets=16,
            max_position_embeddings=64,
            relative_attention=True,
            pos_att_type=("p2c", "c2p"),
            **W2V,
        )
    )


# name -> family (corpus.FAMILIES, so scores compare family by family with the corpus and the first set)
FAMILY = {
    "mobilenet_v1": "cnn",
    "hgnet_v2": "cnn",
    "swiftformer": "cnn",
    "sam_vision": "transformer",
    "depth_anything": "transformer",
    "deberta_v2": "transformer",
    "mpnet": "transformer",
    "convbert": "transformer",
    "funnel": "transformer",
    "rt_detr": "detector",
    "d_fine": "detector",
    "wav2vec2_conformer": "audio-rnn",
    "unispeech_sat": "audio-rnn",
    "sew_d": "audio-rnn",
    "speech2text_encoder": "audio-rnn",
    "encodec_encoder": "audio-rnn",
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
