"""pipeline: the declared steps (train -> export -> check -> fix -> split -> quantize -> compile -> bench -> report)
over models x targets x runtimes, each cell cached under the hash of its inputs. See docs/pipeline.md.

`npufit.pipeline(path)` is `npufit pipeline run`, `npufit.validate_pipeline(path)` is `npufit pipeline validate`.
The package imports nothing when it is imported: the CLI reads the step records (stepdefs.py) while it builds its
parser, and the YAML reader and the runner come with the first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..vocab import PIPELINE_EXECUTOR

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
    """`npufit pipeline run PIPELINE.yaml`; see runner.run_pipeline."""
    from .runner import run_pipeline as _run

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
    from .schema import load_config as _load

    return _load(path, output_dir)


def validate(path, output_dir=None) -> PipelineConfig:
    """`npufit pipeline validate PIPELINE.yaml`: parse, check the schema and expand the matrix (raises NpufitError)."""
    from .matrix import expand

    config = load_config(path, output_dir)
    expand(config)
    return config


__all__ = ["load_config", "run_pipeline", "validate"]
