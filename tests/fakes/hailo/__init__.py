"""FAKE Hailo tools for tests: `install_tools` puts `hailo` and `hailortcli` on a bin folder; `fake_dfc_wheel`
builds a wheel that installs the same FAKE `hailo` command (for `npufit env install hailo --wheel`).
Both run tests/fakes/hailo/fake_hailo.py with this test interpreter (it needs numpy and onnx)."""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).parent
SCRIPT = HERE / "fake_hailo.py"


def _launcher(tool: str) -> str:
    return (
        f"#!{sys.executable}\n# FAKE {tool} (tests/fakes/hailo): not Hailo's tool\n"
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport fake_hailo\nfake_hailo.cli({tool!r})\n"
    )


def install_tools(bin_dir: Path, tools=("hailo", "hailortcli")) -> Path:
    """Write FAKE `hailo` / `hailortcli` executables into bin_dir (put it first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        p = bin_dir / tool
        p.write_text(_launcher(tool))
        p.chmod(0o755)
    return bin_dir


def fake_dfc_wheel(folder: Path, version: str = "3.33.0", requires_python: str = ">=3.8") -> Path:
    """A FAKE hailo_dataflow_compiler wheel whose `hailo` console script hands over to fake_hailo.py."""
    name, dist = "hailo_dataflow_compiler", f"hailo_dataflow_compiler-{version}.dist-info"
    launcher = (
        "# FAKE Hailo Dataflow Compiler (tests/fakes/hailo): not Hailo's tool\nimport os, sys\n\n\n"
        "def hailo():\n"
        f"    os.execv({sys.executable!r}, [{sys.executable!r}, {str(SCRIPT)!r}, 'hailo', *sys.argv[1:]])\n"
    )
    files = {
        f"{name}/__init__.py": launcher,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: hailo-dataflow-compiler\nVersion: {version}\n"
        f"Summary: FAKE Hailo Dataflow Compiler for npufit's tests\nRequires-Python: {requires_python}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: npufit-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[console_scripts]\nhailo = {name}:hailo\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join(record + [f"{dist}/RECORD,,"]) + "\n"
    whl = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return whl
