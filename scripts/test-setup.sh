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

# The real-world calibration set (tests/test_calibration_realworld.py, calibration/realworld.py): Ultralytics builds
# its YOLO models from YAML and exports them offline; installed WITHOUT its heavy dependencies (it would replace the
# pinned CPU torch): torchvision's Python parts (its PyPI wheel is a CUDA build: its C++ ops are never used), a
# headless OpenCV, onnxslim for the exporter's default simplify. Then the set is built into the cache (wheels by
# `pip download`, ~75 MB; 17 exports, ~4 min on 2 cores the first time).
"$BIN/python" -m pip install -q --no-deps 'ultralytics==8.4.190' 'torchvision==0.28.0' \
  'opencv-python-headless==4.14.0.94' 'onnxslim==0.1.98' 'colorama>=0.4' >/dev/null 2>&1 \
  && "$BIN/python" -m calibration.realworld build >/dev/null 2>&1 \
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
