"""Placement on architectures npufit was never fitted on: record real compiles of a held-out evaluation set and score
today's profiles on them. Three sets, none on the calibration list (hf_archs.py, torch_archs.py) nor on another:
`heldout` (heldout_archs.py, 20 architectures) and `heldout2` (heldout2_archs.py, 16 others), both read while rules
were improved, so rules changed since are not blind to them; `heldout3` (heldout3_archs.py), recorded to stay unread:
scored, never looked at to change a rule.

    python -m calibration.heldout [--set SET] export
    python -m calibration.heldout [--set SET] record --target rk3588 --build fp16 [--models NAME ...] [--force]
    python -m calibration.heldout [--set SET] rekey
    python -m calibration.heldout [--set SET] score [--records docs/calibration/heldout2/*.json] [--wrong]

An evaluation only: no rule of npufit/targets/ cites these records, and none may be changed to raise their scores
(then they would no longer be held out). Recording and replay are the calibration's (build.py, records.py); the
records live in docs/calibration/<set>/, same format. Scores are CPU-fallback precision / recall / F1 per target,
per architecture and pooled; a node the compiler folded away counts as not on the CPU."""

from __future__ import annotations

import argparse
import hashlib
import inspect
from pathlib import Path

from . import build, corpus, heldout2_archs, heldout3_archs, heldout_archs, records
from .judge import is_rknn
from .score import _f, _print_wrong

OPSET = 17


class EvalSet:
    """One held-out set: its architectures, its record folder and its exports (what build._record takes as `src`)."""

    def __init__(self, name: str, archs, shared_source: str):
        self.name, self.ARCHS, self.folder = name, archs.ARCHS, records.RECORDS / name
        # the set's module is in corpus.config_hash already; what it imports that decides the exports keys them too
        self._shared = hashlib.sha256(corpus.code_key(shared_source).encode()).hexdigest()[:12]

    def config_hash(self, arch, opset: int) -> str:
        return hashlib.sha256(f"{corpus.config_hash(arch, opset)}:{self._shared}".encode()).hexdigest()[:12]

    def export(self, arch, opset: int) -> Path:
        """corpus.export's cache, in a folder of its own per set and shared source."""
        return corpus.export(arch, opset, corpus.cache_dir() / f"{self.name}-{self._shared}")

    def all_records(self) -> list[Path]:
        return sorted(self.folder.glob("*-op*.json"))

    def score_record(self, path: Path) -> dict:
        rec = records.load_record(path)
        ok = [n for n, m in rec["models"].items() if m.get("ok")]
        rows = [records.replay_model(rec, n, model=self.export(self.ARCHS[n], rec["opset"])) for n in ok]
        return {
            "record": path.stem,
            "target": rec["target"],
            "build": rec["build"],
            "versions": rec["compiler_versions"],
            "failed": sorted(set(rec["models"]) - set(ok)),
            "rows": rows,
            "pooled": records.pool(rows),
            "families": {f: p for f, p in records.by_family(rows).items() if any(r["family"] == f for r in rows)},
        }


SETS = {  # the first set's fifteen convert_archs.py builders: that file's source keys its exports
    "heldout": EvalSet("heldout", heldout_archs, inspect.getsource(heldout_archs.C)),
    "heldout2": EvalSet("heldout2", heldout2_archs, heldout2_archs.shared_source()),
    "heldout3": EvalSet("heldout3", heldout3_archs, heldout3_archs.shared_source()),
}
HELDOUT = SETS["heldout"]
ARCHS, FOLDER, export, all_records, score_record = (
    HELDOUT.ARCHS,
    HELDOUT.folder,
    HELDOUT.export,
    HELDOUT.all_records,
    HELDOUT.score_record,
)  # the first set's names


def record(es: EvalSet, target: str, build_: str, names, force: bool = False) -> None:
    """build.py's recorder, one child process per model: a converter or compiler that aborts in native code takes its
    process with it, and is recorded as a failed model with its exit status while the rest go on."""
    import multiprocessing as mp

    from npufit.util.io import atomic_write_json

    path = records.record_path(target, build_, OPSET, es.folder)
    for n in names:
        p = mp.get_context("fork").Process(
            target=build._record, args=(target, build_, OPSET, [n], force), kwargs={"src": es, "folder": es.folder}
        )
        p.start()
        p.join()
        if p.exitcode:
            rec = (
                records.load_record(path)
                if path.is_file()
                else records.empty_record(target, build_, OPSET, "rknn-toolkit2" if is_rknn(target) else "vela")
            )
            how = f"signal {-p.exitcode}" if p.exitcode < 0 else f"exit code {p.exitcode}"
            rec["models"][n] = {
                "family": es.ARCHS[n].family,
                "config_hash": es.config_hash(es.ARCHS[n], OPSET),
                "ok": False,
                "stage": "compile",
                "error": f"the convert + compile process died ({how})",
            }
            atomic_write_json(path, rec)
            print(f"{target} {build_} op{OPSET} {n:<34} FAILED process died ({how})", flush=True)


