"""Conditions fitted to measured compiles of the calibration corpus (calibration/, records in docs/calibration).

Each fitted condition names its evidence: the corpus families whose records show it (cnn, transformer, detector,
audio-rnn) and, where one family alone shows it, the synthetic cases of a case record (docs/calibration/
<target>-cases.json: small graphs that are none of the corpus's models) that show it too.
Leave-one-family-out scoring (benchmarks/calibration/score.py) sets limits['fit_families'] to the other families:
a condition is then used only if another family's records or a case record show it, so the score on the held-out
family measures how the rules fitted without it generalise to it. limits['fit_cases'] = False drops the case
evidence too (the corpus-only score). Shipped profiles leave both keys unset (all on)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FAMILIES = ("cnn", "transformer", "detector", "audio-rnn")


@dataclass(frozen=True)
class Evidence:
    """What a fitted condition rests on: corpus families, and case names of the target's case record."""

    families: tuple[str, ...]
    cases: tuple[str, ...] = ()


def fitted(lim: Mapping, evidence: Evidence | Sequence[str]) -> bool:
    """Whether a condition with this evidence (an Evidence, or the families alone) may be used under these limits."""
    allowed = lim.get("fit_families")
    if allowed is None:
        return True
    ev = evidence if isinstance(evidence, Evidence) else Evidence(tuple(evidence))
    return bool(ev.cases and lim.get("fit_cases", True)) or any(f in allowed for f in ev.families)


def nonunit(shape) -> list | None:
    """The shape without its size-1 axes (None when a dimension is unknown)."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return [d for d in shape if d != 1]


def transpose_keeps_innermost(shape, perm) -> tuple[int, bool] | None:
    """(number of non-unit axes, whether the innermost non-unit axis stays innermost) of a transpose; None when
    the shape is not static. Size-1 axes move no data, so they are left out of both."""
    if shape is None or perm is None or len(perm) != len(shape) or not all(isinstance(d, int) for d in shape):
        return None
    keep = [a for a in perm if shape[a] != 1]
    if not keep:
        return 0, True
    return len(keep), keep[-1] == max(keep)
