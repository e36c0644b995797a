"""Every import of npufit's own modules inside a function says, on its line or the line above, which import cycle or
which cost (a heavy third-party package, the CLI's start-up) it avoids; all others sit at module top, where a reader
and tests/test_layers.py see them. The scan is scripts/count-local-imports.py (it also prints the count)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("count_local_imports", ROOT / "scripts" / "count-local-imports.py")
scanner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scanner)

# TEMPORARY: files the lead's branch was changing while the imports moved; their in-function imports are moved or
# commented after that merge. Empty this set then, and the test covers every file.
PENDING: set[str] = set()  # files excused from the comment rule: none

# npufit's own modules imported inside functions, at most (issue 33's bound; 46 when it was set): each one is a cycle
# or a cost that a module-top import would make every caller pay
MOST_LOCAL_IMPORTS = 60


def test_every_in_function_import_says_why():
    bare = [
        f"{f}:{line}"
        for f, hits in scanner.scan(ROOT).items()
        if f not in PENDING
        for line, commented in hits
        if not commented
    ]
    assert not bare, "in-function imports of npufit modules without a comment saying why:\n" + "\n".join(bare)


def test_in_function_imports_stay_few():
    found = scanner.scan(ROOT)
    total = sum(len(hits) for hits in found.values())
    assert total <= MOST_LOCAL_IMPORTS, f"{total} in-function imports of npufit modules: " + ", ".join(
        f"{f} {len(h)}" for f, h in sorted(found.items(), key=lambda kv: -len(kv[1]))
    )


def test_the_scan_finds_an_uncommented_import(tmp_path):
    """The scanner is what the test above trusts: a bare in-function import is found, a commented one passes."""
    src = tmp_path / "npufit" / "m.py"
    src.parent.mkdir()
    src.write_text(
        "import os\n\n\ndef f():\n    from .a import b\n    # lazy: pulls onnx\n    from npufit.c import d\n"
        "    import npufit.e  # cycle: e imports m\n    import json\n",
        encoding="utf-8",
    )
    assert scanner.local_imports(src) == [(5, False), (7, True), (8, True)]
    assert scanner.scan(tmp_path) == {"npufit/m.py": [(5, False), (7, True), (8, True)]}
