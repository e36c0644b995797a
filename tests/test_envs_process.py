"""Isolated envs: status/list and the measured child process (wall time, peak memory)."""
import sys

import numpy as np

from npufit.envs import list_envs
from npufit.envs.process import run_tool
from npufit.toolchains import env_specs


def test_peak_memory_is_the_childs_not_the_parents(tmp_path):
    ballast = np.ones(300 * 2**20 // 8)  # a fat parent must not inflate the child's figure
    small = run_tool([sys.executable, "-c", "import time; time.sleep(0.3)"], tmp_path / "a.log")
    # the child holds its memory for a while: the parent polls VmHWM, and a loaded machine may run it late
    big = run_tool([sys.executable, "-c", "import time; b = bytearray(250 * 2**20); time.sleep(1.5)"], tmp_path / "b.log")
    assert small.returncode == 0 and small.peak_rss_mb < 100
    assert big.peak_rss_mb > 240 and big.wall_s >= 1.5  # a lower bound: the child slept that long
    assert ballast.sum() > 0


def test_log_and_exit_code_are_kept(tmp_path):
    r = run_tool([sys.executable, "-c", "print('hello'); raise SystemExit(3)"], tmp_path / "x.log")
    assert r.returncode == 3 and "hello" in r.log and "-c" in r.command_line


def test_list_envs_names_install_commands():
    rows = {r["name"]: r for r in list_envs()}
    assert set(rows) == set(env_specs()) == {"rknn", "hailo", "ethos-n"}
    assert rows["rknn"]["install"] == "npufit env install rknn"
    assert "--wheel" in rows["hailo"]["install"]
