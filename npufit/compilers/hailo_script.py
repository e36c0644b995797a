"""The script `npufit compile --target hailo8 --emit-script DIR` writes: the DFC's three steps, then HailoRT's
parse-hef and benchmark, every step's output in logs/<step>.log and its exit code and seconds in logs/steps.tsv,
which `npufit compile --results DIR` reads back (hailo_logs)."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..util.io import atomic_write_text
from .hailo_logs import LOGS, STEPS_FILE

SCRIPT = "compile_hailo.sh"
BENCH_SECONDS = 15  # hailortcli benchmark's own default time per mode

_STEP_FUNCTION = f"""\
# step NAME COMMAND...: the output to {LOGS}/NAME.log (and here), exit code and seconds to {LOGS}/{STEPS_FILE}
step() {{
  local name=$1; shift
  echo "[npufit] $name: $*"
  local t0 t1 rc secs
  t0=$(date +%s.%N)
  "$@" 2>&1 | tee "{LOGS}/$name.log"
  rc=${{PIPESTATUS[0]}}
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {{ printf "%.3f", b - a }}')
  printf '%s\\t%s\\t%s\\n' "$name" "$rc" "$secs" >> {LOGS}/{STEPS_FILE}
  [ "$rc" -eq 0 ] || echo "[npufit] $name failed (exit $rc): see {LOGS}/$name.log" >&2
  return "$rc"
}}
"""


def device_steps(net: str) -> list[tuple[str, list[str]]]:
    """HailoRT's steps on the compiled HEF: what it holds, then its own benchmark (needs a Hailo device)."""
    hef = f"{net}.hef"
    return [
        ("parse-hef", ["hailortcli", "parse-hef", hef]),
        (
            "benchmark",
            ["hailortcli", "benchmark", hef, "--time-to-run", str(BENCH_SECONDS), "--csv", f"{LOGS}/benchmark.csv"],
        ),
    ]


def write_script(out: Path, net: str, target: str, dfc_steps, header: list[str]) -> Path:
    """Write compile_hailo.sh into `out`; `dfc_steps`: [(step, argv)] of the Dataflow Compiler."""
    hef = shlex.quote(f"{net}.hef")
    q = shlex.join
    lines = [
        "#!/usr/bin/env bash",
        *(f"# {h}" for h in header),
        "set -uo pipefail",
        'cd "$(dirname "$0")"',
        f"mkdir -p {LOGS}",
        _STEP_FUNCTION,
        f'if [ -f {hef} ] && [ "${{NPUFIT_REBUILD:-0}}" != 1 ]; then',
        f'  echo "[npufit] {net}.hef exists: the Dataflow Compiler steps are skipped (NPUFIT_REBUILD=1 reruns them)"',
        "elif ! command -v hailo >/dev/null 2>&1; then",
        "  echo \"[npufit] the Hailo Dataflow Compiler ('hailo') is not on PATH: activate the virtualenv it is "
        'installed in, then run this script again" >&2',
        "  exit 127",
        "else",
        f"  hailo --version > {LOGS}/dfc-version.log 2>&1 || true",
        *(f"  step {stage} {q(argv)} || exit $?" for stage, argv in dfc_steps),
        "fi",
        "if ! command -v hailortcli >/dev/null 2>&1; then",
        f"  echo \"[npufit] {net}.hef is built; HailoRT ('hailortcli') is not on PATH here: run this script again "
        'where HailoRT and a Hailo device are, for parse-hef and the benchmark"',
        "  exit 0",
        "fi",
        f"hailortcli --version > {LOGS}/hailort-version.log 2>&1 || true",
        # the machine the benchmark runs on, for the bench result: kernel and arch, logical cores, CPU model
        f"{{ uname -srm; nproc; lscpu 2>/dev/null | grep -m1 'Model name'; }} > {LOGS}/machine.log 2>&1 || true",
    ]
    (parse, parse_argv), (bench, bench_argv) = device_steps(net)
    lines += [
        f"step {parse} {q(parse_argv)} || exit $?",
        f"if step identify {q(['hailortcli', 'fw-control', 'identify'])}; then",
        # HailoRT stops at its latency step on a network with several inputs: the FPS it measured stay in the log
        f'  step {bench} {q(bench_argv)} || echo "[npufit] the figures measured before it stopped stay in '
        f'{LOGS}/{bench}.log"',
        "else",
        "  echo \"[npufit] no Hailo device answered 'hailortcli fw-control identify': no benchmark\"",
        "fi",
        f'echo "[npufit] done; read the results back with: npufit compile --results $(pwd) (target {target})"',
    ]
    p = out / SCRIPT
    atomic_write_text(p, "\n".join(lines) + "\n")
    p.chmod(0o755)
    return p
