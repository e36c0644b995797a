"""Equivalence proof: the original model and the stage chain, both on deterministic ONNX Runtime CPU,
on the same inputs (seeded random samples or the user's .npz files), compared output by output."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..util.progress import track
from ..verify.compare import ORT_SETTINGS, OutputDiffs

# fused kernels of the optimizer reorder float sums: differences of a few ulps are expected there
OPTIMIZED_RTOL, OPTIMIZED_ATOL = 1e-4, 1e-5


@dataclass
class ChainCheck(OutputDiffs):
    samples: int
    seed: int | None
    source: str  # "random" | "npz"
    per_output: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # the same feeds with ORT's default optimizer on both sides (what a host application runs): fusions may
    # round differently in the monolithic model and in the stages, so this is reported, not required bit-exact
    optimized: dict | None = None
    # split --mode auto: the chain against the user's model before `fix` (the bit-identity above is against the
    # fixed model), within what an exact rewrite may change (verify.compare.exact_mismatch)
    against_source: dict | None = None

    @property
    def bit_identical(self) -> bool:
        """The chain runs the very same kernels on the very same values as the model it was cut from."""
        return not self.missing and all(d["max_abs"] == 0.0 for d in self.per_output.values())

    @property
    def equivalent(self) -> bool:
        """Bit-identical to the model cut, and (--mode auto) within the exact-rewrite tolerance of the original."""
        return self.bit_identical and (self.against_source is None or self.against_source["within"])

    def worst_sentence(self) -> str:
        if self.missing:
            return f"output(s) {', '.join(self.missing)} missing from the chain"
        if self.bit_identical and self.against_source is not None:
            return f"against the original model, {self.against_source['why']}"
        name, d = self.worst()
        return f"output '{name}' differs by max abs {d['max_abs']:.3g} (max rel {d['max_rel']:.3g}) over {self.samples} sample(s)"

    def to_dict(self) -> dict:
        return {
            "samples": self.samples,
            "seed": self.seed,
            "inputs": self.source,
            "equivalent": self.equivalent,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "per_output": {k: {"max_abs": v["max_abs"], "max_rel": v["max_rel"]} for k, v in self.per_output.items()},
            "missing": self.missing,
            "seconds": round(self.seconds, 3),
            "settings": ORT_SETTINGS[False],
            "optimized": self.optimized,
            "against_source": self.against_source,
        }

    def sentence(self) -> str:
        """What was verified, under which ONNX Runtime settings, and the outcome of each."""
        src = (
            f"{self.samples} seeded sample(s), seed {self.seed}"
            if self.source == "random"
            else f"{self.samples} .npz sample(s)"
        )
        state = "bit-identical" if self.bit_identical else f"NOT EQUIVALENT ({self.worst_sentence()})"
        a = self.against_source
        if a is not None and self.bit_identical:
            state = (
                f"bit-identical to the fixed model; against the original, max abs {a['max_abs']:.3g} "
                f"({'within' if a['within'] else 'OUTSIDE'} what fix accepts for exact rules: {a['tolerance']})"
            )
        text = f"verification ({src}, ONNX Runtime CPU, 1 thread): {ORT_SETTINGS[False]}: {state}"
        o = self.optimized
        if o is not None:
            how = (
                "bit-identical"
                if o["max_abs"] == 0.0
                else f"max abs {o['max_abs']:.3g}, max rel {o['max_rel']:.3g} ({'within' if o['close'] else 'OUTSIDE'} "
                f"float tolerance rtol {OPTIMIZED_RTOL:g}, atol {OPTIMIZED_ATOL:g})"
            )
            text += f"; {o['settings']} on both sides: {how}"
        return text


def load_npz(path: str | os.PathLike, input_names: list[str]) -> dict[str, np.ndarray]:
    """One sample: an .npz with one array per model input, keyed by input name."""
    from ..util.readers import ArrayFile

    p = Path(path)
    with ArrayFile(p, "--inputs") as z:  # regular file, header-checked, never unpickled, within budget
        data = {k: z.read(k) for k in z if k in input_names}
        if not data:
            data = {k: None for k in z}  # only for the message below
    missing = [n for n in input_names if n not in data]
    if missing:
        raise NpufitError(
            f"--inputs {p}: no array for input(s) {', '.join(missing)} (has {', '.join(sorted(data)) or 'nothing'})"
        )
    return {n: data[n] for n in input_names}


def sample_feeds(
    session, inputs: list[str] | None, samples: int, seed: int, input_shapes=None
) -> tuple[list[dict], str]:
    from ..verify.compare import random_inputs

    names = [i.name for i in session.get_inputs()]
    if inputs:
        return [load_npz(p, names) for p in inputs], "npz"
    if samples < 1:
        raise NpufitError("--samples must be at least 1")
    return random_inputs(session, seed=seed, samples=samples, shapes=input_shapes), "random"


def verify_chain(
    original: str | os.PathLike,
    runner,
    inputs: list[str] | None = None,
    samples: int = 3,
    seed: int = 0,
    input_shapes=None,
    optimized_runner=None,
    source_model: str | os.PathLike | None = None,
) -> ChainCheck:
    """Run `original` and the ChainRunner `runner` on the same feeds; differences per output (max over samples).

    With `optimized_runner` (the same chain on ORT's default optimizer) the original is also run optimized and
    that comparison is reported in `.optimized`. With `source_model` (split --mode auto: the user's model, of
    which `original` is the fixed copy) the chain is also held against it, within the exact-rewrite tolerance."""
    import time

    from ..verify.compare import exact_mismatch, exact_tolerance, make_session

    t0 = time.perf_counter()
    sess = make_session(original)
    feeds, source = sample_feeds(sess, inputs, samples, seed, input_shapes)
    result = ChainCheck(len(feeds), seed if source == "random" else None, source)
    also = make_session(source_model) if source_model is not None else None
    total, vs_source = _compare(sess, runner, feeds, source, "verifying chain", also)
    result.per_output, result.missing = dict(total.per_output), list(total.missing)
    if vs_source is not None and source_model is not None:
        why = exact_mismatch(vs_source)
        result.against_source = {
            "model": Path(source_model).name,
            "max_abs": vs_source.max_abs,
            "max_rel": vs_source.max_rel,
            "within": why is None,
            "why": why or "",
            "tolerance": exact_tolerance(),
        }
    # one setting's sessions at a time: a big model's sessions each hold its activations
    del sess, also
    _release(runner)
    if optimized_runner is not None:
        opt, _ = _compare(
            make_session(original, optimized=True), optimized_runner, feeds, source, "verifying chain (optimized)"
        )
        result.optimized = {
            "settings": ORT_SETTINGS[True],
            "max_abs": opt.max_abs,
            "max_rel": opt.max_rel,
            "close": opt.ok(OPTIMIZED_ATOL, OPTIMIZED_RTOL),
            "per_output": {k: {"max_abs": v["max_abs"], "max_rel": v["max_rel"]} for k, v in opt.per_output.items()},
        }
        _release(optimized_runner)
    result.seconds = time.perf_counter() - t0
    return result


def _compare(sess, runner, feeds: list[dict], source: str, label: str, also=None):
    """Worst differences over `feeds` between the session of the original and the chain (and between the session
    `also`, when given, and the chain: the second Comparison, else None)."""
    from ..verify.compare import Comparison, compare_outputs, run_onnx

    total = Comparison()
    total_also = Comparison() if also is not None else None
    pool = ThreadPoolExecutor(1) if (os.cpu_count() or 1) > 1 else None
    try:
        for f in track(feeds, label, total=len(feeds)):
            try:
                # the original runs beside the chain (ORT releases the GIL; each session keeps its one thread)
                pending = pool.submit(run_onnx, sess, f) if pool is not None else None
                try:
                    got, _ = runner.run(f)
                except Exception:
                    if pending is not None:
                        pending.result()  # the original's own error, where it has one, is the one reported
                    raise
                ref = pending.result() if pending is not None else run_onnx(sess, f)
            except NpufitError:
                raise
            except Exception as e:  # ORT rejects the feeds (shape/dtype): a user-input problem
                raise NpufitError(
                    f"ONNX Runtime could not run the {source} sample: {str(e).splitlines()[0][:240]}"
                ) from None
            total.merge(compare_outputs(ref, got))
            if total_also is not None:
                total_also.merge(compare_outputs(run_onnx(also, f), got))
    finally:
        if pool is not None:
            pool.shutdown()  # waits for a run still going: both sides stop within the run time limit
    return total, total_also


def _release(runner) -> None:
    """Close a chain's sessions once its pass is done (ChainRunner.release; other runners keep theirs)."""
    release = getattr(runner, "release", None)
    if release is not None:
        release()
