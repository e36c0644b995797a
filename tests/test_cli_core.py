"""The CLI edge: help/version, one-line errors with exit 2, formats, --fail-under, generated docs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from npufit.cli import COMMANDS, build_parser, main
from tests.onnx_builders import branchy_model

ROOT = Path(__file__).resolve().parents[1]


def npufit(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "npufit", *map(str, args)], capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def branchy(tmp_path):
    p = tmp_path / "branchy.onnx"
    onnx.save_model(branchy_model(), str(p))
    return p


def test_version_and_help():
    r = npufit("--version")
    assert r.returncode == 0 and r.stdout.startswith("npufit ")
    r = npufit("--help")
    assert r.returncode == 0 and "check" in r.stdout


def test_every_command_has_help(capsys):
    parser = build_parser()
    verbs = [a for a in parser._subparsers._group_actions[0].choices]  # noqa: SLF001 - argparse has no public API
    assert "check" in verbs and "doctor" in verbs and "targets" in verbs
    for verb in verbs:
        assert verb in COMMANDS
        assert main([verb, "--help"]) == 0  # a return code for library callers, not a SystemExit
        assert "usage: npufit" in capsys.readouterr().out


@pytest.mark.parametrize("make", ["missing", "dir", "empty", "garbage", "truncated"])
def test_bad_input_is_one_line_exit_2(tmp_path, make):
    p = tmp_path / "m.onnx"
    if make == "dir":
        p = tmp_path
    elif make == "empty":
        p.write_bytes(b"")
    elif make == "garbage":
        p.write_text("this is not a model\n")
    elif make == "truncated":
        p.write_bytes(branchy_model().SerializeToString()[:100])
    r = npufit("check", p, "--target", "hailo8")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("npufit: error:"), r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_target(branchy):
    r = npufit("check", branchy, "--target", "nope")
    assert r.returncode == 2 and "unknown target 'nope'" in r.stderr


def test_formats_and_output_file(branchy, tmp_path):
    out = tmp_path / "r" / "report.json"
    r = npufit("check", branchy, "--target", "hailo8", "--format", "json", "--output", out)
    assert r.returncode == 0 and out.exists()
    d = json.loads(out.read_text())
    assert d["summary"]["counts"]["unsupported"] == 1
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp files left behind
    md = npufit("check", branchy, "--target", "hailo8", "--format", "markdown").stdout
    assert "## Nodes not on the NPU" in md and "`mod`" in md
    table = npufit("check", branchy, "--target", "hailo8").stdout
    assert "coverage" in table and "mod" in table and "--end-node-names relu1 sig_aux" in table


def test_fail_under_gate(branchy):
    assert npufit("check", branchy, "--target", "hailo8", "--fail-under", "50").returncode == 0
    r = npufit("check", branchy, "--target", "hailo8", "--fail-under", "99")
    assert r.returncode == 1 and "below --fail-under" in r.stderr


def test_doctor_runs():
    r = npufit("doctor", "--format", "json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert {c["name"] for c in d["core"]} >= {"python", "onnx", "onnxruntime", "torch"}


def test_generated_target_docs_are_fresh():
    """docs/targets/<t>.md is rendered from the profile: regenerate with `npufit targets --write-docs docs/targets`."""
    from npufit.report.targets_doc import render_profile_markdown
    from npufit.targets import available_targets, get_profile

    stale = []
    for name in available_targets():
        doc = ROOT / "docs" / "targets" / f"{name}.md"
        if not doc.exists() or doc.read_text() != render_profile_markdown(get_profile(name)):
            stale.append(name)
    assert not stale, f"stale docs/targets for {stale}: run `npufit targets --write-docs docs/targets`"
