#!/usr/bin/env bash
# Builds everything and runs the whole default test suite (labels unit and integration; never bench/fuzz/soak).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
cd "$BUILD"
ctest --output-on-failure -L 'unit|integration' -j"$(nproc)" --timeout 900
