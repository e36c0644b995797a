"""One source per vocabulary and default (npufit/vocab.py) and one record per pipeline step (pipeline/stepdefs.py):
no other module restates them, the CLI offers exactly them, the library refuses anything else in one line, and the
pipeline's split defaults differ from the library's as stated."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

import npufit
from npufit import vocab
from npufit.cli import build_parser
from npufit.errors import NpufitError
from npufit.pipeline.stepdefs import BY_NAME, STEP_NAMES, STEPS

from .pipeline_helpers import npu_cut_npu_onnx

PKG = Path(npufit.__file__).parent
WORDS = {k: v for k, v in vars(vocab).items() if k.isupper() and isinstance(v, tuple)}


def _literals(path: Path):
    """(line, tuple of the strings) of every tuple, list or set literal of two or more strings in the file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                yield node.lineno, tuple(e.value for e in node.elts)
        if isinstance(node, ast.Dict) and len(node.keys) >= 5:
            if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
                yield node.lineno, tuple(k.value for k in node.keys)


def test_no_module_restates_a_vocabulary_or_the_step_names():
    stated = {frozenset(v): k for k, v in WORDS.items() if len(v) >= 3}  # pairs like ("int8", "uint8") mean more
    steps = set(STEP_NAMES)
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "vocab.py" or path.parent.name == "targets" or "targets" in path.parts:
            continue
        for line, words in _literals(path):
            rel = path.relative_to(PKG.parent)
            if frozenset(words) in stated:
                found.append(f"{rel}:{line}: {words} is vocab.{stated[frozenset(words)]}")
            elif {"train", "export"} <= set(words) and len(steps & set(words)) >= 5:  # not a list of verbs
                found.append(f"{rel}:{line}: a table of pipeline steps (pipeline/stepdefs.py holds them)")
    assert not found, "\n".join(found)


def _options(*verb: str) -> dict:
    parser = build_parser()
    for name in verb:
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]
    return {s: a for a in parser._actions for s in a.option_strings}


def test_the_cli_offers_the_vocabulary_and_its_defaults():
    check = _options("check")
    assert tuple(check["--judge"].choices) == vocab.JUDGES and check["--judge"].default == vocab.JUDGE
    assert tuple(check["--measure"].choices) == vocab.MEASURE_JUDGES and check["--measure"].const == vocab.MEASURE_JUDGE
    assert tuple(check["--format"].choices) == vocab.PAGE_FORMATS and check["--format"].default == vocab.FORMAT
    split = _options("split")
    assert tuple(split["--mode"].choices) == vocab.SPLIT_MODES and split["--min-nodes"].default == vocab.SPLIT_MIN_NODES
    for verb in ("scan", "probe", "compile"):
        ex = _options(verb)["--executor"]
        assert tuple(ex.choices) == vocab.EXECUTORS and ex.default == vocab.EXECUTOR, verb
    run = _options("pipeline", "run")
    assert run["--executor"].default == vocab.PIPELINE_EXECUTOR
    assert tuple(run["--from"].choices) == tuple(run["--only"].choices) == STEP_NAMES
    q = _options("quantize")
    assert tuple(q["--method"].choices) == vocab.QUANTIZE_METHODS and q["--method"].default == vocab.QUANTIZE_METHOD
    assert tuple(_options("scan")["--format"].choices) == vocab.SCAN_FORMATS
    assert tuple(_options("doctor")["--format"].choices) == vocab.STATUS_FORMATS


def test_the_library_takes_the_same_defaults():
    assert inspect.signature(npufit.check).parameters["judge"].default == vocab.JUDGE
    split = inspect.signature(npufit.split).parameters
    assert split["min_nodes"].default == vocab.SPLIT_MIN_NODES and split["judge"].default == vocab.JUDGE
    assert inspect.signature(npufit.scan).parameters["executor"].default == vocab.EXECUTOR
    assert inspect.signature(npufit.pipeline).parameters["executor"].default == vocab.PIPELINE_EXECUTOR
    assert inspect.signature(npufit.quantize).parameters["method"].default == vocab.QUANTIZE_METHOD


