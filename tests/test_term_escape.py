"""util.term.esc: its C-speed shortcuts return text unchanged only when the escaping regex would change nothing."""
from __future__ import annotations

import random

from npufit.util.term import _UNSAFE, _hex, esc


def test_shortcuts_agree_with_the_regex_on_mixed_text():
    rng = random.Random(0)
    # ASCII with its controls, Latin-1 (C1 controls, and C2-led characters that are safe), the bidi marks' block,
    # arithmetic signs a rule sentence prints, an emoji and a lone surrogate
    pool = [chr(c) for c in (*range(0x250), *range(0x2000, 0x2100), 0x2264, 0x2265, 0x1F600, 0xD800)]
    for _ in range(20000):
        s = "".join(rng.choice(pool) for _ in range(rng.randint(0, 8)))
        assert esc(s) == _UNSAFE.sub(_hex, s), repr(s)


def test_non_ascii_text_keeps_its_characters_and_loses_its_controls():
    assert esc("kernel ≤ 7 · naïve") == "kernel ≤ 7 · naïve"
    assert esc("a ≤ b\u202egnp.exe") == "a ≤ b\\u202egnp.exe"
    assert esc("x ≥ 1\x1b[2J") == "x ≥ 1\\u001b[2J"
    assert esc("µ\u0085") == "µ\\u0085"
