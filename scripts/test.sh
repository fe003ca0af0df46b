#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the default test suite (ctest labels unit,
# integration and deploy; never bench, fuzz or soak). Exits non-zero when any test fails. Prints how long the
# packages, the build and the tests took (.ci/run collects these).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
./scripts/install-deps.sh
echo "== test.sh: packages took $((SECONDS - t0)) s"
BUILD=${BUILD:-build}
t0=$SECONDS
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
echo "== test.sh: build took $((SECONDS - t0)) s"
cd "$BUILD"
t0=$SECONDS
rc=0
ctest --output-on-failure -L 'unit|integration|deploy' -j"$(nproc)" --timeout 1200 || rc=$?
echo "== test.sh: tests took $((SECONDS - t0)) s"
exit $rc
