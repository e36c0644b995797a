"""The report of a pipeline results folder (what `npufit pipeline run` wrote): overview, training curves,
per model and target the placement graph, cut points, reasons and fixes, split verification, quantization
error, compile time/memory, benchmarks, environment. Reads pipeline.json and each cell's step.json.

Results of verbs built elsewhere (split, quantize, compile, bench) are rendered from their to_dict():
known fields get their own tables and charts, the rest is shown as labelled tables (html.fields_html). Rows that
say the same thing for several models (a runtime skipped for want of a GPU) are shown once, with the models named.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from ..errors import NpufitError
from ..pipeline.results import StaleResult, parse_result
from ..util.io import atomic_write_text
from ..util.readers import confined, read_json
from .html import cards, check_sections, data_uri, environment_section, esc, fields_html, page, table
from .html_charts import bar_chart, line_chart
from .html_quantize import cell_detail, matrix_row, matrix_section
from .html_reasons import more
from .html_verbs import collapse_rows, split_candidates, split_summary, split_verification, times
from .style import human_bytes, num

STATUS_TEXT = {
    "ran": "ok",
    "cached": "cached",
    "kept": "kept",
    "failed": "failed",
    "skipped": "skipped",
    "rejected": "rejected",
}


def _load(path: Path) -> dict | None:
    """A step's JSON result, or None when it is missing or unreadable (the report then shows less)."""
    try:
        d = read_json(path, "step result")
    except NpufitError:
        return None
    return d if isinstance(d, dict) else None


# The fields of pipeline.json the report reads, with their types: a results folder is a plain folder that anyone
# may have edited, so each is checked once here instead of failing deep inside the rendering.
_NUM = (int, float)
_CELL = {
    "cell": str,
    "step": str,
    "model": (str, type(None)),
    "target": (str, type(None)),
    "runtime": (str, type(None)),
    "folder": str,
    "action": str,
    "status": str,
    "message": (str, type(None)),
    "metrics": dict,
    "outputs": dict,
}
_CONFIG = {"name": str, "path": str, "models": list, "targets": list, "runtimes": list, "steps": (dict, list)}


def _check_manifest(m: Any, where: str) -> None:
    def bad(field: str) -> NpufitError:
        return NpufitError(
            f"{where}: pipeline.json field '{field}' is missing or has the wrong type (re-run the pipeline)"
        )

    if not isinstance(m, dict) or not str(m.get("schema", "")).startswith("npufit.pipeline-run/"):
        raise NpufitError(f"{where}: no pipeline.json from `npufit pipeline run` (is this a results folder?)")
    for k, t in (("seconds", _NUM), ("counts", dict), ("config", dict), ("cells", list)):
        if not isinstance(m.get(k), t) or isinstance(m.get(k), bool):
            raise bad(k)
    for k, t in (("started", str), ("npufit_version", str), ("environment", dict)):
        if k in m and not isinstance(m[k], t):
            raise bad(k)
    cfg = m["config"]
    for k, t in _CONFIG.items():
        if not isinstance(cfg.get(k), t):
            raise bad(f"config.{k}")
    if not all(isinstance(x, dict) and isinstance(x.get("name"), str) for x in cfg["models"]):
        raise bad("config.models")
    for k in ("targets", "runtimes", "steps"):
        if not all(isinstance(x, str) for x in cfg[k]):
            raise bad(f"config.{k}")
    if not all(isinstance(v, int) for v in m["counts"].values()):
        raise bad("counts")
    for i, c in enumerate(m["cells"]):
        if not isinstance(c, dict):
            raise bad(f"cells[{i}]")
        for k, t in _CELL.items():
            if k in c or k not in ("message", "outputs"):
                if not isinstance(c.get(k), t):
                    raise bad(f"cells[{i}].{k}")
        if "seconds" in c and not (c["seconds"] is None or isinstance(c["seconds"], _NUM)):
            raise bad(f"cells[{i}].seconds")


def _check_paths(m: dict, root: Path) -> None:
    """Every cell folder and output the manifest names stays inside the results folder (no absolute path, no
    '..', no link leading out): a tampered pipeline.json is refused in one line, never followed."""
    for i, c in enumerate(m["cells"]):
        folder = confined(root, c["folder"], f"{root}: pipeline.json cells[{i}].folder")
        for key, rel in c["outputs"].items():
            where = f"{root}: pipeline.json cells[{i}].outputs.{str(key)[:40]}"
            if not isinstance(rel, str) or os.path.isabs(rel):
                confined(folder, rel, where)  # the one-line refusal of a non-name or an absolute path
            confined(root, os.path.relpath(folder / rel, root.resolve()), where)


