"""The Arm Ethos-N support library, built from source into npufit's env folder (`npufit env install ethos-n`).

Unlike the RKNN and Hailo envs this is not a virtualenv: the library is C++ (Arm Ethos-N Driver Stack 25.03,
Apache-2.0). npufit copies or clones the driver stack, builds the static support library with SCons and links
a small C++ program (shim.cpp and shim_io.hpp, next to this file) against it. npufit talks to that program through a
request file and a JSON answer (npufit.compilers.ethos_n); nothing here is imported by `import npufit`.

Layout of <envs>/ethos-n: source/ (the driver stack and the built library), bin/npufit-ethosn-<digest> (the shim
of each npufit shim source that used this env), build.log, npufit-env.json.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ...errors import NpufitError

DEFAULT_SOURCE = "https://github.com/ARM-software/ethos-n-driver-stack.git"
DEFAULT_REF = "25.03"
SOURCE_ENV = "NPUFIT_ETHOSN_SOURCE"  # CI and tests point this at a local copy of the driver stack
SCONS_PIN = "scons==4.4.0"  # newer SCons fails on firmware/ple/SConscript of release 25.03
LIB = Path("driver/support_library/build/release_native/libEthosNSupport.a")
INCLUDE = Path("driver/support_library/include")
UTILS_INCLUDE = Path("driver/utils/include")  # the library's logger, to read why Compile() found no plan
SHIM_SRC = Path(__file__).with_name("shim.cpp")
SHIM_FILES = (SHIM_SRC, Path(__file__).with_name("shim_io.hpp"))
SHIM_DIR = Path("bin")  # one shim per npufit shim source (npufit-ethosn-<digest>): npufit versions sharing the env
# folder never relink each other's shim
_COMPILING = re.compile(r"^g\+\+ -o \S*?/src/(\w+)\.o ")


def shim_digest() -> str:
    return hashlib.sha256(b"".join(f.read_bytes() for f in SHIM_FILES)).hexdigest()[:16]


def tools() -> dict[str, str | None]:
    """g++ and scons as npufit will run them (scons: next to this Python first, then PATH)."""
    venv_scons = Path(sys.executable).with_name("scons")
    return {"g++": shutil.which("g++"), "scons": str(venv_scons) if venv_scons.exists() else shutil.which("scons")}


def _require_tools() -> dict[str, str]:
    t = tools()
    missing = [n for n, p in t.items() if not p]
    if missing:
        how = {"g++": "install a C++14 compiler (apt-get install g++)", "scons": f"pip install '{SCONS_PIN}'"}
        raise NpufitError(
            "building the Ethos-N support library needs "
            + " and ".join(missing)
            + ": "
            + "; ".join(how[m] for m in missing)
        )
    return t  # type: ignore[return-value]


def resolve_source(source: str | None) -> str:
    return source or os.environ.get(SOURCE_ENV) or DEFAULT_SOURCE


def _is_url(src: str) -> bool:
    return src.startswith(("https://", "http://", "git@", "ssh://", "file://"))


def _fetch(src: str, dst: Path, say) -> str:
    """Copy a local driver stack (never modified) or clone the public repository at release 25.03."""
    if _is_url(src):
        git = shutil.which("git")
        if not git:
            raise NpufitError(f"cloning {src} needs git (or pass --source DIR with a local copy of the driver stack)")
        say(f"cloning {src} (tag {DEFAULT_REF})")
        p = subprocess.run(
            [git, "clone", "--depth", "1", "--branch", DEFAULT_REF, src, str(dst)], capture_output=True, text=True
        )
        if p.returncode != 0:
            raise NpufitError(f"git clone {src} failed: {(p.stderr.strip().splitlines() or ['no message'])[-1][:300]}")
        return f"{src}@{DEFAULT_REF}"
    s = Path(src).expanduser()
    if not (s / "driver" / "SConstruct").is_file():
        raise NpufitError(f"{src}: not an Ethos-N driver stack (no driver/SConstruct)")
    say(f"copying {s.resolve()}")
    shutil.copytree(s, dst, symlinks=True, ignore=shutil.ignore_patterns("build", ".git"))
    return str(s.resolve())


def build(d: Path, source: str | None, jobs: int | None, say) -> dict:
    """Fetch (once), build the static library (incremental), link the shim; returns the manifest fields."""
    t = _require_tools()
    srcdir = d / "source"
    origin_file = d / "source-origin.txt"
    if source is None and not os.environ.get(SOURCE_ENV) and origin_file.is_file() and srcdir.is_dir():
        source = origin_file.read_text().strip()  # a half-finished earlier build: continue from its source
    src = resolve_source(source)
    t0 = time.perf_counter()
    if srcdir.exists() and (not origin_file.exists() or origin_file.read_text().strip() != src):
        shutil.rmtree(srcdir)  # a different source: start over
    if not srcdir.exists():
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / "source.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            origin = _fetch(src, tmp, say)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            if not any(d.iterdir()):
                d.rmdir()  # leave no empty env folder behind a refused source
            raise
        tmp.rename(srcdir)
        origin_file.write_text(src + "\n")
    else:
        origin = src
    fetch_s = time.perf_counter() - t0
    jobs = jobs or os.cpu_count() or 1
    total = _count_sources(srcdir)
    say(f"building the support library ({total} sources, scons -j{jobs}); about 3 min per core on this machine kind")
    t1 = time.perf_counter()
    cmd = [t["scons"], f"-j{jobs}", str(LIB.relative_to("driver")), "platform=native", "werror=0"]
    env = dict(os.environ, PATH=f"{Path(t['scons']).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    log = d / "build.log"
    done = 0
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.Popen(
            cmd, cwd=srcdir / "driver", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            f.write(line)
            m = _COMPILING.match(line)
            if m:
                done += 1
                say(f"  [{done}/{total}] {m.group(1)}.cpp")
        rc = proc.wait()
    if rc != 0 or not (srcdir / LIB).is_file():
        raise NpufitError(f"the support-library build failed (scons exit code {rc}): see {log}")
    lib_s = time.perf_counter() - t1
    shim_s = link_shim(d, t["g++"], say)
    version = shim_version(d)
    return {
        "version": version,
        "source": origin,
        "build_s": round(lib_s, 1),
        "fetch_s": round(fetch_s, 1),
        "shim_s": round(shim_s, 1),
        "jobs": jobs,
        "compiled_sources": done,
        "shim_digest": shim_digest(),
        "compiler": _gxx_version(t["g++"]),
    }


def link_shim(d: Path, gxx: str | None = None, say=lambda m: None) -> float:
    gxx = gxx or _require_tools()["g++"]
    out = shim_path(d)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.partial")  # parallel probe workers may link at once
    say("linking the npufit shim against the support library")
    t0 = time.perf_counter()
    src = d / "source"
    p = subprocess.run(
        [
            gxx,
            "-std=c++14",
            "-O2",
            "-I",
            str(src / INCLUDE),
            "-I",
            str(src / UTILS_INCLUDE),
            str(SHIM_SRC),
            str(src / LIB),
            "-lpthread",
            "-o",
            str(tmp),
        ],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise NpufitError(
            f"linking the Ethos-N shim failed: {(p.stderr.strip().splitlines() or ['no message'])[-1][:300]}"
        )
    tmp.replace(out)
    return time.perf_counter() - t0


def shim_version(d: Path) -> str:
    p = subprocess.run([str(shim_path(d)), "--version"], capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise NpufitError(f"the Ethos-N shim does not run: {(p.stderr or p.stdout).strip()[:200]}")
    return p.stdout.strip()


def shim_path(d: Path) -> Path:
    return d / SHIM_DIR / f"npufit-ethosn-{shim_digest()}"


def library_path(d: Path) -> Path:
    return d / "source" / LIB


def ensure_shim(d: Path, say=lambda m: None) -> Path:
    """This npufit's shim, linked against the installed library on first use (about 10-15 s)."""
    if not shim_path(d).exists():
        link_shim(d, say=say)
    return shim_path(d)


def _count_sources(srcdir: Path) -> int:
    try:
        text = (srcdir / "driver" / "support_library" / "SConscript").read_text()
    except OSError:
        return 0
    return len(re.findall(r'os\.path\.join\("src", "\w+\.cpp"\)', text))


def _gxx_version(gxx: str) -> str:
    p = subprocess.run([gxx, "-dumpfullversion"], capture_output=True, text=True)
    return f"g++ {p.stdout.strip()}" if p.returncode == 0 else "g++"
