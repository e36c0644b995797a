"""`npufit check MODEL --target all|list`: the node × target grid."""
from __future__ import annotations

import json

import pytest

from npufit.check.grid import check_grid
from npufit.cli import main
from npufit.graph import load

from .quant_builders import quantized_detector


@pytest.fixture(scope="module")
def leaky(tmp_path_factory):
    return quantized_detector("leakyrelu", tmp_path_factory.mktemp("grid"))


def test_grid_reports_and_rows(leaky):
    grid = check_grid(load(leaky), ["ethos-n78", "ethos-u55-256", "rk3588"])
    assert set(grid.reports) == {"ethos-n78", "ethos-u55-256", "rk3588"}
    rows = {r["node"]: r["verdicts"] for r in grid.rows()}
    leaky_node = next(n for n in rows if n.endswith("stem.2/LeakyRelu"))
    assert rows[leaky_node] == {"ethos-n78": "cpu", "ethos-u55-256": "npu", "rk3588": "npu"}
    s = {x["target"]: x for x in grid.summaries()}
    assert s["ethos-n78"]["extra_qdq_ops"] == 15 and s["ethos-u55-256"]["fully_npu"]
    assert "| ethos-n78 | 58.0% |" in grid.render("markdown")


def test_cli_target_all(leaky, capsys):
    assert main(["check", leaky, "--target", "all", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "npufit.check_grid/1"
    assert {"ethos-n78", "ethos-u55-128", "ethos-u85-2048", "rk3588"} <= {t["target"] for t in d["targets"]}
    assert main(["check", leaky, "--target", "ethos-n78,rk3588"]) == 0
    out = capsys.readouterr().out
    assert "per target" in out and "extra Q/DQ ops" in out


@pytest.mark.parametrize("width", [80, 120])
def test_all_targets_grid_keeps_node_and_op_readable_on_narrow_terminals(leaky, width):
    from npufit.report.console import console_to_string
    from npufit.targets import available_targets

    grid = check_grid(load(leaky), available_targets())
    text = console_to_string(grid._print, width=width)
    leaky_node = next(r["node"] for r in grid.rows() if r["node"].endswith("stem.2/LeakyRelu"))
    # before: 12 target columns squeezed node and op to zero width at 80 and 120 columns
    assert leaky_node.split("/")[-1] in text and "LeakyRelu" in text
    assert "n78 cpu" in text
    assert max(len(line) for line in text.splitlines()) <= width
