"""Real architectures built from Hugging Face `transformers` configs: small, random weights, offline.

Used as test material (RT-DETR, MobileNetV2, ViT, BERT) — no hub download ever happens.
"""

from __future__ import annotations

import os

from .export import export_onnx


def _torch():
    import torch

    torch.manual_seed(0)
    return torch


def wrap(model, arg_names: tuple[str, ...], outputs: tuple[str, ...]):
    """A plain-tensor module around a transformers model: positional inputs -> named fields of its output."""
    import torch

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, *args):
            o = self.m(**dict(zip(arg_names, args)))
            got = tuple(getattr(o, k) for k in outputs)
            return got[0] if len(got) == 1 else got

    return Outputs()


def rtdetr(path: str | os.PathLike, opset: int = 17, size: int = 128) -> bytes:
    """RT-DETR (ResNet backbone, hybrid encoder, deformable decoder with TopK/GridSample/GatherElements)."""
    torch = _torch()
    from transformers import RTDetrConfig, RTDetrForObjectDetection, RTDetrResNetConfig

    bb = RTDetrResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage2", "stage3", "stage4"],
    )
    cfg = RTDetrConfig(
        backbone_config=bb,
        d_model=32,
        encoder_hidden_dim=32,
        encoder_in_channels=[32, 64, 128],
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        decoder_layers=1,
        encoder_layers=1,
        num_queries=20,
        decoder_attention_heads=2,
        encoder_attention_heads=2,
        num_labels=3,
        num_feature_levels=3,
        decoder_in_channels=[32, 32, 32],
        anchor_image_size=None,
        use_pretrained_backbone=False,
    )
    model = RTDetrForObjectDetection(cfg).eval()

    return export_onnx(
        wrap(model, ("pixel_values",), ("logits", "pred_boxes")),
        torch.randn(1, 3, size, size),
        path,
        opset,
        ["images"],
        ["logits", "boxes"],
    )


def mobilenet_v2(path: str | os.PathLike, opset: int = 13, size: int = 96) -> bytes:
    torch = _torch()
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    cfg = MobileNetV2Config(image_size=size, depth_multiplier=0.35, num_labels=10)
    model = MobileNetV2ForImageClassification(cfg).eval()

    return export_onnx(
        wrap(model, ("pixel_values",), ("logits",)), torch.randn(1, 3, size, size), path, opset, ["images"], ["logits"]
    )


def vit(path: str | os.PathLike, opset: int = 14, size: int = 32) -> bytes:
    torch = _torch()
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(
        image_size=size,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=10,
    )
    model = ViTForImageClassification(cfg).eval()

    return export_onnx(
        wrap(model, ("pixel_values",), ("logits",)), torch.randn(1, 3, size, size), path, opset, ["images"], ["logits"]
    )


def bert(path: str | os.PathLike, opset: int = 14, seq: int = 16) -> bytes:
    torch = _torch()
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=2,
    )
    model = BertForSequenceClassification(cfg).eval()

    ids = torch.randint(0, 100, (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    return export_onnx(
        wrap(model, ("input_ids", "attention_mask"), ("logits",)),
        (ids, mask),
        path,
        opset,
        ["input_ids", "attention_mask"],
        ["logits"],
    )
