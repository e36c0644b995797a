#!/usr/bin/env bash
# The test suite beside two busy CPU hogs, as on a loaded CI machine: it must pass there as it does on an idle one
# (docs/dev/testing.md). Run it before handing in a change to the suite or to anything that times or waits.
#   scripts/test-under-load.sh [pytest arguments]        e.g. --shuffle-seed 1234, -x, tests/test_pipeline_run.py
# PYTHON picks the interpreter (default .venv/bin/python); HOGS the number of busy loops (default 2).
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
hogs=()
stop_hogs() {
  if [ ${#hogs[@]} -gt 0 ]; then
    kill "${hogs[@]}" 2>/dev/null
    wait "${hogs[@]}" 2>/dev/null
  fi
  hogs=()
}
stop_tests() {  # Ctrl-C first (pytest prints what it has); a test inside an in-process CLI call may swallow it
  [ -z "$test_pid" ] && return
  kill -INT "$test_pid" 2>/dev/null
  for _ in $(seq 20); do kill -0 "$test_pid" 2>/dev/null || return; sleep 0.5; done
  kill -KILL "$test_pid" 2>/dev/null
}
test_pid=
trap stop_hogs EXIT
trap 'stop_tests; stop_hogs; exit 130' INT TERM
for _ in $(seq "${HOGS:-2}"); do
  (while :; do :; done) &  # one core kept busy at normal priority
  hogs+=($!)
done
echo "test-under-load: ${#hogs[@]} CPU hogs (pids ${hogs[*]}) on $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
"$PY" -m pytest -q -p no:cacheprovider "$@" &  # in the background, so that a signal reaches the trap at once
test_pid=$!
wait "$test_pid"
rc=$?
test_pid=
echo "test-under-load: pytest exit $rc after $(($(date +%s) - start)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
