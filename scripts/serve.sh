#!/usr/bin/env bash
# Installs dependencies, builds lazyslot, and serves a model: `./scripts/serve.sh [lazyslot serve flags]`.
# With no -m it generates a small random-weight demo model first (its text is noise).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target lazyslot
exec ./build/lazyslot serve "$@"
