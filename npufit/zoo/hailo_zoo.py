"""Small rebuilds of Hailo Model Zoo networks, for checking the hailo8 profile against what the Zoo compiles.

The Zoo (hailo-ai/hailo_model_zoo v2.12, cfg/networks/*.yaml, summarised in
reference/hailo_model_zoo_cut_points.md) compiles these networks for Hailo-8 with the start/end nodes
listed in ZOO below: everything between them runs on the chip. The rebuilds have the same architecture at a
small size with random weights (transformers configs, offline) or, for YOLO, hand-written torch modules with the
Ultralytics module layout, exported at opset 11 (the Zoo's opset). The Zoo's TFLite networks (MediaPipe palm
detection lite, hand landmark lite) are rebuilt as small TFLite files with npufit's own TFLite writer, in the
layout of the MediaPipe files (float32, NHWC, PRELU/RELU6, heads reshaped to anchors). Each builder returns the
names of the nodes that play the Zoo's end nodes in the rebuild (none: the whole network runs on the chip).
Needs torch and transformers (the TFLite rebuilds need neither).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..check import predict
from ..convert.tflite_writer import TFLiteBuilder
from ..graph import load
from ..util.io import atomic_write_bytes, atomic_write_text
from .export import export_onnx
from .hf import wrap

OPSET = 11


@dataclass(frozen=True)
class ZooNet:
    name: str  # the rebuild
    zoo: str  # Model Zoo network(s) it stands for
    zoo_end: str  # the Zoo's end nodes (v2.12 yaml), verbatim
    after_end: str  # what the Zoo cuts after the end nodes and runs on the host
    build: Callable[[Path], tuple[str, ...]]
    note: str = ""  # what the table should say beside the verdicts


def _torch():
    import torch

    torch.manual_seed(0)
    return torch


def _hf(model, path: Path, size: int | tuple[int, int], outputs: tuple[str, ...]) -> None:
    torch = _torch()
    model.set_attn_implementation("eager")  # explicit MatMul/Softmax: what an opset-11 export (the Zoo's) holds
    h, w = (size, size) if isinstance(size, int) else size
    export_onnx(
        wrap(model.eval(), ("pixel_values",), outputs), torch.randn(1, 3, h, w), path, OPSET, ["images"], list(outputs)
    )


def _tiny_vit(path: Path, config: str, model: str) -> tuple[str, ...]:
    """ViT and DeiT share one small config: 32x32 image, 8x8 patches, 2 blocks of width 48."""
    _torch()
    import transformers

    cfg = getattr(transformers, config)(
        image_size=32,
        patch_size=8,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=3,
        intermediate_size=96,
        num_labels=10,
    )
    _hf(getattr(transformers, model)(cfg), path, 32, ("logits",))
    return ()


def vit(path: Path) -> tuple[str, ...]:
    return _tiny_vit(path, "ViTConfig", "ViTForImageClassification")


def deit(path: Path) -> tuple[str, ...]:
    return _tiny_vit(path, "DeiTConfig", "DeiTForImageClassificationWithTeacher")


def levit(path: Path) -> tuple[str, ...]:
    _torch()
    from transformers import LevitConfig, LevitForImageClassificationWithTeacher

    cfg = LevitConfig(
        image_size=64,
        hidden_sizes=[32, 48, 64],
        num_attention_heads=[2, 3, 4],
        depths=[4, 4, 4],  # levit256's depth: every block chains one more reshape_as the loader must resolve
        key_dim=[8, 8, 8],
        mlp_ratio=[2, 2, 2],
        attention_ratio=[2, 2, 2],
        num_labels=10,
    )
    _hf(LevitForImageClassificationWithTeacher(cfg), path, 64, ("logits",))
    return ()


def vit_pose(path: Path) -> tuple[str, ...]:
    """ViTPose: a ViT backbone whose tokens are laid back out as a feature map for a deconvolution heatmap head."""
    _torch()
    from transformers import VitPoseBackboneConfig, VitPoseConfig, VitPoseForPoseEstimation

    bb = VitPoseBackboneConfig(
        image_size=[64, 48],
        patch_size=[8, 8],
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        out_indices=[2],
    )
    _hf(VitPoseForPoseEstimation(VitPoseConfig(backbone_config=bb, num_labels=5)), path, (64, 48), ("heatmaps",))
    return ()


def _detr(path: Path, layer_type: str) -> tuple[str, ...]:
    _torch()
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    bb = ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type=layer_type,
        out_features=["stage4"],
    )
    cfg = DetrConfig(
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
        num_queries=10,
        num_labels=5,
    )
    _hf(DetrForObjectDetection(cfg), path, 128, ("logits", "pred_boxes"))
    return ()


def detr_r18(path: Path) -> tuple[str, ...]:
    return _detr(path, "basic")


def detr_r50(path: Path) -> tuple[str, ...]:
    return _detr(path, "bottleneck")


def _conv(cin: int, cout: int, k: int = 1, s: int = 1):
    from torch import nn

    class Conv(nn.Module):  # Ultralytics Conv: conv + BN + SiLU
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(cout)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    return Conv()


def _backbone(w: int):
    """Three feature maps at strides 8, 16, 32 (a CSP-free stand-in: the head is what the Zoo cuts)."""
    from torch import nn

    return nn.ModuleList(
        [
            nn.Sequential(_conv(3, w, 3, 2), _conv(w, w, 3, 2), _conv(w, w, 3, 2)),
            _conv(w, 2 * w, 3, 2),
            _conv(2 * w, 4 * w, 3, 2),
        ]
    )


def _backbone_head(w: int, head):
    """_backbone's three feature maps into a detection head (module names backbone.* / head.*, as the end nodes)."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = _backbone(w)
            self.head = head

        def forward(self, x):
            p3 = self.backbone[0](x)
            p4 = self.backbone[1](p3)
            return self.head([p3, p4, self.backbone[2](p4)])

    return Net()


