#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the default test suite (ctest labels unit,
# integration and deploy; never bench, fuzz or soak). Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
cd "$BUILD"
ctest --output-on-failure -L 'unit|integration|deploy' -j"$(nproc)" --timeout 1200
