"""Every class of the hostile-input issue through the real CLI (tests/hostile/classes.py is the catalogue that
benchmarks/fuzz_hostile.py --classes counts): memory and time bombs refused in one line within the memory budget,
no internal error, paths from plans, results and pipeline files confined, external data checked for every verb,
no silent failure, temp entries of killed runs removed by the next run, nothing written to the user's cache.

Each case must pass `classes.judge` with no fault at all (a clean refusal in other words than the case names
counts too: the words are what a user reads). The catalogue's 300,000-node chain is refused by the memory budget
before any work; test_a_long_verb_stops_at_its_time_limit shows the time limit on a chain within the budget."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from . import classes as cl
from . import model_cases as mc
from .harness import assert_sane, run_verb

@pytest.mark.parametrize("case", cl.CATALOGUE, ids=[c.id for c in cl.CATALOGUE])
def test_hostile_class(tmp_path, case):
    folder = tmp_path / "case"
    folder.mkdir()
    v = cl.run_case(case, folder)
    assert not v.faults, v.line() + "\n" + v.outcome.describe()


def test_a_long_verb_stops_at_its_time_limit(tmp_path):
    """A 20,000-node chain keeps fix busy for minutes on this machine: with --time-limit 5 it stops, in one line that
    names the limit, the option that raises it, and the step it was in; nothing is left behind."""
    model = mc.chain(tmp_path, 20_000)
    o = run_verb(["--time-limit", "5", "fix", model, "-t", "hailo8", "-o", tmp_path / "out.onnx"], tmp_path,
                 time_cap=300, mem_mb=None)
    assert_sane(o, allow_ok=False, needle="stopped at its time limit of 5 s")
    assert "--time-limit" in o.stderr and not (tmp_path / "out.onnx").exists()


def test_the_time_limit_names_the_step_under_way():
    """In-process: the SIGALRM of verb_time_limit interrupts a loop under `track` and names its description."""
    from npufit.errors import TimeLimitReached
    from npufit.util.limits import verb_time_limit
    from npufit.util.progress import current_step, track

    with pytest.raises(TimeLimitReached, match="npufit demo stopped at its time limit of 0.2 s while counting sheep"):
        with verb_time_limit("npufit demo", 0.2):
            for _ in track(iter(int, 1), "counting sheep"):  # endless: only the limit ends it
                time.sleep(0.01)
    assert current_step() is None  # the step list unwinds with the loop


def test_untimed_verbs_and_an_explicit_limit(monkeypatch):
    """pipeline, probe, env and scan run without a limit unless one is given; every other verb has the default."""
    from npufit.cli import UNTIMED
    from npufit.util.limits import TIME_LIMIT_S

    assert {"pipeline", "probe", "env", "scan"} <= UNTIMED and "fix" not in UNTIMED
    monkeypatch.setenv("NPUFIT_TIME_LIMIT", "42")
    assert TIME_LIMIT_S.value == 42.0
    monkeypatch.setenv("NPUFIT_TIME_LIMIT", "soon")
    from npufit.errors import NpufitError

    with pytest.raises(NpufitError, match="NPUFIT_TIME_LIMIT must be a number of seconds"):
        TIME_LIMIT_S.value


@pytest.mark.parametrize("case, why", [
    ("loop_no_trip_count", "Loop 'forever' has no trip count and its condition never turns false"),
    ("loop_huge_trip_count", "Loop 'long' runs 4,611,686,018,427,387,904 iterations"),
    ("loop_data_dependent", None),  # the body computes its condition: only the time limit can tell
    ("ansi_names", None),  # no Loop at all
])
def test_endless_loops_are_found_before_a_run(tmp_path, case, why):
    from npufit.verify.loops import endless_loop

    found = endless_loop(mc.build(case, tmp_path))
    assert (found is None) if why is None else (found is not None and found.startswith(why)), found


def test_the_memory_budget_is_one_overridable_fact(tmp_path):
    """One model whose run needs a 400 MiB tensor: refused under --memory-budget 256 (naming the node and the option)
    or NPUFIT_MEMORY_BUDGET=300, run under the default budget."""
    import onnx
    from onnx import TensorProto, helper

    n = [helper.make_node("Expand", ["x", "shape"], ["big"], name="widen"),
         helper.make_node("ReduceSum", ["big"], ["y"], name="sum", keepdims=0)]
    shape = onnx.numpy_helper.from_array(np.array([100, 1024, 1024], np.int64), "shape")
    g = helper.make_graph(n, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])], [shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    p = tmp_path / "wide.onnx"
    onnx.save(m, str(p))
    small = run_verb(["--memory-budget", "256", "bench", p, "-n", "1", "--warmup", "0"], tmp_path, mem_mb=None)
    assert_sane(small, allow_ok=False, needle="node 'widen' (Expand) needs 400 MiB, more than npufit's memory "
                                              "budget of 256 MiB (raise it with npufit --memory-budget MB")
    ok = run_verb(["bench", p, "-n", "1", "--warmup", "0"], tmp_path, mem_mb=None)
    assert ok.rc == 0, ok.describe()
    env = run_verb(["bench", p, "-n", "1", "--warmup", "0"], tmp_path, mem_mb=None, env={"NPUFIT_MEMORY_BUDGET": "300"})
    assert_sane(env, allow_ok=False, needle="memory budget of 300 MiB")


def test_stale_temp_entries_are_told_apart_by_pid_and_lock(tmp_path):
    """A killed run's entry goes; a live writer's stays (its lock is held), even when its pid is another process's."""
    import fcntl

    from npufit.util.io import STALE_UNLOCKED_S, clean_stale

    parent = os.getppid()  # alive, and not this process: the name of an entry some other run made
    dead = tmp_path / ".plan.npufit-tmp-4000000-a"  # above pid_max: never alive
    reused = tmp_path / f".plan.npufit-tmp-{parent}-b"  # a live pid, nobody holds the lock: the pid was reused
    live = tmp_path / f".report.json.npufit-tmp-{parent}-c.json"  # a live pid whose writer holds the lock
    young = tmp_path / f".plan.npufit-tmp-{parent}-d"  # unlocked but just made: its writer may lock it any moment
    for d in (dead, reused, young):
        d.mkdir()
    live.write_text("partial")
    old = time.time() - STALE_UNLOCKED_S - 5
    for p in (reused, live):
        os.utime(p, (old, old))
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        removed = sorted(p.name for p in clean_stale(tmp_path))
    finally:
        os.close(fd)
    assert removed == sorted([dead.name, reused.name])
    assert live.exists() and young.exists()


