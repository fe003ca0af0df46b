#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz and runs each for SECONDS_PER_TARGET seconds
# on a scratch copy of its seed corpus; prints executions, exec/s, coverage and crashes per target.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]   (no TARGET: every target of CMakeLists.txt's
# LAZYSLOT_FUZZ_TARGETS). Env: FUZZ_JOBS=N runs N targets at once, FUZZ_WORK=dir keeps corpora/artifacts
# there, FUZZ_BUILD=dir builds there instead of build-fuzz, FUZZ_SKIP_BUILD=1 runs what is built, FUZZ_NICE=19
# niceness, FUZZ_BUILD_JOBS=2, FUZZ_TIMEOUT=10 seconds one input may take (libFuzzer's -timeout, wall clock:
# raise it on a machine so busy that a nice 19 fuzzer waits for the CPU that long).
# Exits 1 if any target crashed, failed a property, timed out or did not build. .ci/run runs it briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_PER_TARGET=${1:-60}
shift || true
TARGETS=("$@")
BUILD_TARGETS=$(printf '%s_fuzz ' "${TARGETS[@]}")
if [ ${#TARGETS[@]} -eq 0 ]; then
  BUILD_TARGETS=fuzzers  # CMake's target of them all: one parallel build
  # set(LAZYSLOT_FUZZ_TARGETS a b ...), possibly over several lines.
  read -r -a TARGETS <<<"$(awk '/^set\(LAZYSLOT_FUZZ_TARGETS/ {on = 1} on {line = line " " $0} on && /\)/ {exit}
    END {sub(/.*set\(LAZYSLOT_FUZZ_TARGETS/, "", line); sub(/\).*/, "", line); print line}' "$ROOT/CMakeLists.txt")"
  [ ${#TARGETS[@]} -gt 0 ] || { echo "fuzz: no LAZYSLOT_FUZZ_TARGETS in CMakeLists.txt" >&2; exit 1; }
fi
JOBS=${FUZZ_JOBS:-1}
NICE=${FUZZ_NICE:-19}
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
WORK=${FUZZ_WORK:-$BUILD/fuzz-runs/$(date +%Y%m%d-%H%M%S)}

# clang and its sanitizer/libFuzzer runtime (Debian 12: clang-14, libclang-rt-14-dev), as install-deps.sh does.
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=$(for p in clang-14 libclang-rt-14-dev; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q $missing
fi
CXX=$(command -v clang++-14 || command -v clang++)

if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  nice -n "$NICE" cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX" -DLAZYSLOT_FUZZ=ON >/dev/null
  build_start=$(date +%s)
  nice -n "$NICE" cmake --build "$BUILD" -j"${FUZZ_BUILD_JOBS:-2}" --target $BUILD_TARGETS
  echo "fuzz: built ${#TARGETS[@]} targets in $(($(date +%s) - build_start)) s"
fi

run_one() {
  local t=$1 dir="$WORK/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  # New inputs land in the scratch copy, never in the repo. GGUF seeds are files, not kept in the repo: they are
  # generated here, plus the small and the malformed GGUF files of ../shared/models.
  if [ "$t" = gguf ]; then
    python3 "$ROOT/fuzz/make_seeds.py" --gguf-out "$dir/corpus"
    cp "$ROOT/../shared/models/invalid/"* "$ROOT/../shared/models/stories260K.gguf" "$dir/corpus/"
  else
    cp -r "$ROOT/fuzz/corpus/$t/." "$dir/corpus/"
  fi
  local dict=()
  [ -f "$ROOT/fuzz/dict/$t.dict" ] && dict=(-dict="$ROOT/fuzz/dict/$t.dict")
  local rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} nice -n "$NICE" "$BUILD/${t}_fuzz" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=16384 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" "$dir/corpus" \
    >"$dir/log.txt" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

echo "fuzz: ${SECONDS_PER_TARGET}s per target, work dir $WORK"
mkdir -p "$WORK"
running=0
for t in "${TARGETS[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

status=0
printf '%-14s %12s %9s %14s %9s %8s %s\n' target executions exec/s 'cov start->end' features corpus crashes
for t in "${TARGETS[@]}"; do
  dir="$WORK/$t"
  log="$dir/log.txt"
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  eps=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  line=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov0=$(grep -E '^#[0-9]+.*INITED' "$log" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  cov=$(echo "$line" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  ft=$(echo "$line" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
  units=$(find "$dir/corpus" -type f | wc -l)
  # crash-, leak-, timeout-, oom- files; slow-unit- files (an input over 10 s, e.g. on a busy machine) are not failures.
  crashes=$(find "$dir/artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  printf '%-14s %12s %9s %14s %9s %8s %s\n' "$t" "${runs:-?}" "${eps:-?}" "${cov0:-?}->${cov:-?}" "${ft:-?}" \
    "$units" "$crashes"
  if [ "$crashes" -gt 0 ] || [ "$(cat "$dir/rc")" != 0 ]; then
    status=1
    echo "  $t: rc $(cat "$dir/rc"); artifacts in $dir/artifacts; log $log" >&2
    grep -m3 -E 'ERROR: |runtime error|property failed' "$log" >&2 || true
  fi
done
exit $status