def yolov8(path: Path) -> tuple[str, ...]:
    """YOLOv8 anchor-free head: cv2 (4*reg_max box logits) and cv3 (class logits) per scale, then DFL and
    dist2bbox, as Ultralytics exports it; the Zoo's end nodes are the six cv2/cv3 output convs."""
    torch = _torch()
    from torch import nn

    reg_max, nc, w, size = 16, 4, 16, 128

    class Detect(nn.Module):
        def __init__(self, chs):
            super().__init__()
            self.cv2 = nn.ModuleList(
                nn.Sequential(_conv(c, 32, 3), _conv(32, 32, 3), nn.Conv2d(32, 4 * reg_max, 1)) for c in chs
            )
            self.cv3 = nn.ModuleList(
                nn.Sequential(_conv(c, 32, 3), _conv(32, 32, 3), nn.Conv2d(32, nc, 1)) for c in chs
            )
            self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False)
            self.dfl.weight.data[:] = torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1)

        def forward(self, xs):
            outs = [torch.cat((self.cv2[i](x), self.cv3[i](x)), 1) for i, x in enumerate(xs)]
            strides = [size // x.shape[-1] for x in xs]
            anchors, stride_t = [], []
            for x, s in zip(xs, strides):  # constant anchor points (computed once at export)
                h, wd = x.shape[-2:]
                sy, sx = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(wd) + 0.5, indexing="ij")
                anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
                stride_t.append(torch.full((h * wd, 1), float(s)))
            anchor = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
            stride = torch.cat(stride_t).transpose(0, 1).unsqueeze(0)
            cat = torch.cat([o.view(1, 4 * reg_max + nc, -1) for o in outs], 2)
            box, cls = cat.split((4 * reg_max, nc), 1)
            b = self.dfl(box.view(1, 4, reg_max, -1).transpose(2, 1).softmax(1)).view(1, 4, -1)
            lt, rb = b.chunk(2, 1)
            xy = ((anchor - lt) + (anchor + rb)) / 2
            wh = (anchor + rb) - (anchor - lt)
            return torch.cat((torch.cat((xy, wh), 1) * stride, cls.sigmoid()), 1)

    net = _backbone_head(w, Detect((w, 2 * w, 4 * w)))
    export_onnx(net.eval(), torch.randn(1, 3, size, size), path, OPSET, ["images"], ["output0"])
    return tuple(f"/head/{b}.{i}/{b}.{i}.2/Conv" for i in range(3) for b in ("cv2", "cv3"))


