"""Scores on the real-world set: CPU-fallback F1 per target, whole and leave-one-source-out, beside the transformer
corpus's, the sweep records' agreement, and every disagreement class in plain words (`python -m calibration.score
--realworld`).

Leave-one-source-out (LOSO): for each source (ultralytics, paddleocr, ...), the profile with every calibrated condition
that only that source's records show switched off (targets/calibration.py's `fit_families`, which names corpus
families and real-world sources alike), scored on that source alone, pooled over the sources. A condition fitted to
one source can only score there if another source, a corpus family or a case record shows it too. Models a compile
failed on are counted apart (failed); a node the compiler folded away counts as not on the CPU."""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from pathlib import Path

from . import form, realworld, records, sweep

FLOAT_SOURCE = "mediapipe"  # float32 TFLite as shipped


def score_realworld(path: Path) -> dict:
    rec = realworld.load(path)
    ok = [n for n, m in rec["models"].items() if m.get("ok")]
    rows = [realworld.replay(rec, n) for n in ok]
    by_src = {s: [r for r in rows if r["family"] == s] for s in realworld.SOURCES}
    loso = {s: [realworld.replay(rec, r["model"], held_out=s) for r in rs] for s, rs in by_src.items() if rs}
    failed = {n: m for n, m in rec["models"].items() if not m.get("ok")}
    return {
        "record": path.name,
        "target": rec["target"],
        "build": rec["build"],
        "versions": rec["compiler_versions"],
        "rows": rows,
        "whole": records.pool(rows),
        "sources": {s: records.pool(rs) for s, rs in by_src.items() if rs},
        "loso": {s: records.pool(rs) for s, rs in loso.items()},
        "loso_pooled": records.pool([r for rs in loso.values() for r in rs]),
        # the shipped MediaPipe files are float32: Vela and the Ethos-N library run none of their ops, and their
        # thousands of CPU nodes would carry a pooled score on their own
        "loso_pooled_int": records.pool([r for s, rs in loso.items() if s != FLOAT_SOURCE for r in rs]),
        "failed": failed,
        "wall_s": sum(m.get("wall_s", 0) for m in rec["models"].values()),
    }


def score_sweep(path: Path) -> dict:
    """A sweep record replayed: cases that agree node for node, and CPU-fallback counts over its nodes."""
    rec = form.load_cases(path)
    with tempfile.TemporaryDirectory(prefix="npufit-sweep-score-") as d:
        rows = records.replay_cases(path, Path(d))
    c = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    wrong = []
    for r in rows:
        case = rec["cases"][r["case"]]
        if isinstance(r["measured"], str):
            continue
        for op, g, m in zip(case["ops"], r["got"], r["measured"]):
            kind = ("tp" if m == "cpu" else "fp") if g in form.OFF else ("fn" if m == "cpu" else "tn")
            c[kind] += 1
            if kind in ("fp", "fn"):
                wrong.append({"case": r["case"], "op": op, "kind": kind})
    failed = [r for r in rows if isinstance(r["measured"], str)]
    return {
        "record": path.name,
        "target": rec["target"],
        "cases": len(rows),
        "agree": sum(1 for r in rows if not r["wrong"]),
        "failed": failed,
        "pool": {**c, **records.f1(c)},
        "wrong": wrong,
    }


