"""QuantizeReport: what was quantized, how, and what it cost in accuracy; renders to table / JSON / Markdown."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..graph.quant import describe_qdq
from ..report.console import Renderable
from .accuracy import Accuracy, LayerAccuracy, _db
from .target_cost import describe

SCHEMA = "npufit.quantize/1"
TERMINAL_MAX_LAYERS = 40


@dataclass
class QuantizeReport(Renderable):
    model: str
    output: str
    settings: dict[str, Any]
    calibration: dict[str, Any]
    qdq: dict[str, int]
    timing: dict[str, float]
    accuracy: Accuracy | None = None  # None with --holdout 0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the target's Q/DQ ledger of the output

    def __repr__(self) -> str:
        from pathlib import Path

        acc = ""
        if self.accuracy is not None and self.accuracy.outputs:
            acc = f", min output cosine {min(o.cosine for o in self.accuracy.outputs):.4f}"
        return f"<QuantizeReport {Path(self.model).name} -> {Path(self.output).name}{acc}>"

    @property
    def min_output_cosine(self) -> float | None:
        if not self.accuracy or not self.accuracy.outputs:
            return None
        return min(o.cosine for o in self.accuracy.outputs)

    @property
    def min_output_sqnr_db(self) -> float | None:
        """The worst output's SQNR (inf = exact); None without an accuracy report."""
        if not self.accuracy or not self.accuracy.outputs:
            return None
        return min(o.sqnr_db for o in self.accuracy.outputs)

    def summary(self) -> dict[str, Any]:
        """The numbers a pipeline step line, the HTML report and a CI gate read."""

        acc = self.accuracy
        sq = self.min_output_sqnr_db
        clipped = max((layer.clipped_fraction for layer in acc.layers), default=0.0) if acc else None
        return {
            "min_output_sqnr_db": _db(sq) if sq is not None else None,
            "min_output_cosine": round(self.min_output_cosine, 6) if acc and acc.outputs else None,
            "calibration_samples": self.calibration.get("used"),
            "holdout_samples": self.calibration.get("holdout"),
            "max_clipped_fraction": round(clipped, 6) if clipped is not None else None,
            "worst_layer": acc.worst[0] if acc and acc.worst else None,
        }

    def to_dict(self) -> dict[str, Any]:

        d = {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "model": self.model,
            "output": self.output,
            "settings": self.settings,
            "calibration": self.calibration,
            "qdq": self.qdq,
            "timing": self.timing,
            "summary": self.summary(),
            "accuracy": self.accuracy.to_dict() if self.accuracy else None,
            "warnings": self.warnings,
            "notes": self.notes,
        }
        d.update({k: v for k, v in self.extra.items() if not k.startswith("_")})  # "_" keys hold render hooks
        return d

    def _markdown(self) -> str:
        return render_markdown(self)

    def _print(self, con) -> None:
        print_terminal(con, self)


# -- shared formatting ------------------------------------------------------------------------------------
def db(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isinf(x) and x > 0):
        return "exact"
    if math.isinf(x) or math.isnan(x):
        return "non-finite"
    return f"{x:.1f}"


def db_unit(x: float | None) -> str:
    s = db(x)
    return s if s in ("exact", "non-finite") else s + " dB"


def _settings_line(r: QuantizeReport) -> str:
    s = r.settings
    parts = [
        f"method {s['method']}" + (f" ({s['percentile']}%)" if s.get("percentile") else ""),
        f"activations {s['activations']}",
        "weights int8 " + ("per-channel" if s["per_channel"] else "per-tensor"),
        "QDQ",
    ]
    if s["exclude"]:
        parts.append(f"excluded {', '.join(s['exclude'])}")
    return ", ".join(parts)


