"""The pipeline's quantize step states int8 accuracy (SQNR, cosine, samples) in its line, warns below
warn_sqnr_db, fails below min_sqnr_db, and the HTML report shows accuracy per model x target."""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch")

from npufit.pipeline import run_pipeline

from .pipeline_helpers import write_tiny


def test_quantize_step_line_warning_floor_and_report(tmp_path):
    steps = "  quantize: {{warn_sqnr_db: {warn}, min_sqnr_db: {floor}}}\n"
    yaml_path = write_tiny(tmp_path, targets="ethos-u55-256", extra_steps=steps.format(warn=90, floor=0))
    run = run_pipeline(yaml_path, output_dir=tmp_path / "out", quiet=True)
    rec = run.result("quantize/tcn/ethos-u55-256").record
    assert rec.status == "ok", rec.message
    # no real int8 model reaches 90 dB: the line warns, with the measured numbers and where they come from
    assert re.match(r"warning: SQNR \d+\.\d dB, cosine \d\.\d{4} vs float on \d+ held-back; \d+ calibration samples, below 90 dB",
                    rec.message), rec.message
    q = json.loads((tmp_path / "out" / "tcn" / "ethos-u55-256" / "quantize" / "quantize.json").read_text())
    assert q["calibration"]["holdout_source"].endswith("holdout.npz") and q["calibration"]["used"] > 0
    sq = q["summary"]["min_output_sqnr_db"]
    assert rec.result.min_output_sqnr_db == sq
    from npufit.pipeline.summary import render_summary

    assert f"| tcn | ethos-u55-256 | {sq:.1f} dB |" in render_summary(run, "markdown")
    assert "int8 vs float on held-back samples" in render_summary(run, "table")

    html = (tmp_path / "out" / "report.html").read_text()
    section = html[html.index('<section id="quantization">'):]
    section = section[:section.index("</section>")]
    assert "worst output SQNR dB" in section and f"{sq:.1f}" in section
    for model in ("gru", "tcn"):
        assert f'href="#q-{model}-ethos-u55-256"' in section and f'id="q-{model}-ethos-u55-256"' in html
    assert "per layer (" in html and "worst layers" in html

    # the floor: below it the step fails and the branch stops there, with the numbers in the reason
    write_tiny(tmp_path, targets="ethos-u55-256", extra_steps=steps.format(warn=30, floor=90))
    run = run_pipeline(yaml_path, output_dir=tmp_path / "out", quiet=True)
    rec = run.result("quantize/tcn/ethos-u55-256").record
    assert rec.status == "failed" and "below the floor min_sqnr_db 90 dB" in rec.message and f"SQNR {sq:.1f} dB" in rec.message
    assert not run.ok
