"""report: CheckReport / SplitPlan / BenchResult -> terminal, JSON, Markdown, HTML."""

from __future__ import annotations


def report(results_dir, output=None):
    """`npufit report RESULTS_DIR --output report.html`: the whole pipeline run as one HTML file."""
    from .html_results import build_report

    return build_report(results_dir, output)


from ..util.callable_module import make_callable  # noqa: E402

make_callable(__name__, report)  # npufit.report(results_dir) == npufit report results_dir
