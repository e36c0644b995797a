"""Conditions fitted to measured compiles of the calibration corpus (benchmarks/calibration, records in docs/calibration).

Each fitted condition names the corpus families whose records show it (cnn, transformer, detector, audio-rnn).
Leave-one-family-out scoring (benchmarks/calibration/score.py) sets limits['fit_families'] to the other
families: a condition that only the held-out family's records show is then off, as if never fitted, so the
score on that family measures how the rules generalise to it. Shipped profiles leave the key unset (all on)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

FAMILIES = ("cnn", "transformer", "detector", "audio-rnn")


def fitted(lim: Mapping, families: Sequence[str]) -> bool:
    """Whether a condition derived from `families`' records may be used under these limits."""
    allowed = lim.get("fit_families")
    return allowed is None or any(f in allowed for f in families)


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
