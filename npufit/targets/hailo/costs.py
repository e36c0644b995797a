"""What `split` ranks cuts with on Hailo (npufit.split.cost), each figure with its source."""

from __future__ import annotations

from typing import Any

# What `split` ranks cuts with on Hailo (npufit.split.cost): each NPU stage is a network group (HEF) of its own and
# every NPU<->host hand-over is a PCIe transfer; the reference host is a Raspberry Pi 5 with the AI HAT+ / AI Kit.
_ZOO_FPS = "Hailo Model Zoo, Hailo-8 object detection table, DFC 5.0.0"
SPLIT_COSTS = {
    "hailo8": {"npu_gmacs_per_s": 5000.0},
    "hailo8l": {"npu_gmacs_per_s": 2500.0},
    "*": {
        "ms_per_npu_switch": 3.4,
        "link_gb_per_s": 0.5,
        "host_gmacs_per_s": 10.0,
        "ms_per_boundary": 0.1,
        "max_npu_stages": 1,
    },
    "sources": {
        "hailo8": f"{_ZOO_FPS}: single-context damoyolo_tinynasL20_T, 18.02 GOPs at 564 FPS = 5.1 TMAC/s",
        "hailo8l": "half of Hailo-8's rate: 13 against 26 TOPS, the same Dataflow Compiler",
        "ms_per_npu_switch": f"{_ZOO_FPS}: networks split into several contexts lose 3.4 to 5.9 ms per frame at "
        "batch 1 against batch 8 (yolov10n 194 vs 566 FPS, yolov11n 185 vs 538, centernet_resnet_v1_50 87 vs 178), "
        "the cost of "
        "reloading the chip per frame; a switch between network groups reloads it the same way; the smallest loss is "
        "used",
        "link_gb_per_s": "Raspberry Pi 5 with the AI HAT+ or AI Kit: PCIe Gen 2 x1, about 500 MB/s",
        "host_gmacs_per_s": "Raspberry Pi 5 CPU, 4x Cortex-A76: YOLOv8n, 8.7 GFLOPs, at about 2 FPS = 9 GMAC/s; a "
        "YOLO26n port to Hailo-8L measured about 150 ms per frame on ONNX Runtime CPU",
        "ms_per_boundary": "an assumption, no public per-transfer figure was found: each tensor handed over is a DMA "
        "transfer of its own",
        "max_npu_stages": "no CPU fallback inside a HEF: each NPU stage is its own network group, and a second one "
        "costs switches and PCIe round trips every frame; allow more with --max-npu-stages",
    },
}


def split_costs(name: str) -> dict:
    table: dict[str, Any] = SPLIT_COSTS
    src = table["sources"]
    sources = {k: src[k] for k in table["*"]} | {"npu_gmacs_per_s": src[name]}
    return {**table["*"], **table[name], "sources": sources}
