#!/usr/bin/env bash
# Idle cost of many models (issue 16): starts lazyslot in router mode over MODELS_DIR with
# --sleep-idle-seconds IDLE, sends one short completion to every model (one at a time), then waits IDLE + 4
# seconds and prints the server's RSS after start, after the requests and after the idle time, with each
# model's status. The synthetic models are made by bench/router_side_by_side.sh.
# Usage: bench/router_idle.sh [IDLE] [-- extra serve flags]
#   LAZYSLOT=build/lazyslot MODELS_DIR=/work/models/router8 bench/router_idle.sh 5 -- --memory-budget 1GiB
set -euo pipefail
IDLE=${1:-5}
shift $(( $# >= 1 ? 1 : 0 ))
[[ "${1:-}" == "--" ]] && shift
HERE=$(cd "$(dirname "$0")" && pwd)
LAZYSLOT=${LAZYSLOT:-$(cd "$HERE/.." && pwd)/build/lazyslot}
MODELS_DIR=${MODELS_DIR:-/work/models/router8}
PORT=${PORT:-18470}
URL=http://127.0.0.1:$PORT

rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
statuses() {
  curl -s "$URL/v1/models" | python3 -c 'import json, sys
d = json.load(sys.stdin)["data"]
print(", ".join(m["id"] + " " + m["status"]["value"] for m in d))'
}

"$LAZYSLOT" serve --models-dir "$MODELS_DIR" -c 4096 -np 2 -t 2 --port "$PORT" --sleep-idle-seconds "$IDLE" \
  "$@" > /tmp/router_idle.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf "$URL/health" > /dev/null && break; sleep 0.1; done
echo "after start: $(rss_mib $PID) MiB RSS"
n=0
for f in "$MODELS_DIR"/*.gguf; do
  id=$(basename "$f" .gguf)
  curl -sf -H 'Content-Type: application/json' "$URL/v1/completions" \
    -d "{\"model\": \"$id\", \"prompt\": \"The sea\", \"max_tokens\": 8}" > /dev/null
  n=$((n + 1))
done
echo "after one request to each of $n models: $(rss_mib $PID) MiB RSS; $(statuses)"
sleep $((IDLE + 4))
echo "after ${IDLE} s idle + 4 s: $(rss_mib $PID) MiB RSS; $(statuses)"
