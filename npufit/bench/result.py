"""BenchResult (schema npufit.bench/1): one model, one protocol, one environment, one entry per runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..report.console import Renderable
from .render import render_markdown, render_text

SCHEMA = "npufit.bench/1"
LATENCY_KEYS = ("mean", "std", "min", "p50", "p90", "p95", "p99", "max")
MAX_STORED_SAMPLES = 20000  # enough for a distribution plot; statistics always use every sample


@dataclass
class RuntimeResult:
    runtime: str
    status: str  # ok | skipped | failed
    reason: str = ""
    title: str = ""
    version: str | None = None
    device_kind: str = ""
    boundary: str = ""
    boundary_text: str = ""
    batch: int = 1
    warmup: int = 0
    iterations: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)
    cv: float | None = None
    throughput_ips: float | None = None
    cold_ms: float | None = None
    build_s: float | None = None
    memory: dict[str, Any] = field(default_factory=dict)
    stages: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    samples_ms: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if not self.ok:  # a skipped runtime carries its reason, not a page of empty numbers
            keep = ("runtime", "status", "reason", "title", "version", "device_kind", "boundary", "details", "warnings")
            return {k: d[k] for k in keep if d[k] not in (None, "", [], {})} | {
                "runtime": self.runtime,
                "status": self.status,
            }
        d["samples_stored"] = len(self.samples_ms)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RuntimeResult":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class BenchResult(Renderable):
    model: dict[str, Any]
    protocol: dict[str, Any]
    environment: dict[str, Any]
    results: list[RuntimeResult]
    warnings: list[str] = field(default_factory=list)
    created: str = ""
    inputs: str = ""

    def __repr__(self) -> str:
        runs = ", ".join(
            f"{r.runtime} {r.latency_ms['median']:.3g} ms"
            if r.ok and "median" in r.latency_ms
            else f"{r.runtime} {r.status}"
            for r in self.results
        )
        return f"<BenchResult {self.model.get('file', '?')}: {runs or 'no runtime'}>"

    @property
    def measured(self) -> list[RuntimeResult]:
        return [r for r in self.results if r.ok]

    def to_dict(self) -> dict[str, Any]:

        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "created": self.created,
            "model": self.model,
            "protocol": self.protocol,
            "inputs": self.inputs,
            "environment": self.environment,
            "results": [r.to_dict() for r in self.results],
            "warnings": self.warnings,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BenchResult":
        return cls(
            model=d.get("model", {}),
            protocol=d.get("protocol", {}),
            environment=d.get("environment", {}),
            results=[RuntimeResult.from_dict(r) for r in d.get("results", [])],
            warnings=list(d.get("warnings", [])),
            created=d.get("created", ""),
            inputs=d.get("inputs", ""),
        )

    def _markdown(self) -> str:

        return render_markdown(self)

    def _text(self) -> str:

        return render_text(self)