def _f(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _cell(p: dict) -> str:
    return f"{_f(p['f1'])} ({p['tp'] + p['fn']})"


def table(results: list[dict], corpus: dict[str, dict], sweeps: dict[str, dict]) -> list[str]:
    """The leave-one-source-out table: one row per record; corpus and sweep columns for the same target."""
    srcs = [s for s in realworld.SOURCES if any(s in r["sources"] for r in results)]
    head = (
        "| target, build | compiler | models (failed) | CPU nodes | precision | recall | F1 | LOSO pooled | "
        + f"LOSO pooled without {FLOAT_SOURCE} | "
        + " | ".join(f"LOSO {s} (CPU nodes)" for s in srcs)
        + " | corpus F1 / LOFO | sweep cases agreeing | compile wall time |"
    )
    lines = [head, "|" + "---|" * (12 + len(srcs))]
    for r in results:
        w = r["whole"]
        cor = corpus.get(f"{r['target']}-{r['build']}")
        sw = sweeps.get(r["target"]) if r["build"] in ("fp16", "int8") else None
        cells = [
            f"{r['target']} {r['build']}",
            ", ".join(r["versions"]) or "-",
            f"{len(r['rows'])} ({len(r['failed'])})",
            str(w["tp"] + w["fn"]),
            _f(w["precision"]),
            _f(w["recall"]),
            _f(w["f1"]),
            _f(r["loso_pooled"]["f1"]),
            _f(r["loso_pooled_int"]["f1"]),
            *(_cell(r["loso"][s]) if s in r["loso"] else "-" for s in srcs),
            f"{_f(cor['whole']['f1'])} / {_f(cor['lofo_pooled']['f1'])}" if cor else "-",
            f"{sw['agree']} / {sw['cases']}" if sw else "-",
            f"{r['wall_s'] / 60:.0f} min",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _gaps(r: dict) -> dict[str, dict[str, int]]:
    """Today's verdicts, summed over the record's models that npufit's converter did not take, per op it named."""
    rec = realworld.load(form.RECORDS / "realworld" / r["record"])
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for mid, m in r["failed"].items():
        if m["stage"] == "convert" and "no lowering" in m["error"]:
            for op, c in realworld.gap_verdicts(rec, mid).items():
                for v, n in c.items():
                    out[op][v] += n
    return {op: dict(c) for op, c in sorted(out.items())}


def _said(kind: str) -> tuple[str, str]:
    return ("off the NPU", "NPU") if kind == "fp" else ("NPU", "CPU")


def disagreements(results: list[dict], sweeps: dict[str, dict]) -> list[str]:
    """Every disagreement class, per target: what npufit said, what the compiler did, the op, the conditions seen, how
    many nodes, and where. Converter gaps (a model npufit's converter could not lower) and failed compiles follow."""
    out = [
        "# Where npufit's prediction and the real compilers disagree",
        "",
        "Written by `python -m calibration.score --realworld --disagreements docs/calibration/disagreements.md` "
        "from the real-world records (docs/calibration/realworld/) and the sweep records (docs/calibration/sweep/), "
        "with today's rules. One line per class: what npufit said, what the compiler did, the operator, the rules "
        "npufit applied (if any), example conditions (shapes and attributes of the nodes), how many nodes, and the "
        "models or sweep cases. This list is the input for the rule changes; it is not a rule.",
        "",
    ]
    targets = sorted({r["target"] for r in results} | set(sweeps))
    for t in targets:
        out += [f"## {t}", ""]
        for r in (x for x in results if x["target"] == t):
            groups: dict = defaultdict(lambda: {"n": 0, "conds": [], "models": set()})
            for row in r["rows"]:
                for x in row["wrong"]:
                    g = groups[(x["kind"], x["op"], x["rules"])]
                    g["n"] += 1
                    g["models"].add(row["model"])
                    if x["condition"] and x["condition"] not in g["conds"]:
                        g["conds"].append(x["condition"])
            out.append(f"### {r['build']} build, real-world set ({len(r['rows'])} models compiled)")
            out.append("")
            if not groups:
                out += ["No disagreement.", ""]
            else:
                out += [
                    "| npufit said | compiler did | op | npufit's rules | conditions (examples) | nodes | models |",
                    "|---|---|---|---|---|---|---|",
                ]
                for (kind, op, rules), g in sorted(groups.items(), key=lambda kv: -kv[1]["n"]):
                    said, did = _said(kind)
                    conds = "; ".join(g["conds"][:3]) + (
                        f"; +{len(g['conds']) - 3} more" if len(g["conds"]) > 3 else ""
                    )
                    models = ", ".join(sorted(g["models"])[:6]) + (" ..." if len(g["models"]) > 6 else "")
                    out.append(f"| {said} | {did} | {op} | {rules or '-'} | {conds} | {g['n']} | {models} |")
                out.append("")
            fails: dict = defaultdict(list)
            for mid, m in r["failed"].items():  # the model's own file name left out, so one cause is one line
                fails[(m["stage"], re.sub(r"^\S+\.(?:tflite|onnx): ", "", m["error"])[:140])].append(mid)
            if fails:
                out += ["Models the compile path did not take (stage: error: models):", ""]
                for (stage, err), mids in sorted(fails.items(), key=lambda kv: -len(kv[1])):
                    more = " ..." if len(mids) > 8 else ""
                    out.append(f"- {stage}: {err.replace('|', '/')}: {len(mids)} ({', '.join(sorted(mids)[:8])}{more})")
                gaps = _gaps(r)
                if gaps:
                    out += [
                        "",
                        "npufit's prediction on the nodes its own converter could not lower (op: verdict x nodes):",
                        "",
                    ]
                    out += [f"- {op}: {', '.join(f'{v} x{n}' for v, n in sorted(c.items()))}" for op, c in gaps.items()]
                out.append("")
        sw = sweeps.get(t)
        if sw:
            groups = defaultdict(list)
            for x in sw["wrong"]:
                groups[(x["kind"], x["op"])].append(x["case"])
            out += [f"### sweep ({sw['agree']} of {sw['cases']} cases agree node for node)", ""]
            if groups:
                out += ["| npufit said | compiler did | op | nodes | sweep cases |", "|---|---|---|---|---|"]
                for (kind, op), cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                    said, did = _said(kind)
                    names = sorted(set(cases))
                    more = " ..." if len(names) > 8 else ""
                    out.append(f"| {said} | {did} | {op} | {len(cases)} | {', '.join(names[:8])}{more} |")
                out.append("")
            if sw["failed"]:
                out += ["Sweep cases the compile path did not take (npufit's verdicts on them in brackets):", ""]
                for r in sw["failed"]:
                    out.append(
                        f"- {r['case']}: {r['measured'][:160].replace('|', '/')} [npufit: {sorted(set(r['got']))}]"
                    )
                out.append("")
    return out


def sweep_scores() -> dict[str, dict]:
    return {p.stem: score_sweep(p) for p in sorted(sweep.FOLDER.glob("*.json"))}
