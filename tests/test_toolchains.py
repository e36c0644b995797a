"""One Toolchain record per vendor compiler (npufit/toolchains.py), and every consumer reads it."""
from __future__ import annotations

import pytest

from npufit import compilers, envs, toolchains
from npufit.cli import build_parser
from npufit.errors import NpufitError
from npufit.executors import resources_for_compiler


@pytest.mark.parametrize("tc", toolchains.registered(), ids=lambda t: t.name)
def test_each_consumer_reads_the_record(tc):
    for target in tc.platforms:  # its adapter drives every platform it names, in any case
        assert compilers.compiler_for(target.upper()).toolchain is tc
    assert compilers.adapter(tc).name == tc.name
    assert resources_for_compiler(tc.name) == ({tc.resource: 1} if tc.resource else {})
    if tc.env is not None:
        assert envs.spec(tc.env.name) is tc.env and envs.env_status(tc.env.name)["enables"] == tc.env.enables
    assert build_parser().parse_args(["probe", "--compiler", tc.name]).compiler == tc.name


def test_the_lists_are_the_records():
    names = [t.name for t in toolchains.registered()]
    assert compilers.compiler_names() == names == ["vela", "rknn", "hailo", "ethos-n"]
    assert [s["name"] for s in compilers.status()] == [t.status_name for t in toolchains.registered()]
    assert [e["name"] for e in envs.list_envs()] == ["rknn", "hailo", "ethos-n"]
    assert resources_for_compiler("vela") == {} and resources_for_compiler(None) == {}
    with pytest.raises(NpufitError, match=r"no compiler drives target 'npu9' \(Vela: ethos-u55-32, .*Hailo: hailo8, "):
        compilers.compiler_for("npu9")


def test_a_platform_or_environment_is_one_toolchain_s():
    with pytest.raises(ValueError, match="platform rk3588 belongs to 'rknn'"):
        toolchains.register(toolchains.Toolchain("rk2", "RK2", "x:Y", "rk2", ("rk3588",)))
    with pytest.raises(ValueError, match="environment rknn belongs to 'rknn'"):
        toolchains.register(toolchains.Toolchain("rk2", "RK2", "x:Y", "rk2", ("rk9",), env=toolchains.RKNN.env))
    with pytest.raises(ValueError, match="'vela' is registered already"):
        toolchains.register(toolchains.Toolchain("vela", "Vela", "x:Y", "vela", ()))
    assert toolchains.find("rk2") is None
