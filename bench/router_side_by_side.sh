#!/usr/bin/env bash
# Many models from one server (issue 16), lazyslot against llama-server's router, side by side: creates the
# 8 synthetic models once (qwen3-0.6b shapes, q4_k, seeds 701..708: MODELS_DIR/m1.gguf .. m8.gguf, 325 MiB
# each), then runs bench/router_bench.py on
#   lazyslot     serve --models-dir DIR --memory-budget 1GiB -c 4096 -np 2 -t 2
#   llama-server       --models-dir DIR --models-max 2      -c 4096 -np 2 -t 2
# one after the other: REQUESTS streamed completions (default 200) from 2 clients, round-robin over the 8
# model ids. Prints the markdown table; writes OUT/router_bench.json (every RSS sample and request) and
# OUT/router_rss.svg (RSS over time, for docs/memory.md).
# Usage: bench/router_side_by_side.sh [REQUESTS] [-- extra router_bench.py options]
#   LAZYSLOT=build/lazyslot LLAMA_SERVER=/work/llama.cpp/build/bin/llama-server bench/router_side_by_side.sh 200
# ONLY=lazyslot or ONLY=llama-server runs one of them. Env: MODELS_DIR (default /work/models/router8),
# OUT (default /tmp/router_bench), PORT (default 18460), THREADS (default 2).
set -euo pipefail
REQUESTS=${1:-200}
shift $(( $# >= 1 ? 1 : 0 ))
[[ "${1:-}" == "--" ]] && shift
HERE=$(cd "$(dirname "$0")" && pwd)
LAZYSLOT=${LAZYSLOT:-$(cd "$HERE/.." && pwd)/build/lazyslot}
LLAMA_SERVER=${LLAMA_SERVER:-/work/llama.cpp/build/bin/llama-server}
MODELS_DIR=${MODELS_DIR:-/work/models/router8}
OUT=${OUT:-/tmp/router_bench}
PORT=${PORT:-18460}
THREADS=${THREADS:-2}
ONLY=${ONLY:-}

make_models() {
  mkdir -p "$MODELS_DIR"
  for i in 1 2 3 4 5 6 7 8; do
    local f="$MODELS_DIR/m$i.gguf"
    [[ -f "$f" ]] && continue
    "$LAZYSLOT" synth --preset qwen3-0.6b --type q4_k --seed $((700 + i)) -o "$f.part"
    mv "$f.part" "$f"
  done
}

make_models
mkdir -p "$OUT"
COMMON=(-c 4096 -np 2 -t "$THREADS" --host 127.0.0.1 --port "$PORT")
quoted() { printf '%q ' "$@"; }  # one command line, split again by router_bench.py (shlex)
LAZY_CMD=$(quoted "$LAZYSLOT" serve --models-dir "$MODELS_DIR" --memory-budget 1GiB "${COMMON[@]}")
LLAMA_CMD=$(quoted env "LD_LIBRARY_PATH=$(dirname "$LLAMA_SERVER")" "$LLAMA_SERVER" --models-dir "$MODELS_DIR" \
  --models-max 2 "${COMMON[@]}")
RUNS=()
[[ -z "$ONLY" || "$ONLY" == lazyslot ]] && RUNS+=(--server-cmd "$LAZY_CMD" --label lazyslot)
[[ -z "$ONLY" || "$ONLY" == llama-server ]] && RUNS+=(--server-cmd "$LLAMA_CMD" --label llama-server)

exec python3 "$HERE/router_bench.py" "${RUNS[@]}" --port "$PORT" --models-dir "$MODELS_DIR" \
  --requests "$REQUESTS" --clients 2 --server-log "$OUT/{label}.log" \
  --out-json "$OUT/router_bench.json" --svg "$OUT/router_rss.svg" "$@"
