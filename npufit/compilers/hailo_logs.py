"""What the Hailo tools print, read back: the DFC's parser / optimize / compiler logs, `hailortcli parse-hef`,
`hailortcli fw-control identify`, the tools' version lines, and the step table the emitted script writes.

The formats are those of public runs (DFC 3.x, HailoRT 4.x; tests/fakes/hailo/README.md lists the sources). A
line that does not match leaves its figure out; nothing is guessed."""

from __future__ import annotations

import re
from pathlib import Path

LOGS = "logs"  # every tool's output under the compile folder, one file per step: logs/<step>.log
STEPS_FILE = "steps.tsv"  # the emitted script's record: step, exit code, seconds

_ERR = re.compile(r"(\w+(?:Error|Exception)) in op ([^:\n]+): ([^\n]*)")
_RECOMMEND = re.compile(r"using these end node names:\s*([^\n]+)", re.IGNORECASE)
_START_MAP = re.compile(r"Start nodes mapped from original model: (.+?)\.?$", re.MULTILINE)
_END_MAP = re.compile(r"End nodes mapped from original model: (.+?)\.?$", re.MULTILINE)
_QUOTED = re.compile(r"'([^']*)'")
_SNR = re.compile(r"(\S+/output_layer\d+) SNR: (-?[\d.]+) dB")
_PARTITION = re.compile(r"Found valid partition to (\d+) contexts")
_HEF_ARCH = re.compile(r"Architecture HEF was compiled for: (\S+)")
_HEF_GROUP = re.compile(r"Network group name: ([^,\n]+), (Single Context|Multi Context - Number of contexts: (\d+))")
_VSTREAM = re.compile(r"^\s*(Input|Output)\s+(\S+)\s+(\w+), (\w+(?: \w+)*)\(([^)]*)\)", re.MULTILINE)
_DFC_VERSION = re.compile(r"(?:Dataflow Compiler|DFC)(?: Version)?:?\s*v?(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)
_RT_VERSION = re.compile(r"HailoRT(?:-CLI)?(?: version)?:?\s*v?(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)
_IDENTIFY = re.compile(r"^(Board Name|Device Architecture|Firmware Version|Product Name): (.+)$", re.MULTILINE)


def log_path(folder: Path, step: str) -> Path:
    return folder / LOGS / f"{step}.log"


def read_log(folder: Path, step: str) -> str | None:
    p = log_path(folder, step)
    try:
        return p.read_text("utf-8", "replace") if p.is_file() else None
    except OSError:
        return None


def parse_parser_errors(log: str) -> tuple[dict[str, str], list[str]]:
    """The DFC parser's per-op errors -> {node: reason}, plus the end nodes it recommends."""
    reasons = {node.strip(): f"Hailo parser: {kind}: {msg.strip()}" for kind, node, msg in _ERR.findall(log)}
    rec: list[str] = []
    m = _RECOMMEND.search(log)
    if m:
        rec = [s.strip().strip("'\"[]") for s in m.group(1).split(",") if s.strip()]
    return reasons, rec


def parse_mapped_nodes(log: str) -> tuple[list[tuple[str, str]], list[str]]:
    """What the parser says it took: [(model input or start tensor, its input layer)] and the end nodes. With -y
    the DFC parses again with its own recommended end nodes when the requested ones fail: these are the ones used."""
    starts: list[tuple[str, str]] = []
    m = _START_MAP.search(log)
    if m:
        names = _QUOTED.findall(m.group(1))
        starts = list(zip(names[0::2], names[1::2]))
    m = _END_MAP.search(log)
    return starts, _QUOTED.findall(m.group(1)) if m else []


def parse_snr(log: str) -> dict[str, float]:
    """`hailo optimize`'s signal-to-noise ratio per output layer, in dB (its own measure of quantization noise)."""
    return {layer: float(db) for layer, db in _SNR.findall(log)}


def parse_contexts(log: str) -> int | None:
    """How many contexts `hailo compiler` split the network into (1 = single context), when its log says."""
    found = _PARTITION.findall(log)
    if found:
        return int(found[-1])
    return 1 if "Single-context flow" in log and "Single context flow failed" not in log else None


def parse_hef(text: str) -> dict:
    """`hailortcli parse-hef`: the architecture the HEF was compiled for, its network group, contexts and vstreams."""
    info: dict = {}
    m = _HEF_ARCH.search(text)
    if m:
        info["arch"] = m.group(1)
    g = _HEF_GROUP.search(text)
    if g:
        info["network_group"] = g.group(1).strip()
        info["contexts"] = 1 if g.group(2) == "Single Context" else int(g.group(3))
    for kind, name, dtype, fmt, dims in _VSTREAM.findall(text):
        entry = {"name": name, "dtype": dtype, "format": fmt, "shape": dims}
        info.setdefault("inputs" if kind == "Input" else "outputs", []).append(entry)
    return info


def parse_identify(text: str) -> dict[str, str]:
    """`hailortcli fw-control identify`: board, device architecture, firmware, product."""
    keys = {"Board Name": "board", "Device Architecture": "arch", "Firmware Version": "firmware"}
    keys["Product Name"] = "product"
    return {keys[k]: v.strip() for k, v in _IDENTIFY.findall(text)}


def parse_machine(text: str) -> dict:
    """The emitted script's machine.log (`uname -srm`, `nproc`, lscpu's model name) -> bench environment keys."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out: dict = {}
    if lines:
        out["os"] = lines[0]
    if len(lines) > 1 and lines[1].isdigit():
        out["cpu_logical_cores"] = int(lines[1])
    model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Model name")), None)
    if model:
        out["cpu_model"] = model
    return out


def parse_versions(text: str) -> dict[str, str]:
    """Version lines of `hailo --version` / `hailortcli --version` -> {"dfc": .., "hailort": ..}."""
    out = {}
    m = _DFC_VERSION.search(text)
    if m:
        out["dfc"] = m.group(1)
    m = _RT_VERSION.search(text)
    if m:
        out["hailort"] = m.group(1)
    return out


def record_step(folder: Path, step: str, returncode: int, seconds: float) -> None:
    """One line of the step table, as the emitted script's `step` function writes it."""
    p = folder / LOGS / STEPS_FILE
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a") as f:
        f.write(f"{step}\t{returncode}\t{seconds:.3f}\n")


def read_steps(folder: Path) -> dict[str, tuple[int, float]]:
    """The emitted script's step table: {step: (exit code, seconds)}, in the order the steps ran."""
    p = folder / LOGS / STEPS_FILE
    steps: dict[str, tuple[int, float]] = {}
    try:
        lines = p.read_text("utf-8", "replace").splitlines() if p.is_file() else []
    except OSError:
        lines = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 3:
            try:
                steps[parts[0]] = (int(parts[1]), round(float(parts[2]), 3))
            except ValueError:
                continue
    return steps
