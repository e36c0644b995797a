"""One record per vendor compiler (toolchain): every fact about it that npufit states, read by every layer.

A toolchain's identity used to be restated wherever it was needed (the target profiles, the compiler adapters and
their status listing, the environment specs, the Ray resource tags, the probe's choices, the split's vendor commands,
the compilers' own platform lists). Each is a field here, and each consumer reads the record. This module is data
only: it sits below every package that reads it (docs/dev/conventions.md), so it names its adapter by a
"module:attr" string that npufit.compilers imports when the compiler is first used.

Built-in toolchains are the constants below. Another one (a plug-in vendor family) is added with `register`; a
target family module registers the toolchain its profiles name (docs/dev/adding-a-target.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import NpufitError


@dataclass(frozen=True)
class EnvSpec:
    """An isolated environment for a vendor tool whose pins conflict with npufit's own (npufit.envs installs it)."""

    name: str
    title: str
    # pip install steps, run in order; each is one `pip install` argument list
    steps: tuple[tuple[str, ...], ...]
    probe: str  # Python statement that prints the tool version when the env works
    enables: str
    needs_wheel: str = ""  # a vendor wheel the user must supply (login-gated downloads)
    python: str = ""  # the interpreter its wheels need when npufit's may not do ("python3.10"): `--python`
    notes: tuple[str, ...] = field(default=())
    kind: str = "venv"  # venv: a virtualenv of pip steps | native: a C++ build (npufit.envs.ethos_n)
    # optional parts a user adds with `npufit env install NAME --extra EXTRA`: (name, what it enables, pip step)
    extras: tuple[tuple[str, str, tuple[str, ...]], ...] = field(default=())


@dataclass(frozen=True)
class StageParser:
    """How a compiler is handed one NPU stage of the original model by node names: its parser is told where the NPU
    part starts and ends (a Hailo HEF has no CPU fallback). `npufit split` prints these commands in its plan."""

    command: tuple[str, ...]  # the parser's command line before the model file
    start_flag: str
    end_flag: str
    arch_flag: str  # the option that names the target


@dataclass(frozen=True)
class Toolchain:
    """A vendor compiler as npufit drives it."""

    name: str  # the adapter's name: a Profile's `compiler`, `npufit probe --compiler`, a pipeline's `compilers:` list
    title: str  # its name in messages
    # "module:Class" of its npufit.compilers adapter (a module starting with "." is one of npufit.compilers), imported
    # when the compiler is first used; the class is built with this record
    adapter: str
    status_name: str  # its name in `npufit doctor` (npufit.compilers.status()) and in a compile result
    platforms: tuple[str, ...]  # the target names its compiler takes (Vela configs, RKNN platforms, Hailo archs, ...)
    env: EnvSpec | None = None  # the environment it runs in (`npufit env install NAME`); None: installed beside npufit
    resource: str = ""  # the Ray resource a task that drives it needs ("": none, it runs on any node)
    stage_parser: StageParser | None = None  # set where the compiler takes an NPU stage by node names

    @property
    def env_name(self) -> str:
        return self.env.name if self.env is not None else ""


# The Ethos-N78 configurations Arm's support library compiles for (its EthosNVariant names); `ethos-n78-<key>` names one
ETHOS_N78_VARIANTS = {
    "1tops-2ple": "Ethos-N78_1TOPS_2PLE_RATIO",
    "1tops-4ple": "Ethos-N78_1TOPS_4PLE_RATIO",
    "2tops-2ple": "Ethos-N78_2TOPS_2PLE_RATIO",
    "2tops-4ple": "Ethos-N78_2TOPS_4PLE_RATIO",
    "4tops-2ple": "Ethos-N78_4TOPS_2PLE_RATIO",
    "4tops-4ple": "Ethos-N78_4TOPS_4PLE_RATIO",
    "8tops-2ple": "Ethos-N78_8TOPS_2PLE_RATIO",
}

VELA = Toolchain(
    name="vela",
    title="Vela",
    adapter=".vela:VelaCompiler",
    status_name="vela",
    # Vela 5.2.0's --accelerator-config values
    platforms=(
        *(f"ethos-u55-{m}" for m in (32, 64, 128, 256)),
        *(f"ethos-u65-{m}" for m in (256, 512)),
        *(f"ethos-u85-{m}" for m in (128, 256, 512, 1024, 2048)),
    ),
)

