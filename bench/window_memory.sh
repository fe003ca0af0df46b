#!/usr/bin/env bash
# Sliding-window memory, lazyslot against llama-server on the same Gemma-3-shaped GGUF (docs/memory.md
# "Sliding-window layers"): for each server, start it, then hold 1,024, 4,096 and 16,383 tokens in one slot
# (one prompt each, each extending the last, one token generated), and print after start and after each:
# the tokens held, the process's RSS (/proc/PID/status) and the KV it has committed (lazyslot: /metrics
# kv_committed_bytes; llama-server: the KV buffers its log reports, allocated whole at start).
# Usage: bench/window_memory.sh MODEL.gguf [-- extra flags for both servers]
#   LAZYSLOT=build/lazyslot LLAMA_SERVER=/path/to/llama-server bench/window_memory.sh gemma3-1b-q8_0.gguf \
#     -- -c 16384 -np 1
# Without LLAMA_SERVER only lazyslot runs. Both get -t 2 (THREADS); HOLD="1024 4095" changes the points
# (with -np 4 -c 16384 a slot holds 4,096 cells). Prints one TSV row per point:
#   server  point  tokens_held  rss_mib  kv_mib
set -euo pipefail
MODEL=${1:?usage: window_memory.sh MODEL.gguf [-- flags]}
shift
[[ "${1:-}" == "--" ]] && shift
FLAGS=("$@")
[[ ${#FLAGS[@]} -eq 0 ]] && FLAGS=(-c 16384 -np 1)
THREADS=${THREADS:-2}
PORT=${PORT:-18531}
HERE=$(cd "$(dirname "$0")" && pwd)
LAZYSLOT=${LAZYSLOT:-$HERE/../build/lazyslot}
read -r -a HOLD <<< "${HOLD:-1024 4096 16383}"  # tokens to hold, each prompt extending the last

rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# One fixed token sequence (ids 1000..200999, deterministic), its first N ids as a JSON array.
prompt_json() { python3 -c "import random,sys; r=random.Random(7); t=[2]+[r.randrange(1000,201000) for _ in range(20000)]; print(t[:int(sys.argv[1])])" "$1"; }

kv_mib() {  # $1 = name, $2 = log
  if [[ $1 == lazyslot ]]; then
    curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^lazyslot:kv_committed_bytes / {printf "%.1f", $2 / 1048576}'
  else  # llama_kv_cache: size = X MiB (one line per cache: the global layers' and the SWA layers')
    grep -o 'llama_kv_cache: *size = *[0-9.]* MiB' "$2" | awk '{s += $(NF-1)} END {printf "%.1f", s}'
  fi
}

run_one() {
  local name=$1; shift
  local log="/tmp/window_memory.$name.log"
  "$@" >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 900); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 0.2
  done
  printf '%s\tstart\t0\t%s\t%s\n' "$name" "$(rss_mib $pid)" "$(kv_mib "$name" "$log")"
  for n in "${HOLD[@]}"; do
    local body
    body=$(printf '{"prompt": %s, "n_predict": 1, "temperature": 0, "cache_prompt": true}' "$(prompt_json "$n")")
    local t0=$SECONDS
    curl -sf "http://127.0.0.1:$PORT/completion" -H 'Content-Type: application/json' -d "$body" >/dev/null
    printf '%s\thold\t%s\t%s\t%s\t(%ss)\n' "$name" "$n" "$(rss_mib $pid)" "$(kv_mib "$name" "$log")" $((SECONDS - t0))
  done
  kill $pid; wait $pid 2>/dev/null || true
}

printf 'server\tpoint\ttokens_held\trss_mib\tkv_mib\n'
run_one lazyslot "$LAZYSLOT" serve -m "$MODEL" -t "$THREADS" --port "$PORT" "${FLAGS[@]}"
if [[ -n "${LLAMA_SERVER:-}" ]]; then
  # -lv 4: its log names the KV buffers (llama_kv_cache: size = ...), allocated whole at start.
  run_one llama-server "$LLAMA_SERVER" -m "$MODEL" -t "$THREADS" --port "$PORT" -fa on -lv 4 "${FLAGS[@]}"
fi
