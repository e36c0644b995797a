"""Placement on architectures npufit was never fitted on: record real compiles of the held-out evaluation set
(heldout_archs.py, 20 architectures off issue 14's calibration list) and score today's profiles on them.

    python benchmarks/calibration/heldout.py export
    python benchmarks/calibration/heldout.py record --target rk3588 --build fp16 [--models NAME ...] [--force]
    python benchmarks/calibration/heldout.py score [--records docs/calibration/heldout/*.json] [--wrong]

An evaluation only: no rule of npufit/targets/ cites these records, and none may be changed to raise their scores
(then they would no longer be held out). Recording and replay are the calibration's (build.py, records.py); the
records live in docs/calibration/heldout/, same format. Scores are CPU-fallback precision / recall / F1 per target,
per architecture and pooled; a node the compiler folded away counts as not on the CPU."""
from __future__ import annotations

import argparse
import hashlib
import inspect
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration import build, corpus, heldout_archs, records  # noqa: E402
from calibration.score import _f, _print_wrong  # noqa: E402

ARCHS = heldout_archs.ARCHS
FOLDER = records.RECORDS / "heldout"
OPSET = 17


def _convert_archs_sha() -> str:
    """Fifteen builders live in benchmarks/convert_archs.py: its source keys the exports too."""
    return hashlib.sha256(inspect.getsource(heldout_archs.C).encode()).hexdigest()[:12]


def config_hash(arch, opset: int) -> str:
    return hashlib.sha256(f"{corpus.config_hash(arch, opset)}:{_convert_archs_sha()}".encode()).hexdigest()[:12]


def export(arch, opset: int) -> Path:
    """The ONNX file of a held-out architecture: corpus.export's cache, in a folder of its own per convert_archs source."""
    return corpus.export(arch, opset, corpus.cache_dir() / f"heldout-{_convert_archs_sha()}")


def all_records() -> list[Path]:
    return sorted(FOLDER.glob("*-op*.json"))


def score_record(path: Path) -> dict:
    rec = records.load_record(path)
    ok = [n for n, m in rec["models"].items() if m.get("ok")]
    rows = [records.replay_model(rec, n, model=export(ARCHS[n], rec["opset"])) for n in ok]
    return {"record": path.stem, "target": rec["target"], "build": rec["build"], "versions": rec["compiler_versions"],
            "failed": sorted(set(rec["models"]) - set(ok)), "rows": rows, "pooled": records.pool(rows),
            "families": {f: p for f, p in records.by_family(rows).items() if any(r["family"] == f for r in rows)}}


def _cell(c: dict) -> str:
    return f"{_f(c['f1'])} ({c['tp'] + c['fn']}/{c['fp']}/{c['fn']})"


def _table(results: list[dict]) -> None:
    print("| record | compiler | models (failed) | CPU nodes | precision | recall | F1 | "
          + " | ".join(f"{f} F1 (CPU nodes)" for f in corpus.FAMILIES) + " |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(corpus.FAMILIES))
    for r in results:
        p = r["pooled"]
        fams = " | ".join(f"{_f(r['families'][f]['f1'])} ({r['families'][f]['tp'] + r['families'][f]['fn']})"
                          if f in r["families"] else "-" for f in corpus.FAMILIES)
        print(f"| {r['target']} {r['build']} | {', '.join(r['versions'])} | {len(r['rows'])} ({len(r['failed'])}) | "
              f"{p['tp'] + p['fn']} | {_f(p['precision'])} | {_f(p['recall'])} | {_f(p['f1'])} | {fams} |")
    names = list(dict.fromkeys(row["model"] for r in results for row in r["rows"]))
    print("\nper architecture: F1 (CPU nodes measured / npufit says CPU, compiler did not / compiler CPU, npufit not)\n")
    print("| architecture | family | " + " | ".join(r["record"] for r in results) + " |")
    print("|---|---|" + "---|" * len(results))
    for n in names:
        cells = []
        for r in results:
            row = next((x for x in r["rows"] if x["model"] == n), None)
            cells.append(_cell({**row, **records.f1(row)}) if row else "failed" if n in r["failed"] else "-")
        print(f"| {n} | {ARCHS[n].family} | " + " | ".join(cells) + " |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("export")
    r = sub.add_parser("record")
    r.add_argument("--target", required=True)
    r.add_argument("--build", choices=("fp16", "int8"), required=True)
    r.add_argument("--models", nargs="+", choices=list(ARCHS), default=list(ARCHS))
    r.add_argument("--force", action="store_true", help="re-compile models already recorded from the same export")
    s = sub.add_parser("score")
    s.add_argument("--records", nargs="+", type=Path, default=None)
    s.add_argument("--wrong", action="store_true", help="list every disagreeing node, grouped by op, rule and kind")
    a = ap.parse_args(argv)
    if a.cmd == "export":
        for n, arch in ARCHS.items():
            try:
                print(f"{n:<18} {export(arch, OPSET).name}", flush=True)
            except Exception as e:  # an exporter limit is a fact of the set, not a crash of the script
                print(f"{n:<18} export failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
    elif a.cmd == "record":
        FOLDER.mkdir(parents=True, exist_ok=True)
        build._record(a.target, a.build, OPSET, a.models, a.force, src=sys.modules[__name__], folder=FOLDER)
    else:
        paths = a.records or all_records()
        if not paths:
            ap.error("no record in docs/calibration/heldout/: run `heldout.py record` first")
        for p in paths:
            if not p.is_file():
                ap.error(f"no such record: {p}")
        results = [score_record(p) for p in paths]
        _table(results)
        if a.wrong:
            for r in results:
                print(f"\n{r['record']}: disagreements (count, kind, op, npufit's rules, models)")
                _print_wrong(r["rows"])


if __name__ == "__main__":
    main()