def yolov5(path: Path) -> tuple[str, ...]:
    """YOLOv5 anchor head: one 1x1 conv per scale, then view(bs, na, no, ny, nx) -> permute, sigmoid and the
    grid/anchor decode, as Ultralytics exports it; the Zoo's end nodes are the three 1x1 detect convs."""
    torch = _torch()
    from torch import nn

    na, nc, w, size = 3, 4, 16, 128
    no = nc + 5

    class Detect(nn.Module):
        def __init__(self, chs):
            super().__init__()
            self.m = nn.ModuleList(nn.Conv2d(c, na * no, 1) for c in chs)

        def forward(self, xs):
            z = []
            for i, x in enumerate(xs):
                y = self.m[i](x)
                ny, nx = y.shape[-2:]
                s = size // nx
                y = y.view(1, na, no, ny, nx).permute(0, 1, 3, 4, 2).sigmoid()
                gy, gx = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
                grid = torch.stack((gx, gy), 2).view(1, 1, ny, nx, 2).float() - 0.5
                anchor = torch.full((1, na, 1, 1, 2), float(s) * 2)
                xy, wh, conf = y.split((2, 2, no - 4), 4)
                xy = (xy * 2 + grid) * s
                wh = (wh * 2) ** 2 * anchor
                z.append(torch.cat((xy, wh, conf), 4).view(1, na * nx * ny, no))
            return torch.cat(z, 1)

    net = _backbone_head(w, Detect((w, 2 * w, 4 * w)))
    export_onnx(net.eval(), torch.randn(1, 3, size, size), path, OPSET, ["images"], ["output0"])
    return tuple(f"/head/m.{i}/Conv" for i in range(3))


def yolov5_c3tr(path: Path) -> tuple[str, ...]:
    """YOLOv5s with a C3TR block: flatten(2).permute(2, 0, 1) tokens through nn.MultiheadAttention (sequence first,
    batch 1) and permute(1, 2, 0) back to a map, as Ultralytics' TransformerBlock does; the same anchor head as
    yolov5, whose three 1x1 detect convs end the Zoo's graph."""
    torch = _torch()
    from torch import nn

    na, nc, w, size = 3, 4, 16, 128

    class TransformerLayer(nn.Module):
        def __init__(self, c, heads):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(c, c, bias=False) for _ in range(3))
            self.ma = nn.MultiheadAttention(embed_dim=c, num_heads=heads)
            self.fc1, self.fc2 = nn.Linear(c, c, bias=False), nn.Linear(c, c, bias=False)

        def forward(self, x):
            x = self.ma(self.q(x), self.k(x), self.v(x))[0] + x
            return self.fc2(self.fc1(x)) + x

    class C3TR(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.linear = nn.Linear(c, c)
            self.tr = TransformerLayer(c, 4)

        def forward(self, x):
            b, c, h, wd = x.shape
            p = x.flatten(2).permute(2, 0, 1)
            return self.tr(p + self.linear(p)).permute(1, 2, 0).reshape(b, c, h, wd)

    class Detect(nn.Module):
        def __init__(self, chs):
            super().__init__()
            self.m = nn.ModuleList(nn.Conv2d(c, na * (nc + 5), 1) for c in chs)

        def forward(self, xs):
            return [m(x).view(1, na, nc + 5, x.shape[2], x.shape[3]).permute(0, 1, 3, 4, 2) for m, x in zip(self.m, xs)]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = _backbone(w)
            self.tr = C3TR(4 * w)
            self.head = Detect((w, 2 * w, 4 * w))

        def forward(self, x):
            p3 = self.backbone[0](x)
            p4 = self.backbone[1](p3)
            return self.head([p3, p4, self.tr(self.backbone[2](p4))])

    export_onnx(Net().eval(), torch.randn(1, 3, size, size), path, OPSET, ["images"], ["p3", "p4", "p5"])
    return tuple(f"/head/m.{i}/Conv" for i in range(3))


def _tflite_conv(b, x, cin: int, cout: int, k: int, stride: int, hw: int, name: str, act: str = "NONE", seed: int = 0):
    """CONV_2D (OHWI float32 weights) on an NHWC [1, hw, hw, cin] tensor; returns (output tensor, its spatial size)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    w = b.tensor(f"{name}/w", (cout, k, k, cin), "float32", data=rng.standard_normal((cout, k, k, cin)) * 0.1)
    bias = b.tensor(f"{name}/b", (cout,), "float32", data=np.zeros(cout))
    out = hw // stride
    y = b.tensor(name, (1, out, out, cout), "float32")
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=stride, stride_h=stride,
         fused_activation_function=act, dilation_w_factor=1, dilation_h_factor=1)  # fmt: skip
    return y, out


def _tflite_block(b, x, c: int, hw: int, name: str, act: str, seed: int):
    """MediaPipe's residual block: DEPTHWISE 5x5 -> CONV 1x1 -> ADD with the input -> activation (PRELU or RELU6)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    dw_w = b.tensor(f"{name}/dw/w", (1, 5, 5, c), "float32", data=rng.standard_normal((1, 5, 5, c)) * 0.1)
    dw_b = b.tensor(f"{name}/dw/b", (c,), "float32", data=np.zeros(c))
    dw = b.tensor(f"{name}/dw", (1, hw, hw, c), "float32")
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1, "dilation_w_factor": 1}
    b.op("DEPTHWISE_CONV_2D", [x, dw_w, dw_b], [dw], "DepthwiseConv2DOptions", **opts, dilation_h_factor=1)
    pw, _ = _tflite_conv(b, dw, c, c, 1, 1, hw, f"{name}/pw", seed=seed + 1)
    s = b.tensor(f"{name}/add", (1, hw, hw, c), "float32")
    b.op("ADD", [pw, x], [s], "AddOptions", fused_activation_function="RELU6" if act == "RELU6" else "NONE")
    if act != "PRELU":
        return s
    alpha = b.tensor(f"{name}/alpha", (1, 1, c), "float32", data=np.full((1, 1, c), 0.25))
    y = b.tensor(f"{name}/prelu", (1, hw, hw, c), "float32")
    b.op("PRELU", [s, alpha], [y])
    return y


