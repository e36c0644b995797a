"""report: CheckReport / SplitPlan / BenchResult -> terminal, JSON, Markdown, HTML."""

from __future__ import annotations


def report(results_dir, output=None):
    """`npufit report RESULTS_DIR --output report.html`: the whole pipeline run as one HTML file."""
    from .html_results import build_report

    return build_report(results_dir, output)
