"""Calibration architectures built from `transformers` configs: small, random weights, offline.

Each builder returns (module, example inputs, input names, output names). Only architectures named in
issue 14's calibration list live here; every other architecture stays free for independent evaluation.
Configs are tiny (2 layers, 32-64 wide) so exports and vendor compiles stay quick on two CPU cores."""

from __future__ import annotations


def _t():
    import torch

    torch.manual_seed(0)
    return torch


def _img(size=64, ch=3):
    return _t().randn(1, ch, size, size)


class _Out:
    """A plain-tensor module around a transformers model: positional inputs -> chosen output fields."""

    def __new__(cls, model, arg_names, fields, **fixed):
        torch = _t()

        class Outputs(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, *args):
                o = self.m(**dict(zip(arg_names, args)), **fixed)
                got = tuple(getattr(o, k) for k in fields)
                return got[0] if len(got) == 1 else got

        return Outputs().eval()


def _vision(model, fields=("last_hidden_state",), size=64, ch=3):
    return _Out(model, ("pixel_values",), fields), (_img(size, ch),), ["images"], list(fields)


def _text(model, fields=("last_hidden_state",), seq=16, vocab=100, mask=True):
    torch = _t()
    ids = torch.randint(0, vocab, (1, seq))
    if not mask:
        return _Out(model, ("input_ids",), fields), (ids,), ["input_ids"], list(fields)
    m = torch.ones(1, seq, dtype=torch.int64)
    return _Out(model, ("input_ids", "attention_mask"), fields), (ids, m), ["input_ids", "attention_mask"], list(fields)


def _audio(model, fields=("last_hidden_state",), samples=4000):
    return _Out(model, ("input_values",), fields), (_t().randn(1, samples),), ["audio"], list(fields)


def _m(cls_name, cfg_name, **cfg):
    import transformers

    cfg = getattr(transformers, cfg_name)(**cfg)
    cfg._attn_implementation = "eager"  # the exporters' common ground: explicit MatMul/Softmax attention
    return getattr(transformers, cls_name)(cfg).eval()


VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
BERT = dict(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)
W2V = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    conv_dim=(32, 32, 32),
    conv_stride=(5, 4, 2),
    conv_kernel=(10, 4, 3),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=4,
)


def beit():
    return _vision(_m("BeitModel", "BeitConfig", image_size=64, patch_size=8, use_relative_position_bias=True, **VIT))


def bit():
    return _vision(
        _m(
            "BitModel",
            "BitConfig",
            num_groups=8,
            embedding_size=16,
            hidden_sizes=[16, 32, 64, 128],
            depths=[1, 1, 1, 1],
        )
    )


def convnextv2():
    return _vision(_m("ConvNextV2Model", "ConvNextV2Config", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1]))


def cvt():
    return _vision(
        _m(
            "CvtModel",
            "CvtConfig",
            embed_dim=[16, 32, 64],
            num_heads=[1, 2, 2],
            depth=[1, 2, 3],
            mlp_ratio=[2.0, 2.0, 2.0],
        )
    )


def data2vec_vision():
    return _vision(_m("Data2VecVisionModel", "Data2VecVisionConfig", image_size=64, patch_size=8, **VIT))


def dinov2():
    return _vision(_m("Dinov2Model", "Dinov2Config", image_size=64, patch_size=8, **VIT))


def hiera():
    return _vision(
        _m(
            "HieraModel",
            "HieraConfig",
            image_size=[64, 64],
            patch_size=[7, 7],
            patch_stride=[4, 4],
            patch_padding=[3, 3],
            embed_dim=16,
            num_heads=[1, 2, 2, 4],
            depths=[1, 1, 1, 1],
            query_stride=[2, 2],
            masked_unit_size=[8, 8],
            mlp_ratio=2.0,
        ),
        size=64,
    )


def focalnet():
    return _vision(
        _m("FocalNetModel", "FocalNetConfig", image_size=64, patch_size=4, embed_dim=16, depths=[1, 1, 1, 1])
    )


def glpn():
    m = _m(
        "GLPNForDepthEstimation",
        "GLPNConfig",
        hidden_sizes=[16, 32, 48, 64],
        depths=[1, 1, 1, 1],
        decoder_hidden_size=32,
        num_attention_heads=[1, 2, 2, 4],
        mlp_ratios=[2, 2, 2, 2],
    )
    return _vision(m, ("predicted_depth",))


def pvt():
    return _vision(
        _m(
            "PvtModel",
            "PvtConfig",
            image_size=64,
            hidden_sizes=[16, 32, 48, 64],
            depths=[1, 1, 1, 1],
            num_attention_heads=[1, 2, 2, 4],
            mlp_ratios=[2, 2, 2, 2],
        )
    )


