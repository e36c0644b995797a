"""Hostile MODEL inputs (hostile-input issue, parts 2-5) through every applicable verb of the real CLI.

Each case from `model_cases` runs as a capped subprocess (`harness.run_verb`: address-space and time caps) and
must end in exit 0 with a result or exit 2 with one `npufit: error:` line; the folder holding the inputs is
byte-identical afterwards apart from the named output; no temp file is left; peak RSS stays under 1 GB.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from . import model_cases as mc
from .harness import assert_sane, assert_untouched, run_verb, snapshot

PEAK_MB = 1024  # the goal for every hostile case
VT = ["--verify-timeout", "3"]  # the Loop cases reach it; every other run finishes far below it

VERBS = {
    "check": lambda m, d: (["check", m, "-t", "hailo8"], ()),
    "compare": lambda m, d: (["compare", m, "-t", "hailo8"], ()),
    "fix": lambda m, d: (["fix", m, "-t", "hailo8", "-o", d / "out.onnx", *VT], ("out.onnx",)),
    "split": lambda m, d: (["split", m, "-t", "hailo8", "-d", d / "plan", *VT], ("plan",)),
    "quantize": lambda m, d: (["quantize", m, "-o", d / "q.onnx", "-c", "random", "--samples", "2", "--holdout", "1",
                               *VT], ("q.onnx",)),
    "compile": lambda m, d: (["compile", m, "-t", "ethos-u55-256", "--out-dir", d / "c", "--timeout", "60"], ("c",)),
    "bench": lambda m, d: (["bench", m, "-n", "2", "--warmup", "0", *VT], ()),
}

REFUSE = "refuse"  # exit 2, one line containing the needle
OK = "ok"  # exit 0: a correct result
EITHER = "either"  # exit 0 or a clean refusal (e.g. running as root makes a chmod-0 file readable)

# case -> [(verb, expectation, needle)]
MATRIX: dict[str, list[tuple[str, str, str | None]]] = {
    **{b: [("check", OK, None)] for b in ("bomb_constant_of_shape", "bomb_expand", "bomb_range", "bomb_tile",
                                          "bomb_pad", "bomb_resize", "bomb_matmul")},
    "bomb_expand": [("check", OK, None), ("fix", REFUSE, "memory budget"), ("split", REFUSE, "memory budget")],
    "concat_20000": [("check", OK, None)],
    "cyclic": [(v, REFUSE, "topologically sorted") for v in ("check", "compare", "fix", "split", "compile")],
    # provably endless: refused before any run; computed conditions: stopped at the verification time limit
    "loop_no_trip_count": [("check", OK, None)] + [(v, REFUSE, "never turns false") for v in ("fix", "split",
                                                                                               "quantize", "bench")],
    "loop_huge_trip_count": [(v, REFUSE, "4,611,686,018,427,387,904 iterations") for v in ("fix", "bench")],
    "loop_data_dependent": [("check", OK, None)] + [(v, REFUSE, "verify-timeout") for v in ("fix", "bench")],
    "huge_dims": [("check", OK, None), ("fix", REFUSE, "memory budget"), ("split", REFUSE, "memory budget"),
                  ("quantize", REFUSE, "memory budget")],
    "sequence_output": [("check", OK, None), ("fix", REFUSE, "not a tensor")],
    "ansi_names": [("check", OK, None), ("fix", OK, None), ("split", OK, None)],
    "non_utf8_op_type": [(v, REFUSE, "node[0].op_type is not UTF-8") for v in ("check", "compare", "fix", "split",
                                                                            "quantize", "compile", "bench")],
    "non_utf8_dim_param": [("check", REFUSE, "dim_param is not UTF-8")],
    "non_utf8_tensor_name": [("check", REFUSE, "attribute[0].t.name is not UTF-8")],
    **{c: [("check", REFUSE, "checker rejects"), ("compare", REFUSE, "checker rejects")]
       for c in ("undefined_tensor", "duplicate_names", "wrong_attribute_type", "empty_op_type")},
    "wrong_raw_length": [("check", REFUSE, "raw_data"), ("compile", REFUSE, "raw_data"), ("bench", REFUSE, "raw_data")],
    "bfloat16_weights": [("check", OK, None), ("fix", OK, None)],
    # every verb reads a model with its weights: checking too
    "ext_missing": [(v, REFUSE, "external data missing") for v in ("check", "compare", "fix")],
    "ext_url": [(v, REFUSE, "is a URL") for v in ("check", "compare", "fix")],
    "ext_backslash": [(v, REFUSE, "backslash") for v in ("check", "compare")],
    "ext_past_eof": [(v, REFUSE, "too short") for v in ("check", "compare", "fix", "quantize")],
    # refused while reading, before any verb-specific work: check and fix (which needs the weights) cover them
    "ext_folder": [("check", REFUSE, "is a folder"), ("fix", REFUSE, "is a folder")],
    "ext_fifo": [("check", REFUSE, "named pipe"), ("fix", REFUSE, "named pipe"), ("split", REFUSE, "named pipe")],
    "ext_negative_offset": [("fix", REFUSE, "negative")],
    "ext_nul": [("fix", REFUSE, "NUL byte")],
    "ext_long": [("fix", REFUSE, "characters long")],
    **{c: [("check", REFUSE, "path traversal")]
       for c in ("ext_in_function_body", "ext_in_sparse_initializer", "ext_in_tensors_attribute")},
    "fifo_model": [(v, REFUSE, "named pipe") for v in ("check", "compare", "fix", "split", "quantize", "compile", "bench")],
    "fifo_tflite": [(v, REFUSE, "named pipe") for v in ("check", "compile")],
    "tflite_cycle": [("check", REFUSE, "cycle"), ("compare", REFUSE, "cycle")],
    "tflite_bad_tensor_index": [("check", REFUSE, "tensor 999"), ("compare", REFUSE, "tensor 999")],
    "tflite_truncated": [("check", REFUSE, "corrupt")],
    "tflite_unreadable": [("check", EITHER, None)],
}
RUNS = [pytest.param(c, v, e, n, id=f"{c}-{v}") for c, rows in MATRIX.items() for v, e, n in rows]

# known advisory line of `quantize -c random`: not an error line
ADVISORY = "npufit: warning: --calibration random"


@pytest.mark.parametrize("case, verb, expect, needle", RUNS)
def test_hostile_model(tmp_path, case, verb, expect, needle):
    model = mc.build(case, tmp_path)
    argv, outputs = VERBS[verb](model, tmp_path)
    before = snapshot(tmp_path)
    o = run_verb(argv, tmp_path)
    o = dataclasses.replace(o, stderr="\n".join(ln for ln in o.stderr.splitlines() if not ln.startswith(ADVISORY)))
    assert_sane(o, allow_ok=expect != REFUSE, needle=needle)
    if expect == OK:
        assert o.rc == 0, o.describe()
    assert o.peak_rss_mb < PEAK_MB, o.describe()
    assert "\x1b" not in o.stdout and "\x1b" not in o.stderr, "a raw escape reached the terminal: " + o.describe()
    assert_untouched(before, tmp_path, allowed_new=outputs)


def test_verbose_restores_onnx_runtime_logs(tmp_path):
    """Quiet by default (the one-line error above); --verbose lets ONNX Runtime's own log lines through."""
    model = mc.build("bomb_expand", tmp_path)
    o = run_verb(["--verbose", "fix", model, "-t", "hailo8", "-o", tmp_path / "out.onnx"], tmp_path)
    assert o.rc == 2 and "onnxruntime" in o.stderr.lower(), o.describe()
    assert len([ln for ln in o.stderr.splitlines() if ln.strip()]) > 1, o.describe()


