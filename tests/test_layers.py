"""The package layer order of docs/dev/conventions.md, and no import cycles, read from the source with `ast`.

Every import counts: module-level and function-level, absolute and relative, and a module named in a string
("package.module:function" for an executor, a name for importlib). A function-level import still makes
the importing package depend on the imported one; it only hides a cycle from the interpreter, not from the design.
Only imports under `if TYPE_CHECKING:` are left out: they never run. A package may import its own modules and any
package of a lower layer; packages of one layer are independent. Modules do not import each other in a circle either.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "npufit"

# Bottom first. A unit is a package (`npufit.check`) or a module (`npufit.errors`), a module's unit the longest one
# naming it; `npufit` is the root `__init__` (it names npufit.verbs by a string, never by an import statement, and
# imports it on first use: below every layer, it gives `__version__` and the verbs' names).
LAYERS: list[tuple[str, ...]] = [
    ("npufit", "npufit.errors", "npufit.vocab"),  # the version, the one user-error type, the verbs' words
    ("npufit.util",),  # atomic files, capped readers, terminal, progress, limits: no npufit concept
    # a module as its own unit: one record per vendor compiler (data only), read by envs and executors (environment
    # specs, Ray resource tags), targets, compilers, split, probe and cli alike, so it sits below all of them
    ("npufit.toolchains",),
    ("npufit.envs", "npufit.executors"),  # vendor-tool virtualenvs behind a subprocess; in-process / pool / Ray
    ("npufit.graph", "npufit.verify"),  # the read-only Graph; seeded ONNX Runtime CPU sessions and differences
    ("npufit.targets",),  # profiles: data + small rule functions over the Graph
    # a module as its own unit: the pipeline's typed step results, a record format (errors only) that the pipeline
    # writes and the run report (report/html_results.py) reads
    ("npufit.pipeline.results",),
    ("npufit.report",),  # renderers (terminal / Markdown / HTML) every result object renders itself with
    ("npufit.check",),
    ("npufit.rewrite",),
    ("npufit.split",),
    ("npufit.quantize",),
    ("npufit.convert",),  # ONNX -> int8 TFLite (and the TFLite writer it is built on)
    ("npufit.zoo",),  # example models and data (rebuilt TFLite networks are written with the converter's writer)
    ("npufit.compilers", "npufit.runtimes"),
    # a module as its own unit: the one placement every verb reads (the compiler's where it runs, else the
    # prediction), computed once per run; the verbs module passes it down to the layers below
    ("npufit.placement",),
    ("npufit.bench", "npufit.probe", "npufit.scan", "npufit.doctor"),
    ("npufit.pipeline",),
    ("npufit.verbs",),  # every verb as a plain function, re-exported by the root
    ("npufit.cli",),
    ("npufit.__main__",),
]
LAYER_OF = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _file(module: str) -> str:
    return MODULES[module].relative_to(PKG.parent).as_posix()


def _runtime_nodes(tree: ast.AST):
    """Every node but those under `if TYPE_CHECKING:`: annotation-only imports never run."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            todo += node.orelse
            continue
        todo += ast.iter_child_nodes(node)


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported npufit module, line) for every import statement of the file, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "npufit"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "npufit":
                continue
            for a in node.names:  # `from . import x` imports the submodule x when there is one
                sub = f"{target}.{a.name}"
                out.append((sub if sub in MODULES else target, node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and module != "npufit":
            # "npufit.probe.case_run:run_case" for an executor, a module name for importlib: imported all the same
            # (the root's lazy API is the one facade that names every verb: it resolves them only when asked)
            name = node.value.split(":", 1)[0]
            if name in MODULES:
                out.append((name, node.lineno))
    return out


EDGES = [(m, t, line) for m, p in MODULES.items() for t, line in _imports(m, p)]  # no exception is allowed


def unit_of(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER_OF:
            return ".".join(parts[:n])
    raise KeyError(module)


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    missing = []
    for m in MODULES:
        try:
            unit_of(m)
        except KeyError:
            missing.append(m)
    assert not missing, "give these a layer in LAYERS (and in docs/dev/conventions.md): " + ", ".join(missing)


def test_imports_go_down_the_layers():
    bad = []
    for m, t, line in EDGES:
        a, b = unit_of(m), unit_of(t)
        if a != b and LAYER_OF[b] >= LAYER_OF[a]:
            bad.append(f"{_file(m)}:{line}: {a} imports {t} ({'same' if LAYER_OF[b] == LAYER_OF[a] else 'higher'} layer)")
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def _cycle_report(edges: list[tuple[str, str, str, int]]) -> str:
    """edges: (from node, to node, importing module, line); the imports inside each cycle, one a line."""
    lines = []
    for comp in _cycles({(a, b) for a, b, _, _ in edges}):
        lines.append(" <-> ".join(comp) + ":")
        lines += sorted({f"  {_file(m)}:{line} imports {b}" for a, b, m, line in edges if a in comp and b in comp})
    return "\n".join(lines)


def test_no_cycle_between_packages():
    found = _cycle_report([(unit_of(m), unit_of(t), m, line) for m, t, line in EDGES if unit_of(m) != unit_of(t)])
    assert not found, "package import cycles:\n" + found


def test_no_cycle_between_modules():
    found = _cycle_report([(m, t, m, line) for m, t, line in EDGES if m != t])
    assert not found, "module import cycles:\n" + found


def test_the_conventions_state_this_order():
    """docs/dev/conventions.md lists the layers as an indented block, bottom first, one layer a line."""
    text = (ROOT / "docs/dev/conventions.md").read_text(encoding="utf-8")
    block = text.split("Import order is one-way", 1)[1].split("\n\n", 2)[1]
    documented = [tuple("npufit" if name == "npufit" else f"npufit.{name}"
                        for name in re.sub(r"\(.*?\)", "", line.strip().split("  ")[0]).replace(" ", "").split(","))
                  for line in block.splitlines()]
    assert [set(layer) for layer in documented] == [set(layer) for layer in LAYERS]