def _cell(c: dict) -> str:
    return f"{_f(c['f1'])} ({c['tp'] + c['fn']}/{c['fp']}/{c['fn']})"


def _table(results: list[dict], archs: dict) -> None:
    print(
        "| record | compiler | models (failed) | CPU nodes | precision | recall | F1 | "
        + " | ".join(f"{f} F1 (CPU nodes)" for f in corpus.FAMILIES)
        + " |"
    )
    print("|---|---|---|---|---|---|---|" + "---|" * len(corpus.FAMILIES))
    for r in results:
        p = r["pooled"]
        fams = " | ".join(
            f"{_f(r['families'][f]['f1'])} ({r['families'][f]['tp'] + r['families'][f]['fn']})"
            if f in r["families"]
            else "-"
            for f in corpus.FAMILIES
        )
        print(
            f"| {r['target']} {r['build']} | {', '.join(r['versions'])} | {len(r['rows'])} ({len(r['failed'])}) | "
            f"{p['tp'] + p['fn']} | {_f(p['precision'])} | {_f(p['recall'])} | {_f(p['f1'])} | {fams} |"
        )
    names = list(dict.fromkeys(row["model"] for r in results for row in r["rows"]))
    print(
        "\nper architecture: F1 (CPU nodes measured / npufit says CPU, compiler did not / compiler CPU, npufit not)\n"
    )
    print("| architecture | family | " + " | ".join(r["record"] for r in results) + " |")
    print("|---|---|" + "---|" * len(results))
    for n in names:
        cells = []
        for r in results:
            row = next((x for x in r["rows"] if x["model"] == n), None)
            cells.append(_cell({**row, **records.f1(row)}) if row else "failed" if n in r["failed"] else "-")
        print(f"| {n} | {archs[n].family} | " + " | ".join(cells) + " |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=list(SETS), default="heldout", help="which held-out set (default: the first)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("export")
    r = sub.add_parser("record")
    r.add_argument("--target", required=True)
    r.add_argument("--build", choices=("fp16", "int8"), required=True)
    r.add_argument("--models", nargs="+", default=None, help="default: every architecture of the set")
    r.add_argument("--force", action="store_true", help="re-compile models already recorded from the same export")
    sub.add_parser("rekey", help="stamp today's export keys on the set's records whose exports did not change")
    s = sub.add_parser("score")
    s.add_argument("--records", nargs="+", type=Path, default=None)
    s.add_argument("--wrong", action="store_true", help="list every disagreeing node, grouped by op, rule and kind")
    a = ap.parse_args(argv)
    es = SETS[a.set]
    if a.cmd == "export":
        for n, arch in es.ARCHS.items():
            try:
                print(f"{n:<20} {es.export(arch, OPSET).name}", flush=True)
            except Exception as e:  # an exporter limit is a fact of the set, not a crash of the script
                print(f"{n:<20} export failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
    elif a.cmd == "rekey":
        for p in es.all_records():
            print(f"{a.set}/{p.name}: {build.rekey(p, es)} keys changed", flush=True)
    elif a.cmd == "record":
        unknown = sorted(set(a.models or ()) - set(es.ARCHS))
        if unknown:
            ap.error(f"not in the {a.set} set: {', '.join(unknown)} (it has: {', '.join(es.ARCHS)})")
        es.folder.mkdir(parents=True, exist_ok=True)
        record(es, a.target, a.build, a.models or list(es.ARCHS), a.force)
    else:
        paths = a.records or es.all_records()
        if not paths:
            ap.error(f"no record in docs/calibration/{a.set}/: run `heldout.py --set {a.set} record` first")
        for p in paths:
            if not p.is_file():
                ap.error(f"no such record: {p}")
        results = [es.score_record(p) for p in paths]
        _table(results, es.ARCHS)
        if a.wrong:
            for r in results:
                print(f"\n{r['record']}: disagreements (count, kind, op, npufit's rules, models)")
                _print_wrong(r["rows"])


if __name__ == "__main__":
    main()