def _write_tflite(b, path: Path) -> None:
    atomic_write_bytes(Path(path), b.build())


def palm_detection_lite(path: Path) -> tuple[str, ...]:
    """MediaPipe palm detection lite: PRELU residual blocks at two scales, the coarse one upsampled (RESIZE_BILINEAR)
    and added to the fine one, a classifier and a regressor conv per scale whose outputs are RESHAPEd to
    [1, anchors, k] and concatenated over the anchors. The Zoo's end nodes are the four head convolutions."""
    import numpy as np

    b = TFLiteBuilder("npufit palm_detection_lite rebuild")
    x = b.tensor("input_1", (1, 64, 64, 3), "float32")
    h, hw = _tflite_conv(b, x, 3, 16, 5, 2, 64, "stem", seed=1)
    h = _tflite_block(b, h, 16, hw, "block1", "PRELU", 2)
    h, hw = _tflite_conv(b, h, 16, 32, 3, 2, hw, "down16", seed=3)
    p16 = _tflite_block(b, h, 32, hw, "block16", "PRELU", 4)
    h, hw8 = _tflite_conv(b, p16, 32, 32, 3, 2, hw, "down8", seed=5)
    p8 = _tflite_block(b, h, 32, hw8, "block8", "PRELU", 6)
    size = b.tensor("up/size", (2,), "int32", data=np.array([hw, hw]))
    up = b.tensor("up", (1, hw, hw, 32), "float32")
    b.op("RESIZE_BILINEAR", [p8, size], [up], "ResizeBilinearOptions", align_corners=False, half_pixel_centers=True)
    fused = b.tensor("fuse", (1, hw, hw, 32), "float32")
    b.op("ADD", [up, p16], [fused], "AddOptions", fused_activation_function="NONE")
    outs, heads = [], {}
    for kind, per_anchor in (("classifier", 1), ("regressor", 18)):
        parts = []
        for feat, s, anchors, seed in ((fused, hw, 2, 7), (p8, hw8, 6, 8)):
            name = f"{kind}_palm_{s}"
            conv, _ = _tflite_conv(b, feat, 32, anchors * per_anchor, 1, 1, s, name, seed=seed)
            n = s * s * anchors
            shape = b.tensor(f"reshaped_{name}/shape", (3,), "int32", data=np.array([1, n, per_anchor]))
            r = b.tensor(f"reshaped_{name}", (1, n, per_anchor), "float32")
            b.op("RESHAPE", [conv, shape], [r], "ReshapeOptions", new_shape=[1, n, per_anchor])
            parts.append(r)
            heads[conv] = name
        total = (hw * hw * 2) + (hw8 * hw8 * 6)
        o = b.tensor(f"{kind}s", (1, total, per_anchor), "float32")
        b.op("CONCATENATION", parts, [o], "ConcatenationOptions", axis=1, fused_activation_function="NONE")
        outs.append(o)
    b.io([x], outs)
    _write_tflite(b, path)
    return _tflite_names(path, [b.tensors[t].name for t in heads])


