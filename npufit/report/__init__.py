"""report: CheckReport / SplitPlan / BenchResult -> terminal, JSON, Markdown, HTML."""

from __future__ import annotations


def report(results_dir, output=None):
    """Render a pipeline's results folder as one self-contained HTML page.

    The library side of `npufit report RESULTS_DIR --output report.html`.

    Parameters
    ----------
    results_dir : str or os.PathLike
        The output folder of `npufit.pipeline` (it holds pipeline.json and one folder per cell).
    output : str or os.PathLike, optional
        The HTML file to write (default: RESULTS_DIR/report.html), atomically.

    Returns
    -------
    pathlib.Path
        The written page.

    Example
    -------
    >>> import npufit
    >>> npufit.report("out/demo")  # doctest: +SKIP
    PosixPath('out/demo/report.html')
    """
    # cost: every `npufit.report.*` import (style, console) loads this package; the HTML builder only for a report
    from .html_results import build_report

    return build_report(results_dir, output)
