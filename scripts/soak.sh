#!/usr/bin/env bash
# Builds lazyslot and the soak driver (Release, build dir `build`) and runs a bounded soak of a real server:
# `./scripts/soak.sh [SECONDS] [lazyslot_soak flags]` (default 600 s; see `build/lazyslot_soak --help`).
# Exits non-zero on a crash, a stuck slot, a wrong answer, a failed request or RSS growth beyond the KV held.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_ARG=${1:-${LAZYSLOT_SOAK_SECONDS:-600}}
shift || true
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target lazyslot lazyslot_soak
exec "./$BUILD/lazyslot_soak" --seconds "$SECONDS_ARG" "$@"
