"""The calibration corpus: issue 14's architectures, their families, and cached ONNX exports.

Families drive leave-one-family-out scoring: cnn, transformer, detector, audio-rnn. Exports are static batch 1,
opset 11 or 17, random weights (torch.manual_seed(0)), offline (HF_HUB_OFFLINE=1). A cached export is keyed by
the hash of everything that decides its bytes: the builder's source, the opset and the torch/transformers
versions; a changed config is a new file, never a stale one."""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from npufit.targets.calibration import FAMILIES  # noqa: F401  (one list: the profiles' fitted conditions name them)

from . import hf_archs as H
from . import torch_archs as T

OPSETS = (17, 11)


@dataclass(frozen=True)
class Arch:
    name: str
    family: str
    build: Callable
    origin: str  # transformers | torch


def _a(family, fn, origin="transformers"):
    return Arch(fn.__name__, family, fn, origin)


ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        # cnn: convolutional backbones and dense-prediction nets (conv-dominated, incl. conv/attention hybrids)
        _a("cnn", H.bit),
        _a("cnn", H.convnextv2),
        _a("cnn", H.focalnet),
        _a("cnn", H.textnet),
        _a("cnn", H.upernet),
        _a("cnn", H.glpn),
        _a("cnn", T.unet, "torch"),
        _a("cnn", T.espcn, "torch"),
        _a("cnn", T.autoencoder, "torch"),
        # transformer: ViT-style vision encoders, hierarchical/windowed vision transformers, text and time-series
        # encoders
        _a("transformer", H.beit),
        _a("transformer", H.cvt),
        _a("transformer", H.data2vec_vision),
        _a("transformer", H.dinov2),
        _a("transformer", H.hiera),
        _a("transformer", H.pvt),
        _a("transformer", H.pvt_v2),
        _a("transformer", H.swinv2),
        _a("transformer", H.swin2sr),
        _a("transformer", H.vitmae),
        _a("transformer", H.vitdet),
        _a("transformer", H.owlvit_vision),
        _a("transformer", H.clip_vision),
        _a("transformer", H.clip_text),
        _a("transformer", H.siglip_vision),
        _a("transformer", H.distilbert),
        _a("transformer", H.roberta),
        _a("transformer", H.albert),
        _a("transformer", H.electra),
        _a("transformer", H.mobilebert),
        _a("transformer", H.squeezebert),
        _a("transformer", H.t5_encoder),
        _a("transformer", H.time_series_transformer_encoder),
        # detector: object/keypoint/pose detectors with their heads
        _a("detector", H.conditional_detr),
        _a("detector", H.table_transformer),
        _a("detector", H.dab_detr),
        _a("detector", H.vitpose),
        _a("detector", H.superpoint),
        _a("detector", T.yolov8_dfl, "torch"),
        _a("detector", T.yolov5_anchor, "torch"),
        # audio-rnn: speech encoders (conv feature extractor + transformer), spectrogram transformer,
        # recurrent/temporal nets
        _a("audio-rnn", H.hubert),
        _a("audio-rnn", H.sew),
        _a("audio-rnn", H.wavlm),
        _a("audio-rnn", H.unispeech),
        _a("audio-rnn", H.data2vec_audio),
        _a("audio-rnn", H.ast),
        _a("audio-rnn", T.crnn, "torch"),
        _a("audio-rnn", T.kws_dscnn, "torch"),
        _a("audio-rnn", T.tcn, "torch"),
    )
}


def cache_dir() -> Path:
    return Path(os.environ.get("NPUFIT_CALIBRATION_CACHE", Path.home() / ".cache" / "npufit" / "calibration"))


def code_key(src: str) -> str:
    """What of a builder's source decides an export: its syntax tree without docstrings, comments, formatting and
    import statements (where a helper is imported from is not what it does; the helpers that decide an export are keyed
    by their own source, as heldout.py's shared source is). Moving a module, reformatting it or rewording its
    documentation keeps its records' keys; changing a config or a helper's code changes them."""
    tree = ast.parse(textwrap.dedent(src))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [
            n
            for n in body
            if not isinstance(n, (ast.Import, ast.ImportFrom))
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str))
            and not (isinstance(n, ast.Expr) and ast.unparse(n.value).startswith("sys.path.insert("))
        ]
        node.body = kept or [ast.Pass()]
    return ast.dump(tree)


def config_hash(arch: Arch, opset: int) -> str:
    import torch

    try:
        import transformers

        tv = transformers.__version__
    except ImportError:
        tv = "-"
    # the builder's whole module: shared configs (VIT, BERT, W2V) and helpers decide the export too
    src = code_key(inspect.getsource(inspect.getmodule(arch.build)))
    key = "\n".join((arch.name, str(opset), torch.__version__, tv, src))
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def export(arch: Arch, opset: int, folder: Path | None = None) -> Path:
    """The ONNX file of `arch` at `opset`, exported once per config hash (atomic write, reused afterwards)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    folder = folder or cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{arch.name}-op{opset}-{config_hash(arch, opset)}.onnx"
    if path.is_file():
        return path
    from npufit.zoo.export import export_onnx

    module, inputs, in_names, out_names = arch.build()
    export_onnx(module, inputs, path, opset, in_names, out_names)
    return path
