"""DEIMv2 detectors rebuilt from the vendored DEIMv2 source, split for Hailo-8 the way a Hailo user does it.

    python benchmarks/deimv2.py [--variants atto,femto,pico,n,s] [--target hailo8] [--format table|markdown]
    python benchmarks/deimv2.py --deps-only      # install the builder's private torchvision (scripts/test-setup.sh)

Each variant is built from the DEIMv2 YAML config with random weights through DEIMv2's own deploy path
(`cfg.model.deploy()` + `cfg.postprocessor.deploy()`, inputs `images` and `orig_target_sizes`), exported batch-1
static at opset 17 with TorchScript (the exporter of the repository's pinned torch), one process per variant (the
DEIMv2 config registry keeps the previous variant's keys). Conv/Linear weights are re-drawn so that the untrained
model's exact score ties (zeroed box heads) do not make TopK order differ between torch and ONNX Runtime. Models are
cached under ~/.cache/npufit/deimv2 (or $NPUFIT_DEIMV2_CACHE), keyed by source, torch version and this builder.

The benchmark prints per variant: stages of the default `split --target hailo8`, the NPU share of MACs, the NPU share
of the user's own cut (backbone + encoder on the NPU, the decoder and post-processing on the host), the chain's
verification, `run --compare-original`, the `hailo parser` command, and the split's wall time and peak RSS (each split
runs in its own process: `os.wait4` gives its CPU time, its own VmHWM at exit its peak RSS).

The DEIMv2 code needs torchvision, whose only wheel in the registry is a CUDA build: it is installed with --no-deps
into a private folder (~/.cache/npufit/deimv2/site), never into the project's environment, and torchvision's two C++
op schemas (nms, qnms) are declared before it is imported. Training-only imports (calflops, tensorboard, scipy,
faster-coco-eval) are stubbed: building and exporting the model never calls them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `calibration.site` when run as a script
    sys.path.insert(0, str(ROOT))
SOURCE_NAME = "DEIMv2-0fff8d4"
TORCHVISION = "torchvision==0.28.0"  # the release built against torch 2.13.0
BUILDER_VERSION = 1  # bump when the export below changes: cached models are keyed by it
OPSET = 17
# variant -> config under configs/deimv2 (the X-line variants use DINOv3 backbones like s)
CONFIGS = {
    "atto": "deimv2_hgnetv2_atto_coco.yml",
    "femto": "deimv2_hgnetv2_femto_coco.yml",
    "pico": "deimv2_hgnetv2_pico_coco.yml",
    "n": "deimv2_hgnetv2_n_coco.yml",
    "s": "deimv2_dinov3_s_coco.yml",
    "m": "deimv2_dinov3_m_coco.yml",
    "l": "deimv2_dinov3_l_coco.yml",
    "x": "deimv2_dinov3_x_coco.yml",
}
DEFAULT_VARIANTS = ("atto", "femto", "pico", "n", "s")
# The user's own cut: stage 1 = images -> the backbone + encoder feature maps (the part the Hailo parser took);
# everything the decoder and post-processor compute stays on the host. ONNX node names carry the module path.
USER_NPU_SCOPES = ("/model/backbone/", "/model/encoder/")


class Unavailable(RuntimeError):
    """The vendored source or the builder's private torchvision is not there (tests skip with this reason)."""


def source_dir() -> Path:
    """$NPUFIT_DEIMV2_SOURCE, else shared/vendor/DEIMv2-0fff8d4 in the nearest folder above the repository."""
    env = os.environ.get("NPUFIT_DEIMV2_SOURCE")
    candidates = [Path(env)] if env else [p / "shared" / "vendor" / SOURCE_NAME for p in ROOT.parents]
    for c in candidates:
        if (c / "configs" / "deimv2").is_dir() and (c / "engine").is_dir():
            return c
    where = env or f"shared/vendor/{SOURCE_NAME} above {ROOT}"
    raise Unavailable(f"the vendored DEIMv2 source is not there ({where}; set NPUFIT_DEIMV2_SOURCE)")


def cache_dir() -> Path:
    return Path(os.environ.get("NPUFIT_DEIMV2_CACHE") or Path.home() / ".cache" / "npufit" / "deimv2")


def site_dir() -> Path:
    return cache_dir() / "site"


def ensure_torchvision() -> Path:
    """torchvision in the builder's private folder (pip --target --no-deps: the project's torch is left alone)."""
    from calibration.site import Unavailable as SiteUnavailable
    from calibration.site import private_site

    try:
        return private_site(site_dir(), [TORCHVISION], "torchvision/__init__.py")
    except SiteUnavailable as e:
        raise Unavailable(f"DEIMv2 builder: {e}") from e


def model_key(variant: str, src: Path) -> str:
    import torch

    cfg = (src / "configs" / "deimv2" / CONFIGS[variant]).read_bytes()
    h = hashlib.sha256(cfg + f"{SOURCE_NAME}|{torch.__version__}|{BUILDER_VERSION}|{OPSET}".encode())
    return h.hexdigest()[:12]


