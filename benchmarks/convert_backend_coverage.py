"""npufit's ONNX -> int8 TFLite converter over the ONNX backend test suite's single-operator models: per op, how many
of its float cases convert, agree with ONNX Runtime, and run on Vela's NPU (ethos-u55-256), and why not.

    python benchmarks/convert_backend_coverage.py [--only Conv Relu ...] [--target ethos-u55-256]
        [--write docs/convert-coverage.md] [--json rows.json]

The cases: onnx/backend/test/data/node/*/model.onnx of the installed `onnx` wheel. Wheels that no longer ship that
folder (onnx 1.23) ship the generators it is written from (onnx.backend.test.case.node): the same models and test
data are then written once to ~/.cache/npufit/onnx-backend/<onnx version>/ (NPUFIT_BACKEND_CACHE). A case counts
when it is one node whose first input and every output are tensors and whose first input is float32 (the activation);
its other inputs (weights, shapes, indices, k, a second operand) become constants with the case's own test values,
as an exporter writes them. Calibration and verification use the case's own test input (one sample): LiteRT int8
vs ONNX Runtime float, min cosine over the outputs (index outputs: share of equal indices); verified at >= 0.99
(>= 0.9 agreement). NPU: every TFLite op of the converted file on Vela's NPU. The `--write` Markdown is
docs/convert-coverage.md. About 7 minutes for all cases on the shared 2-core machine, one case at a time."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VERIFIED_COS, VERIFIED_AGREE = 0.99, 0.9
CASE_TIMEOUT_S = 120


def case_folder() -> Path:
    """The node cases as the wheel ships them, or written once from the wheel's generators."""
    import onnx

    shipped = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    if shipped.is_dir() and any(shipped.iterdir()):
        return shipped
    root = Path(os.environ.get("NPUFIT_BACKEND_CACHE", Path.home() / ".cache" / "npufit" / "onnx-backend"))
    folder = root / onnx.__version__ / "node"
    done = folder / ".complete"
    if done.exists():
        return folder
    import warnings

    from onnx import numpy_helper
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    for case in cases:
        d = folder / case.name
        (d / "test_data_set_0").mkdir(parents=True, exist_ok=True)
        (d / "model.onnx").write_bytes(case.model.SerializeToString())
        inputs, outputs = case.data_sets[0]
        g = case.model.graph
        for kind, values, infos in (("input", inputs, g.input), ("output", outputs, g.output)):
            for j, (v, info) in enumerate(zip(values, infos)):
                if not info.type.HasField("tensor_type"):
                    continue
                t = v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(v, info.name)
                (d / "test_data_set_0" / f"{kind}_{j}.pb").write_bytes(t.SerializeToString())
    done.write_text(f"{len(cases)} cases from onnx {onnx.__version__}\n")
    return folder


