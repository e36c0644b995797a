"""Execute a plan's stages in order: each stage is fed from the original inputs and earlier stages.

Host stages run on ONNX Runtime CPU. An NPU stage runs on the target's vendor runtime when that
runtime is installed *and* the stage has a compiled binary; otherwise it runs on ONNX Runtime CPU
and `notes` says why. The vendor runtime is detected lazily, on first use, never at import time.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..targets import get_profile
from ..verify.compare import make_session, ort_message, run_limit
from .plan import SplitPlan, load_plan

ORT_CPU = "onnxruntime-cpu"


def vendor_runtime(target: str) -> tuple[str, str] | None:
    """(runtime name, python module that provides it) from the target's profile; None when it names none."""
    try:
        p = get_profile(target)
    except NpufitError:  # a plan written for a target this build has no profile for
        return None
    return (p.runtime, p.runtime_module) if p.runtime else None


def runtime_installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class ChainRunner:
    """Run the stage chain of a plan folder. `.device_of_stage` says what ran each stage."""

    def __init__(
        self,
        plan_dir: str | os.PathLike,
        npu_runtime: str | None = None,
        *,
        plan: SplitPlan | None = None,
        threads: int = 1,
        optimized: bool = False,
        lazy: bool = False,
    ):
        """lazy: open the stage sessions on the first run, not here (split's verification opens one chain at a
        time, and `release()` closes it again: a big model's sessions hold its activations)."""
        self.plan_dir = Path(plan_dir)
        self.plan = plan if plan is not None else load_plan(plan_dir)
        self.notes: list[str] = []
        self.device_of_stage: dict[str, str] = {}
        npu_rt = self._pick_npu_runtime(npu_runtime)
        for st in self.plan.stages:
            self.device_of_stage[st.name] = npu_rt if st.device == "npu" else ORT_CPU
        self._threads, self._optimized = threads, optimized
        self._release_after = self._last_uses()
        self._steps: list[tuple] | None = None
        if not lazy:
            self._open()
        self._inputs = tuple(self.plan.input_names)
        self._outputs = tuple(self.plan.output_names)

    def _open(self) -> list[tuple]:
        """Per stage: (name, session, input names, output names, tensors to drop afterwards)."""
        keep = set(self.plan.input_names)
        self._steps = [
            (
                st.name,
                _session(self.plan_dir / st.file, self._threads, self._optimized),
                tuple(st.input_names),
                list(st.output_names),
                tuple(t for t in self._release_after.get(st.name, ()) if t not in keep),
            )
            for st in self.plan.stages
        ]
        return self._steps

    def release(self) -> None:
        """Close the stage sessions (and the memory their runs hold); the next run opens them again."""
        self._steps = None

    def _pick_npu_runtime(self, wanted: str | None) -> str:
        target = self.plan.target.get("name", "")
        if not any(s.device == "npu" for s in self.plan.stages) or wanted == ORT_CPU:
            return ORT_CPU
        rt = vendor_runtime(target)
        if wanted not in (None, "auto") and (rt is None or wanted != rt[0]):
            known = ", ".join(["auto", ORT_CPU] + ([rt[0]] if rt else []))
            raise NpufitError(f"--npu-runtime {wanted}: not a runtime for target {target} (choose from {known})")
        if rt is None:
            self.notes.append(f"no vendor runtime is known for {target}: NPU stages ran on {ORT_CPU}")
            return ORT_CPU
        name, module = rt
        installed = runtime_installed(module)
        if not installed:
            msg = f"{name} (python module '{module}') is not installed: NPU stages ran on {ORT_CPU}"
            if wanted == name:
                raise NpufitError(msg.replace(f": NPU stages ran on {ORT_CPU}", ""))
            self.notes.append(msg)
            return ORT_CPU
        # Running on the device needs a compiled binary per stage (npufit compile); plan stages hold ONNX only.
        msg = (
            f"{name} is installed but the plan's NPU stages are not compiled ({name} runs compiled binaries): "
            f"they ran on {ORT_CPU}"
        )
        if wanted == name:
            raise NpufitError(msg.split(":")[0] + ": compile them first (npufit compile)")
        self.notes.append(msg)
        return ORT_CPU

    def _last_uses(self) -> dict[str, list[str]]:
        """Tensors that can be dropped after each stage (memory stays flat on long chains)."""
        keep = set(self.plan.output_names)
        last: dict[str, str] = {}
        for st in self.plan.stages:
            for t in st.input_names:
                last[t] = st.name
        out: dict[str, list[str]] = {}
        for t, s in last.items():
            if t not in keep:
                out.setdefault(s, []).append(t)
        return out

    def run(self, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[tuple[str, float]]]:
        missing = [n for n in self._inputs if n not in feeds]
        if missing:
            raise NpufitError(f"inputs missing: {', '.join(missing)} (the model takes {', '.join(self._inputs)})")
        env = {n: feeds[n] for n in self._inputs}
        times: list[tuple[str, float]] = []
        clock = time.perf_counter
        with run_limit() as ro:  # the whole chain is one run of the model under the time limit (a Loop may never end)
            for name, sess, ins, outs, drop in self._steps or self._open():
                stage_feeds = {n: env[n] for n in ins}
                t0 = clock()
                try:
                    vals = sess.run(outs, stage_feeds, ro)
                except Exception as e:  # wrong shapes/dtypes in the user's feeds surface here
                    if ro.terminate:
                        raise
                    raise NpufitError(f"{name}: ONNX Runtime failed: {ort_message(e)}") from None
                times.append((name, clock() - t0))
                env.update(zip(outs, vals))
                for t in drop:
                    del env[t]
        return {n: env[n] for n in self._outputs}, times


def _session(path: Path, threads: int, optimized: bool):
    """Deterministic sessions (verify's settings) by default; `optimized` uses ORT's full graph optimizer."""
    try:
        return make_session(path, threads, optimized)
    except NpufitError as e:
        raise NpufitError(f"{path.name}: {e.message}") from None
