"""pipeline: the declared steps (train -> export -> check -> fix -> split -> quantize -> compile -> bench -> report)
over models x targets x runtimes, each cell cached under the hash of its inputs. See docs/pipeline.md."""

from __future__ import annotations

from .schema import STEPS, PipelineConfig, load_config


def run_pipeline(
    path,
    from_step=None,
    only=None,
    force=False,
    output_dir=None,
    quiet=False,
    executor="inprocess",
    jobs=None,
    address=None,
):
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


def validate(path, output_dir=None) -> PipelineConfig:
    """`npufit pipeline validate PIPELINE.yaml`: parse, check the schema and expand the matrix (raises NpufitError)."""
    from .matrix import expand

    config = load_config(path, output_dir)
    expand(config)
    return config


from ..util.callable_module import make_callable

make_callable(__name__, run_pipeline)  # npufit.pipeline("pipeline.yaml") == npufit pipeline run pipeline.yaml

__all__ = ["STEPS", "PipelineConfig", "load_config", "run_pipeline", "validate"]