def _calibration_line(r: QuantizeReport) -> str:
    c = r.calibration
    line = f"{c['used']} calibration sample(s) from {c['source']} ({c['samples_available']} available)"
    if c.get("preprocessing"):
        line += f" [{c['preprocessing']}]"
    held = (
        f"; {c['holdout']} held back for the accuracy report, never calibrated on ({c['holdout_source']}; "
        "the holdout option sets how many)"
        if c.get("holdout")
        else "; nothing held back: no accuracy report"
    )
    return line + held


def _qdq_line(r: QuantizeReport) -> str:

    return f"{r.qdq['activations']} quantized activations; {describe_qdq(r.qdq)}"


def clip_cell(fraction: float | None) -> str:
    if fraction is None:
        return "-"
    return "0" if fraction == 0 else ("<0.01%" if fraction < 1e-4 else f"{fraction:.2%}")


def _timing_line(r: QuantizeReport) -> str:
    t = r.timing
    s = f"calibration + quantization {t['quantize_s']:.2f} s ({t['per_100_samples_s']:.2f} s per 100 samples)"
    if t.get("evaluate_s") is not None:
        s += f", evaluation {t['evaluate_s']:.2f} s"
    return s


def _layer_cells(layer: LayerAccuracy) -> list[str]:
    p = layer.pair
    op = p.op_type if p.op_type == p.qdq_op or p.qdq_op == "input" else f"{p.op_type} (in {p.qdq_op})"
    return [
        str(layer.rank),
        p.name,
        op,
        db(layer.entire.sqnr_db),
        db(layer.single.sqnr_db),
        db(layer.single.channel_sqnr_db),
        f"{layer.entire.cosine:.4f}",
        f"{layer.entire.channel_ratio:.0f}",
        clip_cell(layer.clipped_fraction),
        layer.diagnosis,
    ]


LAYER_COLUMNS = ["rank", "tensor", "op", "entire dB", "single dB", "ch-med dB", "cos", "ch×", "clip", "diagnosis"]


OUTPUT_COLUMNS = ["output", "cosine", "SQNR dB", "max abs err", "ref max abs", "clip"]


def output_cells(o) -> list[str]:
    return [
        o.name,
        f"{o.cosine:.4f}",
        db(o.sqnr_db),
        f"{o.max_abs:.4g}",
        f"{o.ref_max_abs:.4g}",
        clip_cell(o.clipped_fraction),
    ]


def _worst_line(layer: LayerAccuracy) -> str:
    return (
        f"entire {db_unit(layer.entire.sqnr_db)}, single {db_unit(layer.single.sqnr_db)} "
        f"(median channel {db_unit(layer.single.channel_sqnr_db)})"
    )


