"""A vendor compiler's failure read from its own output: the one-line cause (once, in the vendor's words), the node
of the user's model it names, and the command that avoids it (the `npufit fix` rule npufit knows for that node,
else a split that ends the NPU stage just before it), as npufit's own converter says for a node it cannot lower.

Each toolchain words its failures its own way: RKNN-Toolkit2 logs `E build: <cause>` (and then its traceback,
twice), Vela prints `Error: <cause>`, the Ethos-N support library answers with an exception's text. A crash
without such a line ends in Python's `SomethingError: message`, which is taken instead."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..check.advice import fix_before, split_before
from ..check.engine import predict

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_RKNN_E = re.compile(r"^E (\w+): (.+)$")
_VELA_E = re.compile(r"^Error: (.+)$")
_EXC = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")
_QUOTED = re.compile(r"""'([^'\n]{1,300})'|"([^"\n]{1,300})"|\(([^()\s'"]{1,300})\)""")
CAUSE_CHARS = 300


@dataclass
class Failure:
    cause: str  # one line, the vendor's words
    node: str | None = None  # the node of the user's model the cause names
    next_step: str | None = None  # the command that avoids it


def _lines(text: str) -> list[str]:
    return [ANSI.sub("", ln).rstrip() for ln in (text or "").splitlines()]


def _last_exception(text: str) -> str | None:
    """The message of the last `XError: message` line that is not a traceback header."""
    for ln in reversed(_lines(text)):
        m = _EXC.match(ln.strip())
        if m and not m.group(2).startswith("Traceback"):
            return f"{m.group(1)}: {m.group(2)}"
    return None


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CAUSE_CHARS else text[: CAUSE_CHARS - 1] + "…"


def rknn_cause(log: str, error: str | None = None) -> str:
    """RKNN-Toolkit2: its first `E stage: message` log line that is not a version banner or a traceback."""
    for ln in _lines(log):
        m = _RKNN_E.match(ln)
        if m and not m.group(2).startswith(("Traceback", "rknn-toolkit2 version")):
            return _one_line(m.group(2))
    return _one_line(_last_exception(error or "") or _last_exception(log) or (error or "no reason in its log"))


def vela_cause(log: str) -> str:
    """Vela: its `Error: message` line (VelaError), else a crash's last exception line."""
    for ln in _lines(log):
        m = _VELA_E.match(ln.strip())
        if m:
            return _one_line(m.group(1))
    return _one_line(_last_exception(log) or (_lines(log) or ["no output"])[-1])


def first_line_cause(text: str) -> str:
    """A library's exception text (Ethos-N support library, Hailo DFC): its last exception line or first line."""
    return _one_line(_last_exception(text) or next((ln for ln in _lines(text) if ln.strip()), "no reason given"))


def named_node(cause: str, graph) -> str | None:
    """The first node of `graph` the cause names, quoted or in parentheses (a tensor counts as its producer)."""
    if graph is None:
        return None
    for m in _QUOTED.finditer(cause):
        name = next(g for g in m.groups() if g is not None)
        if graph.node(name) is not None:
            return name
        producer = graph.producer(name) if name in graph.tensors else None
        if producer is not None:
            return producer.name
    return None


def explain(cause: str, model: Path, target: str, graph) -> Failure:
    """The failure with its node and the command that avoids it (ONNX models; a TFLite model gets the cause only)."""
    node = named_node(cause, graph)
    if node is None or model.suffix.lower() != ".onnx":
        return Failure(cause, node)
    return Failure(cause, node, _avoid(model, target, graph, node))


def _avoid(model: Path, target: str, graph, node: str) -> str:
    try:
        found = predict(graph, target).node(node)
    except Exception:  # advice must never replace the failure it explains
        found = None
    rules = list(dict.fromkeys(r for reason in (found.reasons if found else []) for r in reason.fix_rules))
    if rules:
        return fix_before(model, target, rules)
    return split_before(model, target, graph, node)
