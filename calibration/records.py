"""Measured placement records (docs/calibration/*.json): write them from real compiles, replay them against
today's profiles.

One record file per (target, build, opset). Per model it keeps the family, the export's config hash, the
node count, a hash of the ONNX op sequence (a replay on a different export fails loudly instead of scoring
the wrong nodes), a placement string with one letter per top-level node in graph order (n: NPU, c: CPU,
f: folded away at compile time) and, for reading, the CPU nodes by name and op."""

from __future__ import annotations

from pathlib import Path

from . import rknn_cases, sweep, vela_cases
from .corpus import ARCHS, FAMILIES, export
from .form import (
    CASES_SCHEMA,
    LETTER,
    OFF,
    RECORDS,
    SCHEMA,
    load_cases,
    load_record,
    ops_sha,
    placement_entry,
    record_path,
)
from .judge import case_verdicts, profile_for, top_verdicts

__all__ = [  # the record format (form.py) and npufit's side (judge.py), re-exported: callers import one module
    "CASES_SCHEMA",
    "LETTER",
    "OFF",
    "RECORDS",
    "SCHEMA",
    "case_verdicts",
    "load_cases",
    "load_record",
    "ops_sha",
    "placement_entry",
    "profile_for",
    "record_path",
]


def empty_record(target: str, build: str, opset: int, compiler: str) -> dict:
    import torch

    try:
        import transformers

        tv = transformers.__version__
    except ImportError:
        tv = None
    return {
        "schema": SCHEMA,
        "target": target,
        "build": build,
        "opset": opset,
        "compiler": compiler,
        "compiler_versions": [],
        "exporter": {"torch": torch.__version__.split("+")[0], "transformers": tv},
        "models": {},
    }


def all_records() -> list[Path]:
    return sorted(RECORDS.glob("*-op*.json"))


# -- replay ---------------------------------------------------------------------------------------------------


def predict(rec: dict, model: Path, held_out: str | None = None, cases: bool = True):
    """npufit's verdict per top-level node of the recorded model, as the record's build would be judged."""
    from npufit.graph import load

    graph = load(model)
    return graph, top_verdicts(graph, profile_for(rec["target"], held_out, cases), rec["build"])


def replay_model(
    rec: dict, name: str, held_out: str | None = None, cases: bool = True, model: Path | None = None
) -> dict:
    """Score today's profile on one recorded model: tp/fp/fn/tn of CPU fallback and the disagreeing nodes. `model`:
    the recorded ONNX file when it is not the calibration corpus's (heldout.py's evaluation set)."""
    m = rec["models"][name]
    graph, verdicts = predict(rec, model or export(ARCHS[name], rec["opset"]), held_out, cases)
    if ops_sha(graph) != m["ops_sha"]:
        raise AssertionError(f"{name}: the export differs from the recorded one (op sequence changed): re-record it")
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    wrong = []
    for n, letter in zip(graph.top_nodes, m["placement"]):
        v = verdicts.get(n.name)
        pred_off = v is not None and v.verdict.value in OFF
        act_off = letter == "c"
        kind = ("tp" if act_off else "fp") if pred_off else ("fn" if act_off else "tn")
        counts[kind] += 1
        if kind in ("fp", "fn"):
            rules = ",".join(r.rule for r in v.reasons) if v is not None else ""
            wrong.append({"node": n.name, "op": n.op_type, "kind": kind, "rules": rules})
    return {"model": name, "family": m["family"], **counts, "wrong": wrong}


def f1(c: dict) -> dict:
    tp, fp, fn = c["tp"], c["fp"], c["fn"]
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0  # no CPU node and none predicted: perfect
    return {"precision": p, "recall": r, "f1": f}


def pool(rows: list[dict]) -> dict:
    c = {k: sum(r[k] for r in rows) for k in ("tp", "fp", "fn", "tn")}
    return {**c, **f1(c)}


def by_family(rows: list[dict]) -> dict[str, dict]:
    return {fam: pool([r for r in rows if r["family"] == fam]) for fam in FAMILIES}


# -- synthetic case records (docs/calibration/<target>-cases.json) ---------------------------------------------


def case_records() -> list[Path]:
    return sorted(RECORDS.glob("*-cases.json"))


def case_builder(rec: dict):
    """The module whose CASES built a case record's graphs: the sweep generator's (sweep.py) where the record names it,
    else rknn_cases.py for RKNN-Toolkit2, vela_cases.py for Vela."""
    if rec.get("builder") == "sweep":
        return sweep
    return rknn_cases if rec["compiler"] == "rknn-toolkit2" else vela_cases


def case_wrong(rec: dict, measured, got: list[str]) -> int:
    """How many nodes of a case the verdicts `got` place otherwise than the compile did. A case the converter rejected
    ("failed: ...") must be judged off the NPU: RKNN rejects the whole model ("unsupported"); on Ethos-U it is npufit's
    converter that has no lowering, so the op cannot reach the NPU (cpu or unsupported)."""
    if isinstance(measured, str):
        want = ("unsupported",) if rec["compiler"] == "rknn-toolkit2" else OFF
        if rec.get("builder") == "sweep":  # every node of the graph judged: some node must be judged so
            return int(not any(g in want for g in got))
        return int(not got or any(g not in want for g in got))
    if len(got) != len(measured):
        raise AssertionError(f"{len(got)} nodes judged, {len(measured)} recorded: the case graph changed, re-record it")
    return sum((g in OFF) != (m == "cpu") for g, m in zip(got, measured))


def replay_cases(path: Path, folder: Path, held_out: str | None = None, cases: bool = True, names=None) -> list[dict]:
    """Today's profile (or the one fitted without `held_out`, see profile_for) on every case of a case record (or
    those in `names`): per case its op, the recorded placement, npufit's verdicts and how many nodes disagree."""
    import tempfile

    rec = load_cases(path)
    mod = case_builder(rec)
    prof = profile_for(rec["target"], held_out, cases)
    folder = Path(tempfile.mkdtemp(dir=folder))  # its own: a graph npufit has read is never written over in a run
    rows = []
    for name, case in rec["cases"].items():
        if names is not None and name not in names:
            continue
        got = case_verdicts(mod.export_case(name, folder), case["op"], prof, case.get("build", rec["build"]))
        rows.append(
            {
                "case": name,
                "op": case["op"],
                "measured": case["placement"],
                "got": got,
                "wrong": case_wrong(rec, case["placement"], got),
            }
        )
    return rows
