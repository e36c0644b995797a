"""Count imports of npufit's own modules inside functions, and list those without a comment saying why.

An in-function import hides an edge from the reader (tests/test_layers.py still sees it); npufit keeps one only to
break an import cycle or to defer a cost (a heavy third-party package, the CLI's start-up), and says which on the
import's line or the line above. tests/test_layers.py runs the same scan.

    python scripts/count-local-imports.py [--all]   # the count, then the uncommented ones (--all: every one)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "npufit" for a in node.names)
    return bool(node.level) or (node.module or "").split(".")[0] == "npufit"


def local_imports(path: Path) -> list[tuple[int, bool]]:
    """(line, commented) for every import of an npufit module inside a function of the file."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)) and _own(child):
                own_lines = lines[child.lineno - 1 : child.end_lineno]
                above = lines[child.lineno - 2].strip() if child.lineno > 1 else ""
                commented = any("#" in ln for ln in own_lines) or above.startswith("#")
                out.append((child.lineno, commented))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(text), False)
    return out


def scan(root: Path = ROOT) -> dict[str, list[tuple[int, bool]]]:
    """Repository-relative file -> its in-function npufit imports, for every file under npufit/ that has one."""
    found = {}
    for path in sorted((root / "npufit").rglob("*.py")):
        hits = local_imports(path)
        if hits:
            found[path.relative_to(root).as_posix()] = hits
    return found


def main(argv: list[str]) -> int:
    found = scan()
    total = sum(len(h) for h in found.values())
    bare = [(f, ln) for f, hits in found.items() for ln, ok in hits if not ok]
    print(f"{total} in-function imports of npufit modules in {len(found)} files; {len(bare)} without a comment")
    if "--all" in argv:
        for f, hits in sorted(found.items(), key=lambda kv: -len(kv[1])):
            print(f"{len(hits):4d} {f}")
    for f, ln in bare:
        print(f"{f}:{ln}: no comment saying which cycle or cost it avoids")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