def _parse(c: dict, root: Path):
    try:
        return parse_result(c["step"], c["status"], c["metrics"], f"{root}: pipeline.json cell {c['cell']}")
    except StaleResult as e:
        raise NpufitError(f"{e.message}; re-run the pipeline") from None


class Results:
    """pipeline.json plus lazy access to each cell's files, never outside the results folder."""

    def __init__(self, root: Path):
        if not (root / "pipeline.json").exists() and not (root / "pipeline.json").is_symlink():
            raise NpufitError(f"{root}: no pipeline.json from `npufit pipeline run` (is this a results folder?)")
        self.root = root.resolve()
        m = read_json(confined(root, "pipeline.json", f"{root}: pipeline.json"), "pipeline.json")
        _check_manifest(m, str(root))
        _check_paths(m, root)
        self.manifest = m
        self.cells = {c["cell"]: c for c in m["cells"]}
        # each step's typed result, read strictly: a renamed or missing key names its cell, step and key here
        self.results = {c["cell"]: _parse(c, root) for c in m["cells"]}

    def cell(self, cid: str) -> dict | None:
        return self.cells.get(cid)

    def result(self, cid: str):
        """The typed result (pipeline.results) of a cell that ran ok, else None."""
        return self.results.get(cid)

    def _inside(self, *parts: Any) -> Path | None:
        """root/parts when it stays inside the results folder (links resolved), else None: never read outside."""
        if not all(isinstance(p, str) for p in parts):
            return None
        try:
            return confined(self.root, "/".join(parts), "results file")
        except NpufitError:
            return None

    def json(self, cid: str, output: str = "report") -> dict | None:
        c = self.cells.get(cid)
        if not c or c.get("status") != "ok" or output not in c.get("outputs", {}):
            return None
        p = self._inside(c["folder"], c["outputs"][output])
        return _load(p) if p else None

    def path(self, cid: str, output: str) -> Path | None:
        c = self.cells.get(cid)
        if not c or output not in c.get("outputs", {}):
            return None
        p = self._inside(c["folder"], c["outputs"][output])
        return p if p and p.exists() else None

    def embed(self, p: Path, mime: str) -> str | None:
        """A data: URI of a file inside the results folder (a regular file within budget), else None."""
        q = self._inside(str(p.relative_to(self.root))) if p.is_relative_to(self.root) else None
        if q is None:
            return None
        try:
            return data_uri(q, mime)
        except NpufitError:
            return None


def _status(c: dict | None) -> str:
    if c is None:
        return ""
    a = c["action"]
    tip = esc(c.get("message") or "")
    secs = f" {c['seconds']:.1f}s" if a in ("ran", "failed", "rejected") and c.get("seconds") else ""
    return f'<span class="st-{esc(a)}" title="{tip}">{STATUS_TEXT.get(a, a)}{secs}</span>'


def _overview(r: Results) -> str:
    m, cfg = r.manifest, r.manifest["config"]
    cnt = m["counts"]
    steps = [s for s in cfg["steps"] if s != "report"]
    out = [
        '<section id="overview"><h2>Overview</h2>',
        cards(
            [
                ("models", str(len(cfg["models"]))),
                ("targets", esc(", ".join(cfg["targets"]) or "-")),
                ("runtimes", esc(", ".join(cfg["runtimes"]))),
                ("steps ran / cached", f"{cnt.get('ran', 0)} / {cnt.get('cached', 0) + cnt.get('kept', 0)}"),
                (
                    "failed / rejected / skipped",
                    f"{cnt.get('failed', 0)} / {cnt.get('rejected', 0)} / {cnt.get('skipped', 0)}",
                ),
                ("run time", f"{m['seconds']:.1f} s"),
            ]
        ),
    ]
    branches: dict[tuple, dict] = {}
    for c in m["cells"]:
        if c["step"] != "report":
            branches.setdefault((c["model"], c["target"] or c["runtime"] or "-"), {})[c["step"]] = c
    # branches whose every step ended alike (a runtime absent for every model) are one row
    same = collapse_rows(
        [
            ((t, *((cs[s]["action"], cs[s].get("message")) if s in cs else None for s in steps)), mo)
            for (mo, t), cs in branches.items()
        ]
    )
    grid = []
    for key, models in same:
        cs = branches[(models[0], key[0])]
        grid.append([times(models), esc(key[0]), *[_status(cs.get(s)) for s in steps]])
    out.append('<h3>Every step of every branch</h3><p class="note">Why a branch stopped is listed below the table.</p>')
    out.append(table(["model", "target / runtime", *steps], grid))
    stopped = [
        c
        for c in m["cells"]
        if c["action"] in ("failed", "rejected")
        or (c["action"] == "skipped" and "blocked by" not in c.get("message", ""))
    ]
    if stopped:
        out.append("<h3>Why some branches stopped</h3>")
        grouped = collapse_rows(
            [
                (
                    (c["step"], c["target"] or c["runtime"] or "-", c["action"], c.get("message") or ""),
                    c["model"] or "-",
                )
                for c in stopped
            ]
        )
        out.append(
            table(
                ["step", "model", "target / runtime", "outcome", "message"],
                [
                    [esc(step), times(models), esc(where), _status({"action": action, "message": msg}), more(msg)]
                    for (step, where, action, msg), models in grouped
                ],
            )
        )
    out.append("</section>")
    return "".join(out)


