"""CPU-fallback F1 of today's profiles on the recorded calibration compiles: whole corpus and leave-one-family-out.

    python -m calibration.score [--records docs/calibration/rk3588-fp16-op17.json ...] [--wrong]
    python -m calibration.score --realworld [--records docs/calibration/realworld/*.json] [--write FILE.md]
        [--disagreements docs/calibration/disagreements.md] [--with-corpus]

--realworld scores the real-world set instead (calibration/loso.py: leave-one-source-out, beside the corpus record of
the same target and build and the sweep record of the target) and can write the table and the disagreement list.

Whole corpus: the shipped profiles against every recorded model. Leave-one-family-out (LOFO): for each family,
the profile with every calibrated condition that only that family's records show switched off, scored on that
family alone. Each condition names its evidence (targets/calibration.py): corpus families, and synthetic cases of a
case record (docs/calibration/<target>-cases.json, graphs outside every family). A condition a case record shows
is evidence the held-out family did not provide, so LOFO keeps it; "LOFO corpus-only" drops it too (the stricter
reading, where only corpus families count). The case records of the scored targets are replayed too (the cases
whose nodes today's profile places otherwise than the compiler did). A node the compiler folded away counts as not
on the CPU. Needs torch + transformers (the models are re-exported from the corpus cache)."""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from . import loso, records
from .corpus import FAMILIES


def score_record(path: Path) -> dict:
    rec = records.load_record(path)
    ok = [n for n, m in rec["models"].items() if m.get("ok")]
    rows = [records.replay_model(rec, n) for n in ok]
    lofo, lofo_rows, strict = {}, [], []
    for fam in FAMILIES:
        names = [n for n in ok if rec["models"][n]["family"] == fam]
        if names:
            fam_rows = [records.replay_model(rec, n, held_out=fam) for n in names]
            lofo[fam] = records.pool(fam_rows)
            lofo_rows += fam_rows
            strict += [records.replay_model(rec, n, held_out=fam, cases=False) for n in names]
    return {
        "record": path.name,
        "lofo_pooled": records.pool(lofo_rows),
        "lofo_strict": records.pool(strict),
        "target": rec["target"],
        "build": rec["build"],
        "opset": rec["opset"],
        "versions": rec["compiler_versions"],
        "models": len(ok),
        "failed": len(rec["models"]) - len(ok),
        "rows": rows,
        "whole": records.pool(rows),
        "families": records.by_family(rows),
        "lofo": lofo,
        "lofo_rows": lofo_rows,
    }


def _f(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", nargs="+", type=Path, default=records.all_records())
    ap.add_argument(
        "--wrong", action="store_true", help="list every disagreeing node, grouped by op (whole corpus, then LOFO)"
    )
    ap.add_argument("--realworld", action="store_true", help="score the real-world set (leave-one-source-out)")
    ap.add_argument("--write", type=Path, help="with --realworld: also write the table to this Markdown file")
    ap.add_argument("--disagreements", type=Path, help="with --realworld: write every disagreement class here")
    ap.add_argument(
        "--with-corpus",
        action="store_true",
        help="with --realworld: add the corpus record's scores (slow: re-judges it)",
    )
    a = ap.parse_args(argv)
    if a.realworld:
        return _realworld(a)
    print(
        "| record | compiler | models (failed) | CPU nodes | precision | recall | F1 | LOFO pooled "
        "| LOFO corpus-only | " + " | ".join(f"LOFO {f} (CPU nodes)" for f in FAMILIES) + " |"
    )
    print("|---|---|---|---|---|---|---|---|---|" + "---|" * len(FAMILIES))
    results = [score_record(p) for p in a.records]
    for r in results:
        w = r["whole"]
        lofo = " | ".join(
            f"{_f(r['lofo'][f]['f1'])} ({r['lofo'][f]['tp'] + r['lofo'][f]['fn']})" if f in r["lofo"] else "-"
            for f in FAMILIES
        )
        print(
            f"| {r['target']} {r['build']} opset {r['opset']} | {', '.join(r['versions'])} | {r['models']} "
            f"({r['failed']}) | "
            f"{w['tp'] + w['fn']} | {_f(w['precision'])} | {_f(w['recall'])} | {_f(w['f1'])} | "
            f"{_f(r['lofo_pooled']['f1'])} | "
            f"{_f(r['lofo_strict']['f1'])} | {lofo} |"
        )
    targets = {r["target"] for r in results}
    cases = [p for p in records.case_records() if records.load_cases(p)["target"] in targets]
    if cases:
        print("\n| case record | compiler | cases | nodes | disagreeing cases (nodes) |\n|---|---|---|---|---|")
    case_rows = {}
    with tempfile.TemporaryDirectory(prefix="npufit-score-") as d:
        for p in cases:
            rec = records.load_cases(p)
            rows = case_rows[p.name] = records.replay_cases(p, Path(d))
            nodes = sum(len(x["got"]) for x in rows)
            print(
                f"| {p.name} | {rec['compiler']} {', '.join(rec['compiler_versions'])} | {len(rows)} | {nodes} | "
                f"{sum(1 for x in rows if x['wrong'])} ({sum(x['wrong'] for x in rows)}) |"
            )
    if a.wrong:
        for name, rows in case_rows.items():
            for x in rows:
                if x["wrong"]:
                    print(f"  {name} {x['case']} ({x['op']}): measured {x['measured']}, npufit {x['got']}")
        for r in results:
            for title, rows in (("whole corpus", r["rows"]), ("leave-one-family-out", r["lofo_rows"])):
                print(f"\n{r['record']}, {title}:")
                _print_wrong(rows)


def _realworld(a) -> None:
    from npufit.util.io import atomic_write_text

    from . import realworld

    paths = a.records if a.records != records.all_records() else realworld.all_records()
    results = [loso.score_realworld(p) for p in paths]
    corpus = {}
    for r in results if a.with_corpus else ():  # the transformer corpus's record of the same target and build
        p = records.record_path(r["target"], r["build"], 17)
        if p.is_file():
            corpus.setdefault(f"{r['target']}-{r['build']}", score_record(p))
    sweeps = loso.sweep_scores()
    lines = loso.table(results, corpus, sweeps)
    print("\n".join(lines))
    if a.write:
        atomic_write_text(a.write, "\n".join(lines) + "\n")
    if a.disagreements:
        atomic_write_text(a.disagreements, "\n".join(loso.disagreements(results, sweeps)) + "\n")


def _print_wrong(rows) -> None:
    groups = Counter((x["op"], x["kind"], x["rules"]) for row in rows for x in row["wrong"])
    for (op, kind, rules), k in groups.most_common():
        models = sorted(
            {
                f"{row['model']} ({row['family']})"
                for row in rows
                for x in row["wrong"]
                if (x["op"], x["kind"], x["rules"]) == (op, kind, rules)
            }
        )
        print(f"  {k:4d} {kind} {op:<22} {rules or '-':<40} {', '.join(models)}")


if __name__ == "__main__":
    main()
