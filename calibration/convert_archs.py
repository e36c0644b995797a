"""Real architectures for benchmarks/convert_corpus.py: transformers 5.x models from small configs and torch-written
RNN/CNN models, random weights, exported offline (HF_HUB_OFFLINE=1, no download). Weights are re-initialised with
LeCun-normal (std 1/sqrt(fan_in)) and learned tokens (CLS, distillation, detection) / position tables N(0, 1), so
activations stay O(1) as in trained models: the HF init (std 0.02) drives deep CNN logits to ~1e-20 and leaves the
CLS token a near-constant row whose LayerNorm no per-tensor int8 scale can resolve; cosines would measure nothing."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _reinit(model):
    import torch

    torch.manual_seed(0)
    with torch.no_grad():
        for m in model.modules():
            w = getattr(m, "weight", None)
            if (
                isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Linear, torch.nn.ConvTranspose2d))
                and w is not None
            ):
                fan_in = w[0].numel() if not isinstance(m, torch.nn.ConvTranspose2d) else w.shape[0] * w[0, 0].numel()
                w.normal_(0, fan_in**-0.5)
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                m.running_var.uniform_(0.5, 1.5)
                m.running_mean.uniform_(-0.1, 0.1)
        for name, p in model.named_parameters():  # learned tokens / position tables: O(1) like trained ones
            if any(k in name.rsplit(".", 1)[-1] for k in ("token", "position_embeddings")):
                p.normal_(0, 1)
    return model.eval()


def _hf(model, args, arg_names, outputs, path, opset=14):
    from npufit.zoo.export import export_onnx
    from npufit.zoo.hf import wrap

    return export_onnx(wrap(_reinit(model), arg_names, outputs), args, path, opset, list(arg_names), list(outputs))


def _img(n=1, c=3, s=32):
    import torch

    torch.manual_seed(0)
    return torch.randn(n, c, s, s)


def vit(p):
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=10,
    )
    _hf(ViTForImageClassification(cfg), _img(), ("pixel_values",), ("logits",), p)


def deit(p):
    from transformers import DeiTConfig, DeiTForImageClassification

    cfg = DeiTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=10,
    )
    _hf(DeiTForImageClassification(cfg), _img(), ("pixel_values",), ("logits",), p)


def swin(p):
    from transformers import SwinConfig, SwinForImageClassification

    cfg = SwinConfig(
        image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4, num_labels=10
    )
    _hf(SwinForImageClassification(cfg), _img(), ("pixel_values",), ("logits",), p)


def convnext(p):
    from transformers import ConvNextConfig, ConvNextForImageClassification

    cfg = ConvNextConfig(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=10, image_size=32)
    _hf(ConvNextForImageClassification(cfg), _img(), ("pixel_values",), ("logits",), p)


def resnet(p):
    from transformers import ResNetConfig, ResNetForImageClassification

    cfg = ResNetConfig(
        embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1], layer_type="bottleneck", num_labels=10
    )
    _hf(ResNetForImageClassification(cfg), _img(s=64), ("pixel_values",), ("logits",), p)


def mobilenet_v2(p):
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    cfg = MobileNetV2Config(image_size=64, depth_multiplier=0.35, num_labels=10)
    _hf(MobileNetV2ForImageClassification(cfg), _img(s=64), ("pixel_values",), ("logits",), p, 13)


def efficientnet(p):
    from transformers import EfficientNetConfig, EfficientNetForImageClassification

    cfg = EfficientNetConfig(
        image_size=64, width_coefficient=0.25, depth_coefficient=0.25, num_labels=10, hidden_dim=320
    )
    _hf(EfficientNetForImageClassification(cfg), _img(s=64), ("pixel_values",), ("logits",), p, 13)


def _embeds(seq=16, dim=32):
    import torch

    torch.manual_seed(0)
    return torch.randn(1, seq, dim)


def bert(p):
    """Float input: token embeddings (`inputs_embeds`); an int8 NPU graph takes no integer token ids."""
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
    _hf(BertForSequenceClassification(cfg), _embeds(), ("inputs_embeds",), ("logits",), p)


def distilbert(p):
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    cfg = DistilBertConfig(
        vocab_size=100, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64, num_labels=2
    )
    _hf(DistilBertForSequenceClassification(cfg), _embeds(), ("inputs_embeds",), ("logits",), p)


def wav2vec2(p):
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16, 16),
        conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        do_stable_layer_norm=True,
        feat_extract_norm="layer",
    )
    torch.manual_seed(0)
    _hf(Wav2Vec2Model(cfg), torch.randn(1, 1600), ("input_values",), ("last_hidden_state",), p)


def whisper_encoder(p):
    import torch
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = WhisperConfig(
        num_mel_bins=16,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        max_source_positions=25,
        decoder_layers=1,
        decoder_attention_heads=2,
        decoder_ffn_dim=64,
    )
    torch.manual_seed(0)
    _hf(WhisperEncoder(cfg), torch.randn(1, 16, 50), ("input_features",), ("last_hidden_state",), p)


def detr(p):
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    bb = ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage4"],
    )
    cfg = DetrConfig(
        use_timm_backbone=False,
        backbone_config=bb,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_queries=10,
        num_labels=3,
        use_pretrained_backbone=False,
    )
    _hf(DetrForObjectDetection(cfg), _img(s=64), ("pixel_values",), ("logits", "pred_boxes"), p)


def yolos(p):
    from transformers import YolosConfig, YolosForObjectDetection

    cfg = YolosConfig(
        image_size=[32, 32],
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_detection_tokens=5,
        num_labels=3,
    )
    _hf(YolosForObjectDetection(cfg), _img(), ("pixel_values",), ("logits", "pred_boxes"), p)


def segformer(p):
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    cfg = SegformerConfig(
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=32,
        num_labels=3,
    )
    _hf(SegformerForSemanticSegmentation(cfg), _img(s=64), ("pixel_values",), ("logits",), p)


# -- torch-written models ---------------------------------------------------------------------------------
def _torch_export(module, example, p, opset=13):
    from npufit.zoo.export import export_onnx

    export_onnx(_reinit(module), example, p, opset, ["x"], ["y"])


def _rnn(cell):
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, cell)(16, 32, num_layers=2, batch_first=True)
            self.head = torch.nn.Linear(32, 5)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    return M()


def lstm(p):
    import torch

    _torch_export(_rnn("LSTM"), torch.randn(1, 12, 16), p)


def gru(p):
    import torch

    _torch_export(_rnn("GRU"), torch.randn(1, 12, 16), p)


def crnn(p):
    """Conv feature extractor over a text-line image -> bidirectional LSTM over the width -> per-column classes."""
    import torch

    nn = torch.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnn = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1),
                nn.BatchNorm2d(32),
                nn.ReLU(),
                nn.MaxPool2d((4, 1)),
            )
            self.rnn = nn.LSTM(32, 24, bidirectional=True, batch_first=True)
            self.fc = nn.Linear(48, 11)

        def forward(self, x):
            f = self.cnn(x).squeeze(2).permute(0, 2, 1)  # [N, W, C]
            return self.fc(self.rnn(f)[0])

    _torch_export(M(), torch.randn(1, 1, 8, 32), p)


def tcn(p):
    import torch

    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, c, d):
            super().__init__()
            self.conv = nn.Conv1d(c, c, 3, padding=d, dilation=d)
            self.norm = nn.BatchNorm1d(c)

        def forward(self, x):
            return torch.relu(self.norm(self.conv(x))) + x

    m = nn.Sequential(nn.Conv1d(4, 16, 1), Block(16, 1), Block(16, 2), Block(16, 4), nn.Conv1d(16, 3, 1))
    _torch_export(m, torch.randn(1, 4, 64), p)


def unet(p):
    import torch

    nn = torch.nn

    def block(i, o):
        return nn.Sequential(
            nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.Conv2d(o, o, 3, padding=1), nn.ReLU()
        )

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2, self.mid = block(3, 8), block(8, 16), block(16, 32)
            self.u2, self.d2 = nn.ConvTranspose2d(32, 16, 2, 2), block(32, 16)
            self.u1, self.d1 = nn.ConvTranspose2d(16, 8, 2, 2), block(16, 8)
            self.out = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            a = self.e1(x)
            b = self.e2(nn.functional.max_pool2d(a, 2))
            c = self.mid(nn.functional.max_pool2d(b, 2))
            b = self.d2(torch.cat([self.u2(c), b], 1))
            return self.out(self.d1(torch.cat([self.u1(b), a], 1)))

    _torch_export(M(), torch.randn(1, 3, 32, 32), p)


def espcn(p):
    import torch

    nn = torch.nn
    m = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2),
        nn.Tanh(),
        nn.Conv2d(32, 16, 3, padding=1),
        nn.Tanh(),
        nn.Conv2d(16, 9, 3, padding=1),
        nn.PixelShuffle(3),
    )
    _torch_export(m, torch.randn(1, 1, 24, 24), p)


ARCHS = {
    "ViT": vit,
    "DeiT": deit,
    "Swin": swin,
    "ConvNeXt": convnext,
    "ResNet": resnet,
    "MobileNetV2": mobilenet_v2,
    "EfficientNet": efficientnet,
    "BERT": bert,
    "DistilBERT": distilbert,
    "Wav2Vec2": wav2vec2,
    "Whisper encoder": whisper_encoder,
    "DETR": detr,
    "YOLOS": yolos,
    "SegFormer": segformer,
    "LSTM": lstm,
    "GRU": gru,
    "CRNN": crnn,
    "TCN": tcn,
    "UNet": unet,
    "ESPCN": espcn,
}