def _placement_matrix(r: Results) -> str:
    cfg = r.manifest["config"]
    if not cfg["targets"] or "check" not in cfg["steps"]:
        return ""
    rows = []
    for mo in cfg["models"]:
        for t in cfg["targets"]:
            ch, met = r.cell(f"check/{mo['name']}/{t}"), r.result(f"check/{mo['name']}/{t}")
            cov = f"{met.coverage_nodes_pct:.0f}% nodes / {met.coverage_macs_pct:.0f}% MACs" if met else _status(ch)
            parts = f"{met.npu_partitions} / {met.host_partitions}" if met else "- / -"
            sp = r.cell(f"split/{mo['name']}/{t}")
            co = r.cell(f"compile/{mo['name']}/{t}")
            rows.append(
                [
                    f'<a href="#m-{esc(mo["name"])}-{esc(t)}">{esc(mo["name"])}</a>',
                    esc(t),
                    cov,
                    parts,
                    _status(sp) + (f' <span class="note">{more(sp.get("message", ""), 140)}</span>' if sp else ""),
                    _status(co) + (f' <span class="note">{more(co.get("message", ""), 100)}</span>' if co else ""),
                ]
            )
    return (
        '<section id="placement"><h2>Placement: model × target</h2>'
        + table(["model", "target", "on the NPU", "NPU / host partitions", "split", "compile"], rows)
        + "</section>"
    )


def _training(r: Results) -> str:
    cfg = r.manifest["config"]
    rows, charts = [], []
    for mo in cfg["models"]:
        tr, h = r.result(f"train/{mo['name']}"), r.json(f"train/{mo['name']}", "history")  # numbers; curves
        if tr is None or not h:
            continue
        rows.append(
            [
                esc(mo["name"]),
                esc(h["kind"]),
                esc(tr.epochs),
                f"{tr.train_loss:.5f}",
                f"{tr.val_loss:.5f}",
                f"{tr.baseline_val_loss:.5f}",
                esc(tr.parameters),
                f"{tr.train_seconds:.1f}",
            ]
        )
        series = {
            "train": [(e["epoch"], e["train_loss"]) for e in h["history"]],
            "val": [(e["epoch"], e["val_loss"]) for e in h["history"]],
        }
        charts.append(line_chart(series, "epoch", "MSE", f"{mo['name']} loss", log_y=True))
    if not rows:
        return ""
    ds = (r.json(f"train/{cfg['models'][0]['name']}", "history") or {}).get("dataset", {})
    src = ds.get("source", {})
    origin = src.get("path") or f"{src.get('length', '')} steps, seed {src.get('seed', '')}"
    desc = (
        (
            f'<p class="note">Data: {esc(src.get("kind", ""))} ({esc(origin)}), '
            f"{len(ds.get('features', []))} sensors, forecasting {esc(ds.get('target'))} {esc(ds.get('horizon'))} "
            f"step(s) ahead from {esc(ds.get('seq_len'))}-step windows; {esc(ds.get('train_windows'))} train / "
            f"{esc(ds.get('val_windows'))} validation windows. Baseline = predicting the last observed value.</p>"
        )
        if ds
        else ""
    )
    return (
        '<section id="training"><h2>Training</h2>'
        + desc
        + table(
            ["model", "arch", "epochs", "train MSE", "val MSE", "baseline val MSE", "parameters", "seconds"],
            rows,
            num_cols=range(2, 8),
        )
        + f'<div class="grid2">{"".join(charts)}</div></section>'
    )


