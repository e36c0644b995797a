"""Executors: one interface, crashes and timeouts are outcomes; compile over many models runs on them."""
from __future__ import annotations

import pytest

from npufit.executors import Task, get_executor
from tests.onnx_builders import write_zoo


@pytest.mark.parametrize("name", ["pool", "inprocess"])
def test_a_crash_or_a_bad_task_is_an_outcome_not_the_end(name):
    tasks = [Task("math:sqrt", 4.0), Task("math:sqrt", -1.0), Task("math:sqrt", 9.0)]
    if name == "pool":  # only a separate process can be killed or die without taking the batch down
        tasks += [Task("os:_exit", 3), Task("time:sleep", 3600)]
    with get_executor(name, 2) as ex:
        out = ex.map(tasks, timeout=20)  # far beyond a square root on a loaded machine; the sleeper never finishes
    assert [o.status for o in out[:3]] == ["ok", "error", "ok"] and out[2].value == 3.0
    if name == "pool":
        assert out[3].status == "error" and "exit code 3" in out[3].error
        assert out[4].status == "timeout" and "20 s" in out[4].error


def test_compile_many_models_in_parallel_one_failure_is_a_result(tmp_path):
    from npufit.compilers.batch import compile_many
    from npufit.compilers.vela import vela_version

    if vela_version() is None:
        pytest.skip("Vela is not installed (pip install 'ethos-u-vela==5.2.0')")
    pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed")
    paths = write_zoo(tmp_path / "zoo", 2)  # model 0 has a Mod (no int8 lowering), model 1 converts and compiles
    results = compile_many([str(p) for p in paths], "ethos-u55-128", executor="pool", jobs=2, out_dir=tmp_path / "out")
    assert [r["model"] for r in results] == [str(p) for p in paths]
    assert not results[0]["ok"] and "Mod" in results[0]["error"]
    assert results[1]["ok"] and results[1]["summary"]["npu"] > 0 and results[1]["compiler"] == "vela"
    assert (tmp_path / "out" / "model_001-ethos-u55-128").is_dir()