def hand_landmark_lite(path: Path) -> tuple[str, ...]:
    """MediaPipe hand landmark lite: RELU6 inverted-residual blocks, MEAN over the map, and four FULLY_CONNECTED
    heads (21x3 landmarks twice, hand flag and handedness through LOGISTIC). The Zoo compiles it whole."""
    import numpy as np

    b = TFLiteBuilder("npufit hand_landmark_lite rebuild")
    x = b.tensor("input_1", (1, 64, 64, 3), "float32")
    h, hw = _tflite_conv(b, x, 3, 24, 3, 2, 64, "stem", act="RELU6", seed=1)
    for i, c in enumerate((24, 32, 48)):
        h = _tflite_block(b, h, c, hw, f"block{i}", "RELU6", 10 * i)
        h, hw = _tflite_conv(b, h, c, (32, 48, 64)[i], 3, 2, hw, f"down{i}", act="RELU6", seed=10 * i + 5)
    axes = b.tensor("mean/axes", (2,), "int32", data=np.array([1, 2]))
    pooled = b.tensor("mean", (1, 64), "float32")
    b.op("MEAN", [h, axes], [pooled], "ReducerOptions", keep_dims=False)
    rng = np.random.default_rng(7)
    outs = []
    for name, n, sigmoid in (("ld_21_3d", 63, False), ("world_21_3d", 63, False), ("handflag", 1, True),
                             ("handedness", 1, True)):  # fmt: skip
        w = b.tensor(f"{name}/w", (n, 64), "float32", data=rng.standard_normal((n, 64)) * 0.1)
        bias = b.tensor(f"{name}/b", (n,), "float32", data=np.zeros(n))
        y = b.tensor(name if not sigmoid else f"{name}/logits", (1, n), "float32")
        b.op("FULLY_CONNECTED", [pooled, w, bias], [y], "FullyConnectedOptions", fused_activation_function="NONE")
        if sigmoid:
            s = b.tensor(name, (1, n), "float32")
            b.op("LOGISTIC", [y], [s])
            y = s
        outs.append(y)
    b.io([x], outs)
    _write_tflite(b, path)
    return ()


def _tflite_names(path: Path, tensor_names: list[str]) -> tuple[str, ...]:
    """The loader's names of the nodes that write these tensors (a TFLite op has no name of its own)."""
    g = load(path)
    return tuple(g.producer(t).name for t in tensor_names)


ZOO: tuple[ZooNet, ...] = (
    ZooNet("vit", "vit_tiny, vit_small, vit_base", "`897` / `898` (the classifier output)", "nothing", vit),
    ZooNet("deit", "deit_tiny, deit_small, deit_base", "the classifier output", "nothing", deit),
    ZooNet("levit", "levit256", "`995` (the classifier output)", "nothing", levit),
    ZooNet(
        "vit_pose",
        "vit_pose_small",
        "`1126` (the heatmap output)",
        "nothing (keypoint decoding is post-processing)",
        vit_pose,
    ),
    ZooNet(
        "detr_r18",
        "detr_resnet_v1_18_bn",
        "`Add_3451` (class logits), `Sigmoid_3460` (boxes)",
        "nothing inside the network (Softmax and box conversion are post-processing)",
        detr_r18,
    ),
    ZooNet(
        "detr_r50",
        "detr_resnet_v1_50",
        "`/class_embed/Add`, `/Sigmoid`",
        "nothing inside the network (Softmax and box conversion are post-processing)",
        detr_r50,
    ),
    ZooNet(
        "yolov8",
        "yolov8n/s/m/l/x",
        "`/model.22/cv2.{0,1,2}/cv2.{i}.2/Conv`, `/model.22/cv3.{0,1,2}/cv3.{i}.2/Conv`",
        "DFL, dist2bbox, class Sigmoid, Concat (nms_postprocess on the host)",
        yolov8,
    ),
    ZooNet(
        "yolov5",
        "yolov5s/m (v2.12)",
        "the three 1x1 detect convs (`Conv_234`, `Conv_218`, `Conv_202` in yolov5s)",
        "view(bs,3,85,ny,nx) + permute, Sigmoid, grid/anchor decode, Concat (nms_postprocess on the host)",
        yolov5,
    ),
    ZooNet(
        "yolov5_c3tr",
        "yolov5s_c3tr",
        "(none in v2.18: the parser's own end nodes before the detect head's reshapes)",
        "view(bs,3,85,ny,nx) + permute, Sigmoid, grid/anchor decode (nms_postprocess on the host)",
        yolov5_c3tr,
        "nn.MultiheadAttention sequence-first at batch 1, as in the C3TR block",
    ),
    ZooNet(
        "palm_detection_lite",
        "palm_detection_lite (TFLite)",
        "the four head convolutions (`const_fold_opt__*/BiasAdd`)",
        "RESHAPE to anchors, CONCATENATION, anchor decode and NMS (on the host)",
        palm_detection_lite,
        "TFLite",
    ),
    ZooNet(
        "hand_landmark_lite",
        "hand_landmark_lite (TFLite)",
        "(none: the model outputs)",
        "nothing",
        hand_landmark_lite,
        "TFLite",
    ),
)
BY_NAME = {z.name: z for z in ZOO}