def _split_part(r: Results, mo: str, t: str) -> str:
    c = r.cell(f"split/{mo}/{t}")
    if c is None:
        return ""
    head = f'<h4>Split: {_status(c)} <span class="note">{more(c.get("message") or "")}</span></h4>'
    rep = r.json(f"split/{mo}/{t}")
    if not rep:
        return head
    return (
        head
        + split_summary(rep)
        + split_verification(rep)
        + f"<details><summary>candidate cuts ({len(rep.get('candidates', []))})</summary>"
        + split_candidates(rep)
        + "</details>"
    )


def _quantize_part(r: Results, mo: str, t: str) -> str:
    c = r.cell(f"quantize/{mo}/{t}")
    if c is None:
        return ""
    rep = r.json(f"quantize/{mo}/{t}")
    return f'<h4>Quantization: {_status(c)} <span class="note">{esc(c.get("message"))}</span></h4>' + (
        cell_detail(rep, f"q-{mo}-{t}") if rep else ""
    )


def _quantization_matrix(r: Results) -> str:
    cfg = r.manifest["config"]
    if "quantize" not in cfg["steps"]:
        return ""
    rows = []
    for mo in cfg["models"]:
        for t in cfg["targets"]:
            cid = f"quantize/{mo['name']}/{t}"
            c, q = r.cell(cid), r.result(cid)
            if c is not None:
                note = "" if q else f' <span class="note">{more(c.get("message", ""), 160)}</span>'
                rows.append(matrix_row(mo["name"], t, q, r.json(cid), _status(c) + note))
    return matrix_section(rows)


def _compile_part(r: Results, mo: str, t: str) -> str:
    c = r.cell(f"compile/{mo}/{t}")
    if c is None:
        return ""
    rep = r.json(f"compile/{mo}/{t}")
    return f'<h4>Compile: {_status(c)} <span class="note">{esc(c.get("message"))}</span></h4>' + (
        "<details><summary>compiler result</summary>" + fields_html(rep) + "</details>" if rep else ""
    )


def _overlay_link(r: Results, cid: str) -> str:
    p = r.path(cid, "model_explorer")
    uri = r.embed(p, "application/json") if p else None
    if not uri:
        return ""
    name = cid.replace("/", "_") + ".model_explorer.json"
    return (
        f'<p class="note">Model Explorer overlay: <a download="{esc(name)}" href="{uri}">{esc(name)}</a> '
        "(load it as custom node data on this model in Google Model Explorer)</p>"
    )


def _models(r: Results) -> str:
    cfg = r.manifest["config"]
    out = []
    for mo in cfg["models"]:
        name = mo["name"]
        parts = [f'<section id="m-{esc(name)}"><h2>Model {esc(name)}</h2>']
        ex, met = r.cell(f"export/{name}"), r.result(f"export/{name}")
        if ex:
            size = f" · {met.nodes} ONNX nodes, {esc(human_bytes(met.bytes))}" if met else ""
            parts.append(f"<p>Export: {_status(ex)} {esc(ex.get('message'))}{size}</p>")
        for t in cfg["targets"]:
            parts.append(f'<h3 id="m-{esc(name)}-{esc(t)}">{esc(name)} on {esc(t)}</h3>')
            ch = r.cell(f"check/{name}/{t}")
            rep = r.json(f"check/{name}/{t}")
            if rep:
                parts.append(check_sections(rep, f"{name}-{t}") + _overlay_link(r, f"check/{name}/{t}"))
            elif ch:
                parts.append(f"<p>Check: {_status(ch)} {esc(ch.get('message'))}</p>")
            fx = r.cell(f"fix/{name}/{t}")
            if fx:
                parts.append(f'<h4>Fix: {_status(fx)} <span class="note">{esc(fx.get("message"))}</span></h4>')
            parts += [_split_part(r, name, t), _quantize_part(r, name, t), _compile_part(r, name, t)]
        parts.append("</section>")
        out.append("".join(parts))
    return "".join(out)


