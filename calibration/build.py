"""Build the calibration corpus and record real-compiler placement on it (issue 14).

    python -m calibration.build export [--opset 17 11]
    python -m calibration.build record --target rk3588 --build fp16 --opset 17 [--models NAME ...]
    python -m calibration.build record --target ethos-u55-256 --build int8 --opset 17
    python -m calibration.build rekey [--records docs/calibration/rk3588-fp16-op17.json ...]

`export` writes the ONNX files to the cache (~/.cache/npufit/calibration, NPUFIT_CALIBRATION_CACHE), offline.
`record` compiles every model one after another (one worker: the machine is shared) and rewrites
docs/calibration/<target>-<build>-op<opset>.json after each model, so a long run leaves data early; models
already in the record with the same export are skipped (--force re-compiles them: after a change to the
placement mapping or the converter). RKNN needs `npufit env install rknn`; Vela goes through
npufit's ONNX -> int8 TFLite converter, and a model it does not take is recorded as not converted, with why."""

from __future__ import annotations

import argparse
import tempfile
import time
import traceback
from pathlib import Path

from npufit.errors import NpufitError

from . import corpus, records
from .judge import compile_onnx, is_rknn


def _export(opsets, names) -> None:
    for op in opsets:
        for n in names:
            t = time.time()
            try:
                p = corpus.export(corpus.ARCHS[n], op)
                print(f"op{op} {n:<34} {time.time() - t:6.1f}s {p.name}", flush=True)
            except Exception as e:  # an exporter limit is a fact of the corpus, not a crash of the script
                print(f"op{op} {n:<34} export failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)


def _record(
    target: str, build: str, opset: int, names, force: bool = False, src=corpus, folder=records.RECORDS
) -> None:
    """`src` names the models (ARCHS, config_hash, export: the calibration corpus, or heldout.py's evaluation set),
    `folder` where their records go."""
    from npufit.graph import load
    from npufit.util.io import atomic_write_json

    path = records.record_path(target, build, opset, folder)
    rec = (
        records.load_record(path)
        if path.is_file()
        else records.empty_record(target, build, opset, "rknn-toolkit2" if is_rknn(target) else "vela")
    )
    for n in names:
        arch = src.ARCHS[n]
        entry: dict = {"family": arch.family, "config_hash": src.config_hash(arch, opset)}
        old = rec["models"].get(n)
        if old and old.get("config_hash") == entry["config_hash"] and not force:
            continue
        t = time.time()
        try:
            onnx = src.export(arch, opset)
        except Exception as e:
            entry.update(ok=False, stage="export", error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        else:
            with tempfile.TemporaryDirectory(prefix="npufit-cal-") as d:
                stage = "compile"
                try:
                    r = compile_onnx(onnx, target, build, Path(d) / "out")
                except NpufitError as e:  # npufit's ONNX -> int8 TFLite converter does not take this model today
                    # keep the gap itself ("no lowering for And '/m/And_1'"), not the message's preamble or way out
                    gap = str(e).split("has no lowering for ", 1)[-1].split("; way out")[0]
                    r, err, stage = None, f"{type(e).__name__}: no lowering for {gap}"[:300], "convert"
                except Exception as e:
                    r, err = None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                    traceback.print_exc()
                if r is not None and r.ok and r.placement:
                    entry.update(ok=True, **records.placement_entry(load(onnx), r.placement))
                    if r.compiler_version and r.compiler_version not in rec["compiler_versions"]:
                        rec["compiler_versions"].append(r.compiler_version)
                    if r.retries:
                        entry["disable_rules"] = r.retries[-1]["disable_rules"]
                else:
                    msg = (r.error if r is not None else err) or "no placement"
                    last = [ln.strip() for ln in msg.splitlines() if ln.strip()]
                    # a toolkit traceback: its first line names the stage, its last line the cause
                    entry.update(
                        ok=False, stage=stage, error=last[0][:120] + (" ... " + last[-1][:200] if len(last) > 1 else "")
                    )
        rec["models"][n] = entry
        atomic_write_json(path, rec)
        cpu = len(entry.get("cpu", {}))
        print(
            f"{target} {build} op{opset} {n:<34} {time.time() - t:6.1f}s "
            f"{'ok' if entry['ok'] else 'FAILED ' + entry.get('error', '')[:120]} cpu={cpu}",
            flush=True,
        )


def rekey(path: Path, src=corpus) -> int:
    """Stamp today's export key (src.config_hash) on every model of a record whose export has not changed: the export
    under the new key must have the recorded op sequence, else the model keeps its old key (and needs re-recording).
    For a move or a reformat of a builder module, which changes no export; returns how many keys changed."""
    from npufit.graph import load
    from npufit.util.io import atomic_write_json

    rec = records.load_record(path)
    changed = 0
    for n, m in rec["models"].items():
        key = src.config_hash(src.ARCHS[n], rec["opset"])
        if m.get("config_hash") == key:
            continue
        if m.get("ok"):
            got = records.ops_sha(load(src.export(src.ARCHS[n], rec["opset"])))
            if got != m["ops_sha"]:
                print(f"{path.name} {n}: the export changed (op sequence {got} != {m['ops_sha']}): re-record it")
                continue
        m["config_hash"], changed = key, changed + 1
    atomic_write_json(path, rec)
    return changed


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--opset", type=int, nargs="+", default=list(corpus.OPSETS))
    e.add_argument("--models", nargs="+", default=list(corpus.ARCHS))
    r = sub.add_parser("record")
    r.add_argument("--target", required=True)
    r.add_argument("--build", choices=("fp16", "int8"), required=True)
    r.add_argument("--opset", type=int, default=17)
    r.add_argument("--models", nargs="+", default=list(corpus.ARCHS))
    r.add_argument("--force", action="store_true", help="re-compile models already recorded from the same export")
    k = sub.add_parser("rekey", help="stamp today's export keys on records whose exports did not change")
    k.add_argument("--records", nargs="+", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.cmd == "export":
        _export(a.opset, a.models)
    elif a.cmd == "rekey":
        for p in a.records or records.all_records():
            print(f"{p.name}: {rekey(p)} keys changed", flush=True)
    else:
        _record(a.target, a.build, a.opset, a.models, a.force)


if __name__ == "__main__":
    main()
