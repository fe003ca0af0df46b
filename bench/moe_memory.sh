#!/usr/bin/env bash
# Mixture-of-experts memory, lazyslot against llama-server on the same qwen3moe GGUF (docs/memory.md
# "Experts"; decision 0018): for each server, start it, send one prompt of PROMPT random tokens (generating
# GEN), then wait IDLE seconds, and print after start, after the prompt and after the idle wait the
# process's RSS split into anonymous and file-backed pages (/proc/PID/status RssAnon, RssFile).
# Usage: bench/moe_memory.sh MODEL.gguf [-- extra flags for both servers]
#   lazyslot synth --preset qwen3moe-a3b --n-expert 64 --type q4_k -o moe64.gguf
#   LAZYSLOT=build/lazyslot LLAMA_SERVER=/path/to/llama-server bench/moe_memory.sh moe64.gguf
# lazyslot runs with --idle-timeout/--idle-release-weights IDLE/2 (its idle release); llama-server with its
# defaults. Without LLAMA_SERVER only lazyslot runs. Prints one TSV row per point:
#   server  point  rss_mib  anon_mib  file_mib  seconds
set -euo pipefail
MODEL=${1:?usage: moe_memory.sh MODEL.gguf [-- flags]}
shift
[[ "${1:-}" == "--" ]] && shift
FLAGS=("$@")
THREADS=${THREADS:-2}
PORT=${PORT:-18533}
PROMPT=${PROMPT:-512}
GEN=${GEN:-16}
IDLE=${IDLE:-6}
HERE=$(cd "$(dirname "$0")" && pwd)
LAZYSLOT=${LAZYSLOT:-$HERE/../build/lazyslot}

mem() { awk '/^VmRSS/ {r = $2} /^RssAnon/ {a = $2} /^RssFile/ {f = $2}
             END {printf "%.0f\t%.0f\t%.0f", r / 1024, a / 1024, f / 1024}' "/proc/$1/status"; }
prompt_json() { python3 -c "import random,sys; r=random.Random(5); print([1]+[r.randrange(3,500) for _ in range(int(sys.argv[1]) - 1)])" "$1"; }

run_one() {
  local name=$1; shift
  local log="/tmp/moe_memory.$name.log"
  local t0=$SECONDS
  "$@" >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1500); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 0.2
  done
  printf '%s\tstart\t%s\t%s\n' "$name" "$(mem $pid)" $((SECONDS - t0))
  local body
  body=$(printf '{"prompt": %s, "n_predict": %s, "temperature": 0, "ignore_eos": true}' "$(prompt_json "$PROMPT")" "$GEN")
  t0=$SECONDS
  curl -sf "http://127.0.0.1:$PORT/completion" -H 'Content-Type: application/json' -d "$body" >/dev/null
  printf '%s\tprompt%s+%s\t%s\t%s\n' "$name" "$PROMPT" "$GEN" "$(mem $pid)" $((SECONDS - t0))
  sleep "$IDLE"
  printf '%s\tidle%ss\t%s\t%s\n' "$name" "$IDLE" "$(mem $pid)" "$IDLE"
  kill $pid; wait $pid 2>/dev/null || true
}

printf 'server\tpoint\trss_mib\tanon_mib\tfile_mib\tseconds\n'
half=$(python3 -c "print($IDLE / 2)")
run_one lazyslot "$LAZYSLOT" serve -m "$MODEL" -t "$THREADS" --port "$PORT" -c 4096 \
  --idle-timeout "$half" --idle-release-weights "$half" "${FLAGS[@]}"
if [[ -n "${LLAMA_SERVER:-}" ]]; then
  run_one llama-server "$LLAMA_SERVER" -m "$MODEL" -t "$THREADS" --port "$PORT" -c 4096 "${FLAGS[@]}"
fi