def pvt_v2():
    return _vision(
        _m(
            "PvtV2Model",
            "PvtV2Config",
            image_size=64,
            hidden_sizes=[16, 32, 48, 64],
            depths=[1, 1, 1, 1],
            num_attention_heads=[1, 2, 2, 4],
            mlp_ratios=[2, 2, 2, 2],
        )
    )


def swinv2():
    return _vision(
        _m(
            "Swinv2Model",
            "Swinv2Config",
            image_size=64,
            patch_size=4,
            embed_dim=16,
            depths=[1, 1, 2],
            num_heads=[1, 2, 4],
            window_size=4,
        )
    )


def swin2sr():
    m = _m(
        "Swin2SRForImageSuperResolution",
        "Swin2SRConfig",
        image_size=32,
        patch_size=1,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
        upscale=2,
        upsampler="pixelshuffle",
    )
    return _vision(m, ("reconstruction",), size=32)


def upernet():
    from transformers import ConvNextConfig

    bb = ConvNextConfig(
        hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], out_features=["stage1", "stage2", "stage3", "stage4"]
    )
    m = _m(
        "UperNetForSemanticSegmentation",
        "UperNetConfig",
        backbone_config=bb,
        hidden_size=32,
        auxiliary_in_channels=64,
        pool_scales=[1, 2],
        num_labels=4,
        use_pretrained_backbone=False,
    )
    return _vision(m, ("logits",))


def superpoint():
    m = _m(
        "SuperPointForKeypointDetection",
        "SuperPointConfig",
        encoder_hidden_sizes=[16, 16, 32, 32],
        decoder_hidden_size=64,
        keypoint_decoder_dim=65,
        descriptor_decoder_dim=64,
        max_keypoints=32,
    )

    torch = _t()

    class Heads(torch.nn.Module):
        """The dense score and descriptor maps (keypoint selection is data-dependent host work)."""

        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            enc = self.m.encoder(x, output_hidden_states=False, return_dict=False)[0]
            kd = self.m.keypoint_decoder
            scores = kd.conv_score_b(kd.relu(kd.conv_score_a(enc)))
            dd = self.m.descriptor_decoder
            desc = dd.conv_descriptor_b(dd.relu(dd.conv_descriptor_a(enc)))
            return scores, desc

    return Heads().eval(), (_img(64, 1),), ["images"], ["scores", "descriptors"]


def textnet():
    return _vision(
        _m(
            "TextNetModel",
            "TextNetConfig",
            stem_out_channels=16,
            conv_layer_kernel_sizes=[[[3, 3]], [[3, 3], [1, 3]], [[3, 3], [3, 1]], [[3, 3]]],
            conv_layer_stride=[[1], [2, 1], [2, 1], [2]],
            hidden_sizes=[16, 16, 32, 48, 64],
        )
    )


def vitpose():
    from transformers import VitPoseBackboneConfig

    bb = VitPoseBackboneConfig(image_size=[64, 48], patch_size=[8, 8], out_indices=[2], **VIT)
    m = _m("VitPoseForPoseEstimation", "VitPoseConfig", backbone_config=bb, num_labels=8)
    return _Out(m, ("pixel_values",), ("heatmaps",)), (_t().randn(1, 3, 64, 48),), ["images"], ["heatmaps"]


def vitmae():
    m = _m("ViTMAEModel", "ViTMAEConfig", image_size=64, patch_size=8, **VIT)
    torch = _t()

    class Encoder(torch.nn.Module):
        """The MAE encoder without its random masking (deployment runs it on every patch)."""

        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            e = self.m.embeddings
            h = e.patch_embeddings(x) + e.position_embeddings[:, 1:, :]
            cls = e.cls_token + e.position_embeddings[:, :1, :]
            h = torch.cat((cls.expand(h.shape[0], -1, -1), h), dim=1)
            for layer in self.m.layers:
                h = layer(h, None)
                h = h[0] if isinstance(h, tuple) else h
            return self.m.layernorm(h)

    return Encoder().eval(), (_img(),), ["images"], ["last_hidden_state"]


def vitdet():
    return _vision(
        _m(
            "VitDetModel",
            "VitDetConfig",
            image_size=64,
            pretrain_image_size=64,
            patch_size=8,
            window_size=4,
            window_block_indices=[0],
            residual_block_indices=[1],
            use_relative_position_embeddings=True,
            **VIT,
        ),
        ("last_hidden_state",),
    )