def build(variant: str, timeout: float = 1800) -> Path:
    """The cached ONNX model of `variant`, built in its own process when missing."""
    if variant not in CONFIGS:
        raise SystemExit(f"unknown DEIMv2 variant {variant!r} (choose from {', '.join(CONFIGS)})")
    src = source_dir()
    out = cache_dir() / f"deimv2_{variant}-{model_key(variant, src)}.onnx"
    if out.is_file():
        return out
    site = ensure_torchvision()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(src)]))
    r = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "_export", variant, str(tmp)],
        capture_output=True,
        text=True,
        env=env,
        cwd=src,
        timeout=timeout,
    )
    if r.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"building DEIMv2 {variant} failed:\n{(r.stderr or r.stdout)[-3000:]}")
    tmp.replace(out)
    return out


# -- the child process: build one variant and export it ------------------------------------------------------------
def _stub(name: str) -> None:
    """A module whose every attribute is an inert placeholder (training/eval-only imports)."""

    class Placeholder:
        def __init__(self, *a, **k):
            pass

    def attr(key: str):
        if key.startswith("__"):  # introspection (inspect, pickle) must see a plain module
            raise AttributeError(key)
        return Placeholder

    mod = types.ModuleType(name)
    mod.__getattr__ = attr  # type: ignore[method-assign]
    mod.__path__ = []  # a package: submodules resolve to stubs too
    parent, _, leaf = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], leaf, mod)
    sys.modules[name] = mod


def _export(variant: str, out: str) -> None:
    import torch

    # torchvision's Python part registers fake kernels for its C++ ops; the CUDA wheel's C++ ops do not load next to
    # the CPU torch, so their schemas are declared first (the model never calls nms).
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    for name in (
        "calflops",
        "scipy",
        "scipy.optimize",
        "faster_coco_eval",
        "faster_coco_eval.core",
        "faster_coco_eval.core.mask",
        "torch.utils.tensorboard",
    ):  # fmt: skip (parents first)
        _stub(name)
    from engine.core import YAMLConfig  # the vendored source, on PYTHONPATH

    cfg = YAMLConfig(str(Path("configs") / "deimv2" / CONFIGS[variant]))
    if "HGNetv2" in cfg.yaml_cfg:
        cfg.yaml_cfg["HGNetv2"]["pretrained"] = False  # as tools/deployment/export_onnx.py does
    torch.manual_seed(0)
    # the untrained init gives exact TopK ties (zeroed heads): draw every Conv/Linear again
    for m in cfg.model.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            m.reset_parameters()

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = cfg.model.deploy()
            self.postprocessor = cfg.postprocessor.deploy()

        def forward(self, images, orig_target_sizes):
            return self.postprocessor(self.model(images), orig_target_sizes)

    model = Model().eval()
    size = cfg.yaml_cfg["eval_spatial_size"]
    images = torch.rand(1, 3, *size)
    sizes = torch.tensor([size])
    with torch.no_grad():
        model(images, sizes)
        torch.onnx.export(
            model,
            (images, sizes),
            out,
            input_names=["images", "orig_target_sizes"],
            output_names=["labels", "boxes", "scores"],
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


# -- the benchmark ------------------------------------------------------------------------------------------------
def user_cut_end_nodes(model: Path, target: str) -> list[str]:
    """End nodes of the user's cut: backbone/encoder nodes that run (not compile-time constants) whose outputs the
    decoder or post-processor reads."""
    import onnx

    import npufit

    running = {n.name for n in npufit.check(model, target).running}
    g = onnx.load(str(model), load_external_data=False).graph
    inside = {o: n.name for n in g.node if n.name.startswith(USER_NPU_SCOPES) and n.name in running for o in n.output}
    ends: dict[str, None] = {}
    for n in g.node:
        if not n.name.startswith(USER_NPU_SCOPES):
            for t in n.input:
                if t in inside:
                    ends[inside[t]] = None
    return list(ends)


def _measure_split(model: Path, target: str, out: Path, extra: list[str]) -> tuple[dict, float, float, float]:
    """`npufit split` in its own process: (its JSON, wall seconds, CPU seconds, peak RSS in MiB of that process).
    The peak is the process's own VmHWM, printed by the wrapper as it exits: ru_maxrss would carry this builder's
    high-water mark (torch and the exported model) into the child across fork and exec."""
    from benchmarks.bench_check import RSS_WRAPPER

    cmd = [sys.executable, "-c", RSS_WRAPPER, "split", str(model), "-t", target, "-d", str(out), "--format", "json"]
    with tempfile.TemporaryFile("w+") as stdout:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd + extra, stdout=stdout, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
        err = proc.stderr.read() if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own usage, not the builder's
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"split failed: {err.strip()[-500:]}")
        stdout.seek(0)
        res = json.load(stdout)
    return res, wall, usage.ru_utime + usage.ru_stime, float(err.strip().splitlines()[-1])


