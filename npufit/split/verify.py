"""Equivalence proof: the original model and the stage chain, both on deterministic ONNX Runtime CPU,
on the same inputs (seeded random samples or the user's .npz files), compared output by output."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..graph.onnx_prepare import read_onnx
from ..util.progress import track
from ..util.readers import ArrayFile
from ..verify.compare import (
    BOUNDED_FLOAT_RANGE,
    ORT_SETTINGS,
    Comparison,
    OutputDiffs,
    compare_outputs,
    exact_mismatch,
    exact_tolerance,
    make_session,
    nonfinite_outputs,
    random_inputs,
    run_onnx,
)
from ..verify.ties import ties, with_outputs

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
    # samples on which the ORIGINAL gives NaN/Inf: {"outputs": [...] on N(0,1), "fallback": the bounded range used
    # instead or None, "still": outputs still NaN/Inf on the samples compared}
    overflow: dict | None = None
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
        text = (
            f"output '{name}' differs by max abs {d['max_abs']:.3g} (max rel {d['max_rel']:.3g}) over "
            f"{self.samples} sample(s)"
        )
        still = (self.overflow or {}).get("still")
        if still:
            return f"{text}; {self._overflow_cause(still)}"
        return text

    def _overflow_cause(self, still: list[str]) -> str:
        """Why a comparison on these samples proves nothing, and what to do: the samples are the problem."""
        where = (
            f"on the seeded N(0,1) samples and on uniform {self.overflow['tried']} samples"
            if self.source == "random"
            else "on the --inputs samples"
        )
        return (
            f"the original model itself gives NaN/Inf in {_names(still)} {where}, so these samples cannot show "
            "whether the chain is equivalent (the samples overflow, not the chain): pass real inputs with "
            "--inputs FILE.npz (one array per model input, as np.savez writes it)"
        )

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
            "overflow": self.overflow,
            "against_source": self.against_source,
        }

    def sentence(self) -> str:
        """What was verified, under which ONNX Runtime settings, and the outcome of each."""
        over = self.overflow or {}
        if self.source == "npz":
            src = f"{self.samples} .npz sample(s)"
        elif over.get("fallback"):
            src = (
                f"{self.samples} seeded sample(s) uniform in {over['fallback']}, seed {self.seed}: N(0,1) samples "
                f"overflow in the original itself (NaN/Inf in {_names(over['outputs'])})"
            )
        else:
            src = f"{self.samples} seeded sample(s), seed {self.seed}"
        state = "bit-identical" if self.bit_identical else f"NOT EQUIVALENT ({self.worst_sentence()})"
        a = self.against_source
        if a is not None and self.bit_identical:
            state = (
                f"bit-identical to the fixed model; against the original, max abs {a['max_abs']:.3g} "
                f"({'within' if a['within'] else 'OUTSIDE'} what fix accepts for exact rules: {a['tolerance']})"
            )
        if self.bit_identical and over.get("still"):
            state += (
                f" where the original is finite (it gives NaN/Inf in {_names(over['still'])} on these samples: "
                "--inputs FILE.npz with real inputs verifies more)"
            )
        text = f"verification ({src}, ONNX Runtime CPU, 1 thread): {ORT_SETTINGS[False]}: {state}"
        o = self.optimized
        if o is not None:
            text += f"; {o['settings']} on both sides: {_optimized_sentence(o)}"
        return text


def _names(outputs: list[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in outputs[:4])
    return f"output(s) {shown}" + (f" and {len(outputs) - 4} more" if len(outputs) > 4 else "")


def _optimized_sentence(o: dict) -> str:
    """The optimized comparison: bit-identical, within or outside tolerance, and ordering ties named as such."""
    tol = f"float tolerance rtol {OPTIMIZED_RTOL:g}, atol {OPTIMIZED_ATOL:g}"
    if o["max_abs"] == 0.0:
        return "bit-identical"
    ties = o.get("ties") or []
    if not ties:
        return f"max abs {o['max_abs']:.3g}, max rel {o['max_rel']:.3g} ({'within' if o['close'] else 'OUTSIDE'} {tol})"
    tied = o["tie_outputs"]
    worst = max((o["per_output"][k]["max_abs"] for k in tied if k in o["per_output"]), default=0.0)
    why = "; ".join(
        f"{t['op']} '{t['node']}' ranks scores only {t['margin']:.2g} apart (tie margin; the float tolerance there is "
        f"{OPTIMIZED_ATOL + OPTIMIZED_RTOL * t['scale']:.2g})"
        for t in ties
    )
    rest = [d["max_abs"] for k, d in o["per_output"].items() if k not in tied]
    others = (
        f"the other outputs are {'within' if o['close'] else 'OUTSIDE'} {tol} (max abs {max(rest):.3g})"
        if rest
        else "no other output to hold to a tolerance"
    )
    return (
        f"{_names(tied)} differ (max abs {worst:.3g}) by an ordering tie, not an error: {why}, so the optimizer's "
        f"rounding picks near-equal entries in another order and the indices, and what is gathered through them, "
        f"change; {others}"
    )


def load_npz(path: str | os.PathLike, input_names: list[str]) -> dict[str, np.ndarray]:
    """One sample: an .npz with one array per model input, keyed by input name."""
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

    Seeded N(0,1) samples on which the original itself gives NaN/Inf are replaced by uniform samples in
    BOUNDED_FLOAT_RANGE (said in the result); if those overflow too, the result says that the samples, not the
    chain, are the problem. With `optimized_runner` (the same chain on ORT's default optimizer) the original is also
    run optimized and that comparison is reported in `.optimized`, with ordering ties of TopK/ArgMax named. With
    `source_model` (split --mode auto: the user's model, of which `original` is the fixed copy) the chain is also
    held against it, within the exact-rewrite tolerance."""
    import time

    t0 = time.perf_counter()
    sess = make_session(original)
    feeds, source = sample_feeds(sess, inputs, samples, seed, input_shapes)
    refs = _reference(sess, feeds, source)
    bad = sorted({k for r in refs for k in nonfinite_outputs(r)})
    overflow = None
    if bad:
        overflow = {"outputs": bad, "fallback": None, "tried": None, "still": bad}
        if source == "random":
            lo, hi = BOUNDED_FLOAT_RANGE
            overflow["tried"] = f"[{lo:g}, {hi:g})"
            bounded = random_inputs(sess, seed=seed, samples=samples, shapes=input_shapes, float_range=(lo, hi))
            bounded_refs = _reference(sess, bounded, source)
            still = sorted({k for r in bounded_refs for k in nonfinite_outputs(r)})
            if not still:
                feeds, refs = bounded, bounded_refs
                overflow.update(fallback=overflow["tried"], still=[])
    result = ChainCheck(len(feeds), seed if source == "random" else None, source, overflow=overflow)
    # the original's outputs are kept, its session is not: the chain's sessions run without it beside them (a big
    # model's session holds its weights and activations)
    del sess
    also = make_session(source_model) if source_model is not None else None
    also_refs = _reference(also, feeds, source) if also is not None else None
    del also
    total, vs_source = _compare(refs, runner, feeds, source, "verifying chain", also_refs)
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
    _release(runner)
    if optimized_runner is not None:
        opt_sess = make_session(original, optimized=True)
        opt_refs = _reference(opt_sess, feeds, source)
        del opt_sess
        opt, _ = _compare(opt_refs, optimized_runner, feeds, source, "verifying chain (optimized)")
        result.optimized = {
            "settings": ORT_SETTINGS[True],
            "max_abs": opt.max_abs,
            "max_rel": opt.max_rel,
            "close": opt.ok(OPTIMIZED_ATOL, OPTIMIZED_RTOL),
            "per_output": {k: {"max_abs": v["max_abs"], "max_rel": v["max_rel"]} for k, v in opt.per_output.items()},
        }
        if not result.optimized["close"]:
            _explain_ties(result.optimized, opt, original, feeds)
        _release(optimized_runner)
    result.seconds = time.perf_counter() - t0
    return result


