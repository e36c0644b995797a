"""Wall time of the whole `npufit probe --target hailo8` suite (goal: < 60 s on a 2-core machine).

Usage: python benchmarks/probe_hailo8.py [--jobs N] [--sweep]
Prints the case count, the verdict counts and the wall time (worker start-up included).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("NPUFIT_NO_PROGRESS", "1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from npufit.probe import probe

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rep = probe("hailo8", jobs=args.jobs, sweep=args.sweep)
        times.append(time.perf_counter() - t0)
    per_case = sorted(c["seconds"] for c in rep.cases)
    print(
        f"hailo8 probe: {len(rep.cases)} cases ({len(rep.base_cases)} base{', sweep' if args.sweep else ''}), "
        f"{rep.counts()}, jobs={rep.jobs}, cpus={os.cpu_count()}"
    )
    print(
        f"wall time: best {min(times):.2f} s, median {sorted(times)[len(times) // 2]:.2f} s over {args.repeat} runs; "
        f"per case median {per_case[len(per_case) // 2] * 1000:.0f} ms, max {per_case[-1] * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