def _detr(cls, cfg, **extra):
    from transformers import ResNetConfig

    bb = ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage4"],
    )
    m = _m(
        cls,
        cfg,
        use_timm_backbone=False,
        backbone_config=bb,
        use_pretrained_backbone=False,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_queries=20,
        num_labels=3,
        **extra,
    )
    return _vision(m, ("logits", "pred_boxes"))


def conditional_detr():
    return _detr("ConditionalDetrForObjectDetection", "ConditionalDetrConfig")


def table_transformer():
    return _detr("TableTransformerForObjectDetection", "TableTransformerConfig")


def dab_detr():
    return _detr("DabDetrForObjectDetection", "DabDetrConfig")


def owlvit_vision():
    return _vision(
        _m("OwlViTVisionModel", "OwlViTVisionConfig", image_size=64, patch_size=8, **VIT), ("pooler_output",)
    )


def clip_vision():
    return _vision(_m("CLIPVisionModel", "CLIPVisionConfig", image_size=64, patch_size=8, **VIT), ("pooler_output",))


def clip_text():
    return _text(
        _m(
            "CLIPTextModel",
            "CLIPTextConfig",
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
        ),
        ("pooler_output",),
    )


def siglip_vision():
    return _vision(
        _m("SiglipVisionModel", "SiglipVisionConfig", image_size=64, patch_size=8, **VIT), ("pooler_output",)
    )


def hubert():
    return _audio(_m("HubertModel", "HubertConfig", **W2V))


def sew():
    return _audio(_m("SEWModel", "SEWConfig", squeeze_factor=2, **W2V))


def wavlm():
    return _audio(_m("WavLMModel", "WavLMConfig", num_buckets=32, max_bucket_distance=64, **W2V))


def unispeech():
    return _audio(_m("UniSpeechModel", "UniSpeechConfig", **W2V))


def data2vec_audio():
    w = dict(W2V, num_conv_pos_embeddings=5)
    return _audio(
        _m(
            "Data2VecAudioModel",
            "Data2VecAudioConfig",
            conv_pos_kernel_size=5,
            num_conv_pos_embeddings=5,
            **{k: v for k, v in w.items() if k != "num_conv_pos_embeddings"},
        )
    )


def ast():
    m = _m(
        "ASTModel", "ASTConfig", max_length=64, num_mel_bins=32, patch_size=8, frequency_stride=8, time_stride=8, **VIT
    )
    return _Out(m, ("input_values",), ("pooler_output",)), (_t().randn(1, 64, 32),), ["spectrogram"], ["pooler_output"]


def distilbert():
    return _text(
        _m(
            "DistilBertModel",
            "DistilBertConfig",
            vocab_size=100,
            dim=32,
            n_layers=2,
            n_heads=2,
            hidden_dim=64,
            max_position_embeddings=64,
        )
    )


def roberta():
    return _text(_m("RobertaModel", "RobertaConfig", **BERT, pad_token_id=1))


def albert():
    return _text(_m("AlbertModel", "AlbertConfig", embedding_size=16, **BERT))


def electra():
    return _text(_m("ElectraModel", "ElectraConfig", embedding_size=16, **BERT))


def mobilebert():
    return _text(
        _m(
            "MobileBertModel",
            "MobileBertConfig",
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            embedding_size=16,
            intra_bottleneck_size=16,
            true_hidden_size=16,
            num_feedforward_networks=2,
            max_position_embeddings=64,
        )
    )


def squeezebert():
    return _text(
        _m(
            "SqueezeBertModel",
            "SqueezeBertConfig",
            **BERT,
            embedding_size=32,
            q_groups=2,
            k_groups=2,
            v_groups=2,
            post_attention_groups=2,
            intermediate_groups=2,
            output_groups=2,
        )
    )


def t5_encoder():
    return _text(
        _m(
            "T5EncoderModel",
            "T5Config",
            vocab_size=100,
            d_model=32,
            d_kv=16,
            d_ff=64,
            num_layers=2,
            num_heads=2,
            relative_attention_num_buckets=16,
        )
    )


def _ts_encoder(cls, cfg):
    m = _m(
        cls,
        cfg,
        prediction_length=8,
        context_length=16,
        input_size=1,
        lags_sequence=[1, 2, 3],
        num_time_features=1,
        d_model=32,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
    )
    torch = _t()
    enc = m.get_encoder()

    class Encoder(torch.nn.Module):
        """The encoder over already-built lag features [1, context, feature_size] (feature assembly is host work)."""

        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, x):
            return self.enc(inputs_embeds=x).last_hidden_state

    return Encoder().eval(), (torch.randn(1, 16, m.config.feature_size),), ["features"], ["last_hidden_state"]


def time_series_transformer_encoder():
    return _ts_encoder("TimeSeriesTransformerModel", "TimeSeriesTransformerConfig")
