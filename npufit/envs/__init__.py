"""Isolated virtualenvs for vendor tools whose pins conflict with npufit's own (RKNN-Toolkit2 wants numpy < 2,
onnx 1.18, setuptools < 70; the Hailo DFC ships its own TensorFlow). npufit creates them on request
(`npufit env install rknn`) and talks to them through a subprocess and JSON files (npufit.envs.bridge).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import NpufitError
from ..toolchains import EnvSpec, env_specs
from ..util.io import atomic_write_json
from ..util.progress import working
from ..util.readers import read_json
from . import ethos_n

SCHEMA = "npufit.env/1"


def envs_root() -> Path:
    root = os.environ.get("NPUFIT_ENVS")
    return Path(root) if root else Path.home() / ".cache" / "npufit" / "envs"


def spec(name: str) -> EnvSpec:
    specs = env_specs()  # each toolchain's record states its environment (npufit.toolchains)
    if name not in specs:
        raise NpufitError(f"unknown environment '{name}' (available: {', '.join(specs)})")
    return specs[name]


def env_dir(name: str) -> Path:
    return envs_root() / spec(name).name


def env_python(name: str) -> Path:
    return env_dir(name) / "bin" / "python"


def env_ready_path(name: str) -> Path:
    """The file whose presence (with the manifest) means the env works: its Python, or a native tool."""
    if spec(name).kind == "native":
        return ethos_n.library_path(env_dir(name))
    return env_python(name)


def manifest(name: str) -> dict | None:
    try:
        m = read_json(env_dir(name) / "npufit-env.json", "environment metadata")
    except NpufitError:  # absent or unreadable: the environment counts as not installed
        return None
    return m if isinstance(m, dict) else None


def env_status(name: str) -> dict:
    s = spec(name)
    m = manifest(name)
    ok = m is not None and env_ready_path(name).exists()
    return {
        "name": s.name,
        "title": s.title,
        "installed": ok,
        "path": str(env_dir(name)),
        "version": m.get("version") if m else None,
        "size_mb": m.get("size_mb") if m else None,
        "install_s": m.get("install_s") if m else None,
        "extras": list(m.get("extras", [])) if m else [],
        "enables": s.enables,
        "install": f"npufit env install {s.name}"
        + (" --wheel " + s.needs_wheel.split(" ")[0] if s.needs_wheel else "")
        + (f" [--python {s.python}]" if s.python else "")
        + (" [--source DIR|GIT_URL]" if s.kind == "native" else ""),
    }


def list_envs() -> list[dict]:
    return [env_status(n) for n in env_specs()]


def _dir_size_mb(p: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(p):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return round(total / 2**20, 1)


def install(
    name: str,
    wheel: str | Sequence[str] | None = None,
    force: bool = False,
    log=None,
    source: str | None = None,
    jobs: int | None = None,
    python: str | None = None,
    extras: tuple[str, ...] = (),
) -> dict:
    """Create the env from scratch; returns its manifest (install time, size, tool version).

    wheel: vendor wheel file(s) to install after the env's own steps (the Hailo DFC's, then HailoRT's);
    python: the interpreter the virtualenv is made with (default: npufit's), for wheels that need another one.
    An installed env is left as it is (manifest["reused"] is then True) unless force is given; `extras` (the
    spec's optional parts, e.g. rknn's "tflite") are added to it when missing."""
    s = spec(name)
    known = {e[0]: e for e in s.extras}
    bad = [e for e in extras if e not in known]
    if bad:
        raise NpufitError(f"env {name} has no extra '{bad[0]}' (its extras: {', '.join(known) or 'none'})")
    if s.kind == "native":
        return _install_native(s, force, log, source, jobs)
    wheels = [wheel] if isinstance(wheel, str) else list(wheel or [])
    if s.needs_wheel and not wheels:
        raise NpufitError(f"the {s.title} cannot be downloaded automatically: pass --wheel {s.needs_wheel}")
    for w in wheels:
        if not Path(w).is_file():
            raise NpufitError(f"{w}: no such wheel file")
    d = env_dir(name)
    say = log or (lambda msg: print(msg, file=sys.stderr))
    if d.exists():
        m0 = manifest(name)
        if not force and m0:
            missing = [e for e in extras if e not in m0.get("extras", [])]
            if not missing:
                return m0
            return _add_extras(name, m0, [known[e] for e in missing], say)
        shutil.rmtree(d)
    interpreter = _interpreter(python)
    for w in wheels:  # before the virtualenv exists: a wheel for another Python or machine fails in one line
        _check_wheel(Path(w), interpreter)
    t0 = time.perf_counter()
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = d  # the manifest, written last, is what marks an env installed: a half-built one never looks ready

    say(f"creating virtualenv {d} (Python {interpreter[1]})")
    _run([interpreter[0], "-m", "venv", str(tmp)])
    pip = [str(tmp / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    steps = list(s.steps) + [(str(Path(w).resolve()),) for w in wheels] + [known[e][2] for e in extras]
    for i, step in enumerate(steps, 1):
        say(f"[{i}/{len(steps)}] pip install {' '.join(step)}")
        with working(f"env {name}: step {i}/{len(steps)}"):
            _run(pip + list(step))
    version = _run([str(env_python(name)), "-c", s.probe]).strip().splitlines()[-1]
    m = {
        "schema": SCHEMA,
        "name": s.name,
        "title": s.title,
        "version": version,
        "python": interpreter[1],
        "install_s": round(time.perf_counter() - t0, 1),
        "size_mb": _dir_size_mb(d),
        "steps": [list(x) for x in steps],
        "extras": list(dict.fromkeys(extras)),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }

    atomic_write_json(d / "npufit-env.json", m)
    return m


def _add_extras(name: str, m: dict, extras: list, say) -> dict:
    """pip-install an installed env's missing extras into it and record them in its manifest."""
    pip = [str(env_python(name)), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for extra, _why, step in extras:
        say(f"adding {extra}: pip install {' '.join(step)}")
        with working(f"env {name}: {extra}"):
            _run(pip + list(step))
    m = dict(m)
    m["extras"] = list(dict.fromkeys([*m.get("extras", []), *(e[0] for e in extras)]))
    m["steps"] = [*m.get("steps", []), *(list(e[2]) for e in extras)]
    m["size_mb"] = _dir_size_mb(env_dir(name))
    atomic_write_json(env_dir(name) / "npufit-env.json", m)
    return dict(m, added_extras=[e[0] for e in extras])


def _interpreter(python: str | None) -> tuple[str, str]:
    """(path, version) of the interpreter a virtualenv is made with."""
    if python is None:
        return sys.executable, ".".join(map(str, sys.version_info[:3]))
    exe = shutil.which(python) or python
    try:
        p = subprocess.run(
            [exe, "-c", "import sys; print('.'.join(map(str, sys.version_info[:3])))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        p = None
    if p is None or p.returncode != 0 or not p.stdout.strip():
        raise NpufitError(f"--python {python}: not a Python interpreter that runs here")
    return exe, p.stdout.strip().splitlines()[-1]


def _check_wheel(wheel: Path, interpreter: tuple[str, str]) -> None:
    """Refuse, in one line, a wheel pip would refuse: its Requires-Python, its Python tag or its platform tag."""
    import platform
    import zipfile

    version = interpreter[1]
    parts = wheel.name[: -len(".whl")].split("-") if wheel.name.endswith(".whl") else []
    if len(parts) < 5:
        raise NpufitError(f"{wheel}: not a wheel file name (NAME-VERSION-PYTHON-ABI-PLATFORM.whl)")
    py_tags, plat = parts[-3].split("."), parts[-1]
    cp = [t for t in py_tags if t.startswith("cp")]
    if cp and f"cp{''.join(version.split('.')[:2])}" not in cp:
        raise NpufitError(
            f"{wheel.name} is built for {', '.join(cp)}, this is Python {version}: pass --python with a matching "
            f"interpreter (e.g. --python python{cp[0][2]}.{cp[0][3:]})"
        )
    machine = platform.machine()
    if plat != "any" and machine not in plat:
        raise NpufitError(f"{wheel.name} is built for {plat}, this machine is {machine}")
    try:
        with zipfile.ZipFile(wheel) as z:
            meta = next((n for n in z.namelist() if n.endswith(".dist-info/METADATA")), None)
            text = z.read(meta).decode("utf-8", "replace") if meta else ""
    except (OSError, zipfile.BadZipFile):
        raise NpufitError(f"{wheel}: not a readable wheel (zip) file") from None
    needs = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Requires-Python:")), "")
    try:
        from packaging.specifiers import SpecifierSet
    except ImportError:  # pip states the same refusal itself, only later
        return
    if needs and version not in SpecifierSet(needs):
        raise NpufitError(
            f"{wheel.name} needs Python {needs}, this is Python {version}: pass --python with a matching interpreter"
        )


def _install_native(s: EnvSpec, force: bool, log, source: str | None, jobs: int | None) -> dict:
    d = env_dir(s.name)
    say = log or (lambda msg: print(msg, file=sys.stderr))
    m = manifest(s.name)
    relinked = False
    if m and not force and env_ready_path(s.name).exists():
        if ethos_n.shim_path(d).exists():
            return dict(m, reused=True)
        m["shim_s"] = round(ethos_n.link_shim(d, say=say), 1)  # this npufit's shim is new: link it only
        relinked = True
    else:
        if force and d.exists():
            shutil.rmtree(d)
        if (d / "npufit-env.json").exists():
            (d / "npufit-env.json").unlink()  # the manifest, written last, marks an env installed
        t0 = time.perf_counter()
        m = {"schema": SCHEMA, "name": s.name, "title": s.title, **ethos_n.build(d, source, jobs, say)}
        m["install_s"] = round(time.perf_counter() - t0, 1)
        m["created"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    m["size_mb"] = _dir_size_mb(d)

    atomic_write_json(d / "npufit-env.json", m)
    return dict(m, reused=False, relinked=relinked)


def remove(name: str) -> bool:
    d = env_dir(name)
    if d.exists():
        shutil.rmtree(d)
        return True
    return False


def env(
    action: str = "list",
    name: str | None = None,
    wheel: str | Sequence[str] | None = None,
    force: bool = False,
    python: str | None = None,
):
    """`npufit env install|list|remove [NAME]`: list -> status dicts; install -> manifest; remove -> removed?"""
    if action == "list":
        return list_envs() if name is None else env_status(name)
    if name is None:
        raise NpufitError(f"env {action} needs an environment name (available: {', '.join(env_specs())})")
    if action == "install":
        return install(name, wheel=wheel, force=force, python=python)
    if action == "remove":
        return remove(name)
    raise NpufitError(f"unknown env action '{action}' (install, list or remove)")


def _run(cmd: list[str]) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        last = next((ln for ln in reversed(lines) if ln.strip() and not ln.startswith("WARNING")), "")
        raise NpufitError(f"'{' '.join(cmd[:6])} ...' failed: {last[:300]}")
    return p.stdout