# -- terminal --------------------------------------------------------------------------------------------
def print_terminal(con, r: QuantizeReport) -> None:
    from rich.table import Table
    from rich.text import Text

    con.print(Text.assemble(("npufit quantize ", "bold"), (r.model, "bold cyan"), "  →  ", (r.output, "bold")))
    con.print(_settings_line(r))
    con.print(_calibration_line(r))
    con.print(_qdq_line(r))
    con.print(_timing_line(r))
    for w in r.warnings:
        con.print(Text(f"warning: {w}", style="bold yellow"))
    acc = r.accuracy
    if acc is None:
        con.print(Text("no accuracy report (--holdout 0)", style="dim"))
    else:
        tab = Table(
            title=f"outputs: float vs quantized on {acc.samples} held-back sample(s)",
            title_justify="left",
            show_edge=False,
        )
        for c in OUTPUT_COLUMNS:
            tab.add_column(c, justify="left" if c == "output" else "right")
        for o in acc.outputs:
            style = "green" if o.cosine >= 0.99 else ("yellow" if o.cosine >= 0.95 else "red")
            cells = output_cells(o)
            tab.add_row(cells[0], Text(cells[1], style=style), *cells[2:])
        con.print(tab)
        layers = acc.layers
        shown = (
            layers
            if len(layers) <= TERMINAL_MAX_LAYERS
            else sorted(layers, key=lambda layer: layer.rank)[:TERMINAL_MAX_LAYERS]
        )
        title = "per layer (graph order): entire = in the quantized model, single = alone with float inputs"
        if len(shown) < len(layers):
            title = f"per layer: the {len(shown)} worst of {len(layers)} (all in --format json/markdown)"
        tab = Table(title=title, title_justify="left", show_edge=False)
        for c in LAYER_COLUMNS:
            tab.add_column(
                c, overflow="fold", min_width=24 if c == "tensor" else None, max_width=56 if c == "tensor" else None
            )
        style = {"born here": "red", "inherited": "yellow", "ok": "green"}
        for layer in shown:
            cells = _layer_cells(layer)
            tab.add_row(*cells[:-1], Text(cells[-1], style=style.get(layer.diagnosis, "")))
        con.print(tab)
        if acc.worst:
            con.print(
                Text(
                    "worst layers (by single score = min(tensor, median-channel SQNR): where the error is born)",
                    style="bold",
                )
            )
            for name in acc.worst:
                layer = acc.layer(name)
                con.print(f"  {layer.rank}. {name} [{layer.pair.op_type}] {_worst_line(layer)}: {layer.suggestion}")
    if r.extra.get("target_cost"):
        con.print(Text("what the quantized graph costs on the target (npufit check + Q/DQ ledger)", style="bold"))
        for row in r.extra["target_cost"]:
            con.print(f"  {row['target']}: {describe(row)}")
    for n in r.notes:
        con.print(Text(f"note: {n}", style="dim"))


# -- markdown --------------------------------------------------------------------------------------------
def _md_row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def render_markdown(r: QuantizeReport) -> str:
    out = [
        f"# npufit quantize: `{r.model}` → `{r.output}`",
        "",
        f"- settings: {_settings_line(r)}",
        f"- calibration: {_calibration_line(r)}",
        f"- QDQ: {_qdq_line(r)}",
        f"- time: {_timing_line(r)}",
        "",
    ]
    for w in r.warnings:
        out.append(f"> **warning:** {w}")
    if r.warnings:
        out.append("")
    acc = r.accuracy
    if acc is not None:
        out += [
            f"## Outputs (float vs quantized, {acc.samples} held-back samples)",
            "",
            _md_row(OUTPUT_COLUMNS),
            _md_row(["---"] * len(OUTPUT_COLUMNS)),
        ]
        out += [_md_row([f"`{o.name}`", *output_cells(o)[1:]]) for o in acc.outputs]
        out += [
            "",
            "## Per layer",
            "",
            "*entire*: the activation in the fully quantized model; *single*: the same layer fed the exact float "
            "reference, so only its own error shows; *ch-median*: the median channel's SQNR (a whole-channel "
            "outlier cannot hide there); *cos*: cosine, entire; *ch×*: widest channel range / median channel range; "
            "*clip*: share of held-back float values past the calibrated int8 range (they saturate). "
            "Rank 1 = lowest single score (min of tensor and ch-median SQNR).",
            "",
            _md_row(LAYER_COLUMNS),
            _md_row(["---"] * len(LAYER_COLUMNS)),
        ]
        for layer in acc.layers:
            cells = _layer_cells(layer)
            cells[1] = f"`{cells[1]}`"
            out.append(_md_row(cells))
        if acc.worst:
            out += ["", "## Worst layers", ""]
            for name in acc.worst:
                layer = acc.layer(name)
                out.append(f"{layer.rank}. `{name}` ({layer.pair.op_type}): {_worst_line(layer)} — {layer.suggestion}")
    if r.extra.get("target_cost"):
        out += ["", "## Target cost (npufit check + Q/DQ ledger)", ""]
        out += [f"- **{row['target']}**: {describe(row)}" for row in r.extra["target_cost"]]
    if r.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in r.notes]
    return "\n".join(out) + "\n"
