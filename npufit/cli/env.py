"""npufit env install|list|remove NAME: isolated virtualenvs for vendor tools with conflicting pins."""

from __future__ import annotations

import argparse
import json

from .. import envs
from ..errors import NpufitError
from ..toolchains import env_specs
from ..vocab import FORMAT, STATUS_FORMATS


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "env",
        help=help,
        description="Vendor tools whose pins clash with npufit's (RKNN-Toolkit2: numpy<2, onnx 1.18; the "
        "Hailo DFC: its own TensorFlow) live in their own virtualenv under ~/.cache/npufit/envs "
        "(override with NPUFIT_ENVS); npufit calls them through a subprocess and JSON. "
        "ethos-n is Arm's Ethos-N support library, built from source with g++ and scons.",
    )
    s = p.add_subparsers(dest="env_cmd", metavar="ACTION")
    i = s.add_parser("install", help="create an environment (e.g. 'npufit env install rknn')")
    i.add_argument("name", help=" | ".join(env_specs()))
    i.add_argument(
        "--wheel",
        action="append",
        help="hailo: the hailo_dataflow_compiler-*.whl you downloaded from the Hailo Developer Zone; repeat it for "
        "HailoRT's hailort-*.whl (its Python API and CLI, for benchmarks on a machine with a Hailo device)",
    )
    i.add_argument(
        "--python",
        metavar="PYTHON",
        help="the interpreter the environment is made with (default: npufit's); the Hailo DFC 3.x wheels need "
        "Python 3.8 to 3.10, e.g. --python python3.10",
    )
    i.add_argument("--force", action="store_true", help="recreate it even if it exists")
    i.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="EXTRA",
        help="an optional part, added to an installed env too (rknn: tflite, for TFLite models through TensorFlow "
        "2.14, about 1.1 GB)",
    )
    i.add_argument(
        "--source",
        help="ethos-n: a local copy of the Arm Ethos-N driver stack (DIR) or a git URL "
        "(default: $NPUFIT_ETHOSN_SOURCE, else the public ARM-software repository, tag 25.03)",
    )
    i.add_argument("--jobs", "-j", type=int, help="ethos-n: parallel compile jobs (default: all cores)")
    ls = s.add_parser("list", help="show every environment, installed or not, and how to install it")
    ls.add_argument("--format", "-f", choices=STATUS_FORMATS, default=FORMAT)
    r = s.add_parser("remove", help="delete an environment")
    r.add_argument("name")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cmd = getattr(args, "env_cmd", None)
    if cmd == "install":
        if args.jobs is not None and args.jobs < 1:
            raise NpufitError("--jobs must be at least 1")
        m = envs.install(
            args.name,
            wheel=args.wheel,
            force=args.force,
            source=args.source,
            jobs=args.jobs,
            python=args.python,
            extras=tuple(args.extra),
        )
        if m.get("added_extras"):
            print(f"{m['title']}: added {', '.join(m['added_extras'])} to {envs.env_dir(args.name)}")
            return 0
        if m.get("reused"):
            print(
                f"{m['title']}: already installed in {envs.env_dir(args.name)} (version {m['version']}, "
                f"{m['size_mb']:.0f} MB): nothing to do (--force rebuilds)"
            )
            return 0
        if m.get("relinked"):
            print(
                f"{m['title']}: npufit's shim linked in {m['shim_s']:.0f} s against the library already built "
                f"in {envs.env_dir(args.name)}"
            )
            return 0
        extra = f"; library build {m['build_s']:.0f} s with -j{m['jobs']}" if "build_s" in m else ""
        print(
            f"{m['title']}: version {m['version']} in {envs.env_dir(args.name)} "
            f"({m['size_mb']:.0f} MB, installed in {m['install_s']:.0f} s{extra})"
        )
        return 0
    if cmd == "remove":
        print(("removed " if envs.remove(args.name) else "not installed: ") + str(envs.env_dir(args.name)))
        return 0
    rows = envs.list_envs()
    if cmd == "list" and args.format == "json":
        print(json.dumps({"schema": envs.SCHEMA, "envs": rows}, indent=2))
        return 0
    for r in rows:
        state = f"installed, {r['version']}, {r['size_mb']:.0f} MB" if r["installed"] else "not installed"
        print(
            f"{r['name']:<7} {state}\n       {r['title']}\n       enables: {r['enables']}\n       install: "
            f"{r['install']}"
        )
    return 0
