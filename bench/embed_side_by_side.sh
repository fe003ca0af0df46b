#!/usr/bin/env bash
# Embedding throughput and memory, lazyslot against llama-server on the same GGUF with the same flags
# (docs/bench.md "Embeddings and rerank"): for each server, start it, print RSS after start, run the two
# cases of bench/serve_scenarios.sh (embed: 64 texts of ~220 tokens in requests of 8; embed45: 256 texts of
# ~45 tokens in requests of 32), print RSS after each, stop it.
# Usage: bench/embed_side_by_side.sh MODEL.gguf [REPEATS] [-- extra server flags]
#   LAZYSLOT=build/lazyslot LLAMA_SERVER=/path/to/llama-server bench/embed_side_by_side.sh qwen3.gguf 3 \
#     -- --pooling last -np 2 -c 16384
# Without LLAMA_SERVER only lazyslot runs. Both get -t 2 (THREADS) and --embeddings.
set -euo pipefail
MODEL=${1:?usage: embed_side_by_side.sh MODEL.gguf [REPEATS] [-- flags]}
REPEATS=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
[[ "${1:-}" == "--" ]] && shift
FLAGS=("$@")
THREADS=${THREADS:-2}
PORT=${PORT:-18431}
HERE=$(cd "$(dirname "$0")" && pwd)
LAZYSLOT=${LAZYSLOT:-$HERE/../build/lazyslot}

rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

run_one() {
  local name=$1; shift
  "$@" >"/tmp/embed_side_by_side.$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 0.2
  done
  echo "== $name: RSS after start $(rss_mib $pid) MiB"
  for what in embed embed45; do
    "$HERE/serve_scenarios.sh" "http://127.0.0.1:$PORT" "$what" "$REPEATS" | sed "s/^/$name /"
    echo "== $name: RSS after $what $(rss_mib $pid) MiB"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

run_one lazyslot "$LAZYSLOT" serve -m "$MODEL" --embeddings -t "$THREADS" --port "$PORT" "${FLAGS[@]}"
if [[ -n "${LLAMA_SERVER:-}" ]]; then
  run_one llama-server env LD_LIBRARY_PATH="$(dirname "$LLAMA_SERVER")" "$LLAMA_SERVER" -m "$MODEL" --embeddings \
    -t "$THREADS" --port "$PORT" "${FLAGS[@]}"
fi
