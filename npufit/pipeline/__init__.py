"""pipeline: the declared steps (train -> export -> check -> fix -> split -> quantize -> compile -> bench -> report)
over models x targets x runtimes, each cell cached under the hash of its inputs. See docs/pipeline.md.

`npufit.pipeline(path)` is `npufit pipeline run`, `npufit.validate_pipeline(path)` is `npufit pipeline validate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..vocab import PIPELINE_EXECUTOR
from .matrix import expand
from .runner import run_pipeline as _run
from .schema import load_config as _load

if TYPE_CHECKING:
    from .runner import PipelineRun
    from .schema import PipelineConfig


def run_pipeline(
    path,
    from_step=None,
    only=None,
    force=False,
    output_dir=None,
    quiet=False,
    executor=PIPELINE_EXECUTOR,
    jobs=None,
    address=None,
) -> PipelineRun:
    """Run the pipeline declared in the YAML file `path`: every step for every model, target and runtime it lists,
    cached by content hash and resumable.

    The library side of `npufit pipeline run PIPELINE.yaml`.

    Parameters
    ----------
    path : str or os.PathLike
        The pipeline YAML (`docs/pipeline.md` describes its keys).
    from_step : str, optional
        Rerun from this step on (earlier steps are kept as recorded).
    only : str or list of str, optional
        Run only these steps.
    force : bool
        Rerun cells whose cached result is still valid.
    output_dir : str or os.PathLike, optional
        Where results go (default: the YAML's output_dir).
    quiet : bool
        No progress output.
    executor : str
        "inprocess" (default), "pool" or "ray".
    jobs : int, optional
        Parallel cells where a step allows it.
    address : str, optional
        A Ray cluster (executor="ray").

    Returns
    -------
    PipelineRun
        Every cell's action (ran, cached, kept, failed, skipped) and record; `npufit.report(output_dir)` renders the
        run as one HTML page.

    Example
    -------
    >>> import npufit
    >>> run = npufit.pipeline("examples/timeseries.yaml", output_dir="out/demo")
    >>> run  # doctest: +SKIP
    <PipelineRun timeseries: 85 cells (ran 85), 29.3 s>
    """

    return _run(
        path,
        from_step=from_step,
        only=only,
        force=force,
        output_dir=output_dir,
        quiet=quiet,
        executor=executor,
        jobs=jobs,
        address=address,
    )


def load_config(path, output_dir=None) -> PipelineConfig:
    """Read and validate PIPELINE.yaml (schema.load_config): raise NpufitError('file:line:col: where: what')."""

    return _load(path, output_dir)


def validate(path, output_dir=None) -> PipelineConfig:
    """`npufit pipeline validate PIPELINE.yaml`: parse, check the schema and expand the matrix (raises NpufitError)."""

    config = load_config(path, output_dir)
    expand(config)
    return config


__all__ = ["load_config", "run_pipeline", "validate"]
