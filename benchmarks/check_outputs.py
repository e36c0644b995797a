"""Record `npufit check --target all --format json` outputs, or compare them with a recording: a speed-up of
check must leave every report byte-identical.

Models: the tests' generated ones (tests/onnx_builders.py's zoo and branchy models, every hostile case of
tests/hostile/model_cases.py; for those the exit code and stderr are compared too), plus any files or folders
given (e.g. ~/.cache/npufit/calibration, the bench_check models kept with --keep).
Run: .venv/bin/python benchmarks/check_outputs.py record DIR [MODELS...]   (before the change)
     .venv/bin/python benchmarks/check_outputs.py compare DIR [MODELS...]  (after it: lists every difference)
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generated_models(folder: Path) -> list[Path]:
    sys.path.insert(0, str(ROOT))
    import onnx

    from tests import onnx_builders
    from tests.hostile import model_cases

    paths = []
    for i in range(15):
        p = folder / f"zoo_{i:02d}.onnx"
        onnx.save_model(onnx_builders.zoo_model(i), str(p))
        paths.append(p)
    p = folder / "branchy.onnx"
    onnx.save_model(onnx_builders.branchy_model(), str(p))
    paths.append(p)
    for name, fn in sorted(vars(model_cases).items()):
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != model_cases.__name__:
            continue
        if list(inspect.signature(fn).parameters) != ["folder"]:
            continue
        sub = folder / name
        sub.mkdir()
        try:
            paths.append(Path(fn(sub)))
        except Exception as e:  # a case the platform cannot build (e.g. a FIFO): skipped in both runs alike
            print(f"skipped {name}: {e}", file=sys.stderr)
    return paths


def given_models(specs: list[str]) -> list[Path]:
    out = []
    for s in specs:
        p = Path(s).expanduser()
        out.extend(sorted(q for q in p.iterdir() if q.suffix in (".onnx", ".tflite")) if p.is_dir() else [p])
    return out


def run_check(path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "npufit", "check", str(path), "--target", "all", "--format", "json"],
        capture_output=True,
        env=env,
        timeout=900,
    )
    # the generated models' folder differs per run (reports name the model's path)
    stdout = re.sub(rb"/[^\s\"]*?npufit-outputs-[^/\s\"]+", b"<tmp>", r.stdout)
    stderr = re.sub(r"/\S*?npufit-outputs-[^/\s]+", "<tmp>", r.stderr.decode("utf-8", "replace"))
    return {
        "rc": r.returncode,
        "stdout_sha256": hashlib.sha256(stdout).hexdigest(),
        "stdout_len": len(stdout),
        "stderr": stderr,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("record", "compare"))
    ap.add_argument("dir", help="where the recording is (record writes it, compare reads it)")
    ap.add_argument("models", nargs="*", help="more model files or folders")
    args = ap.parse_args()
    rec = Path(args.dir)
    with tempfile.TemporaryDirectory(prefix="npufit-outputs-") as tmp:
        gen = generated_models(Path(tmp))
        cases = {f"gen:{p.relative_to(tmp)}": p for p in gen}
        cases.update({f"file:{p}": p for p in given_models(args.models)})
        results = {}
        for key, p in cases.items():
            results[key] = run_check(p)
            print(f"{results[key]['rc']} {key}", flush=True)
    if args.mode == "record":
        rec.mkdir(parents=True, exist_ok=True)
        (rec / "outputs.json").write_text(json.dumps(results, indent=1, sort_keys=True))
        print(f"recorded {len(results)} models in {rec / 'outputs.json'}")
        return
    old = json.loads((rec / "outputs.json").read_text())
    diffs = [k for k in sorted(set(old) | set(results)) if old.get(k) != results.get(k)]
    for k in diffs:
        print(f"DIFFERENT: {k}\n  before {old.get(k)}\n  after  {results.get(k)}")
    print(f"{len(results)} models, {len(diffs)} different")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
