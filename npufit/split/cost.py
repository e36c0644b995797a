"""The stated cost split ranks candidate cuts by: an estimated latency from the host's and the NPU's MACs, the tensors
and bytes that cross NPU<->host, and a fixed cost per switch between NPU stages. A target profile that states its
own figures (`Profile.split_costs`, each with its source) overrides the generic ones, which are assumptions in the right
proportion, not measurements. A profile may also cap how many NPU stages the default plan holds (`max_npu_stages`):
on Hailo each NPU stage is a network group of its own: one stays loaded, two or more are switched in turn, once each per
frame."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Generic figures: an embedded host with an M.2 accelerator. Only their proportion matters for the ranking.
GENERIC = {
    "host_gmacs_per_s": 10.0,
    "npu_gmacs_per_s": 1000.0,
    "ms_per_boundary": 0.1,
    "link_gb_per_s": 1.0,
    "ms_per_npu_switch": 0.0,
}
GENERIC_SOURCE = "generic assumption for an embedded host with an M.2 accelerator, not a measurement"
# what each figure means, in the words the output uses, and its unit
MEANING = {
    "host_gmacs_per_s": ("host CPU throughput", " GMAC/s"),
    "npu_gmacs_per_s": ("NPU throughput", " GMAC/s"),
    "ms_per_boundary": ("fixed cost per tensor crossing NPU<->host", " ms"),
    "link_gb_per_s": ("NPU<->host link", " GB/s"),
    "ms_per_npu_switch": ("switch to an NPU stage, once per NPU stage and inference when there are two or more", " ms"),
    "max_npu_stages": ("NPU stages in the default plan at most", ""),
}


def switches(npu_stages: int) -> int:
    """NPU stage switches per inference: a single NPU stage stays loaded; k >= 2 are each switched in once."""
    return npu_stages if npu_stages > 1 else 0


@dataclass(frozen=True)
class CostModel:
    figures: dict[str, float]
    sources: dict[str, str] = field(default_factory=dict)  # figure -> where it comes from
    max_npu_stages: int | None = None  # the profile's cap on the default plan; None: no cap
    target: str = ""

    @classmethod
    def for_profile(cls, profile: Any) -> "CostModel":
        stated = dict(getattr(profile, "split_costs", None) or {})
        sources = dict(stated.pop("sources", {}))
        cap = stated.pop("max_npu_stages", None)
        unknown = sorted(set(stated) - set(GENERIC))
        if unknown:  # a typo in a profile must not silently fall back to a generic figure
            raise ValueError(f"{profile.name}: unknown split cost figure(s) {', '.join(unknown)}")
        figures = {**GENERIC, **{k: float(v) for k, v in stated.items()}}
        sources = {k: sources.get(k, GENERIC_SOURCE) for k in figures} | (
            {"max_npu_stages": sources.get("max_npu_stages", "")} if cap is not None else {}
        )
        return cls(figures, sources, cap, profile.name)

    def estimate_ms(self, host_macs: int, npu_macs: int, boundaries: int, nbytes: int, npu_stages: int) -> float:
        f = self.figures
        return (
            1e3 * host_macs / (f["host_gmacs_per_s"] * 1e9)
            + 1e3 * npu_macs / (f["npu_gmacs_per_s"] * 1e9)
            + f["ms_per_boundary"] * boundaries
            + 1e3 * nbytes / (f["link_gb_per_s"] * 1e9)
            + f["ms_per_npu_switch"] * switches(npu_stages)
        )

    @property
    def ranking(self) -> str:
        """The formula, with this target's figures."""
        f = self.figures
        stage = (
            f" + {f['ms_per_npu_switch']:g} ms per NPU stage when there are two or more"
            if f["ms_per_npu_switch"]
            else ""
        )
        return (
            f"estimated latency = host MACs / {f['host_gmacs_per_s']:g} GMAC/s + NPU MACs / "
            f"{f['npu_gmacs_per_s']:g} GMAC/s + {f['ms_per_boundary']:g} ms per tensor crossing NPU<->host + bytes "
            f"crossing / {f['link_gb_per_s']:g} GB/s{stage} (lower first; ties: fewer boundaries, fewer bytes, "
            "fewer stages)"
        )

    def sourced_lines(self) -> list[str]:
        """One line per figure the profile states: its value, meaning and source (generic figures say so once)."""
        own = [k for k, s in self.sources.items() if s != GENERIC_SOURCE]
        lines = []
        for k in own:
            value = self.max_npu_stages if k == "max_npu_stages" else f"{self.figures[k]:g}"
            what, unit = MEANING[k]
            lines.append(f"{what}: {value}{unit}; source: {self.sources[k]}")
        if len(own) < len(self.figures) + (self.max_npu_stages is not None):
            lines.append(f"{'other figures' if own else 'figures'}: {GENERIC_SOURCE}")
        return lines

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "figures": dict(self.figures),
            "max_npu_stages": self.max_npu_stages,
            "sources": dict(self.sources),
            "ranking": self.ranking,
        }