@pytest.mark.parametrize("value", ["nan", "0", "-5"])
def test_verify_timeout_must_be_positive(tmp_path, value):
    model = mc.build("ansi_names", tmp_path)
    o = run_verb(["fix", model, "-t", "hailo8", "-o", tmp_path / "out.onnx", "--verify-timeout", value], tmp_path)
    assert_sane(o, allow_ok=False, needle="--verify-timeout")


# -- in-process checks of the bounds themselves ------------------------------------------------------------
@pytest.mark.parametrize("case, tensor, shape", [("bomb_constant_of_shape", "big", (mc.BIG,)),
                                                 ("bomb_matmul", "big", (1 << 16, 1 << 16)),
                                                 ("bomb_tile", "big", (1 << 15, 1 << 15))])
def test_folding_keeps_the_shape_but_never_materialises_the_value(tmp_path, case, tensor, shape):
    from npufit.graph import load

    g = load(mc.build(case, tmp_path))
    t = g.tensor(tensor)
    assert t.is_const and t.value is None and t.shape == shape
    assert g.producer(tensor).name in g.folded


def test_small_folds_still_computed(tmp_path):
    """The budget leaves ordinary shape arithmetic alone: ConstantOfShape of a small shape is still a value."""
    import onnx
    from onnx import TensorProto, helper

    from npufit.graph import load

    n = [helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos", value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.0])),
         helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    m = mc._with_add(n[:1], "c", [mc._i64("s", [1, 4])])
    p = tmp_path / "small.onnx"
    onnx.save(m, str(p))
    g = load(p)
    assert np.array_equal(g.tensor("c").value, np.full((1, 4), 2.0, np.float32))


def test_report_node_lookup_follows_the_node_list():
    from npufit.check.result import CheckReport

    rep = CheckReport({}, {}, [], [], [], {})
    assert rep.node("a") is None

    class N:
        def __init__(self, name):
            self.name = name

    first, second = N("a"), N("b")
    rep.nodes = [first]
    assert rep.node("a") is first and rep.node("b") is None
    rep.nodes.append(second)  # the cached index notices the list grew
    assert rep.node("b") is second


@pytest.mark.parametrize("verb", ["run", "bench"])
def test_a_split_plan_that_loops_forever_is_stopped(tmp_path, verb):
    """The chain runner (run, bench --runtime chain, split's own check) bounds each chain run like every verification."""
    from npufit.split import split

    split(str(mc.build("loop_data_dependent", tmp_path)), "hailo8", output_dir=str(tmp_path / "plan"), verify=False)
    np.savez(tmp_path / "x.npz", x=np.ones([1, 4], np.float32))
    argv = {"run": ["run", "plan", "--inputs", "x.npz"],
            "bench": ["bench", "plan", "--runtime", "chain", "-n", "2", "--warmup", "0"]}[verb]
    before = snapshot(tmp_path)
    o = run_verb([*argv, *VT], tmp_path, time_cap=60)
    assert_sane(o, allow_ok=False, needle="within 3 s (--verify-timeout)")
    assert_untouched(before, tmp_path)


def test_a_compiler_that_takes_the_memory_is_stopped(tmp_path):
    """Vela on a 60 KB Concat of 20,000 inputs grows past 2 GB within seconds: compile stops the tool at --max-memory
    and says so (exit 1: the compile failed, a verdict like any compiler error)."""
    model = mc.build("concat_20000", tmp_path)
    before = snapshot(tmp_path)
    o = run_verb(["compile", model, "-t", "ethos-u55-256", "--out-dir", tmp_path / "c", "--max-memory", "300"], tmp_path,
                 time_cap=100)
    assert not o.hung and "Traceback" not in o.stderr and not o.tmp_left, o.describe()
    assert o.rc == 1 and "Vela killed after using more than 300 MB of memory (--max-memory)" in o.stdout, o.describe()
    assert o.peak_rss_mb < PEAK_MB, o.describe()
    assert_untouched(before, tmp_path, allowed_new=("c",))


@pytest.mark.parametrize("fast", [True, False], ids=["c-twin", "python-walk"])
def test_both_text_checks_agree(tmp_path, monkeypatch, fast):
    """The proto3 twin (small models) and the Python walk (big ones) refuse the same fields and pass clean models."""
    import onnx

    from npufit.errors import BadModelError
    from npufit.graph import validate

    if not fast:
        monkeypatch.setattr(validate, "_utf8_twin", lambda: None)
    else:
        assert validate._utf8_twin() is not None
    for case, where in [("non_utf8_op_type", "graph.node[0].op_type"), ("non_utf8_dim_param", "dim_param"),
                        ("non_utf8_tensor_name", "attribute[0].t.name")]:
        d = tmp_path / case
        d.mkdir()
        m = onnx.load(str(mc.build(case, d)), load_external_data=False)
        with pytest.raises(BadModelError, match=re.escape(where)):
            validate.check_text(m, d)
    validate.check_text(onnx.load(str(mc.build("ansi_names", tmp_path)), load_external_data=False), tmp_path)
