#!/usr/bin/env bash
# Optional tools the test suite exercises for real when they can be installed here; their tests skip
# with a stated reason when not. Failures here never fail `make test`.
set -u
BIN=${1:-.venv/bin}

# RKNN-Toolkit2 in its own virtualenv (it pins numpy<2 / onnx 1.18 / setuptools<70): ~1.4 GB, ~1 min.
"$BIN/npufit" env install rknn >/dev/null 2>&1 \
  && echo "test-setup: rknn env ready" \
  || echo "test-setup: rknn env unavailable (its tests will skip): see 'npufit env install rknn'"

# Arm's Ethos-N support library, built from the driver stack copy in ../shared (else $NPUFIT_ETHOSN_SOURCE, else
# the public repository): g++ and scons 4.4.0; about 12 min on 2 cores the first time, nothing to do afterwards.
ETHOSN_SRC=${NPUFIT_ETHOSN_SOURCE:-}
[ -z "$ETHOSN_SRC" ] && [ -d ../shared/vendor/ethos-n-driver-stack-25.03 ] && ETHOSN_SRC=../shared/vendor/ethos-n-driver-stack-25.03
"$BIN/python" -m pip install -q 'scons==4.4.0' >/dev/null 2>&1
"$BIN/npufit" env install ethos-n ${ETHOSN_SRC:+--source "$ETHOSN_SRC"} >/dev/null 2>&1 \
  && echo "test-setup: ethos-n support library ready" \
  || echo "test-setup: ethos-n support library unavailable (its tests will skip): see 'npufit env install ethos-n'"

# torchvision for the DEIMv2 builder (benchmarks/deimv2.py, tests/test_deimv2_hailo.py), installed with --no-deps into
# ~/.cache/npufit/deimv2/site only: the project's torch 2.13.0 is left as it is.
if [ -d ../shared/vendor/DEIMv2-0fff8d4 ] || [ -n "${NPUFIT_DEIMV2_SOURCE:-}" ]; then
  "$BIN/python" benchmarks/deimv2.py --deps-only >/dev/null 2>&1 \
    && echo "test-setup: DEIMv2 builder ready" \
    || echo "test-setup: DEIMv2 builder unavailable (its test will build on demand or skip)"
fi
# The real-world calibration set (tests/test_calibration_realworld.py, calibration/realworld.py): the packages' own
# model files (wheels by `pip download`, ~75 MB) and Ultralytics' YOLO exports, built offline from its YAML files. The
# exporter and what it imports (torchvision, a headless OpenCV, onnxslim) go into a private folder of the cache
# (calibration/site.py), never into this environment: torchvision's CUDA wheel breaks transformers beside the CPU torch.
# 17 exports, about 4 min on 2 cores the first time.
"$BIN/python" -m calibration.realworld build >/dev/null 2>&1 \
  && echo "test-setup: real-world calibration set ready" \
  || echo "test-setup: real-world calibration set incomplete (models that cannot be built are skipped)"

# Headless Chromium for the HTML report test (Debian's package; needs root).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
      && echo "test-setup: chromium installed" \
      || echo "test-setup: chromium could not be installed (the report render test will skip)"
  else
    echo "test-setup: chromium missing and not root (the report render test will skip)"
  fi
fi
exit 0
