"""The quantization parts of the pipeline report, rendered from `quantize.json` (schema npufit.quantize/1):
a model × target accuracy matrix, and per cell the outputs, the per-layer table and the worst layers' advice."""

from __future__ import annotations

from typing import Any

from .html import esc, table
from .style import num

GOOD_DB = 30.0  # the pipeline's default warn_sqnr_db: int8 of a well-behaved model lands at 30-45 dB


def db_cell(v: Any) -> str:
    """quantize.json's dB values: a number, null (= exact, no error) or "-inf" (non-finite quantized values)."""
    if v is None:
        return "exact"
    if isinstance(v, (int, float)):
        return f"{v:.1f}"
    return esc(v)


def _db_class(v: Any, warn_db: float = GOOD_DB) -> str:
    if v is None or (isinstance(v, (int, float)) and v >= warn_db):
        return "st-ran"
    return "st-failed" if not isinstance(v, (int, float)) or v < 20.0 else "st-skipped"


def _clip(v: Any) -> str:
    if v is None:
        return "-"
    return "0" if v == 0 else ("&lt;0.01%" if v < 1e-4 else f"{v:.2%}")


def matrix_row(model: str, target: str, q, rep: dict | None, status_html: str) -> list[str]:
    """One row of the model × target accuracy matrix: the numbers from the step's typed result `q`
    (pipeline.results.QuantizeStepResult), how it quantized from its quantize.json `rep`; status only without a
    result."""
    if q is None:
        return [esc(model), esc(target), status_html, "-", "-", "-", "-", "-", "-"]
    sq, cos = q.min_output_sqnr_db, q.min_output_cosine
    sq_html = f'<span class="{_db_class(sq)}">{db_cell(sq)}</span>' if cos is not None else "-"
    settings, t = (
        (rep or {}).get("settings") or {},
        (rep or {}).get("timing") or {},
    )  # quantize.json: shown as far as it is readable
    how = f"{settings.get('method', '?')}, {'per-channel' if settings.get('per_channel') else 'per-tensor'}"
    return [
        f'<a href="#q-{esc(model)}-{esc(target)}">{esc(model)}</a>',
        esc(target),
        status_html,
        sq_html,
        f"{cos:.5f}" if cos is not None else "-",
        esc(f"{q.calibration_samples} / {q.holdout_samples if q.holdout_samples is not None else '-'}"),
        _clip(q.max_clipped_fraction),
        esc(how),
        f"{t['quantize_s']:.2f} s" if t.get("quantize_s") is not None else "-",
    ]


MATRIX_HEADERS = [
    "model",
    "target",
    "status",
    "worst output SQNR dB",
    "cosine",
    "calibration / held-back samples",
    "max clipped",
    "method",
    "quantize time",
]


def matrix_section(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    return (
        '<section id="quantization"><h2>Quantization accuracy: model × target</h2><p class="note">int8 (QDQ, ONNX '
        "Runtime static quantizer) against the float model on held-back samples never used for calibration. SQNR = "
        "10·log10(Σref² / "
        "Σ(ref−int8)²) of the worst output; below 30 dB the step warns, below its min_sqnr_db floor it fails. "
        "<i>max clipped</i>: the largest share of held-back float values of any quantized tensor past its calibrated "
        "range (they saturate: calibration data that misses part of what the model sees).</p>"
        + table(MATRIX_HEADERS, rows, num_cols=(3, 4, 5, 6, 8))
        + "</section>"
    )


def cell_detail(rep: dict, anchor: str) -> str:
    """Outputs, warnings, per-layer table and the worst layers' advice of one quantize result."""
    cal, settings, qdq = rep.get("calibration") or {}, rep.get("settings") or {}, rep.get("qdq") or {}
    parts = [
        f'<p id="{esc(anchor)}">{esc(cal.get("used"))} calibration sample(s) from {esc(cal.get("source"))} '
        f"({esc(cal.get('samples_available'))} available); {esc(cal.get('holdout'))} held back "
        f"({esc(cal.get('holdout_source') or '-')}); method {esc(settings.get('method'))}, weights "
        f"{'per-channel' if settings.get('per_channel') else 'per-tensor'}, activations "
        f"{esc(settings.get('activations'))}; "
        f"{esc(qdq.get('activations'))} quantized activations, {esc(qdq.get('quantize'))} QuantizeLinear + "
        f"{esc(qdq.get('dequantize'))} DequantizeLinear ({esc(qdq.get('dequantize_weights'))} on weights)</p>"
    ]
    for w in rep.get("warnings") or []:
        parts.append(f'<p class="st-skipped">warning: {esc(w)}</p>')
    acc = rep.get("accuracy")
    if not acc:
        parts.append('<p class="note">no held-back samples: no accuracy measured</p>')
        return "".join(parts)
    parts.append(
        table(
            ["output", "SQNR dB", "cosine", "max abs error", "ref max abs", "clipped"],
            [
                [
                    esc(o["name"]),
                    f'<span class="{_db_class(o.get("sqnr_db"))}">{db_cell(o.get("sqnr_db"))}</span>',
                    f"{o['cosine']:.5f}",
                    num(o["max_abs_error"]),
                    num(o["ref_max_abs"]),
                    _clip(o.get("clipped_fraction")),
                ]
                for o in acc.get("outputs", [])
            ],
            num_cols=(1, 2, 3, 4, 5),
        )
    )
    layers = acc.get("layers", [])
    rows = [
        [
            esc(layer["rank"]),
            esc(layer["tensor"]),
            esc(
                layer["op_type"]
                if layer["op_type"] == layer.get("quantized_op")
                else f"{layer['op_type']} (in {layer.get('quantized_op')})"
            ),
            db_cell(layer["entire"]["sqnr_db"]),
            db_cell(layer["single"]["sqnr_db"]),
            db_cell(layer["single"]["channel_median_sqnr_db"]),
            f"{layer['entire']['cosine']:.4f}",
            _clip(layer.get("clipped_fraction")),
            esc(layer["diagnosis"]),
        ]
        for layer in layers
    ]
    parts.append(
        f"<details><summary>per layer ({len(layers)} quantized activations, graph order)</summary>"
        '<p class="note"><i>entire</i>: the activation in the int8 model (errors accumulate); <i>single</i>: the layer '
        "alone fed the float reference (only its own error); <i>ch-med</i>: the median channel's SQNR.</p>"
        + table(
            ["rank", "tensor", "op", "entire dB", "single dB", "ch-med dB", "cosine", "clipped", "diagnosis"],
            rows,
            num_cols=(0, 3, 4, 5, 6, 7),
        )
        + "</details>"
    )
    by_name = {layer["tensor"]: layer for layer in layers}
    worst = [by_name[n] for n in acc.get("worst", []) if n in by_name and by_name[n].get("suggestion")]
    if worst:
        parts.append(
            "<p><b>worst layers</b> (where the error is born) and what to do:</p><ol>"
            + "".join(
                f"<li><code>{esc(w['tensor'])}</code> ({esc(w['op_type'])}): {esc(w['suggestion'])}</li>" for w in worst
            )
            + "</ol>"
        )
    return "".join(parts)
