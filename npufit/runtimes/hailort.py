"""HailoRT runner for compiled .hef files (Hailo-8/8L), through `hailo_platform` (pyHailoRT).

NOT exercised here: HailoRT needs the Hailo PCIe driver and device and is not installable from PyPI. Written
against the HailoRT 4.x Python API (HEF, VDevice, ConfigureParams, InferVStreams). The timed call is one
blocking InferVStreams.infer: float32 host arrays in, float32 host arrays out, so HailoRT's host-side
quantize/dequantize and the PCIe transfers are inside the clock (boundary host-to-host).
When `hailortcli` is on PATH, its own `benchmark` figures are attached as a labelled vendor reference.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from typing import Any, Callable, Mapping

import numpy as np

from .base import InputSpec, Runner, RuntimeUnavailable, first_line


def hailort_version() -> str | None:
    try:
        import hailo_platform
    except ImportError:
        return None
    return getattr(hailo_platform, "__version__", "unknown")


class HailoRunner(Runner):
    name = "hailort"
    title = "HailoRT (Hailo-8/8L NPU)"
    device_kind = "npu"
    formats = (".hef",)

    def version(self) -> str | None:
        return hailort_version()

    def input_specs(self) -> list[InputSpec]:
        hp = _import()
        hef = hp.HEF(str(self.model))
        # vstream shapes exclude the batch axis; the host format is float32 (set in _activate)
        return [InputSpec(i.name, (None, *tuple(i.shape)), "tensor(float)") for i in hef.get_input_vstream_infos()]

    def _activate(self) -> None:
        hp = _import()
        self._stack = contextlib.ExitStack()
        try:
            hef = hp.HEF(str(self.model))
            self.vdevice = self._stack.enter_context(hp.VDevice())
            params = hp.ConfigureParams.create_from_hef(hef=hef, interface=hp.HailoStreamInterface.PCIe)
            self.network_group = self.vdevice.configure(hef, params)[0]
            ins = hp.InputVStreamParams.make(self.network_group, format_type=hp.FormatType.FLOAT32)
            outs = hp.OutputVStreamParams.make(self.network_group, format_type=hp.FormatType.FLOAT32)
            self.pipeline = self._stack.enter_context(hp.InferVStreams(self.network_group, ins, outs))
            self._stack.enter_context(self.network_group.activate(self.network_group.create_params()))
        except Exception as e:
            self._stack.close()
            raise RuntimeUnavailable(f"HailoRT could not configure {self.model.name}: {first_line(e)}") from None
        self.details.update({"host_format": "float32 (HailoRT quantizes/dequantizes on the host)", "interface": "PCIe"})

    def _deactivate(self) -> None:
        self._stack.close()
        self.pipeline = self.network_group = self.vdevice = None
        ref = hailortcli_benchmark(self.model)
        if ref:
            self.details["hailortcli_benchmark"] = ref

    def prepare(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        data = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in feeds.items()}
        infer = self.pipeline.infer
        return lambda: infer(data)

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(self.pipeline.infer({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in feeds.items()}))


def _import():
    try:
        import hailo_platform as hp
    except ImportError:
        raise RuntimeUnavailable(
            "hailo_platform (HailoRT Python API) is not installed; it ships with the HailoRT "
            "driver package from the Hailo Developer Zone, not PyPI"
        ) from None
    return hp


_SUMMARY_LINE = re.compile(
    r"^(?P<label>\S[^(=]*?)?\s*\((?P<mode>[\w ]+)\)\s*=\s*(?P<value>[\d.]+)\s*(?P<unit>\w+)?\s*$"
)


def parse_hailortcli_benchmark(text: str) -> dict[str, float]:
    """The Summary block of `hailortcli benchmark` -> {'fps_hw_only': .., 'fps_streaming': .., 'latency_hw_ms': ..,
    'power_average_w': ..}. A line without a label ('        (streaming) = ..') continues the previous label."""
    out: dict[str, float] = {}
    label = ""
    for line in text.splitlines():
        m = _SUMMARY_LINE.match(line.strip())  # HailoRT indents its power lines under "Device ...:"
        if not m:
            continue
        if m.group("label"):
            label = m.group("label").split()[0].lower()
        if not label:
            continue
        unit = (m.group("unit") or "").lower()
        key = f"{label}_{re.sub(r'[^a-z0-9]+', '_', m.group('mode').lower()).strip('_')}"
        out[key + (f"_{unit}" if unit else "")] = float(m.group("value"))
    return out


# a finished progress line: "Network NET/NET: 100% | 1207 | FPS: 80.43 | ETA: 00:00:00" (or "HW Latency: 28.38 ms")
_PROGRESS = re.compile(r"^Network \S+: 100% \| (\d+) \| (FPS|HW Latency): ([\d.]+)")


def parse_hailortcli_progress(text: str) -> dict[str, float]:
    """The finished progress lines of `hailortcli benchmark`, in its order (hw_only FPS, streaming FPS, HW latency):
    what a run that stopped before its Summary (a network with several inputs stops at the latency step) measured."""
    out: dict[str, float] = {}
    fps_keys = iter(("hw_only", "streaming"))
    for line in re.split(r"[\r\n]+", text):
        m = _PROGRESS.match(line.strip())
        if not m:
            continue
        if m.group(2) == "FPS":
            mode = next(fps_keys, None)
            if mode:
                out[f"fps_{mode}"] = float(m.group(3))
                out[f"frames_{mode}"] = float(m.group(1))
        else:
            out["latency_hw_ms"] = float(m.group(3))
    return out


def parse_hailortcli_csv(text: str) -> list[dict[str, float | str]]:
    """`hailortcli benchmark --csv FILE`: one row per network group (HailoRT's print_benchmark_csv columns:
    net_name, fps, hw_only_fps, num_of_frames, num_of_frames_hw_only, hw_latency, overall_latency, *_power);
    empty cells are left out."""
    import csv
    import io

    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        d: dict[str, float | str] = {}
        for k, v in row.items():
            if k is None or v in (None, ""):
                continue
            try:
                d[k.strip()] = float(v)
            except ValueError:
                d[k.strip()] = v.strip()
        rows.append(d)
    return rows


def hailortcli_benchmark(hef, seconds: int = 5) -> dict[str, Any] | None:
    """Run `hailortcli benchmark` for a vendor reference figure (its own boundary: hw_only / streaming)."""
    exe = shutil.which("hailortcli")
    if not exe:
        return None
    try:
        proc = subprocess.run(
            [exe, "benchmark", str(hef), "--time-to-run", str(seconds)],
            capture_output=True,
            text=True,
            timeout=seconds * 4 + 60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": first_line(e)}
    figures = parse_hailortcli_benchmark(proc.stdout)
    return {
        "command": f"hailortcli benchmark {hef} --time-to-run {seconds}",
        "returncode": proc.returncode,
        "figures": figures,
        "note": "HailoRT's own measurement: hw_only = device-side pipeline, streaming = host streaming; "
        "not the npufit boundary",
    }