def _compile_table(r: Results) -> str:
    rows = []
    for c in r.manifest["cells"]:
        if c["step"] != "compile":
            continue
        m = r.result(c["cell"])  # None where the cell did not compile (skipped, failed, rejected)
        rows.append(
            [
                esc(c["model"]),
                esc(c["target"]),
                esc(human_bytes(m.model_bytes)) if m else "-",
                num(m.wall_s, "s") if m else "-",
                num(m.peak_rss_mb, "MiB") if m else "-",
                _status(c) + f' <span class="note">{esc(c.get("message"))}</span>',
            ]
        )
    if not rows:
        return ""
    return (
        '<section id="compile"><h2>Compile time and memory</h2><p class="note">Wall time and peak resident memory '
        "of the compiler (npufit + child processes, sampled every 50 ms) per model and target.</p>"
        + table(["model", "target", "model size", "compile time", "peak memory", "status"], rows, num_cols=(2, 3, 4))
        + "</section>"
    )


def _bench(r: Results) -> str:
    cells = [c for c in r.manifest["cells"] if c["step"] == "bench"]
    if not cells:
        return ""
    rows, lat, tput, extra, idle = [], [], [], [], []
    for c in cells:
        rep, res = r.json(c["cell"]), r.result(c["cell"])
        if res is None:  # skipped, failed: said once per runtime and message, with the models named
            idle.append(((c["runtime"], c["action"], c.get("message") or ""), c["model"]))
            continue
        label = f"{c['model']} · {c['runtime']}"
        if res.p50_ms is not None:
            lat.append((label, res.p50_ms))
        if res.throughput_ips is not None:
            tput.append((label, res.throughput_ips))
        rows.append(
            [
                esc(c["model"]),
                esc(c["runtime"]),
                _status(c),
                num(res.p50_ms),
                num(res.throughput_ips),
                more(c.get("message") or "") if c["action"] != "ran" else "",
            ]
        )
        for one in (rep or {}).get("results", [])[:1]:
            extra.append(
                f"<details><summary>{esc(label)}: measurement details</summary>"
                f"{fields_html(one, ('stages', 'details'))}</details>"
            )
        folder = r._inside(c["folder"])
        for png in sorted(folder.glob("*.png")) if folder and folder.is_dir() else []:
            uri = r.embed(png, "image/png")
            if uri:
                extra.append(f'<img alt="{esc(png.name)}" src="{uri}" style="max-width:100%">')
    for (runtime, action, msg), models in collapse_rows(idle):
        rows.append([times(models), esc(runtime), _status({"action": action, "message": msg}), "-", "-", more(msg)])
    return (
        '<section id="bench"><h2>Benchmarks</h2>'
        + table(
            ["model", "runtime", "status", "latency p50 (ms)", "throughput (inferences/s)", "note"],
            rows,
            num_cols=(3, 4),
        )
        + '<div class="grid2">'
        + bar_chart(lat, "ms", "latency (lower is better)")
        + bar_chart(tput, "inferences/s", "throughput (higher is better)")
        + "</div>"
        + "".join(extra)
        + "</section>"
    )


def render_results_html(root: Path) -> str:
    r = Results(root)
    try:
        return _render(r)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        # a step result edited by hand (pipeline.json itself is checked above): one line, not a traceback
        raise NpufitError(
            f"{root}: a step result in this results folder is malformed ({type(e).__name__}: "
            f"{str(e)[:80]}); re-run the pipeline"
        ) from None


def _render(r: Results) -> str:
    cfg, m = r.manifest["config"], r.manifest
    sub = (
        f"pipeline <b>{esc(cfg['name'])}</b> · {escape(m.get('started', ''))} · {m['seconds']:.1f} s "
        f"· npufit {esc(m.get('npufit_version'))}"
        f' · <span class="note">{esc(cfg["path"])}</span>'
    )
    nav = [
        ("overview", "overview"),
        ("placement", "placement"),
        ("quantization", "quantization"),
        ("training", "training"),
        *[(f"m-{x['name']}", x["name"]) for x in cfg["models"]],
        ("compile", "compile"),
        ("bench", "bench"),
        ("environment", "environment"),
    ]
    body = (
        _overview(r)
        + _placement_matrix(r)
        + _quantization_matrix(r)
        + _training(r)
        + _models(r)
        + _compile_table(r)
        + _bench(r)
        + environment_section(m.get("environment", {}))
    )
    return page(f"npufit report: {cfg['name']}", sub, body, nav)


def build_report(results_dir: str | os.PathLike, output: str | os.PathLike | None = None) -> Path:
    """`npufit report RESULTS_DIR --output report.html`: the whole pipeline run as one HTML file."""
    root = Path(results_dir)
    html_text = render_results_html(root)
    out = Path(output) if output else root / "report.html"
    atomic_write_text(out, html_text)
    return out