def test_the_library_refuses_a_word_outside_the_vocabulary_in_one_line(tmp_path):
    model = npu_cut_npu_onnx(tmp_path / "m.onnx")
    with pytest.raises(NpufitError, match=r"^unknown --judge 'nope' \(choose from auto, int8, float\)$"):
        npufit.check(model, "hailo8", judge="nope")
    with pytest.raises(
        NpufitError, match=r"^unknown --measure 'x' \(choose from auto, never, required, vela-checks, compile\)$"
    ):
        npufit.check(model, "ethos-u55-256", measure="x")
    with pytest.raises(NpufitError, match=r"^unknown split mode 'fast' \(choose from best, prefix, segments, "):
        npufit.split(model, "hailo8", tmp_path / "plan", mode="fast")
    with pytest.raises(NpufitError, match=r"^unknown executor 'gpu' \(choose from inprocess, pool, ray\)$"):
        npufit.scan([tmp_path], "hailo8", executor="gpu")
    with pytest.raises(NpufitError, match=r"^--method median: choose one of minmax, entropy, percentile$"):
        npufit.quantize(model, tmp_path / "q.onnx", method="median")
    assert not (tmp_path / "plan").exists() and not (tmp_path / "q.onnx").exists()


def test_the_pipeline_split_defaults_differ_from_the_library_as_stated():
    """The pipeline's split step goes on with one stage model (vocab.py says why): two of the library's modes,
    prefix by default, min_nodes 1; the library cuts the best-ranked way with regions of 8 nodes or more."""
    assert set(vocab.PIPELINE_SPLIT_MODES) < set(vocab.SPLIT_MODES)
    assert (vocab.SPLIT_MODE, vocab.SPLIT_MIN_NODES) == ("best", 8)
    assert (vocab.PIPELINE_SPLIT_MODE, vocab.PIPELINE_SPLIT_MIN_NODES) == ("prefix", 1)
    settings = BY_NAME["split"].settings
    assert settings["mode"].default == vocab.PIPELINE_SPLIT_MODE
    assert settings["min_nodes"].default == vocab.PIPELINE_SPLIT_MIN_NODES
    assert settings["mode"].check("best") is not None and settings["mode"].check("segments") is None


def test_the_split_step_passes_its_own_defaults_to_the_library(tmp_path, monkeypatch):
    """The library's defaults never leak into a pipeline: the step names mode and min_nodes on every call."""
    from npufit.pipeline import run_pipeline, steps

    calls = []
    real = steps.split  # the library's split, as the step imports it

    @functools.wraps(real)  # the step reads the options it may pass from the signature
    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(steps, "split", recording)
    npu_cut_npu_onnx(tmp_path / "m.onnx")
    (tmp_path / "p.yaml").write_text(
        "version: 1\nmodels:\n  - {name: m, onnx: m.onnx}\ntargets: [hailo8]\nsteps:\n  export: {}\n  split: {}\n"
    )
    run = run_pipeline(tmp_path / "p.yaml", output_dir=tmp_path / "out", quiet=True)
    assert run.result("split/m/hailo8").record.status == "ok", run.result("split/m/hailo8").record.message
    assert [(c["mode"], c["min_nodes"]) for c in calls] == [("prefix", 1)]


def test_one_record_per_step_in_execution_order():
    assert STEP_NAMES == ("train", "export", "check", "fix", "split", "quantize", "compile", "bench", "report")
    assert len({s.name for s in STEPS}) == len(STEPS)
    for s in STEPS:
        assert s.scope in ("model", "target", "runtime", "all") and s.revision >= 1 and callable(s.run)
        assert s.result.step == s.name  # the typed result its cells record
    assert [s.name for s in STEPS if not s.parallel] == ["bench", "report"]
