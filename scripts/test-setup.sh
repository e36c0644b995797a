#!/usr/bin/env bash
# Optional tools the test suite exercises for real when they can be installed here; their tests skip
# with a stated reason when not. Failures here never fail `make test`.
set -u
BIN=${1:-.venv/bin}

# RKNN-Toolkit2 in its own virtualenv (it pins numpy<2 / onnx 1.18 / setuptools<70): ~1.4 GB, ~1 min.
"$BIN/npufit" env install rknn >/dev/null 2>&1 \
  && echo "test-setup: rknn env ready" \
  || echo "test-setup: rknn env unavailable (its tests will skip): see 'npufit env install rknn'"

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