def _run_equal(plan_dir: Path, model: Path) -> str:
    """`npufit run` on an image-like sample (pixels in [0, 1], the image's own size), compared with the original:
    "yes", "no", or "yes, NaN" when both give the same NaN outputs (an untrained big model overflows on such input,
    and the comparison counts NaN as a difference)."""
    import numpy as np

    import npufit
    from npufit.split import load_plan
    from npufit.verify.compare import make_session, run_onnx

    src = {i["name"]: i for i in load_plan(plan_dir).source["inputs"]}
    h, w = src["images"]["shape"][2:]
    feeds = {
        "images": np.random.default_rng(7).random(src["images"]["shape"], dtype=np.float32),
        "orig_target_sizes": np.array([[w, h]], dtype=np.int64),
    }
    res = npufit.run(plan_dir, feeds, compare_original=model)
    if res.comparison and res.comparison["equivalent"]:
        return "yes"
    ref = run_onnx(make_session(model), feeds)
    same = all(np.array_equal(ref[k], res.outputs[k], equal_nan=ref[k].dtype.kind == "f") for k in ref)
    return "yes, NaN" if same else "no"


def bench_variant(variant: str, target: str, work: Path) -> dict:
    import npufit

    model = build(variant)
    res, wall, cpu, rss = _measure_split(model, target, work / f"{variant}-plan", [])
    plan = res["plan"]
    npu = [s for s in plan["stages"] if s["device"] == "npu"]
    stage0 = npufit.check(work / f"{variant}-plan" / plan["stages"][0]["file"], target)
    ends = user_cut_end_nodes(model, target)
    user = npufit.split(model, target, work / f"{variant}-user", end_nodes=ends, verify=False)
    parser = next((c["parse_original"] for s in npu for c in s.get("vendor", {}).values()), "")
    return {
        "variant": variant,
        "model_mb": round(model.stat().st_size / 2**20, 1),
        "stages": " ".join(s["device"] for s in plan["stages"]),
        "npu_stages": len(npu),
        "npu_macs_pct": plan["cost"]["npu_macs_pct"],
        "user_cut_npu_macs_pct": user.plan.cost["npu_macs_pct"],
        "user_cut_end_nodes": len(ends),
        "stage0_device": plan["stages"][0]["device"],
        "stage0_check_npu_pct": round(stage0.coverage_nodes, 2),
        "verified": "yes" if plan["verification"] and plan["verification"]["equivalent"] else "no",
        "run_equal": _run_equal(work / f"{variant}-plan", model),
        "split_s": round(wall, 2),
        "split_cpu_s": round(cpu, 2),
        "split_total_s": res["timings"]["total_s"],
        "peak_rss_mib": round(rss, 0),
        "why": res["why"],
        "parser": parser,
    }


COLUMNS = (
    ("variant", "variant"),
    ("model_mb", "MB"),
    ("stages", "stages"),
    ("npu_macs_pct", "NPU MACs %"),
    ("user_cut_npu_macs_pct", "user's cut NPU MACs %"),
    ("stage0_check_npu_pct", "stage 0 check NPU %"),
    ("verified", "chain verified"),
    ("run_equal", "run = original"),
    ("split_s", "split s"),
    ("split_cpu_s", "split CPU s"),
    ("peak_rss_mib", "peak RSS MiB"),
)


def render(rows: list[dict], fmt: str) -> str:
    head = [h for _, h in COLUMNS]
    body = [[str(r[k]) for k, _ in COLUMNS] for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(b) + " |" for b in body]
    else:
        w = [max(len(x) for x in col) for col in zip(head, *body)]
        lines = ["  ".join(x.ljust(w[i]) for i, x in enumerate(r)) for r in [head, *body]]
    for r in rows:
        lines += ["", f"{r['variant']}: {r['why']}", f"  {r['parser']}"]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "_export":
        return _export(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    ap.add_argument("--target", default="hailo8")
    ap.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    ap.add_argument("--deps-only", action="store_true", help="install the builder's private torchvision and stop")
    args = ap.parse_args()
    try:
        if args.deps_only:
            print(f"DEIMv2 builder: torchvision in {ensure_torchvision()}")
            return None
        source_dir()
    except Unavailable as e:
        raise SystemExit(f"DEIMv2 benchmark unavailable: {e}") from None
    import onnxruntime
    import torch

    print(
        f"# {platform.machine()} {platform.python_version()}, {os.cpu_count()} CPU(s), torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, DEIMv2 {SOURCE_NAME}, opset {OPSET}, batch 1, random weights, "
        f"load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="deimv2-bench-") as tmp:
        for v in args.variants.split(","):
            rows.append(bench_variant(v.strip(), args.target, Path(tmp)))
            print(f"# {v}: done", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=2) if args.format == "json" else render(rows, args.format))
    return None


if __name__ == "__main__":
    main()