def _tensor(path: Path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def prepare_case(d: Path, work: Path):
    """-> (op, model path with the non-first inputs made constants, feeds, None) or (op, None, None, why skipped)."""
    import onnx
    from onnx import TensorProto, numpy_helper

    m = onnx.load(str(d / "model.onnx"))
    g = m.graph
    op = g.node[0].op_type if len(g.node) == 1 else None
    if op is None:
        return None, None, None, "not one node"
    if not g.input or not all(v.type.HasField("tensor_type") for v in list(g.input) + list(g.output)):
        return op, None, None, "a sequence, map or optional input or output"
    if g.input[0].type.tensor_type.elem_type != TensorProto.FLOAT:
        return op, None, None, "the first input is not float32"
    data = d / "test_data_set_0"
    values = [
        _tensor(data / f"input_{j}.pb") if (data / f"input_{j}.pb").exists() else None for j in range(len(g.input))
    ]
    if values[0] is None:
        return op, None, None, "no test input"
    keep = [g.input[0]]
    for info, v in zip(list(g.input)[1:], values[1:]):
        g.initializer.append(numpy_helper.from_array(v, info.name))
    del g.input[:]
    g.input.extend(keep)
    x = g.input[0].type.tensor_type.shape
    del x.dim[:]
    for n in values[0].shape:
        x.dim.add().dim_value = int(n)
    path = work / "model.onnx"
    onnx.save(m, str(path))
    return op, path, [{g.input[0].name: values[0]}], None


def run_case(d: Path, target: str, work: Path) -> dict:
    """One case in its own folder `work` (kept until the run ends: npufit refuses to write over a file of the same
    process's inputs, known by inode, and a freed inode comes back for the next case's files)."""
    row: dict = {"case": d.name}
    op, src, feeds, skip = prepare_case(d, work)
    row["op"] = op
    if skip:
        row["skip"] = skip
        return row
    _convert_and_compile(row, src, feeds, target, work)
    row["check"], row["check_agrees"] = _check(src, target, row)
    return row


def _check(src: Path, target: str, row: dict) -> tuple[str, bool]:
    """`npufit check`'s verdict for the case's node, and whether it is what happened: `unsupported` where the
    converter refused the node, else Vela's placement (cpu when any of the node's TFLite ops ran on the CPU)."""
    import npufit
    from npufit.errors import NpufitError

    try:
        nodes = [n for n in npufit.check(src, target, measure="never").nodes if n.verdict.value != "folded"]
    except NpufitError as e:
        return f"error: {' '.join(str(e).replace(str(src), 'model.onnx').split())[:80]}", False
    v = nodes[0].verdict.value if nodes else "folded"
    if not row.get("converted"):
        return v, v == "unsupported"
    if not row.get("compiled"):
        return v, False
    return v, v == ("cpu" if row.get("cpu_ops") else "npu") or (v == "folded" and not row.get("npu_ops"))


def _convert_and_compile(row: dict, src: Path, feeds, target: str, work: Path) -> None:
    """Convert (calibrated on the case's input), verify, compile with Vela: the facts go into `row`."""
    import numpy as np

    from npufit.compilers import compile_model
    from npufit.convert import convert, verify_tflite
    from npufit.errors import NpufitError

    cal = work / "cal.npz"
    np.savez(cal, **{k: v[None] if v.ndim == 0 else v for k, v in feeds[0].items()})
    try:
        res = convert(src, work / "m.tflite", calibration=str(cal), samples=1, verify=None)
    except (NpufitError, ValueError, RuntimeError, KeyError, IndexError, TypeError, AttributeError) as e:
        row.update(converted=False, why=_gap(str(e).replace(str(src), "model.onnx")))  # the run's own folder: not news
        return
    row.update(converted=True, tflite_ops=dict(res.op_counts), activations=res.activations)
    try:
        v = verify_tflite(res.path, src, feeds, io=res.io)
        cos = [d["cosine"] for d in v.per_output.values() if "agreement" not in d]
        agree = [d["agreement"] for d in v.per_output.values() if "agreement" in d]
        row["cosine"] = min(cos) if cos else None
        row["agreement"] = min(agree) if agree else None
        row["verified"] = bool(
            all(c >= VERIFIED_COS for c in cos if c == c)
            and all(a >= VERIFIED_AGREE for a in agree)
            and all(c == c for c in cos)
        )
    except (NpufitError, ValueError, RuntimeError) as e:
        row.update(verified=False, why=f"verification: {' '.join(str(e).split())[:160]}")
    try:
        if not res.ops:  # an identity (Sum of one input, Dropout ...): nothing to place
            row.update(compiled=True, npu_ops=0, cpu_ops=0)
            return
        r = compile_model(str(res.path), target, out_dir=str(work / "vela"), timeout_s=120)
        cpu = [p for p in r.placement if p.device == "cpu"]
        row.update(compiled=r.ok, npu_ops=sum(p.device == "npu" for p in r.placement), cpu_ops=len(cpu))
        if not r.ok:
            row["vela_why"] = " ".join((r.error or "").split())[:160]
        elif cpu:
            row["vela_why"] = "; ".join(dict.fromkeys(p.reason for p in cpu))[:200]
    except NpufitError as e:
        row.update(compiled=False, vela_why=" ".join(str(e).split())[:160])


def _gap(msg: str) -> str:
    """The converter's reason, without the preamble and the way out (the case file names are not the user's)."""
    msg = " ".join(msg.split())
    if "has no lowering for " in msg:
        msg = msg.split("has no lowering for ", 1)[1].split("; way out")[0]
        return "no lowering: " + msg
    return msg[:200]


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout


def run(cases: list[Path], target: str, progress: bool = True) -> list[dict]:
    rows = []
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.time()
    tmp = tempfile.TemporaryDirectory(prefix="npufit-cov-")
    for k, d in enumerate(cases):
        signal.alarm(CASE_TIMEOUT_S)
        work = Path(tmp.name) / str(k)
        work.mkdir()
        try:
            row = run_case(d, target, work)
        except _Timeout:
            row = {"case": d.name, "op": None, "converted": False, "why": f"over {CASE_TIMEOUT_S} s"}
        finally:
            signal.alarm(0)
        rows.append(row)
        if progress:
            state = row.get("skip") or ("converted" if row.get("converted") else row.get("why", ""))
            print(
                f"[{k + 1}/{len(cases)} {time.time() - t0:6.0f}s] {d.name}: {state}"[:160], file=sys.stderr, flush=True
            )
    return rows


def by_op(rows: list[dict]) -> dict[str, dict]:
    ops: dict[str, dict] = defaultdict(
        lambda: {"cases": 0, "converted": 0, "verified": 0, "npu": 0, "check": 0, "why": [], "check_off": []}
    )
    for r in rows:
        if r.get("skip") or not r.get("op"):
            continue
        o = ops[r["op"]]
        o["cases"] += 1
        o["converted"] += bool(r.get("converted"))
        o["verified"] += bool(r.get("verified"))
        o["npu"] += bool(r.get("compiled") and not r.get("cpu_ops"))
        o["check"] += bool(r.get("check_agrees"))
        if not r.get("check_agrees"):
            o["check_off"].append(f"{r['case'].removeprefix('test_')}: check said {r.get('check')}")
        why = (
            r.get("why")
            if not r.get("converted")
            else (
                r.get("vela_why")
                if r.get("cpu_ops") or not r.get("compiled")
                else (None if r.get("verified") else f"cosine {r.get('cosine')}, agreement {r.get('agreement')}")
            )
        )
        if why:
            o["why"].append(f"{r['case'].removeprefix('test_')}: {why}")
    return dict(sorted(ops.items()))


def markdown(rows: list[dict], target: str, seconds: float | None = None) -> str:
    import onnx

    from npufit.compilers.vela import vela_version

    ops = by_op(rows)
    cases = [r for r in rows if not r.get("skip") and r.get("op")]
    conv = sum(bool(r.get("converted")) for r in cases)
    ver = sum(bool(r.get("verified")) for r in cases)
    npu = sum(bool(r.get("compiled") and not r.get("cpu_ops")) for r in cases)
    full = [op for op, o in ops.items() if o["converted"] == o["cases"]]
    some = [op for op, o in ops.items() if 0 < o["converted"] < o["cases"]]
    took = f", {seconds:.0f} s for all {len(rows)} cases" if seconds is not None else ""
    lines = [
        f"- run: {time.strftime('%Y-%m-%d')}, onnx {onnx.__version__}, Vela {vela_version()}, target {target}, "
        f"one case at a time in one process{took}",
        f"- cases: {len(cases)} float single-operator cases of {len(ops)} ops (onnx {onnx.__version__}); "
        f"{len(rows) - len(cases)} other cases skipped (not one node, no float32 first input, sequences / optionals)",
        f"- converted: {conv}/{len(cases)} cases; every case of {len(full)} ops, some cases of {len(some)} more, "
        f"none of {len(ops) - len(full) - len(some)}",
        f"- verified (LiteRT int8 vs ONNX Runtime, cosine >= {VERIFIED_COS}, index agreement >= {VERIFIED_AGREE}): "
        f"{ver}/{conv} converted cases",
        f"- every TFLite op on the NPU ({target}, Vela 5.2.0): {npu}/{conv} converted cases",
        f"- `npufit check --target {target}` says what happened (`unsupported` where the converter refused the node, "
        f"else Vela's placement): {sum(bool(r.get('check_agrees')) for r in cases)}/{len(cases)} cases",
        "",
        "| op | converts | verified | NPU on Vela | check agrees | reason (case: why) |",
        "|---|---|---|---|---|---|",
    ]
    for op, o in ops.items():
        notes = o["why"] + o["check_off"]
        why = "<br>".join(notes[:3]) + (f"<br>+{len(notes) - 3} more" if len(notes) > 3 else "")
        lines.append(
            f"| {op} | {o['converted']}/{o['cases']} | {o['verified']}/{o['converted']} | "
            f"{o['npu']}/{o['converted']} | {o['check']}/{o['cases']} | {why.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="op types (e.g. Conv HardSigmoid)")
    ap.add_argument("--target", default="ethos-u55-256")
    ap.add_argument("--write", help="write the Markdown table here (docs/convert-coverage.md)")
    ap.add_argument("--json", help="write the per-case rows here")
    args = ap.parse_args(argv)
    folder = case_folder()
    cases = sorted(p.parent for p in folder.glob("*/model.onnx"))
    if args.only:
        import onnx

        want = set(args.only)
        cases = [d for d in cases if {n.op_type for n in onnx.load(str(d / "model.onnx")).graph.node} & want]
    t0 = time.time()
    rows = run(cases, args.target)
    text = markdown(rows, args.target, time.time() - t0)
    print(text)
    print(f"{len(cases)} cases in {time.time() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    if args.write:
        from npufit.util.io import atomic_write_text

        head = Path(args.write).read_text().split("<!-- table -->")[0] if Path(args.write).exists() else ""
        atomic_write_text(args.write, (head + "<!-- table -->\n" if head else "") + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