TFLITE = ("palm_detection_lite", "hand_landmark_lite")


def build(name: str, folder: str | os.PathLike) -> tuple[Path, tuple[str, ...]]:
    """Write one rebuild to `folder`/<name>.onnx (.tflite for the TFLite networks); returns the path and the
    end-node names of the rebuild."""
    path = Path(folder) / f"{name}.{'tflite' if name in TFLITE else 'onnx'}"
    ends = BY_NAME[name].build(path)
    return path, ends


def _ancestors(graph, ends: tuple[str, ...]) -> set[str]:
    """The end nodes and every node they depend on (all nodes when there are no end nodes)."""
    if not ends:
        return {n.name for n in graph.nodes}
    seen, stack = set(), [graph.node(e) for e in ends]
    while stack:
        n = stack.pop()
        if n is None or n.name in seen:
            continue
        seen.add(n.name)
        stack.extend(graph.predecessors(n))
    return seen


def evaluate(net: ZooNet, folder: str | os.PathLike, target: str = "hailo8") -> dict:
    """Build one rebuild and judge it: how many nodes up to the end nodes run on the NPU, and what is cut after."""
    path, ends = build(net.name, folder)
    graph = load(path)
    missing = [e for e in ends if graph.node(e) is None]
    if missing:
        raise ValueError(f"{net.name}: end nodes {missing} are not in the export")
    report = predict(graph, target)
    inside = _ancestors(graph, ends)
    running = [r for r in report.nodes if r.verdict.value != "folded"]
    before = [r for r in running if r.name in inside]
    after = [r for r in running if r.name not in inside]
    off = [r for r in before if r.verdict.value != "npu"]
    cut_after = sorted({r.op_type for r in after if r.verdict.value != "npu"})
    return {
        "network": net.name,
        "zoo": net.zoo,
        "zoo_end_nodes": net.zoo_end,
        "zoo_cuts_after": net.after_end,
        "end_nodes": list(ends) or ["(the model outputs)"],
        "nodes_to_end": len(before),
        "npu_to_end": len(before) - len(off),
        "off_npu_to_end": sorted({f"{r.op_type} [{r.reasons[0].rule}]" for r in off if r.reasons}),
        "nodes_after_end": len(after),
        "flagged_after_end": cut_after,
        "note": net.note,
    }


def evaluate_all(folder: str | os.PathLike, target: str = "hailo8") -> list[dict]:
    return [evaluate(z, folder, target) for z in ZOO]


RECORD = Path(__file__).resolve().parent.parent / "targets" / "records" / "hailo8-zoo.json"


def write_record(folder: str | os.PathLike, path: str | os.PathLike = RECORD) -> list[dict]:
    """Rebuild every network, judge it with today's hailo8 profile and write the record docs/targets/hailo8.md shows."""
    import json

    rows = evaluate_all(folder)
    atomic_write_text(
        Path(path),
        json.dumps({"schema": "npufit.hailo-zoo/1", "target": "hailo8", "opset": OPSET, "networks": rows}, indent=1)
        + "\n",
    )
    return rows


if (
    __name__ == "__main__"
):  # python -m npufit.zoo.hailo_zoo: refresh the record (then `npufit targets --write-docs docs/targets`)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for row in write_record(d):
            print(f"{row['network']}: {row['npu_to_end']}/{row['nodes_to_end']} npu up to the end nodes")
