"""Text from a model (node, tensor, file names) is data: it must never drive the user's terminal.

Control characters (C0 except newline/tab, DEL, C1) and bidirectional overrides are shown as \\uXXXX,
a form that is also a valid escape inside a JSON string, so machine output stays parseable.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _hex(m: re.Match) -> str:
    return f"\\u{ord(m.group()):04x}"


_SAFE_ASCII = bytes([9, 10, *range(0x20, 0x7F)])  # the ASCII characters _UNSAFE lets through
_SAFE_BYTES = _SAFE_ASCII + bytes(range(0x80, 0x100))  # and every byte of a multi-byte UTF-8 character
# UTF-8 lead bytes of every non-ASCII character _UNSAFE matches: C1 controls are C2 80-9F, the bidirectional
# marks and overrides E2 80 8E/8F/AA-AE and E2 81 A6-A9
_UNSAFE_LEADS = (b"\xc2", b"\xe2\x80", b"\xe2\x81")


def esc(text: str) -> str:
    """`text` with terminal control characters made visible (newlines and tabs kept)."""
    # Most output has nothing to escape; C-speed tests say so (a 15 MB check report: 0.015 s instead of the
    # regex's 0.08 s), also for text with other non-ASCII characters (rule sentences say "≤")
    if text.isascii():
        if not text.encode("ascii").translate(None, _SAFE_ASCII):
            return text
    else:
        b = text.encode("utf-8", "surrogatepass")
        if not b.translate(None, _SAFE_BYTES) and not any(lead in b for lead in _UNSAFE_LEADS):
            return text
    return _UNSAFE.sub(_hex, text)


def esc_line(text: str) -> str:
    """Like esc(), and newlines too: for a message that must stay one line."""
    return _UNSAFE_LINE.sub(_hex, text)


_SGR = re.compile("\x1b\\[[0-9;]*m")


def esc_keep_styles(text: str) -> str:
    """esc(), but colour/style sequences (SGR) pass: for terminal output whose styles npufit drew itself
    (report.console.SafeConsole has already escaped the names inside it)."""
    out, last = [], 0
    for m in _SGR.finditer(text):
        out.append(esc(text[last : m.start()]))
        out.append(m.group())
        last = m.end()
    out.append(esc(text[last:]))
    return "".join(out)


class EscapingStream:
    """Wraps sys.stdout/sys.stderr so everything a verb prints passes through esc(); on a terminal the
    colour codes of npufit's own tables pass."""

    def __init__(self, stream):
        self._stream = stream
        try:
            self._styles = stream.isatty()
        except (AttributeError, ValueError):
            self._styles = False

    def write(self, s: str) -> int:
        self._stream.write(esc_keep_styles(s) if self._styles else esc(s))
        return len(s)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def raw_stream(stream):
    """The stream under an EscapingStream: for progress bars, whose own control codes must pass."""
    return stream._stream if isinstance(stream, EscapingStream) else stream