RKNN = Toolchain(
    name="rknn",
    title="RKNN",
    adapter=".rknn:RknnCompiler",
    status_name="rknn-toolkit2",
    # RKNN-Toolkit2's target_platform values
    platforms=(
        "rk3588",
        "rk3576",
        "rk3568",
        "rk3566",
        "rk3562",
        "rv1106",
        "rv1103",
        "rv1106b",
        "rv1103b",
        "rv1126b",
        "rk2118",
    ),
    env=EnvSpec(
        name="rknn",
        title="Rockchip RKNN-Toolkit2 2.5.0",
        steps=(
            # The toolkit's runtime deps, minus its `torch<=2.4` pin: PyPI's torch 2.4 wheel drags ~2.5 GB of CUDA
            # wheels, and the ONNX path only needs `import torch` to succeed, so the CPU build npufit uses serves.
            (
                "numpy==1.26.4",
                "onnx==1.18.0",
                "onnxruntime>=1.17,<1.23",
                "protobuf>=4.21.6,<=4.25.4",
                "psutil",
                "ruamel.yaml",
                "scipy",
                "tqdm",
                "opencv-python-headless",
                "fast-histogram",
                "torch==2.13.0",
            ),
            # torch pulls setuptools>=77, which dropped pkg_resources; the toolkit imports it at RKNN() time.
            ("--no-deps", "setuptools<70"),
            ("--no-deps", "rknn-toolkit2==2.5.0"),
        ),
        probe="import importlib.metadata as m; print(m.version('rknn-toolkit2'))",
        enables="npufit compile --target rk3588 (and rk3562/rk3566/rk3568/rk3576/rv1106): build .rknn, "
        "per-layer placement, simulator",
        notes=(
            "installs torch 2.13.0 (CPU) instead of the toolkit's pinned torch<=2.4: the pinned PyPI wheel pulls CUDA",
        ),
        extras=(
            (
                "tflite",
                "TFLite models (the toolkit reads them through TensorFlow <= 2.14; about 1.1 GB more)",
                ("tensorflow-cpu==2.14.1",),
            ),
        ),
    ),
    resource="rknn",
)

HAILO = Toolchain(
    name="hailo",
    title="Hailo",
    adapter=".hailo:HailoCompiler",
    status_name="hailo-dfc",
    platforms=("hailo8", "hailo8l", "hailo8r", "hailo15h", "hailo15m", "hailo10h"),  # the DFC's --hw-arch values
    env=EnvSpec(
        name="hailo",
        title="Hailo Dataflow Compiler (user-supplied wheel)",
        steps=(),
        probe="import importlib.metadata as m; print(m.version('hailo-dataflow-compiler'))",
        enables="npufit compile --target hailo8/hailo8l: parse, optimize, compile to HEF (and parse-hef with HailoRT)",
        needs_wheel="hailo_dataflow_compiler-*.whl (download from the Hailo Developer Zone; login required)",
        python="python3.10",  # the DFC 3.x wheels take Python 3.8 to 3.10
        notes=(
            "NOT exercised here: the DFC is login-gated and was never installed on npufit's build machines",
            "a second --wheel hailort-*.whl adds HailoRT (for parse-hef; benchmarks need a Hailo device)",
        ),
    ),
    resource="hailo_dfc",
    stage_parser=StageParser(("hailo", "parser", "onnx"), "--start-node-names", "--end-node-names", "--hw-arch"),
)

ETHOS_N = Toolchain(
    name="ethos-n",
    title="Ethos-N support library",
    adapter=".ethos_n:EthosNCompiler",
    status_name="ethos-n-support-library",
    platforms=("ethos-n78", *(f"ethos-n78-{v}" for v in ETHOS_N78_VARIANTS)),
    env=EnvSpec(
        name="ethos-n",
        title="Arm Ethos-N support library (driver stack 25.03, built from source)",
        steps=(),
        probe="",
        enables="npufit compile --target ethos-n78 (and check --measure, probe --compiler ethos-n): the library's own "
        "per-operation support verdicts with reasons, Compile(), EstimatePerformance()",
        notes=("needs g++ and scons 4.4.0; --source DIR or NPUFIT_ETHOSN_SOURCE=DIR builds from a local copy",),
        kind="native",
    ),
    resource="ethos_n",
)

_REGISTRY: dict[str, Toolchain] = {t.name: t for t in (VELA, RKNN, HAILO, ETHOS_N)}


def register(toolchain: Toolchain) -> Toolchain:
    """Add a toolchain (a plug-in vendor family's); its name, platforms and env must be new."""
    if _REGISTRY.get(toolchain.name, toolchain) != toolchain:
        raise ValueError(f"toolchain '{toolchain.name}' is registered already")
    for other in _REGISTRY.values():
        if other.name == toolchain.name:
            continue
        shared = set(other.platforms) & set(toolchain.platforms)
        if shared or (toolchain.env and other.env and toolchain.env.name == other.env.name):
            what = f"platform {sorted(shared)[0]}" if shared else f"environment {toolchain.env.name}"  # type: ignore[union-attr]
            raise ValueError(f"toolchain '{toolchain.name}': {what} belongs to '{other.name}'")
    _REGISTRY[toolchain.name] = toolchain
    return toolchain


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def registered() -> tuple[Toolchain, ...]:
    """Every toolchain, built-in ones first (the order `npufit doctor` lists them)."""
    return tuple(_REGISTRY.values())


def names() -> list[str]:
    return list(_REGISTRY)


def find(name: str) -> Toolchain | None:
    return _REGISTRY.get(name)


def get(name: str) -> Toolchain:
    t = _REGISTRY.get(name)
    if t is None:
        raise NpufitError(f"unknown compiler '{name}' (one of: {', '.join(_REGISTRY)})")
    return t


def for_platform(target: str) -> Toolchain | None:
    """The toolchain whose compiler takes target name `target` (any case), or None."""
    key = target.lower()
    return next((t for t in _REGISTRY.values() if key in t.platforms), None)


def env_specs() -> dict[str, EnvSpec]:
    """Environment name -> spec, for every toolchain that runs in one of npufit's environments."""
    return {t.env.name: t.env for t in _REGISTRY.values() if t.env is not None}