def test_every_run_cleans_what_killed_runs_left_in_the_temp_folder(tmp_path):
    """Not only the verb that made it: any npufit run removes a killed run's scratch folder from TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    stale = tmp / ".npufit-quantize.npufit-tmp-4000000-q1"
    stale.mkdir()
    (stale / "calib.onnx").write_bytes(b"\0" * 64)
    foreign = tmp / "someone-elses.npufit-tmp-4000000"  # not a name npufit makes (no leading dot): kept
    foreign.mkdir()
    model = cl._small_model(tmp_path)
    o = run_verb(["check", model, "-t", "hailo8"], tmp_path, env={"TMPDIR": str(tmp)})
    assert o.rc == 0, o.describe()
    assert not stale.exists() and foreign.exists()


def test_a_tool_goes_with_its_verb(tmp_path):
    """A vendor tool running when the verb's time limit strikes is stopped with it, never left running."""
    import psutil

    from npufit.envs.process import run_tool
    from npufit.errors import TimeLimitReached
    from npufit.util.limits import verb_time_limit

    with pytest.raises(TimeLimitReached, match="while running sleep"):
        with verb_time_limit("npufit demo", 0.5):
            run_tool(["sleep", "600"], tmp_path / "tool.log")
    assert not [p for p in psutil.Process().children(recursive=True) if p.name() == "sleep"]