def _explain_ties(summary: dict, opt, original, feeds: list[dict]) -> None:
    """Outputs that read the indices of a near-tied TopK/ArgMax are set apart (named, with the tie margin); the
    others are held to the float tolerance."""
    try:
        model = read_onnx(original).model
    except NpufitError:
        return
    folder = str(Path(original).resolve().parent)

    def run_with(names, feed):
        probe = with_outputs(model, names)
        return run_onnx(make_session(probe.SerializeToString(), external_dir=folder), feed)

    try:
        found = ties(model, run_with, feeds, OPTIMIZED_ATOL, OPTIMIZED_RTOL)
    except (NpufitError, ValueError):  # a model too large to serialize, an unreadable intermediate: say nothing more
        return
    if not found:
        return
    tied = sorted({o for t in found for o in t.outputs})
    summary["ties"] = [t.to_dict() for t in found]
    summary["tie_outputs"] = tied
    rest = {k: d for k, d in opt.per_output.items() if k not in tied}
    summary["close"] = not opt.missing and all(
        d["max_abs"] <= OPTIMIZED_ATOL + OPTIMIZED_RTOL * d["ref_max_abs"] for d in rest.values()
    )


def _reference(sess, feeds: list[dict], source: str) -> list[dict]:
    """The original's outputs on each feed."""
    out = []
    for f in feeds:
        try:
            out.append(run_onnx(sess, f))
        except NpufitError:
            raise
        except Exception as e:  # ORT rejects the feeds (shape/dtype): a user-input problem
            raise NpufitError(
                f"ONNX Runtime could not run the {source} sample: {str(e).splitlines()[0][:240]}"
            ) from None
    return out


def _compare(refs: list[dict], runner, feeds: list[dict], source: str, label: str, also_refs=None):
    """Worst differences over `feeds` between the original's outputs `refs` and the chain (and between `also_refs`,
    another model's outputs on the same feeds, and the chain: the second Comparison, else None)."""
    total = Comparison()
    total_also = Comparison() if also_refs is not None else None
    for i, (ref, f) in enumerate(track(list(zip(refs, feeds)), label, total=len(feeds))):
        try:
            got, _ = runner.run(f)
        except NpufitError:
            raise
        except Exception as e:  # ORT rejects the feeds (shape/dtype): a user-input problem
            raise NpufitError(
                f"ONNX Runtime could not run the {source} sample: {str(e).splitlines()[0][:240]}"
            ) from None
        total.merge(compare_outputs(ref, got))
        if total_also is not None:
            total_also.merge(compare_outputs(also_refs[i], got))
    return total, total_also


def _release(runner) -> None:
    """Close a chain's sessions once its pass is done (ChainRunner.release; other runners keep theirs)."""
    release = getattr(runner, "release", None)
    if release is not None:
        release()
