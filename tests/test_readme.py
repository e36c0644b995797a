"""The README is short, names exactly two set-up commands, and its "Use it on your own model" section works as written
on a fresh clone: a new virtualenv, `pip install .`, the `npufit` command on PATH, a check of a model that is not ours."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, f"README has no '## {title}' section"
    return m.group(1)


def test_readme_is_short_and_has_exactly_two_setup_commands():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md is {len(lines)} lines (at most 200: the details live in docs/)"
    block = re.findall(r"```bash\n(.*?)```", _section("Two commands"), re.S)
    commands = [ln.split("#")[0].strip() for b in block for ln in b.splitlines() if ln.strip()]
    assert commands == ["make demo", "make test"]


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text()):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def _tiny_model(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["images", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["out"])],
        "own",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "h", "w"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [w],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))


@pytest.mark.slow
def test_use_it_on_your_own_model_walkthrough_on_a_fresh_clone(tmp_path):
    """Runs the README's block line by line: the clone comes from this repository, the venv and model from tmp_path.
    pip resolves npufit's dependencies from the package index (its cache makes this quick after `make test`)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone from")
    block = re.findall(r"```bash\n(.*?)```", _section("Use it on your own model"), re.S)
    assert block, "the section shows its commands in a bash block"
    commands = [ln.split("  #")[0].strip() for ln in block[0].splitlines() if ln.strip()]
    model = tmp_path / "your_model.onnx"
    _tiny_model(model)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # vendor environments and pip's cache stay where the machine has them: a user's home keeps them too
    env.setdefault("NPUFIT_ENVS", str(Path.home() / ".cache" / "npufit" / "envs"))
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    script = []
    for c in commands:
        c = c.replace("<this repository>", str(ROOT)).replace("path/to/your_model.onnx", str(model))
        if c.startswith("source "):
            c = ". " + c[len("source ") :]
        script.append(c)
    script = ["set -e", f"cd {tmp_path}"] + [
        # `pip install .` in the block is the package from the clone; the wheel alternative is a comment
        c.replace("python3 -m venv", f"{sys.executable} -m venv --clear") if "-m venv" in c else c
        for c in script
    ]
    # the base interpreter, not this test's venv: the walkthrough makes its own
    base = getattr(sys, "_base_executable", sys.executable)
    script = [c.replace(sys.executable, base) for c in script]
    r = subprocess.run(["bash", "-c", "\n".join(script)], env=env, capture_output=True, text=True, timeout=1800)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert (home / "npufit-venv" / "bin" / "npufit").exists(), "the npufit command is installed in the new venv"
    assert "rk3588" in out.lower() or "RK3588" in out, out[-2000:]
    assert re.search(r"(measured|predicted)", out), "check says whether the placement was measured or predicted"
    assert "Traceback" not in out
    # a plain install measures where its compiler comes with it: Vela judges an ONNX model for Ethos-U (through
    # npufit's converter), with no optional extra installed
    npufit_bin = home / "npufit-venv" / "bin" / "npufit"
    r = subprocess.run([str(npufit_bin), "check", str(model), "--target", "ethos-u55-256", "--input-shape",
                        "images=1,3,32,32"], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "placement measured by Vela" in r.stdout, r.stdout[:2000]
